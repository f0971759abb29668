"""Triangle counting on R-MAT graphs: the einsql shell against
SuiteSparse:GraphBLAS (python-graphblas) and scipy, in one run, at each
thread count.

Run through ``scripts/bench-triangles``, which makes the virtual
environment. For each scale, the graph (2^scale vertices, 8·2^scale
generated edges, a=0.57, b=c=0.19, undirected, no self-loops or
duplicates) is written as the CSV of its strictly lower triangle L; every
library counts the triangles of L once each (``t = SUM(i,j,k) L[i,j] *
L[j,k] * L[i,k]`` for einsql, ``L·L`` masked by L with the plus-pair
semiring for GraphBLAS, ``L.multiply(L @ L).sum()`` for scipy) and the
counts are checked equal. einsql's time is the statement's execution as
``EXPLAIN ANALYZE`` reports it (loading and indexing the table excluded,
as GraphBLAS's import is); each figure is the median of the runs after a
first, untimed one.
"""

import argparse
import re
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import graphblas as gb
import numpy as np
import scipy.sparse as sp
from rmat import rmat_edges


def einsql_runs(binary: str, csv: Path, threads: int, runs: int) -> tuple[list[float], int]:
    """Execution times (seconds) of `runs` timed counts after one untimed,
    and the count."""
    statement = "t = SUM(i,j,k) L[i,j] * L[j,k] * L[i,k];"
    script = [f".load {csv} AS L", f".threads {threads}", ".maxrows 0"]
    script += [f"EXPLAIN ANALYZE {statement}"] * (runs + 1)
    script += [statement, ".mode csv", "SELECT * FROM t;"]
    done = subprocess.run(
        [binary], input="\n".join(script) + "\n", capture_output=True, text=True, check=True
    )
    times = [float(m) / 1000 for m in re.findall(r"executed in ([0-9.]+) ms", done.stdout)]
    count = int(done.stdout.strip().splitlines()[-1])
    return times[1:], count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--binary", required=True, help="the einsql shell (a release build)")
    parser.add_argument("--scales", default="16,18")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    threads_list = [int(t) for t in args.threads.split(",")]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for scale in [int(s) for s in args.scales.split(",")]:
            i, j = rmat_edges(scale, edge_factor=8, seed=42)
            csv = Path(tmp) / f"L{scale}.csv"
            with open(csv, "w") as out:
                out.write("i,j\n")
                np.savetxt(out, np.column_stack([i, j]), fmt="%d", delimiter=",")
            n = 1 << scale
            L = sp.csr_matrix((np.ones(len(i)), (i, j)), shape=(n, n))
            G = gb.io.from_scipy_sparse(L)
            counts = {}
            for threads in threads_list:
                times, counts[("einsql", threads)] = einsql_runs(args.binary, csv, threads, args.runs)
                rows.append((scale, len(i), "einsql", threads, statistics.median(times)))
                gb.ss.config["nthreads"] = threads
                times = []
                for run in range(args.runs + 1):
                    start = time.perf_counter()
                    c = G.mxm(G, gb.semiring.plus_pair).new(mask=G.S).reduce_scalar().value
                    if run:
                        times.append(time.perf_counter() - start)
                counts[("graphblas", threads)] = int(c)
                rows.append((scale, len(i), "graphblas", threads, statistics.median(times)))
            start = time.perf_counter()
            counts[("scipy", 1)] = int(L.multiply(L @ L).sum())
            rows.append((scale, len(i), "scipy", 1, time.perf_counter() - start))
            if len(set(counts.values())) != 1:
                raise SystemExit(f"scale {scale}: the counts differ: {counts}")
            print(f"scale {scale}: {len(i):,} edges, {counts[('scipy', 1)]:,} triangles (all agree)")
    print()
    print("| scale | edges | library | threads | time | einsql / graphblas |")
    print("|---:|---:|---|---:|---:|---:|")
    best = {(r[0], r[3]): r[4] for r in rows if r[2] == "graphblas"}
    for scale, edges, library, threads, seconds in rows:
        ratio = f"{seconds / best[(scale, threads)]:.2f}" if library == "einsql" else ""
        print(f"| {scale} | {edges:,} | {library} | {threads} | {seconds * 1000:.0f} ms | {ratio} |")


if __name__ == "__main__":
    main()
