"""Tiled matrix products: C = A B for n × n matrices (default 2,048)
through declared tiled indexes of t × t tiles (default 256):

    CREATE INDEX a_t ON A (i, k) USING (tiles(256, 256));
    CREATE INDEX b_t ON B (k, j) USING (tiles(256, 256));
    C[i,j] = SUM(k) A[i,k] * B[k,j];

timed for einsql over the tiles, for einsql without the tiled indexes (its
dense kernel, which scatters both operands into arrays first), and for
numpy's `A @ B` on dense arrays; first for full A and B, then for
block-sparse ones, each holding `--present` of its tiles (rounded;
chosen at random, a present tile full). One thread each (the shell with `SET
threads = 1`, OpenBLAS with one thread), the same data, one run.

Values are in (0, 1]. einsql runs as the `einsql` shell binary on Matrix
Market files this script writes; its times are the shell's `.timer`
figures for the statement alone (loading and the tiled indexes' builds
are not timed; the builds are reported apart). The kernel each einsql run
used is read from its EXPLAIN and printed. Each configuration runs
`--repeat` times in one process (einsql: one shell per configuration,
the statement repeated); the best time is reported, and the first run's
in columns of its own (einsql's first statement pays for fresh memory).
The sums of C are printed to check that the answers agree.

Run it through scripts/bench-tiles.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import tempfile
import time

import numpy as np
import scipy.sparse as sp

from einsql_shell import run_shell
from mtx import write_sparse

STATEMENT = "C[i,j] = SUM(k) A[i,k] * B[k,j]"


def run_einsql(binary: str, folder: str, tile: int, tiled: bool, timeout: float, repeat: int):
    """(best statement seconds, index build seconds or None, sum of C,
    kernel named by EXPLAIN, first statement seconds) of the statement run
    `repeat` times in one shell, or (None, message, None, None, None) when
    it failed."""
    indexes = [
        f"CREATE INDEX a_t ON A (i, k) USING (tiles({tile}, {tile}));",
        f"CREATE INDEX b_t ON B (k, j) USING (tiles({tile}, {tile}));",
    ]
    script = "\n".join(
        [
            "SET threads = 1;",
            f"SET memory_limit = '{os.environ.get('EINSQL_MEMORY_LIMIT', '8GB')}';",
            f"CREATE TABLE A AS SELECT * FROM read_mtx('{folder}/A.mtx', keys = ['i', 'k']);",
            f"CREATE TABLE B AS SELECT * FROM read_mtx('{folder}/B.mtx', keys = ['k', 'j']);",
            ".timer on",
            *(indexes if tiled else []),
            *[f"{STATEMENT};"] * repeat,
            ".timer off",
            f"EXPLAIN {STATEMENT};",
            ".mode csv",
            "SELECT SUM(v) AS v FROM C;",
        ]
    )
    done = run_shell(binary, script, timeout * repeat)
    if done is None:
        return None, f"not finished in {timeout * repeat:.0f} s", None, None, None
    out = done.stdout + done.stderr
    if "rror" in out:
        line = next(line for line in out.splitlines() if "rror" in line)
        return None, line.strip()[:120], None, None, None
    times = [float(t) for t in re.findall(r"Run Time: ([0-9.]+) s", out)]
    build = sum(times[:2]) if tiled else None
    statements = times[2:] if tiled else times
    kernel = re.search(r"(tiled|dense) matrix product", out)
    lines = out.splitlines()
    total = float(lines[lines.index("v") + 1])
    return min(statements), build, total, kernel.group(1) if kernel else "loops", statements[0]


def block_sparse(rng, n: int, tile: int, present: float) -> tuple[np.ndarray, int]:
    """An n × n matrix with `present` of its tiles (rounded, at least one;
    chosen at random) full, the others 0; and how many are present."""
    blocks = -(-n // tile)
    count = max(1, round(present * blocks * blocks))
    keep = np.zeros(blocks * blocks, dtype=bool)
    keep[rng.choice(blocks * blocks, size=count, replace=False)] = True
    keep = keep.reshape(blocks, blocks)
    mask = np.kron(keep, np.ones((tile, tile), dtype=bool))[:n, :n]
    return np.where(mask, 1.0 - rng.random((n, n)), 0.0), count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=2048, help="n: A and B are n x n")
    parser.add_argument("--tile", type=int, default=256, help="t: tiles are t x t")
    parser.add_argument("--present", type=float, default=0.1, help="share of tiles present")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--seed", type=int, default=23)
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    parser.add_argument("--folder", default=None, help="where to write the files (a temporary folder)")
    args = parser.parse_args()

    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__} "
        f"(OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}), "
        f"einsql {args.binary}, one thread, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        "case,tiles_present_a,tiles_present_b,einsql_tiled_s,einsql_dense_kernel_s,numpy_s,"
        "tile_build_s,kernel_tiled,kernel_untiled,sum_tiled,sum_dense_kernel,sum_numpy,"
        "einsql_tiled_first_s,einsql_dense_kernel_first_s,numpy_first_s"
    )
    rng = np.random.default_rng(args.seed)
    n, tile = args.size, args.tile
    blocks = (-(-n // tile)) ** 2
    with tempfile.TemporaryDirectory(dir=args.folder) as folder:
        cases = [
            ("dense", (1.0 - rng.random((n, n)), blocks), (1.0 - rng.random((n, n)), blocks)),
            ("block-sparse", block_sparse(rng, n, tile, args.present), block_sparse(rng, n, tile, args.present)),
        ]
        for name, (a, tiles_a), (b, tiles_b) in cases:
            write_sparse(f"{folder}/A.mtx", sp.coo_matrix(a))
            write_sparse(f"{folder}/B.mtx", sp.coo_matrix(b))
            best = {
                tiled: run_einsql(args.binary, folder, tile, tiled, args.timeout, args.repeat)
                for tiled in (True, False)
            }
            numpy_times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                c = a @ b
                numpy_times.append(time.perf_counter() - start)
            fmt = lambda t: "" if t is None else f"{t:.4f}"
            on, off = best[True], best[False]
            print(
                f"{name},{tiles_a}/{blocks},{tiles_b}/{blocks},{fmt(on[0])},{fmt(off[0])},"
                f"{fmt(min(numpy_times))},{fmt(on[1])},{on[3]},{off[3]},{on[2]!r},{off[2]!r},"
                f"{float(c.sum())!r},{fmt(on[4])},{fmt(off[4])},{fmt(numpy_times[0])}",
                flush=True,
            )


if __name__ == "__main__":
    main()
