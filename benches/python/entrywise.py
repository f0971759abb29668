"""Element-wise maps of two sparse matrices stored at different
coordinates, and a total of one:

    C[i,j] = A[i,j] + B[i,j]               (the coordinates either holds)
    D[i,j] = A[i,j] - 2.5 * B[i,j]
    s = SUM(i,j) abs(A[i,j] - B[i,j])      (the L1 distance)

timed for einsql (`--binary`; with `--baseline` a second einsql build,
run the same way, for a before-and-after comparison in the same run) and
for scipy on CSR matrices (`A + B`, `A - 2.5 * B`, `abs(A - B).sum()`).
One thread each, the same data, one run.

A and B are n × n with entries at uniformly random positions (values in
(0, 1]). einsql runs as the `einsql` shell binary on files this script
writes; its times are the shell's `.timer` figures for the statement
(planning and storing the result included; loading not). Each statement
runs `--repeat` times in one shell and each scipy expression `--repeat`
times in this process: the best of each is reported. The sums of every
result are checked to agree (relative 1e-9).

Run it through scripts/bench-entrywise.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import tempfile
import time

import numpy as np
import scipy
import scipy.sparse as sp

from einsql_shell import run_shell
from mtx import write_sparse

STATEMENTS = {
    "A + B": ("C[i,j] = A[i,j] + B[i,j];", "C"),
    "A - 2.5 B": ("D[i,j] = A[i,j] - 2.5 * B[i,j];", "D"),
    "sum |A - B|": ("s = SUM(i,j) abs(A[i,j] - B[i,j]);", "s"),
}


def scipy_results(a, b) -> dict:
    return {
        "A + B": lambda: a + b,
        "A - 2.5 B": lambda: a - 2.5 * b,
        "sum |A - B|": lambda: abs(a - b).sum(),
    }


def run_einsql(binary: str, folder: str, timeout: float, repeat: int) -> dict:
    """Per statement: (best time, sum of the result), or the error's text."""
    lines = [
        "SET threads = 1;",
        f"SET memory_limit = '{os.environ.get('EINSQL_MEMORY_LIMIT', '8GB')}';",
        f"CREATE TABLE A AS SELECT * FROM read_mtx('{folder}/A.mtx', keys = ['i', 'j']);",
        f"CREATE TABLE B AS SELECT * FROM read_mtx('{folder}/B.mtx', keys = ['i', 'j']);",
        ".timer on",
    ]
    for statement, _ in STATEMENTS.values():
        lines += [statement] * repeat
    lines += [".timer off", ".mode csv"]
    lines += [f"SELECT SUM(v) AS total FROM {table};" for _, table in STATEMENTS.values()]
    done = run_shell(binary, "\n".join(lines), timeout)
    if done is None:
        return {name: f"not finished in {timeout:.0f} s" for name in STATEMENTS}
    out = done.stdout + done.stderr
    if "rror" in out:
        line = next(line for line in out.splitlines() if "rror" in line)
        return {name: line.strip() for name in STATEMENTS}
    times = [float(t) for t in re.findall(r"Run Time: ([0-9.]+) s", out)]
    out_lines = out.splitlines()
    totals = [float(out_lines[n + 1]) for n, line in enumerate(out_lines) if line == "total"]
    return {
        name: (min(times[k * repeat:(k + 1) * repeat]), totals[k])
        for k, name in enumerate(STATEMENTS)
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="n: A and B are n x n")
    parser.add_argument("--densities", default="1e-4,1e-3")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=29)
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    parser.add_argument("--baseline", help="a second einsql binary, run the same way")
    args = parser.parse_args()

    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, einsql {args.binary}, baseline {args.baseline}, "
        f"one thread, load average {os.getloadavg()[0]:.1f}"
    )
    print("density,nnz_A,nnz_B,expression,einsql_s,baseline_s,scipy_s,einsql/scipy,sums_agree")
    rng = np.random.default_rng(args.seed)
    n = args.size
    with tempfile.TemporaryDirectory() as folder:
        for density in [float(d) for d in args.densities.split(",")]:
            a, b = (
                sp.random(n, n, density=density, format="coo", random_state=rng,
                          data_rvs=lambda m: 1.0 - rng.random(m))
                for _ in range(2)
            )
            write_sparse(f"{folder}/A.mtx", a)
            write_sparse(f"{folder}/B.mtx", b)
            ours = run_einsql(args.binary, folder, args.timeout, args.repeat)
            base = (run_einsql(args.baseline, folder, args.timeout, args.repeat)
                    if args.baseline else {})
            peers = scipy_results(a.tocsr(), b.tocsr())
            for name, compute in peers.items():
                times = []
                for _ in range(args.repeat):
                    start = time.perf_counter()
                    result = compute()
                    times.append(time.perf_counter() - start)
                expected = float(result.sum()) if sp.issparse(result) else float(result)
                runs = [r for r in (ours.get(name), base.get(name)) if r is not None]
                agree = all(
                    isinstance(r, tuple) and abs(r[1] - expected) <= 1e-9 * abs(expected)
                    for r in runs
                )
                cell = lambda r: f"{r[0]:.4f}" if isinstance(r, tuple) else ("" if r is None else r)
                ratio = (f"{ours[name][0] / min(times):.2f}"
                         if isinstance(ours.get(name), tuple) else "")
                print(f"{density:g},{a.nnz},{b.nnz},{name},{cell(ours.get(name))},"
                      f"{cell(base.get(name))},{min(times):.4f},{ratio},{agree}", flush=True)


if __name__ == "__main__":
    main()
