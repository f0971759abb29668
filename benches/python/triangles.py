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
counts are checked equal. einsql also counts over the undirected table A
(both directions of every edge), as a user who has not oriented the graph
writes it: ``t = SUM(i,j,k) A[i,j] * A[j,k] * A[i,k]``, six times the
triangles, which the symmetry phase counts once each through A's
orientation by degree (built by the first run and kept with the table).
einsql's time is the statement's execution as ``EXPLAIN ANALYZE`` reports
it (loading and indexing the table excluded, as GraphBLAS's import is);
each figure is the median of the runs after a first, untimed one. For
einsql the first run is shown as well, optimization included: over A it
orients the table.
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


def einsql_runs(
    binary: str, csv: Path, table: str, threads: int, runs: int
) -> tuple[float, list[float], int]:
    """The optimization and execution time (seconds) of an untimed first
    count over `table` (L or A, loaded from `csv`), the execution times of
    `runs` timed counts after it, and the count."""
    statement = f"t = SUM(i,j,k) {table}[i,j] * {table}[j,k] * {table}[i,k];"
    script = [f".load {csv} AS {table}", f".threads {threads}", ".maxrows 0"]
    script += [f"EXPLAIN ANALYZE {statement}"] * (runs + 1)
    script += [statement, ".mode csv", "SELECT * FROM t;"]
    done = subprocess.run(
        [binary], input="\n".join(script) + "\n", capture_output=True, text=True, check=True
    )
    times = [float(m) / 1000 for m in re.findall(r"executed in ([0-9.]+) ms", done.stdout)]
    optimized = re.search(r"Optimized in ([0-9.]+) ms", done.stdout)
    first = times[0] + float(optimized.group(1)) / 1000
    count = int(done.stdout.strip().splitlines()[-1])
    return first, times[1:], count


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
            undirected = Path(tmp) / f"A{scale}.csv"
            with open(undirected, "w") as out:
                out.write("i,j\n")
                both = np.column_stack([np.concatenate([i, j]), np.concatenate([j, i])])
                np.savetxt(out, both, fmt="%d", delimiter=",")
            n = 1 << scale
            L = sp.csr_matrix((np.ones(len(i)), (i, j)), shape=(n, n))
            G = gb.io.from_scipy_sparse(L)
            counts = {}
            for threads in threads_list:
                first, times, counts[("einsql", threads)] = einsql_runs(
                    args.binary, csv, "L", threads, args.runs
                )
                rows.append((scale, len(i), "einsql, L", threads, statistics.median(times), first))
                first, times, six = einsql_runs(args.binary, undirected, "A", threads, args.runs)
                if six % 6:
                    raise SystemExit(f"scale {scale}: {six} over A is not six times a count")
                counts[("einsql A", threads)] = six // 6
                rows.append((scale, len(i), "einsql, A", threads, statistics.median(times), first))
                gb.ss.config["nthreads"] = threads
                times = []
                for run in range(args.runs + 1):
                    start = time.perf_counter()
                    c = G.mxm(G, gb.semiring.plus_pair).new(mask=G.S).reduce_scalar().value
                    if run:
                        times.append(time.perf_counter() - start)
                counts[("graphblas", threads)] = int(c)
                rows.append((scale, len(i), "graphblas", threads, statistics.median(times), None))
            start = time.perf_counter()
            counts[("scipy", 1)] = int(L.multiply(L @ L).sum())
            rows.append((scale, len(i), "scipy", 1, time.perf_counter() - start, None))
            if len(set(counts.values())) != 1:
                raise SystemExit(f"scale {scale}: the counts differ: {counts}")
            print(f"scale {scale}: {len(i):,} edges, {counts[('scipy', 1)]:,} triangles (all agree)")
    print()
    print("| scale | edges | library | threads | time | first run | einsql / graphblas |")
    print("|---:|---:|---|---:|---:|---:|---:|")
    best = {(r[0], r[3]): r[4] for r in rows if r[2] == "graphblas"}
    for scale, edges, library, threads, seconds, first in rows:
        einsql = library.startswith("einsql")
        ratio = f"{seconds / best[(scale, threads)]:.2f}" if einsql else ""
        shown = f"{first * 1000:.0f} ms" if first is not None else ""
        print(
            f"| {scale} | {edges:,} | {library} | {threads} | {seconds * 1000:.0f} ms "
            f"| {shown} | {ratio} |"
        )


if __name__ == "__main__":
    main()
