"""Triangle counting and SpMV from Python: einsql against python-graphblas
(SuiteSparse:GraphBLAS) and scipy.sparse, one thread each, in one run.

The graph is a power-law R-MAT graph (Chakrabarti et al.; a=0.57, b=c=0.19,
d=0.05) of 2^scale vertices and edge_factor * 2^scale generated edges, made
undirected without self-loops or duplicates. Triangles are counted over its
strictly lower triangle L (each triangle once): einsql's einsum statement
``t = SUM(i,j,k) L[i,j] * L[j,k] * L[i,k]``, GraphBLAS's masked ``L·L`` with
the plus-pair semiring reduced to a scalar, and scipy's
``L.multiply(L @ L).sum()``. SpMV multiplies the symmetric adjacency matrix
(float64 values) by a random vector.

The time spent at the Python boundary is reported apart: handing the graph
to each library (einsql: registering the scipy CSR matrix; GraphBLAS:
building its matrix from the CSR arrays; scipy: none), and for einsql's SpMV
registering the vector and reading the result back as numpy.

Run it through scripts/bench-python, which builds einsql optimized into its
own virtual environment.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

import numpy as np
import scipy
import scipy.sparse as sp
from rmat import rmat_edges


def timed(fn, repeat: int) -> tuple[float, list[float], object]:
    """The first run's time, the times of the `repeat` runs after it, and
    the last result."""
    times = []
    result = None
    for _ in range(repeat + 1):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return times[0], times[1:], result


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:9.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=int, default=16)
    parser.add_argument("--edge-factor", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--triangle-runs", type=int, default=3)
    parser.add_argument("--spmv-runs", type=int, default=50)
    args = parser.parse_args()

    import graphblas as gb
    import einsql

    gb.ss.config["nthreads"] = 1
    n = 1 << args.scale
    start = time.perf_counter()
    rows, cols = rmat_edges(args.scale, args.edge_factor, args.seed)
    generated = time.perf_counter() - start
    ones = np.ones(len(rows))
    lower = sp.csr_array((ones, (rows, cols)), shape=(n, n))
    lower.sort_indices()
    sym = (lower + lower.T).tocsr()
    sym.sort_indices()
    x = np.random.default_rng(args.seed).random(n)
    print(
        f"R-MAT scale {args.scale}: {n} vertices, {len(rows)} undirected edges, "
        f"{sym.nnz} matrix entries (generated in {generated:.1f} s)"
    )
    print(
        f"python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, "
        f"python-graphblas {gb.__version__}, einsql {einsql.__version__}; "
        f"{os.cpu_count()} cores, one thread each"
    )

    rows_out = []

    # --- einsql
    con = einsql.connect()
    con.execute("SET threads = 1")
    t0 = time.perf_counter()
    con.register("L", lower)
    con.register("A", sym)
    einsql_load = time.perf_counter() - t0
    triangles = "t = SUM(i,j,k) L[i,j] * L[j,k] * L[i,k];"

    def einsql_tc():
        con.execute(triangles)
        return int(con.table("t").numpy()[()])

    first, warm, count = timed(einsql_tc, args.triangle_runs)
    rows_out.append(("triangles", "einsql", einsql_load, first, statistics.median(warm), count))

    def einsql_spmv_parts():
        t_a = time.perf_counter()
        con.register("x", x)
        t_b = time.perf_counter()
        con.execute("y[i] = SUM(j) A[i,j] * x[j];")
        t_c = time.perf_counter()
        y = con.table("y").numpy()
        t_d = time.perf_counter()
        return y, (t_b - t_a) + (t_d - t_c), t_c - t_b

    einsql_parts = [einsql_spmv_parts() for _ in range(args.spmv_runs + 1)]
    y_einsql = einsql_parts[-1][0]
    boundary = statistics.median(p[1] for p in einsql_parts[1:])
    compute = [p[2] for p in einsql_parts]
    rows_out.append(
        ("spmv", "einsql", boundary, compute[0], statistics.median(compute[1:]), None)
    )

    # --- python-graphblas
    t0 = time.perf_counter()
    L = gb.io.from_scipy_sparse(lower)
    A = gb.io.from_scipy_sparse(sym)
    v = gb.Vector.from_dense(x)
    gb_load = time.perf_counter() - t0

    def gb_tc():
        c = gb.Matrix(gb.dtypes.INT64, n, n)
        c(mask=L.S) << L.mxm(L, gb.semiring.plus_pair)
        return int(c.reduce_scalar(gb.monoid.plus).value)

    first, warm, gb_count = timed(gb_tc, args.triangle_runs)
    rows_out.append(("triangles", "graphblas", gb_load, first, statistics.median(warm), gb_count))

    def gb_spmv():
        return A.mxv(v, gb.semiring.plus_times).new()

    first, warm, y_gb = timed(gb_spmv, args.spmv_runs)
    rows_out.append(("spmv", "graphblas", 0.0, first, statistics.median(warm), None))

    # --- scipy
    def scipy_tc():
        return int(lower.multiply(lower @ lower).sum())

    first, warm, sp_count = timed(scipy_tc, args.triangle_runs)
    rows_out.append(("triangles", "scipy", 0.0, first, statistics.median(warm), sp_count))
    first, warm, y_sp = timed(lambda: sym @ x, args.spmv_runs)
    rows_out.append(("spmv", "scipy", 0.0, first, statistics.median(warm), None))

    assert count == gb_count == sp_count, (count, gb_count, sp_count)
    np.testing.assert_allclose(y_einsql, y_sp, rtol=1e-12)
    np.testing.assert_allclose(y_gb.to_dense(fill_value=0.0), y_sp, rtol=1e-12)

    print(f"triangles: {count} (all three agree); SpMV results agree")
    print(
        "kernel     library     boundary ms   first run ms   median ms"
        f"   (median of {args.triangle_runs} / {args.spmv_runs} runs after the first)"
    )
    for kernel, library, boundary, first, median, _ in rows_out:
        print(f"{kernel:10} {library:10} {ms(boundary)}     {ms(first)}      {ms(median)}")
    print(
        "boundary: triangles = handing both matrices over once (einsql: register the "
        "scipy CSR arrays; GraphBLAS: from_scipy_sparse and the vector); "
        "einsql SpMV = register x + read y as numpy, per run (not in its median)"
    )


if __name__ == "__main__":
    main()
