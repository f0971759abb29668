"""STOREL's kernels over declared indexes: BATAx, ΣMMM and MTTKRP on a
FROSTT tensor (tensors/med.tns by default), each timed for einsql with
the matrices declared in row and column order and the tensor in two more
orders, for einsql without the declared indexes, and for scipy, one
thread each, the same data, one run:

    BATAx   y[j]   = SUM(i) A[i,j] * (SUM(k) A[i,k] * x[k])
            scipy: A.T @ (A @ x), A in CSR
    ΣMMM    s      = SUM(i,j,k) A[i,j] * B[j,k]
            scipy: (A @ B).sum(), and the hand-factorized
            A.sum(axis=0) @ B.sum(axis=1)
    MTTKRP  M[j,r] = SUM(i,k) T[i,j,k] * FI[i,r] * FK[k,r]
            scipy: the Khatri-Rao rows FI[i] * FK[k], scaled by T's
            values, summed into M's rows by a sparse product

A[i,j] = SUM(k) T[i,j,k] and B[j,k] = SUM(i) T[i,j,k] are T's two
matrix projections; x (over j) and the rank-8 factors FI, FK have values
in (0, 1]. Every operand is written to a file by numpy and loaded by
einsql, so no index is built before the timed statement but the declared
ones (`CREATE INDEX a_csr ON A (i, j)`, `a_csc ON A (j, i)`, `b_csr`,
`b_csc` likewise, `t_jik ON T (j, i, k)`, `t_kij ON T (k, i, j)`: the
set of tests/slt/datasets_indexes.slt). einsql times are the shell's
`.timer` figures for the statement alone, best of `--repeat` fresh
processes; scipy's are the best of `--repeat`. Each einsql answer (the
sum of the result's entries) is compared with scipy's to a relative
1e-9; a mismatch is printed and makes the exit status 1.

Run it through scripts/bench-storel.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile

import numpy as np
import scipy
import scipy.sparse as sp
from batax import write_vector
from einsql_shell import time_and_value
from mtx import write_dense, write_sparse
from systemml import read_tns, timed

INDEXES = [
    "CREATE INDEX a_csr ON A (i, j);",
    "CREATE INDEX a_csc ON A (j, i);",
    "CREATE INDEX b_csr ON B (j, k);",
    "CREATE INDEX b_csc ON B (k, j);",
    "CREATE INDEX t_jik ON T (j, i, k);",
    "CREATE INDEX t_kij ON T (k, i, j);",
]

KERNELS = {
    "BATAx": ("y[j] = SUM(i) A[i,j] * (SUM(k) A[i,k] * x[k]);", "y"),
    "ΣMMM": ("s = SUM(i,j,k) A[i,j] * B[j,k];", "s"),
    "MTTKRP": ("M[j,r] = SUM(i,k) T[i,j,k] * FI[i,r] * FK[k,r];", "M"),
}


def einsql_time(binary, folder, tensor, kernel, declared, timeout):
    """The statement's time and the sum of its result, or None and a
    message."""
    statement, result = KERNELS[kernel]
    script = "\n".join(
        [
            "SET threads = 1;",
            f"CREATE TABLE T AS SELECT * FROM read_tns('{tensor}', keys = ['i', 'j', 'k']);",
            f"CREATE TABLE A AS SELECT * FROM read_mtx('{folder}/A.mtx', keys = ['i', 'j']);",
            f"CREATE TABLE B AS SELECT * FROM read_mtx('{folder}/B.mtx', keys = ['j', 'k']);",
            f"CREATE TABLE x AS SELECT * FROM read_tns('{folder}/x.tns', keys = ['k']);",
            f"CREATE TABLE FI AS SELECT * FROM read_mtx('{folder}/FI.mtx', keys = ['i', 'r']);",
            f"CREATE TABLE FK AS SELECT * FROM read_mtx('{folder}/FK.mtx', keys = ['k', 'r']);",
            *(INDEXES if declared else []),
            ".timer on",
            statement,
            ".timer off",
            ".mode csv",
            f"SELECT SUM(v) AS v FROM {result};",
        ]
    )
    return time_and_value(binary, script, timeout)


def best(runs):
    """The fastest run, or the first failure when none finished."""
    timed_runs = [r for r in runs if r[0] is not None]
    return min(timed_runs) if timed_runs else runs[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tensor", default="../shared/datasets/tensors/med.tns")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    args = parser.parse_args()
    tensor = os.path.abspath(args.tensor)

    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, einsql {args.binary}, {args.tensor}, one thread, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    (i, j, k), t = read_tns(tensor)
    ni, nj, nk = (int(c.max()) + 1 for c in (i, j, k))
    rng = np.random.default_rng(args.seed)
    a = sp.csr_matrix((t, (i, j)), shape=(ni, nj))
    b = sp.csr_matrix((t, (j, k)), shape=(nj, nk))
    x = 1.0 - rng.random(nj)
    fi = 1.0 - rng.random((ni, 8))
    fk = 1.0 - rng.random((nk, 8))
    rows = sp.csr_matrix((t, (j, np.arange(len(t)))), shape=(nj, len(t)))
    baselines = {
        "BATAx": [("A.T @ (A @ x)", lambda: float((a.T @ (a @ x)).sum()))],
        "ΣMMM": [
            ("(A @ B).sum()", lambda: float((a @ b).sum())),
            ("A.sum(0) @ B.sum(1)", lambda: (np.asarray(a.sum(axis=0)) @ np.asarray(b.sum(axis=1))).item()),
        ],
        "MTTKRP": [("Khatri-Rao rows", lambda: float((rows @ (fi[i] * fk[k])).sum()))],
    }
    failed = False
    print("kernel,einsql_declared_s,einsql_undeclared_s,scipy,scipy_s,sum_declared,sum_undeclared,sum_scipy")
    with tempfile.TemporaryDirectory() as folder:
        write_sparse(f"{folder}/A.mtx", a.tocoo())
        write_sparse(f"{folder}/B.mtx", b.tocoo())
        write_vector(f"{folder}/x.tns", x)
        write_dense(f"{folder}/FI.mtx", fi)
        write_dense(f"{folder}/FK.mtx", fk)
        for kernel in KERNELS:
            on, off = (
                best([einsql_time(args.binary, folder, tensor, kernel, declared, args.timeout)
                      for _ in range(args.repeat)])
                for declared in (True, False)
            )
            for name, baseline in baselines[kernel]:
                seconds, value = timed(baseline, args.repeat)
                for got in (on[1], off[1]):
                    if not isinstance(got, float) or abs(got - value) > 1e-9 * abs(value):
                        print(f"{kernel}: einsql gave {got}, scipy {value}", file=sys.stderr)
                        failed = True
                fmt = lambda s: "" if s is None else f"{s:.4f}"
                print(
                    f"{kernel},{fmt(on[0])},{fmt(off[0])},{name},{seconds:.4f},{on[1]},{off[1]},{value!r}",
                    flush=True,
                )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
