"""SystemML's Outer pattern: the weighted KL (Poisson) loss of a sparse
matrix X against a dense low-rank product U·Vᵀ,

    s = SUM(i,j) X[i,j] * ln((SUM(k) U[i,k] * V[j,k]) + 1e-15)

computed by einsql with its `mask` phase (the nested SUM(k) only where X is
stored), by einsql with that phase switched off (`SET disabled_optimizers =
'mask'`: the nested SUM(k) over every (i, j)), by numpy computing the dense
product U @ V.T and scipy multiplying X into its logarithm (what a user
writes without SystemML), and by scipy computing U·Vᵀ only at X's entries
(the hand-written sampled product, for reference). One thread each, the
same data, one run.

X is m × m with entries at uniformly random positions (values in (0, 1]),
U and V are m × rank with values in (0, 1]. einsql runs as the `einsql`
shell binary on Matrix Market files this script writes; its times are the
shell's `.timer` figures for the statement alone (loading is not timed).
Each einsql run has a timeout, past which it is reported as not finished.

Run it through scripts/bench-outer.
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

STATEMENT = "s = SUM(i,j) X[i,j] * ln((SUM(k) U[i,k] * V[j,k]) + 1e-15);"


def run_einsql(binary: str, folder: str, disabled: str, timeout: float, threads: int):
    """The statement's time and value from the shell (None, message when it
    did not finish)."""
    script = "\n".join(
        [
            f"SET threads = {threads};",
            f"SET disabled_optimizers = '{disabled}';" if disabled else "",
            f"SET memory_limit = '{os.environ.get('EINSQL_MEMORY_LIMIT', '8GB')}';",
            f"CREATE TABLE X AS SELECT * FROM read_mtx('{folder}/X.mtx');",
            f"CREATE TABLE U AS SELECT * FROM read_mtx('{folder}/U.mtx');",
            f"CREATE TABLE V AS SELECT * FROM read_mtx('{folder}/V.mtx');",
            ".timer on",
            STATEMENT,
            ".mode csv",
            "SELECT v FROM s;",
        ]
    )
    return time_and_value(binary, script, timeout)


def timed(fn):
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=20_000, help="m: X is m x m")
    parser.add_argument("--rank", type=int, default=100)
    parser.add_argument(
        "--sparsities", default="1e-4,1e-3,1e-2", help="comma-separated densities of X"
    )
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    parser.add_argument("--skip-off", action="store_true", help="skip einsql with the phase off")
    parser.add_argument("--skip-numpy", action="store_true", help="skip numpy's dense product")
    parser.add_argument("--plot", help="also draw time against nnz(X) into this PNG file")
    args = parser.parse_args()

    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, einsql {args.binary}, threads {args.threads}, "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "density,nnz,einsql_mask_s,einsql_off_s,numpy_dense_s,scipy_sampled_s,"
        "value_mask,value_off,value_numpy"
    )
    rows = []
    rng = np.random.default_rng(args.seed)
    m, r = args.size, args.rank
    u = 1.0 - rng.random((m, r))
    v = 1.0 - rng.random((m, r))
    with tempfile.TemporaryDirectory() as folder:
        write_dense(f"{folder}/U.mtx", u)
        write_dense(f"{folder}/V.mtx", v)
        for density in [float(d) for d in args.sparsities.split(",")]:
            x = sp.random(
                m, m, density=density, format="coo", random_state=rng,
                data_rvs=lambda n: 1.0 - rng.random(n),
            )
            write_sparse(f"{folder}/X.mtx", x)
            mask_s, mask_v = run_einsql(args.binary, folder, "", args.timeout, args.threads)
            if args.skip_off:
                off_s, off_v = None, "skipped"
            else:
                off_s, off_v = run_einsql(
                    args.binary, folder, "mask", args.timeout, args.threads
                )
            if args.skip_numpy:
                dense_s, dense_v = None, "skipped"
            else:
                csr = x.tocsr()
                dense_s, dense_v = timed(
                    lambda: float(csr.multiply(np.log(u @ v.T + 1e-15)).sum())
                )
            at_rows, at_cols = x.row, x.col
            sampled_s, _ = timed(
                lambda: float(
                    (x.data * np.log(np.einsum("ij,ij->i", u[at_rows], v[at_cols]) + 1e-15)).sum()
                )
            )
            rows.append((x.nnz, mask_s, off_s, dense_s, sampled_s))
            fmt = lambda t: "" if t is None else f"{t:.4f}"
            print(
                f"{density:g},{x.nnz},{fmt(mask_s)},{fmt(off_s)},{fmt(dense_s)},"
                f"{fmt(sampled_s)},{mask_v},{off_v},{dense_v}",
                flush=True,
            )
    if args.plot:
        plot(rows, args, args.plot)


def plot(rows, args, path: str) -> None:
    """Time against nnz(X), log-log; a run that did not finish is drawn
    at the timeout with an upward arrow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    nnz = [r[0] for r in rows]
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    series = [
        (1, "einsql (mask phase)", "o-"),
        (2, f"einsql, mask off (not finished in {args.timeout:.0f} s)", "s--"),
        (3, "numpy dense U @ V.T", "^-"),
        (4, "scipy sampled (hand-written)", "v:"),
    ]
    skipped = {2: args.skip_off, 3: args.skip_numpy}
    for column, label, style in series:
        if skipped.get(column):
            continue
        times = [r[column] for r in rows]
        shown = [args.timeout if t is None else t for t in times]
        line = ax.plot(nnz, shown, style, label=label)[0]
        for n, t in zip(nnz, times):
            if t is None:
                ax.annotate("", (n, args.timeout * 1.6), (n, args.timeout),
                            arrowprops={"arrowstyle": "->", "color": line.get_color()})
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("stored entries of X")
    ax.set_ylabel("seconds (one thread)")
    ax.set_title(
        f"weighted KL loss, X {args.size:,} x {args.size:,}, rank {args.rank}", fontsize=10
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
