"""SystemML's fused-operator patterns (issue 20) on generated data:
einsql against numpy/scipy, one thread each, the same data, in one run.

    Cell    s = SUM(i,j) X[i,j] * Y[i,j] * Z[i,j]          X sparse, Y, Z dense
    MAgg    a = SUM(i,j) X[i,j] * Y[i,j]; b = SUM(i,j) X[i,j] * Z[i,j];
            (two einsum statements, times added), and the same two sums
            as one SQL query (MAgg SQL)
    Row     r[j] = SUM(i) X[i,j] * (w[i] * SUM(k) X[i,k] * v[k])
            i.e. Xᵀ(w ⊙ (X v)), X tall and sparse
    SpMM    C[i,k] = SUM(j) X[i,j] * B[j,k]                 B dense, rank columns
    SDDMM   C[i,j] = SUM(k) X[i,j] * U[i,k] * V[j,k]        U, V dense
    MTTKRP  M[i,r] = SUM(j,k) T[i,j,k] * B[j,r] * C[k,r]    T is tensors/med.tns

Each einsql statement runs in four new shells: as it is, with the `fuse`
phase switched off (`SET disabled_optimizers = 'fuse'`: each query makes
its own pass; it matters for MAgg and Row), with issue 20's phases
switched off (`SET disabled_optimizers = 'mask, dense, fuse'`), and with
`SET optimizer = 'none'` (the default plan). Its times are the shell's
`.timer` figures for the statements alone: optimization, index builds
and the run; loading the files is not timed, but the timeout covers the
whole shell. Every system runs `--repeat` times (default 5) and its best
time is reported: einsql's statements one after the other in the same
shell (the first repetition's time, which builds indexes and meets cold
memory, is the column einsql_first_s), the baselines and the hand-written
loops in one process each. The baselines (one thread, OMP_NUM_THREADS=1):

    Cell    scipy X.multiply(Y).multiply(Z).sum(); alt: numpy gathering Y, Z
            at X's entries, (x * Y[rows, cols] * Z[rows, cols]).sum()
    MAgg    the same two, for both sums
    Row     scipy X.T @ (w * (X @ v)) on CSR; alt: the same on CSC
    SpMM    scipy X @ B on CSR; alt: none
    SDDMM   numpy's sampled product, x * einsum('ij,ij->i', U[rows], V[cols])
            (as in outer.py); alt: none
    MTTKRP  gathered Khatri-Rao rows B[j] * C[k] summed into M by a scipy
            CSR matrix (one row per i) times them; alt: np.add.at

SpMM, SDDMM and MTTKRP also run as hand-written single-threaded Rust loops
over the same arrays (benches/handwritten.rs, built with `cargo bench
--no-run` unless --handwritten names its executable; the best of
`--repeat` runs), the column rust_s.

Every einsql value (the sum of the result's entries) is compared with the
baseline's to a relative 1e-9; a mismatch is printed to stderr and makes
the exit status 1. X has entries at uniformly random positions, values in
(0, 1]; dense operands have values in (0, 1]. Matrix Market files are
written by mtx.py, with 17 significant digits (they read back exactly).

Run it through scripts/bench-systemml (arguments go to this script):

    scripts/bench-systemml --binary target/release/einsql \\
        --csv docs/bench/systemml.csv --plot docs/bench/systemml.png
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

import numpy as np
import scipy
import scipy.sparse as sp
from einsql_shell import run_shell
from mtx import write_dense, write_sparse

PATTERNS = ["cell", "magg", "magg-sql", "row", "spmm", "sddmm", "mttkrp"]
PHASES_OFF = "mask, dense, fuse"
TOLERANCE = 1e-9
COLUMNS = [
    "pattern", "shape", "density", "nnz", "einsql_s", "einsql_first_s", "einsql_nofuse_s",
    "einsql_off_s",
    "einsql_none_s", "scipy_s", "alt_s", "rust_s", "value_einsql", "value_nofuse", "value_off",
    "value_none", "value_scipy", "check",
]


# ---------------------------------------------------------------- files


def read_tns(path: str):
    """A FROSTT file's 0-based coordinates (one array per dimension) and
    values."""
    data = np.loadtxt(path, comments="#", ndmin=2)
    coords = [data[:, d].astype(np.int64) - 1 for d in range(data.shape[1] - 1)]
    return coords, data[:, -1]


# ---------------------------------------------------------------- einsql


def run_einsql(binary, loads, statements, queries, setting, timeout, threads, repeat):
    """Run `statements` `repeat` times in a new shell after `loads` (lines
    that create the tables), with `setting` (a SET line, or ''); then
    `queries`, each of which prints one column `v` of one row. Returns the
    best of the repetitions' summed `.timer` figures, the values and the
    first repetition's time, or None, a message and None when the shell
    failed or did not finish in `timeout` seconds."""
    script = "\n".join(
        [
            f"SET threads = {threads};",
            setting,
            f"SET memory_limit = '{os.environ.get('EINSQL_MEMORY_LIMIT', '8GB')}';",
            *loads,
            ".timer on",
            *statements * max(repeat, 1),
            ".timer off",
            ".mode csv",
            *queries,
        ]
    )
    done = run_shell(binary, script, timeout)
    if done is None:
        return None, f"not finished in {timeout:g} s", None
    out = done.stdout + done.stderr
    failed = [line for line in out.splitlines() if "rror" in line or "panicked" in line]
    if failed or done.returncode != 0:
        message = failed[0] if failed else f"exit status {done.returncode}"
        return None, message.strip()[:160], None
    times = [float(t) for t in re.findall(r"Run Time: ([0-9.]+) s", out)]
    lines = out.splitlines()
    values = [float(lines[n + 1]) for n, line in enumerate(lines) if line == "v"]
    n = len(statements)
    if len(times) != n * max(repeat, 1) or len(values) != len(queries):
        return None, "unexpected shell output: " + " | ".join(lines[-3:]), None
    sums = [sum(times[at : at + n]) for at in range(0, len(times), n)]
    return min(sums), values, sums[0]


def handwritten(executable, pattern, folder, rank, coords, values, dense, repeat):
    """The hand-written loop's best time and its result's sum: `coords`
    (one array per dimension, sorted by the first) and `values` of the
    sparse operand and the `dense` factors (name: array) are written as
    raw little-endian files for it. None without an executable."""
    if executable is None:
        return None
    for name, column in zip("ijk", coords):
        np.asarray(column, dtype="<i8").tofile(f"{folder}/X.{name}.i64")
    np.asarray(values, dtype="<f8").tofile(f"{folder}/X.v.f64")
    for name, array in dense.items():
        np.ascontiguousarray(array, dtype="<f8").tofile(f"{folder}/{name}.f64")
    done = subprocess.run(
        [executable, pattern, folder, str(rank), str(max(repeat, 1))],
        capture_output=True, text=True, check=True,
    )
    seconds, total = done.stdout.strip().split(",")
    return float(seconds), float(total)


def sorted_coo(rows, cols, values, *more):
    """The entries sorted by row, then column (and the further
    coordinates)."""
    order = np.lexsort(tuple(reversed((rows, cols, *more))))
    return [rows[order], cols[order], *(m[order] for m in more)], values[order]


def build_handwritten() -> str:
    """Builds benches/handwritten.rs (optimized) and returns its
    executable."""
    done = subprocess.run(
        ["cargo", "bench", "--no-run", "--bench", "handwritten", "--message-format=json"],
        capture_output=True, text=True, check=True,
    )
    for line in done.stdout.splitlines():
        message = json.loads(line)
        if message.get("target", {}).get("name") == "handwritten" and message.get("executable"):
            return message["executable"]
    raise RuntimeError("cargo built no handwritten executable")


def load_mtx(folder: str, name: str) -> str:
    return f"CREATE TABLE {name} AS SELECT * FROM read_mtx('{folder}/{name}.mtx');"


def load_vector(folder: str, name: str) -> str:
    """A one-column array file, name.mtx, read as a vector name[i]."""
    return (
        f"CREATE TABLE {name}0 AS SELECT * FROM read_mtx('{folder}/{name}.mtx');\n"
        f"{name}[i] = {name}0[i,0];"
    )


# ---------------------------------------------------------------- baselines


def timed(fn, repeat):
    """The best time of `repeat` calls of `fn`, and its value."""
    best = float("inf")
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        value = fn()
        best = min(best, time.perf_counter() - start)
    return best, value


def random_sparse(rng, m, n, density):
    return sp.random(
        m, n, density=density, format="coo", random_state=rng,
        data_rvs=lambda k: 1.0 - rng.random(k),
    )


def dense(rng, *shape):
    return 1.0 - rng.random(shape)


class Bench:
    """The runs of one invocation: options, rows of results, mismatches."""

    def __init__(self, args):
        self.args = args
        self.rows: list[dict] = []
        self.mismatches: list[str] = []
        self.out = csv.DictWriter(sys.stdout, COLUMNS, lineterminator="\n")

    def einsql(self, loads, statements, queries):
        """The four einsql runs: (best time, values or message, first
        time) each; a skipped run is (None, 'skipped', None)."""
        a = self.args
        settings = {
            "on": "",
            "nofuse": "SET disabled_optimizers = 'fuse';",
            "off": f"SET disabled_optimizers = '{PHASES_OFF}';",
            "none": "SET optimizer = 'none';",
        }
        runs = {}
        for key, setting in settings.items():
            if key in a.skip:
                runs[key] = (None, "skipped", None)
                continue
            runs[key] = run_einsql(
                a.binary, loads, statements, queries, setting, a.timeout, a.threads, a.repeat
            )
        return runs

    def record(self, pattern, shape, density, nnz, runs, base, alt, expected, rust=None):
        """One row: compare each einsql run's values (and the hand-written
        loop's, `rust`: (seconds, value) or None) with `expected` and print
        the row."""
        check = "not compared"  # no einsql run gave a value
        if rust is not None:
            runs = {**runs, "rust": (rust[0], [rust[1]], None)}
        for key, (seconds, values, _) in runs.items():
            if seconds is None:
                if values != "skipped":
                    print(f"{pattern} {shape} density {density}: einsql ({key}): {values}",
                          file=sys.stderr, flush=True)
                continue
            if check == "not compared":
                check = "ok"
            for got, want in zip(values, expected):
                if not abs(got - want) <= TOLERANCE * max(abs(want), 1e-300):
                    check = "MISMATCH"
                    message = (
                        f"MISMATCH {pattern} {shape} density {density}: einsql ({key}) "
                        f"{got!r} against numpy/scipy {want!r}"
                    )
                    self.mismatches.append(message)
                    print("!" * 8, message, file=sys.stderr, flush=True)

        def shown(run):
            seconds, values, _ = run
            return " ".join(repr(v) for v in values) if seconds is not None else values

        fmt = lambda t: "" if t is None else f"{t:.4g}"
        row = {
            "pattern": pattern, "shape": shape, "density": f"{density:g}" if density else "",
            "nnz": nnz,
            "einsql_s": fmt(runs["on"][0]), "einsql_first_s": fmt(runs["on"][2]),
            "einsql_nofuse_s": fmt(runs["nofuse"][0]),
            "einsql_off_s": fmt(runs["off"][0]),
            "einsql_none_s": fmt(runs["none"][0]),
            "scipy_s": fmt(base), "alt_s": fmt(alt),
            "rust_s": fmt(rust[0] if rust else None),
            "value_einsql": shown(runs["on"]), "value_nofuse": shown(runs["nofuse"]),
            "value_off": shown(runs["off"]),
            "value_none": shown(runs["none"]),
            "value_scipy": " ".join(repr(v) for v in expected), "check": check,
        }
        self.rows.append(row)
        self.out.writerow(row)
        sys.stdout.flush()


# ---------------------------------------------------------------- patterns


def cell_and_magg(bench: Bench, rng, folder: str, patterns) -> None:
    """Cell, MAgg and MAgg SQL on X m x m at each density, Y, Z dense."""
    a = bench.args
    m = a.cell_size
    y, z = dense(rng, m, m), dense(rng, m, m)
    write_dense(f"{folder}/Y.mtx", y)
    write_dense(f"{folder}/Z.mtx", z)
    loads = [load_mtx(folder, t) for t in ("X", "Y", "Z")]
    shape = f"{m}x{m}"
    for density in [float(d) for d in a.cell_densities.split(",")]:
        x = random_sparse(rng, m, m, density)
        write_sparse(f"{folder}/X.mtx", x)
        csr = x.tocsr()
        rows, cols = x.row, x.col
        if "cell" in patterns:
            base, value = timed(lambda: float(csr.multiply(y).multiply(z).sum()), a.repeat)
            alt, _ = timed(
                lambda: float((x.data * y[rows, cols] * z[rows, cols]).sum()), a.repeat
            )
            runs = bench.einsql(
                loads, ["s = SUM(i,j) X[i,j] * Y[i,j] * Z[i,j];"], ["SELECT v FROM s;"]
            )
            bench.record("Cell", shape, density, x.nnz, runs, base, alt, [value])
        if "magg" in patterns or "magg-sql" in patterns:
            base, values = timed(
                lambda: (float(csr.multiply(y).sum()), float(csr.multiply(z).sum())), a.repeat
            )
            alt, _ = timed(
                lambda: (
                    float((x.data * y[rows, cols]).sum()),
                    float((x.data * z[rows, cols]).sum()),
                ),
                a.repeat,
            )
        if "magg" in patterns:
            runs = bench.einsql(
                loads,
                ["a = SUM(i,j) X[i,j] * Y[i,j];", "b = SUM(i,j) X[i,j] * Z[i,j];"],
                ["SELECT v FROM a;", "SELECT v FROM b;"],
            )
            bench.record("MAgg", shape, density, x.nnz, runs, base, alt, list(values))
        if "magg-sql" in patterns:
            runs = bench.einsql(
                loads,
                [
                    "CREATE OR REPLACE TABLE ab AS SELECT SUM(x.v * y.v) AS a, SUM(x.v * z.v) AS b "
                    "FROM X x, Y y, Z z WHERE x.i = y.i AND x.j = y.j "
                    "AND x.i = z.i AND x.j = z.j;"
                ],
                ["SELECT a AS v FROM ab;", "SELECT b AS v FROM ab;"],
            )
            bench.record("MAgg SQL", shape, density, x.nnz, runs, base, alt, list(values))


def row(bench: Bench, rng, folder: str) -> None:
    """Xᵀ(w ⊙ (X v)) with X rows x cols sparse."""
    a = bench.args
    m, n = a.row_rows, a.row_cols
    x = random_sparse(rng, m, n, a.row_density)
    w, v = dense(rng, m), dense(rng, n)
    write_sparse(f"{folder}/X.mtx", x)
    write_dense(f"{folder}/w.mtx", w)
    write_dense(f"{folder}/v.mtx", v)
    csr, csc = x.tocsr(), x.tocsc()
    base, value = timed(lambda: float((csr.T @ (w * (csr @ v))).sum()), a.repeat)
    alt, _ = timed(lambda: float((csc.T @ (w * (csc @ v))).sum()), a.repeat)
    runs = bench.einsql(
        [load_mtx(folder, "X"), load_vector(folder, "w"), load_vector(folder, "v")],
        ["r[j] = SUM(i) X[i,j] * (w[i] * SUM(k) X[i,k] * v[k]);"],
        ["SELECT SUM(v) AS v FROM r;"],
    )
    bench.record("Row", f"{m}x{n}", a.row_density, x.nnz, runs, base, alt, [value])


def spmm_and_sddmm(bench: Bench, rng, folder: str, patterns) -> None:
    """SpMM and SDDMM on X m x m at each density, rank dense columns."""
    a = bench.args
    m, r = a.spmm_size, a.rank
    b, u, v = dense(rng, m, r), dense(rng, m, r), dense(rng, m, r)
    for name, arr in (("B", b), ("U", u), ("V", v)):
        write_dense(f"{folder}/{name}.mtx", arr)
    shape = f"{m}x{m}, rank {r}"
    for density in [float(d) for d in a.spmm_densities.split(",")]:
        x = random_sparse(rng, m, m, density)
        write_sparse(f"{folder}/X.mtx", x)
        coords, values = sorted_coo(x.row, x.col, x.data)
        if "spmm" in patterns:
            csr = x.tocsr()
            base, value = timed(lambda: float((csr @ b).sum()), a.repeat)
            rust = handwritten(
                a.handwritten, "spmm", folder, r, coords, values, {"B": b}, a.repeat
            )
            runs = bench.einsql(
                [load_mtx(folder, "X"), load_mtx(folder, "B")],
                ["C[i,k] = SUM(j) X[i,j] * B[j,k];"],
                ["SELECT SUM(v) AS v FROM C;"],
            )
            bench.record("SpMM", shape, density, x.nnz, runs, base, None, [value], rust)
        if "sddmm" in patterns:
            rows, cols = x.row, x.col
            base, value = timed(
                lambda: float((x.data * np.einsum("ij,ij->i", u[rows], v[cols])).sum()), a.repeat
            )
            rust = handwritten(
                a.handwritten, "sddmm", folder, r, coords, values, {"U": u, "V": v}, a.repeat
            )
            runs = bench.einsql(
                [load_mtx(folder, t) for t in ("X", "U", "V")],
                ["C[i,j] = SUM(k) X[i,j] * U[i,k] * V[j,k];"],
                ["SELECT SUM(v) AS v FROM C;"],
            )
            bench.record("SDDMM", shape, density, x.nnz, runs, base, None, [value], rust)


def mttkrp(bench: Bench, rng, folder: str) -> None:
    """MTTKRP on a FROSTT tensor with rank dense factors."""
    a = bench.args
    (i, j, k), t = read_tns(a.tensor)
    dims = [int(c.max()) + 1 for c in (i, j, k)]
    r = a.rank
    b, c = dense(rng, dims[1], r), dense(rng, dims[2], r)
    write_dense(f"{folder}/B.mtx", b)
    write_dense(f"{folder}/C.mtx", c)

    def khatri_rao():
        # One CSR row per i sums the gathered rows t * B[j] * C[k].
        rows = sp.csr_matrix((t, (i, np.arange(len(t)))), shape=(dims[0], len(t)))
        return rows @ (b[j] * c[k])

    def add_at():
        out = np.zeros((dims[0], r))
        np.add.at(out, i, t[:, None] * b[j] * c[k])
        return out

    base, value = timed(lambda: float(khatri_rao().sum()), a.repeat)
    alt, _ = timed(lambda: float(add_at().sum()), a.repeat)
    coords, values = sorted_coo(i, j, t, k)
    rust = handwritten(
        a.handwritten, "mttkrp", folder, r, coords, values, {"B": b, "C": c}, a.repeat
    )
    runs = bench.einsql(
        [
            f"CREATE TABLE T AS SELECT * FROM read_tns('{os.path.abspath(a.tensor)}');",
            load_mtx(folder, "B"),
            load_mtx(folder, "C"),
        ],
        ["M[i,r] = SUM(j,k) T[i,j,k] * B[j,r] * C[k,r];"],
        ["SELECT SUM(v) AS v FROM M;"],
    )
    shape = "x".join(map(str, dims)) + f", rank {r}"
    bench.record("MTTKRP", shape, None, len(t), runs, base, alt, [value], rust)


# ---------------------------------------------------------------- main


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    parser.add_argument("--only", default="", help="comma-separated patterns: " + ", ".join(PATTERNS))
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per einsql shell")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--repeat", type=int, default=5,
        help="runs per system: einsql's statements in one shell, the others in one process",
    )
    parser.add_argument("--seed", type=int, default=20)
    parser.add_argument(
        "--skip", default="",
        help="einsql runs to skip, comma-separated: on, nofuse, off, none",
    )
    parser.add_argument("--cell-size", type=int, default=5000, help="Cell/MAgg: X, Y, Z are m x m")
    parser.add_argument("--cell-densities", default="1e-3,1e-2,1e-1")
    parser.add_argument("--row-rows", type=int, default=1_000_000)
    parser.add_argument("--row-cols", type=int, default=100)
    parser.add_argument("--row-density", type=float, default=0.05)
    parser.add_argument("--spmm-size", type=int, default=100_000, help="SpMM/SDDMM: X is m x m")
    parser.add_argument("--spmm-densities", default="1e-5,1e-4")
    parser.add_argument("--rank", type=int, default=32)
    parser.add_argument(
        "--tensor",
        default=os.path.join(
            os.environ.get("EINSQL_DATA", "../shared/datasets"), "tensors/med.tns"
        ),
    )
    parser.add_argument("--tmpdir", default=None, help="where the data files go")
    parser.add_argument(
        "--handwritten", default=None,
        help="the executable of benches/handwritten.rs ('none' to skip it); built when not given",
    )
    parser.add_argument("--csv", help="also write the rows to this CSV file")
    parser.add_argument("--plot", help="also draw time against nnz into this PNG file")
    args = parser.parse_args()
    args.skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if args.handwritten == "none":
        args.handwritten = None
    elif args.handwritten is None and {"spmm", "sddmm", "mttkrp"} & set(
        p.strip().lower() for p in (args.only.split(",") if args.only else PATTERNS)
    ):
        args.handwritten = build_handwritten()
    patterns = [p.strip().lower() for p in args.only.split(",") if p.strip()] or PATTERNS
    unknown = [p for p in patterns if p not in PATTERNS]
    if unknown:
        parser.error(f"unknown pattern {unknown[0]!r}; patterns: {', '.join(PATTERNS)}")

    print(
        f"# {platform.processor() or platform.machine()}, python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, einsql {args.binary}, "
        f"threads {args.threads}, off = '{PHASES_OFF}', load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}, {time.strftime('%Y-%m-%d %H:%M:%S %Z')}",
        flush=True,
    )
    bench = Bench(args)
    bench.out.writeheader()
    rng = np.random.default_rng(args.seed)
    with tempfile.TemporaryDirectory(dir=args.tmpdir) as folder:
        if {"cell", "magg", "magg-sql"} & set(patterns):
            cell_and_magg(bench, rng, folder, patterns)
        if "row" in patterns:
            row(bench, rng, folder)
        if {"spmm", "sddmm"} & set(patterns):
            spmm_and_sddmm(bench, rng, folder, patterns)
        if "mttkrp" in patterns:
            mttkrp(bench, rng, folder)
    print(
        f"# done {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, load average "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}",
        flush=True,
    )
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            writer = csv.DictWriter(f, COLUMNS, lineterminator="\n")
            writer.writeheader()
            writer.writerows(bench.rows)
    if args.plot:
        plot(bench.rows, args, args.plot)
    if bench.mismatches:
        print(f"{len(bench.mismatches)} MISMATCH(ES):", file=sys.stderr)
        for message in bench.mismatches:
            print("  " + message, file=sys.stderr)
        return 1
    return 0


def plot(rows, args, path: str) -> None:
    """Time against nnz, log-log, one panel a pattern with more than one
    size; a run that did not finish (or failed) is drawn at the timeout
    with an upward arrow."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    names = []
    for r in rows:
        if r["pattern"] not in names and sum(s["pattern"] == r["pattern"] for s in rows) > 1:
            names.append(r["pattern"])
    if not names:
        return
    series = [
        ("einsql_s", "value_einsql", "einsql", "o-"),
        ("einsql_nofuse_s", "value_nofuse", "einsql, fuse off", "P:"),
        ("einsql_off_s", "value_off", f"einsql, {PHASES_OFF} off", "s--"),
        ("einsql_none_s", "value_none", "einsql, optimizer none", "d-."),
        ("scipy_s", None, "numpy/scipy", "^-"),
        ("alt_s", None, "numpy/scipy alternative", "v:"),
        ("rust_s", None, "hand-written Rust loop", "x-"),
    ]
    columns = min(3, len(names) + 1)
    lines = -(-(len(names) + 1) // columns)
    fig, axes = plt.subplots(
        lines, columns, figsize=(3.6 * columns, 3.2 * lines), squeeze=False
    )
    panels = [ax for line in axes for ax in line]
    handles = {}
    for ax, name in zip(panels, names):
        chosen = [r for r in rows if r["pattern"] == name]
        nnz = [int(r["nnz"]) for r in chosen]
        for key, value_key, label, style in series:
            values = [r[key] for r in chosen]
            if value_key is None and all(v == "" for v in values):
                continue
            if value_key and all(r[value_key] == "skipped" for r in chosen):
                continue
            shown = [args.timeout if v == "" else float(v) for v in values]
            line = ax.plot(nnz, shown, style, label=label)[0]
            handles.setdefault(label, line)
            for n, v in zip(nnz, values):
                if v == "":
                    ax.annotate("", (n, args.timeout * 1.6), (n, args.timeout),
                                arrowprops={"arrowstyle": "->", "color": line.get_color()})
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
        ax.set_xlabel("stored entries of X", fontsize=8)
        ax.set_ylabel("seconds (one thread)", fontsize=8)
        ax.set_title(f"{name}, {chosen[0]['shape']}", fontsize=9)
        ax.grid(True, which="both", alpha=0.3)
    for ax in panels[len(names):]:
        ax.axis("off")
    panels[len(names)].legend(
        handles.values(), handles.keys(), loc="center", fontsize=8,
        title="not finished: drawn at the timeout, arrow up", title_fontsize=7,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
