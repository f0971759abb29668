"""BATAx, y = Aᵀ(A x), with A declared in both row and column order:

    y[j] = SUM(i) A[i,j] * (SUM(k) A[i,k] * x[k])

timed for einsql with A declared in row and in column order (`CREATE
INDEX a_csr ON A (i, j)` and `CREATE INDEX a_csc ON A (j, i)`, built
before the statement; a pass over A's entries takes its rows from
`a_csr`'s pointers), for einsql without them (its plan reads A's stored
entries and finds the rows by their coordinates, or re-indexes A inside
the statement), and for scipy's `A.T @ (A @ x)` on a CSR matrix. One
thread each, the same data, one run.

A is n × n with entries at uniformly random positions (values in (0, 1]),
x has n values in (0, 1]. einsql runs as the `einsql` shell binary on
files this script writes; its times are the shell's `.timer` figures for
the statement alone (loading and the declared index's build are not
timed; their sum is reported apart). Each einsql configuration runs the
statement `--repeat` times in one shell and scipy runs its product
`--repeat` times in this process: the best of each is reported, and
einsql's first statement apart (it pays for memory and caches that the
loading left cold, as scipy's first product would).

Run it through scripts/bench-batax.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import tempfile
import time

import numpy as np
import scipy
import scipy.sparse as sp

from mtx import write_sparse

STATEMENT = "y[j] = SUM(i) A[i,j] * (SUM(k) A[i,k] * x[k]);"


def write_vector(path: str, x: np.ndarray) -> None:
    with open(path, "w") as f:
        np.savetxt(f, np.column_stack([np.arange(1, len(x) + 1), x]), fmt=["%d", "%.17g"])


def run_einsql(binary: str, folder: str, declared: bool, timeout: float, repeat: int):
    """The statement's best and first times over `repeat` runs in one
    shell, the sum of y, and the indexes' build time (None without them);
    (None, None, message, None) when it failed."""
    script = "\n".join(
        [
            "SET threads = 1;",
            f"SET memory_limit = '{os.environ.get('EINSQL_MEMORY_LIMIT', '8GB')}';",
            f"CREATE TABLE A AS SELECT * FROM read_mtx('{folder}/A.mtx', keys = ['i', 'j']);",
            f"CREATE TABLE x AS SELECT * FROM read_tns('{folder}/x.tns', keys = ['k']);",
            ".timer on",
            "CREATE INDEX a_csr ON A (i, j);" if declared else "",
            "CREATE INDEX a_csc ON A (j, i);" if declared else "",
            *[STATEMENT] * repeat,
            ".timer off",
            ".mode csv",
            "SELECT SUM(v) AS total FROM y;",
        ]
    )
    try:
        done = subprocess.run([binary], input=script, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, None, f"not finished in {timeout:.0f} s", None
    out = done.stdout + done.stderr
    if "rror" in out:
        line = next(line for line in out.splitlines() if "rror" in line)
        return None, None, line.strip(), None
    times = [float(t) for t in re.findall(r"Run Time: ([0-9.]+) s", out)]
    build = times[0] + times[1] if declared else None
    runs = times[2:] if declared else times
    lines = out.splitlines()
    total = float(lines[lines.index("total") + 1])
    return min(runs), runs[0], total, build


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=100_000, help="n: A is n x n")
    parser.add_argument("--densities", default="1e-5,1e-4,1e-3")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    args = parser.parse_args()

    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, einsql {args.binary}, one thread, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "density,nnz,einsql_declared_s,einsql_undeclared_s,scipy_s,"
        "einsql_declared_first_s,einsql_undeclared_first_s,scipy_first_s,"
        "index_build_s,sum_declared,sum_undeclared,sum_scipy"
    )
    rng = np.random.default_rng(args.seed)
    n = args.size
    x = 1.0 - rng.random(n)
    with tempfile.TemporaryDirectory() as folder:
        write_vector(f"{folder}/x.tns", x)
        for density in [float(d) for d in args.densities.split(",")]:
            a = sp.random(n, n, density=density, format="coo", random_state=rng,
                          data_rvs=lambda m: 1.0 - rng.random(m))
            write_sparse(f"{folder}/A.mtx", a)
            on, off = (
                run_einsql(args.binary, folder, declared, args.timeout, args.repeat)
                for declared in (True, False)
            )
            csr = a.tocsr()
            scipy_times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                y = csr.T @ (csr @ x)
                scipy_times.append(time.perf_counter() - start)
            fmt = lambda t: "" if t is None else f"{t:.4f}"
            print(
                f"{density:g},{a.nnz},{fmt(on[0])},{fmt(off[0])},{fmt(min(scipy_times))},"
                f"{fmt(on[1])},{fmt(off[1])},{fmt(scipy_times[0])},"
                f"{fmt(on[3])},{on[2]},{off[2]},{float(y.sum())!r}",
                flush=True,
            )


if __name__ == "__main__":
    main()
