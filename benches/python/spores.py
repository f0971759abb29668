"""The four programs of issue 22 (SPORES' rewrites) at the sizes where the
naive form is slow: X m x m sparse, U, V, W, H dense of rank k,

    loss  = SUM(i,j) power(X[i,j] - SUM(k) U[i,k] * V[j,k], 2)      squared loss
    G     = SUM(j) ((SUM(k) U[i,k] * V[j,k]) - X[i,j]) * V[j,l]     ALS gradient
    s     = SUM(i,j) SUM(k) W[i,k] * H[k,j]                          PNMF, sum(W H)
    M     = P[i] * X[i,j] - P[i] * P[i] * X[i,j]                     MLR

each computed by einsql with its `saturate` phase (equality saturation),
by einsql with the phase on but its dense matrix kernel off (`SET
disabled_optimizers = 'dense'`: the rewritten Gram matrices U'U, V'V run
as loops), by einsql with the phase switched off (`SET
disabled_optimizers = 'saturate'`), and by numpy/scipy computing the naive formula as written
(U @ V.T materialized, in row blocks so that memory stays bounded). Then the
squared loss alone at several densities of X with the phase on: its time
follows nnz(X), not m * m. One thread each, the same data, one run.

einsql runs as the `einsql` shell binary on Matrix Market files this script
writes; its times are the shell's `.timer` figures for the statement alone
(loading is not timed). Each einsql run has a timeout, past which it is
reported as not finished. Values are compared through their sums.

Run it through scripts/bench-spores.
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
import time

import numpy as np
import scipy
import scipy.sparse as sp
from einsql_shell import time_and_value
from mtx import write_dense, write_sparse

PROGRAMS = {
    "squared loss": (
        "loss = SUM(i,j) power(X[i,j] - SUM(k) U[i,k] * V[j,k], 2);",
        "SELECT v FROM loss;",
    ),
    "ALS": (
        "G[i,l] = SUM(j) ((SUM(k) U[i,k] * V[j,k]) - X[i,j]) * V[j,l];",
        "SELECT SUM(v) AS v FROM G;",
    ),
    "PNMF": (
        "s = SUM(i,j) SUM(k) W[i,k] * H[k,j];",
        "SELECT v FROM s;",
    ),
    "MLR": (
        "M[i,j] = P[i] * X[i,j] - P[i] * P[i] * X[i,j];",
        "SELECT SUM(v) AS v FROM M;",
    ),
}

TABLES = ["X", "U", "V", "W", "H", "P"]


def run_einsql(binary, folder, statement, query, disabled, timeout, threads):
    """The statement's time and value from the shell (None, message when it
    did not finish)."""
    loads = [
        f"CREATE TABLE {t} AS SELECT * FROM read_mtx('{folder}/{t}.mtx');" for t in TABLES
    ]
    # P is a column: read as a vector P[i].
    loads[-1] = (
        f"CREATE TABLE P0 AS SELECT * FROM read_mtx('{folder}/P.mtx');\n"
        "P[i] = P0[i,0];"
    )
    script = "\n".join(
        [
            f"SET threads = {threads};",
            f"SET disabled_optimizers = '{disabled}';" if disabled else "",
            f"SET memory_limit = '{os.environ.get('EINSQL_MEMORY_LIMIT', '8GB')}';",
            *loads,
            ".timer on",
            statement,
            ".timer off",
            ".mode csv",
            query,
        ]
    )
    return time_and_value(binary, script, timeout)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def blocks(m: int, size: int):
    for start in range(0, m, size):
        yield start, min(m, start + size)


def numpy_naive(name, x, u, v, w, h, p, block):
    """The naive formula: U @ V.T (or W @ H) materialized, a block of rows
    at a time."""
    m = x.shape[0]
    csr = x.tocsr()
    if name == "squared loss":
        return sum(
            float(((csr[a:b].toarray() - u[a:b] @ v.T) ** 2).sum()) for a, b in blocks(m, block)
        )
    if name == "ALS":
        return float(
            sum(((u[a:b] @ v.T - csr[a:b].toarray()) @ v).sum() for a, b in blocks(m, block))
        )
    if name == "PNMF":
        return sum(float((w[a:b] @ h).sum()) for a, b in blocks(m, block))
    # MLR: element-wise on the sparse X, as written.
    pc = p[:, None]
    return float((csr.multiply(pc) - csr.multiply(pc * pc)).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000, help="m: X is m x m")
    parser.add_argument("--rank", type=int, default=50)
    parser.add_argument("--density", type=float, default=1e-3)
    parser.add_argument(
        "--sweep", default="1e-4,1e-3,3e-3,1e-2",
        help="densities of X for the squared loss with the phase on ('' skips)",
    )
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--block", type=int, default=1000, help="numpy's rows per block")
    parser.add_argument("--seed", type=int, default=22)
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    parser.add_argument("--skip-off", action="store_true", help="skip einsql with the phase off")
    parser.add_argument(
        "--skip-dense-off", action="store_true", help="skip einsql with the dense kernel off"
    )
    parser.add_argument("--skip-numpy", action="store_true", help="skip numpy's naive formulas")
    parser.add_argument("--only", default="", help="comma-separated program names to run")
    args = parser.parse_args()

    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, einsql {args.binary}, threads {args.threads}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    rng = np.random.default_rng(args.seed)
    m, r = args.size, args.rank
    u = 1.0 - rng.random((m, r))
    v = 1.0 - rng.random((m, r))
    w = 1.0 - rng.random((m, r))
    h = 1.0 - rng.random((r, m))
    p = rng.random(m)
    x = sp.random(
        m, m, density=args.density, format="coo", random_state=rng,
        data_rvs=lambda n: 1.0 - rng.random(n),
    )
    fmt = lambda t: "" if t is None else f"{t:.4f}"
    with tempfile.TemporaryDirectory() as folder:
        for name, a in [("U", u), ("V", v), ("W", w), ("H", h), ("P", p)]:
            write_dense(f"{folder}/{name}.mtx", a)
        write_sparse(f"{folder}/X.mtx", x)
        print(f"# X {m} x {m}, density {args.density:g}, nnz {x.nnz}, rank {r}")
        print(
            "program,einsql_s,einsql_dense_off_s,einsql_off_s,numpy_naive_s,"
            "value,value_dense_off,value_off,value_numpy"
        )
        only = [n.strip() for n in args.only.split(",") if n.strip()]
        for name, (statement, query) in PROGRAMS.items():
            if only and name not in only:
                continue
            on_s, on_v = run_einsql(
                args.binary, folder, statement, query, "", args.timeout, args.threads
            )
            if args.skip_dense_off:
                dense_s, dense_v = None, "skipped"
            else:
                dense_s, dense_v = run_einsql(
                    args.binary, folder, statement, query, "dense", args.timeout, args.threads
                )
            if args.skip_off:
                off_s, off_v = None, "skipped"
            else:
                off_s, off_v = run_einsql(
                    args.binary, folder, statement, query, "saturate", args.timeout, args.threads
                )
            if args.skip_numpy:
                np_s, np_v = None, "skipped"
            else:
                np_s, np_v = timed(lambda: numpy_naive(name, x, u, v, w, h, p, args.block))
            print(
                f"{name},{fmt(on_s)},{fmt(dense_s)},{fmt(off_s)},{fmt(np_s)},"
                f"{on_v},{dense_v},{off_v},{np_v}",
                flush=True,
            )
        sweep = [float(d) for d in args.sweep.split(",") if d.strip()]
        if sweep:
            statement, query = PROGRAMS["squared loss"]
            print("density,nnz,einsql_s,s_per_million_entries")
            for density in sweep:
                xd = sp.random(
                    m, m, density=density, format="coo", random_state=rng,
                    data_rvs=lambda n: 1.0 - rng.random(n),
                )
                write_sparse(f"{folder}/X.mtx", xd)
                t, value = run_einsql(
                    args.binary, folder, statement, query, "", args.timeout, args.threads
                )
                per = "" if t is None else f"{t / xd.nnz * 1e6:.4f}"
                print(f"{density:g},{xd.nnz},{fmt(t)},{per}", flush=True)


if __name__ == "__main__":
    main()
