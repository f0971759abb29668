"""Galley's machine learning over joins (section 8.1, issue 21) at a TPC-H
scale factor: the seven models of sql/tpch_star.sql and
sql/tpch_selfjoin.sql timed, in one run, in

- einsql as the scripts write them (the naive way), its time split into
  optimization and execution (EXPLAIN ANALYZE's figures; the result is
  computed, not stored);
- einsql with `SET optimizer = 'none'` (the program as written);
- DuckDB on the naive SQL (the feature matrix X built as a UNION ALL of
  the four blocks' joins, then the model over it) and on hand-factorized
  SQL (the weights pushed into each feature table, the covariance summed
  per pair of blocks), each statement a CREATE TABLE of its result;
- numpy on the materialized feature matrix (scripts/tpch_ml.py, the
  oracle of tests/tpch_ml.rs): the time to build X from the blocks and the
  model's time on it (the self-join's X a chunk of pairs at a time).

Every engine runs on the same thread count and the same data (einsql's
CALL dbgen and tpchgen-cli's Parquet files are the same generator). Each
einsql and DuckDB statement has a timeout, past which it is reported as not
finished. Run it through scripts/bench-tpch-ml.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "scripts"))
import tpch_ml  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
STAR_MODELS = ["linear_regression", "logistic_regression", "covariance", "neural_network"]
SELF_MODELS = ["linear_regression", "logistic_regression", "covariance"]
BLOCKS = {"S": "s", "P": "p", "O": "o", "C": "c"}
# The TPC-H tables, dropped once the features are built: opening a
# persistent database loads every table, and each model runs in a new shell.
TPCH = ["region", "nation", "supplier", "customer", "part", "partsupp", "orders", "lineitem"]


def sections(path: Path) -> dict:
    """The `-- @name` sections of a script, each as its statements."""
    out, name = {}, None
    for line in path.read_text().splitlines():
        if line.startswith("-- @"):
            name = line[4:].strip()
            out[name] = []
        elif name and not line.startswith("--"):
            out[name].append(line)
    return {
        k: [s.strip() + ";" for s in "\n".join(v).split(";") if s.strip()]
        for k, v in out.items()
    }


def einsql(binary: str, db: str, lines: list, timeout: float):
    """Runs statements in the shell on the persistent database `db`; its
    output, or None when it did not finish in time."""
    try:
        done = subprocess.run(
            [binary, db], input="\n".join(lines), capture_output=True, text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return None
    out = done.stdout + done.stderr
    if done.returncode != 0 or "Error" in out:
        raise RuntimeError(out[-3000:])
    return out


def einsql_model(binary, db, statements, settings, timeout, repeat=1):
    """(optimization s, best total s, first total s) of a model: EXPLAIN
    ANALYZE of each statement, `repeat` times in one shell (the best run
    of each statement counts, the first apart); a statement whose result a
    later one reads (the network's layers) is then run to store it. None
    when it did not finish."""
    lines = list(settings)
    for i, statement in enumerate(statements):
        lines.extend(["EXPLAIN ANALYZE " + statement] * repeat)
        if i + 1 < len(statements):
            lines.append(statement)
    try:
        out = einsql(binary, db, lines, timeout * repeat)
    except RuntimeError as error:
        message = next(l for l in str(error).splitlines() if l.startswith("Error"))
        return message.split(" (")[0]
    if out is None:
        return None
    optimized = [float(x) for x in re.findall(r"Optimized in ([0-9.]+) ms", out)]
    totals = [float(x) for x in re.findall(r"Result: .* in ([0-9.]+) ms", out)]
    runs = [list(zip(optimized, totals))[i * repeat:(i + 1) * repeat]
            for i in range(len(statements))]
    best = [min(r, key=lambda run: run[1]) for r in runs]
    return (sum(o for o, _ in best) / 1000, sum(t for _, t in best) / 1000,
            sum(r[0][1] for r in runs) / 1000)


def duckdb_tables(con, tables: dict, blocks: dict) -> None:
    """The tables of the scripts, in DuckDB: L, L2, the feature blocks as
    (key, j, v) rows, theta and the network's weights."""
    import pandas as pd

    orders = tables["orders"][["o_orderkey", "o_custkey"]]
    li = tables["lineitem"].merge(orders, left_on="l_orderkey", right_on="o_orderkey")
    frame = pd.DataFrame({
        "o": li.l_orderkey, "n": li.l_linenumber, "s": li.l_suppkey,
        "p": li.l_partkey, "c": li.o_custkey,
    })
    con.register("frame", frame)
    con.execute("CREATE TABLE L AS SELECT * FROM frame")
    con.execute("CREATE TABLE L2 AS SELECT o, n, s, p FROM frame")
    con.unregister("frame")
    names = {"S": "supplier", "P": "part", "O": "orders", "C": "customer"}
    for block, key in BLOCKS.items():
        keys, m = blocks[names[block]]
        rows, j = np.nonzero(m)
        f = pd.DataFrame({key: keys[rows], "j": j, "v": m[rows, j]})
        con.register("f", f)
        con.execute(f"CREATE TABLE {block} AS SELECT * FROM f")
        con.unregister("f")
    con.execute("CREATE TABLE SA AS SELECT * FROM S")
    con.execute("CREATE TABLE SB AS SELECT s, j + 26 AS j, v FROM S")
    con.execute("CREATE TABLE PB AS SELECT p, j + 26 AS j, v FROM P")
    theta, w1, w2, w3 = tpch_ml.weights()
    for name, array, columns in [("theta", theta, ["j"]), ("W1", w1, ["k", "j"]),
                                 ("W2", w2, ["k", "m"]), ("W3", w3, ["k"])]:
        index = np.indices(array.shape).reshape(len(columns), -1)
        f = pd.DataFrame({c: index[i] for i, c in enumerate(columns)} | {"v": array.ravel()})
        con.register("f", f)
        con.execute(f"CREATE TABLE {name} AS SELECT * FROM f")
        con.unregister("f")


STAR_X = " UNION ALL ".join(
    f"SELECT L.o, L.n, {b}.j, {b}.v FROM L JOIN {b} ON L.{k} = {b}.{k}" for b, k in BLOCKS.items()
)
SELF_X = (
    "SELECT a.o AS o1, a.n AS n1, b.o AS o2, b.n AS n2, F.j, F.v FROM L2 a JOIN L2 b ON a.p = b.p "
    "JOIN SA F ON a.s = F.s UNION ALL "
    "SELECT a.o, a.n, b.o, b.n, F.j, F.v FROM L2 a JOIN L2 b ON a.p = b.p JOIN SB F ON b.s = F.s "
    "UNION ALL SELECT a.o, a.n, b.o, b.n, F.j, F.v FROM L2 a JOIN L2 b ON a.p = b.p "
    "JOIN PB F ON a.p = F.p"
)


def pushed(block: str, key: str, weights: str = "theta", k: str = "") -> str:
    """A block times the weights: one value per key (and hidden unit)."""
    group = f"{block}.{key}" + (f", {weights}.{k}" if k else "")
    return (
        f"(SELECT {group}, SUM({block}.v * {weights}.v) AS v FROM {block} "
        f"JOIN {weights} ON {block}.j = {weights}.j GROUP BY {group})"
    )


def duckdb_sql(join: str, model: str, factorized: bool) -> list:
    """The statements of a model in DuckDB's SQL, naive or hand-factorized."""
    if join == "star" and not factorized:
        x = f"WITH X AS ({STAR_X}) "
        return {
            "linear_regression": [
                f"{x}SELECT X.o, X.n, SUM(X.v * theta.v) AS v FROM X JOIN theta ON X.j = theta.j "
                "GROUP BY X.o, X.n"],
            "logistic_regression": [
                f"{x}SELECT X.o, X.n, 1 / (1 + exp(-SUM(X.v * theta.v))) AS v FROM X "
                "JOIN theta ON X.j = theta.j GROUP BY X.o, X.n"],
            "covariance": [
                f"{x}SELECT a.j, b.j AS k, SUM(a.v * b.v) AS v FROM X a JOIN X b "
                "ON a.o = b.o AND a.n = b.n GROUP BY a.j, b.j"],
            "neural_network": [
                f"{x}SELECT X.o, X.n, W1.k, greatest(SUM(X.v * W1.v), 0) AS v FROM X "
                "JOIN W1 ON X.j = W1.j GROUP BY X.o, X.n, W1.k",
                "SELECT h.o, h.n, W2.k, greatest(SUM(h.v * W2.v), 0) AS v FROM prev h "
                "JOIN W2 ON h.k = W2.m GROUP BY h.o, h.n, W2.k",
                "SELECT h.o, h.n, 1 / (1 + exp(-SUM(h.v * W3.v))) AS v FROM prev h "
                "JOIN W3 ON h.k = W3.k GROUP BY h.o, h.n"],
        }[model]
    if join == "star":
        sums = " + ".join(f"coalesce(f{b}.v, 0)" for b in BLOCKS)
        joins = " ".join(
            f"LEFT JOIN {pushed(b, k)} f{b} ON L.{k} = f{b}.{k}" for b, k in BLOCKS.items()
        )
        y = f"SELECT L.o, L.n, {sums} AS v FROM L {joins}"
        if model == "linear_regression":
            return [y]
        if model == "logistic_regression":
            return [f"SELECT o, n, 1 / (1 + exp(-v)) AS v FROM ({y})"]
        if model == "covariance":
            parts = []
            for a, ka in BLOCKS.items():
                for b, kb in BLOCKS.items():
                    keys = ka if ka == kb else f"{ka}, {kb}"
                    on_b = "g." + (ka if ka == kb else kb)
                    parts.append(
                        f"SELECT A.j, B.j AS k, SUM(g.cnt * A.v * B.v) AS v FROM "
                        f"(SELECT {keys}, COUNT(*) AS cnt FROM L GROUP BY {keys}) g "
                        f"JOIN {a} A ON g.{ka} = A.{ka} JOIN {b} B ON {on_b} = B.{kb} "
                        "GROUP BY A.j, B.j")
            return [f"SELECT j, k, SUM(v) AS v FROM ({' UNION ALL '.join(parts)}) GROUP BY j, k"]
        hidden = " + ".join(f"w{b}.v" for b in BLOCKS)
        joins = " ".join(
            f"JOIN {pushed(b, k, 'W1', 'k')} w{b} ON L.{k} = w{b}.{k}"
            + ("" if b == "S" else f" AND w{b}.k = wS.k")
            for b, k in BLOCKS.items()
        )
        return [
            f"SELECT L.o, L.n, wS.k, greatest({hidden}, 0) AS v FROM L {joins}",
        ] + duckdb_sql("star", "neural_network", False)[1:]
    if not factorized:
        x = f"WITH X AS ({SELF_X}) "
        return {
            "linear_regression": [
                f"{x}SELECT o1, n1, o2, n2, SUM(X.v * theta.v) AS v FROM X "
                "JOIN theta ON X.j = theta.j GROUP BY o1, n1, o2, n2"],
            "logistic_regression": [
                f"{x}SELECT o1, n1, o2, n2, 1 / (1 + exp(-SUM(X.v * theta.v))) AS v FROM X "
                "JOIN theta ON X.j = theta.j GROUP BY o1, n1, o2, n2"],
            "covariance": [
                f"{x}SELECT a.j, b.j AS k, SUM(a.v * b.v) AS v FROM X a JOIN X b ON "
                "a.o1 = b.o1 AND a.n1 = b.n1 AND a.o2 = b.o2 AND a.n2 = b.n2 GROUP BY a.j, b.j"],
        }[model]
    y = (
        "SELECT a.o AS o1, a.n AS n1, b.o AS o2, b.n AS n2, "
        "coalesce(ta.v, 0) + coalesce(tb.v, 0) + coalesce(tp.v, 0) AS v "
        f"FROM L2 a JOIN L2 b ON a.p = b.p LEFT JOIN {pushed('SA', 's')} ta ON a.s = ta.s "
        f"LEFT JOIN {pushed('SB', 's')} tb ON b.s = tb.s "
        f"LEFT JOIN {pushed('PB', 'p')} tp ON a.p = tp.p"
    )
    if model == "linear_regression":
        return [y]
    if model == "logistic_regression":
        return [f"SELECT o1, n1, o2, n2, 1 / (1 + exp(-v)) AS v FROM ({y})"]
    # Per part: m line items, with c[s] of them from supplier s; the pairs'
    # blocks (A = first supplier, B = second, P = part) pair up as counts.
    counts = "(SELECT p, s, COUNT(*) AS cnt FROM L2 GROUP BY p, s)"
    per_part = "(SELECT p, COUNT(*) AS m FROM L2 GROUP BY p)"
    pairs = "(SELECT x.s AS s1, y.s AS s2, SUM(x.cnt * y.cnt) AS cnt FROM " \
        f"{counts} x JOIN {counts} y ON x.p = y.p GROUP BY x.s, y.s)"
    parts = [
        # A x A and B x B: a supplier's line items, each paired with every
        # line item of its part.
        f"SELECT A.j, B.j AS k, SUM(g.cnt * pp.m * A.v * B.v) AS v FROM {counts} g "
        f"JOIN {per_part} pp ON g.p = pp.p JOIN SA A ON g.s = A.s JOIN SA B ON g.s = B.s "
        "GROUP BY A.j, B.j",
        f"SELECT A.j, B.j AS k, SUM(g.cnt * pp.m * A.v * B.v) AS v FROM {counts} g "
        f"JOIN {per_part} pp ON g.p = pp.p JOIN SB A ON g.s = A.s JOIN SB B ON g.s = B.s "
        "GROUP BY A.j, B.j",
        # A x B and B x A: pairs of suppliers over all parts.
        f"SELECT A.j, B.j AS k, SUM(g.cnt * A.v * B.v) AS v FROM {pairs} g "
        "JOIN SA A ON g.s1 = A.s JOIN SB B ON g.s2 = B.s GROUP BY A.j, B.j",
        f"SELECT B.j, A.j AS k, SUM(g.cnt * A.v * B.v) AS v FROM {pairs} g "
        "JOIN SA A ON g.s1 = A.s JOIN SB B ON g.s2 = B.s GROUP BY A.j, B.j",
        # P x P: m^2 pairs per part.
        f"SELECT A.j, B.j AS k, SUM(pp.m * pp.m * A.v * B.v) AS v FROM {per_part} pp "
        "JOIN PB A ON pp.p = A.p JOIN PB B ON pp.p = B.p GROUP BY A.j, B.j",
    ]
    for first in ["SA", "SB"]:
        # A x P, P x A, B x P, P x B: a supplier's line items of a part, m
        # pairs each.
        body = (f"FROM {counts} g JOIN {per_part} pp ON g.p = pp.p JOIN {first} A ON g.s = A.s "
                "JOIN PB B ON g.p = B.p")
        parts.append(f"SELECT A.j, B.j AS k, SUM(g.cnt * pp.m * A.v * B.v) AS v {body} "
                     "GROUP BY A.j, B.j")
        parts.append(f"SELECT B.j, A.j AS k, SUM(g.cnt * pp.m * A.v * B.v) AS v {body} "
                     "GROUP BY A.j, B.j")
    return [f"SELECT j, k, SUM(v) AS v FROM ({' UNION ALL '.join(parts)}) GROUP BY j, k"]


def duckdb_model(path: str, statements: list, threads: int, timeout: float, temp: str,
                 repeat: int = 1):
    """(best s, sum of the result's values, first s) for a model's
    statements run `repeat` times in a fresh DuckDB process (each a CREATE
    TABLE of its result; a later statement reads the previous one as
    `prev`); None when it did not finish in time, the error's text when
    DuckDB reported one."""
    script = f"""
import duckdb, time, sys
con = duckdb.connect({path!r})
con.execute("SET threads = {threads}")
con.execute("SET memory_limit = '{os.environ.get('DUCKDB_MEMORY_LIMIT', '8GB')}'")
con.execute("SET temp_directory = '{temp}'")
con.execute("SET max_temp_directory_size = '4GB'")
con.execute("SET preserve_insertion_order = false")
con.execute("SET enable_progress_bar = false")
statements = {statements!r}
runs = []
for _ in range({repeat}):
    start = time.perf_counter()
    for i, s in enumerate(statements):
        con.execute(f"CREATE OR REPLACE TEMP TABLE r{{i}} AS " + s.replace("FROM prev", f"FROM r{{i - 1}}"))
    runs.append(time.perf_counter() - start)
print(min(runs), con.execute(f"SELECT SUM(v) FROM r{{len(statements) - 1}}").fetchone()[0], runs[0])
"""
    try:
        done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                              timeout=timeout * repeat)
    except subprocess.TimeoutExpired:
        return None
    if done.returncode != 0:
        # An error DuckDB reports (out of memory or of temporary space) is
        # a result like a timeout: recorded, and the run goes on.
        errors = [line for line in done.stderr.splitlines() if "Error" in line]
        if not errors:
            raise RuntimeError(done.stderr[-3000:])
        return "Error: " + errors[-1].split("Error: ", 1)[-1]
    seconds, total, first = done.stdout.split()
    return float(seconds), float(total), float(first)


def numpy_models(tables, blocks, timeout, joins, chosen):
    """(build X s, model s, sum) of each chosen model with numpy; a
    self-join model still running after `timeout` seconds stops (None)."""
    theta, w1, w2, w3 = tpch_ml.weights()
    out = {}
    if "star" not in joins:
        return numpy_self(tables, blocks, timeout, out, chosen)
    star = tpch_ml.Star(tables, blocks)
    start = time.perf_counter()
    x = star.matrix()
    build = time.perf_counter() - start
    models = {
        "linear_regression": lambda: x @ theta,
        "logistic_regression": lambda: tpch_ml.sigmoid(x @ theta),
        "covariance": lambda: x.T @ x,
        "neural_network": lambda: tpch_ml.sigmoid(
            np.maximum(np.maximum(x @ w1.T, 0.0) @ w2.T, 0.0) @ w3),
    }
    for name, fn in models.items():
        if name not in chosen:
            continue
        start = time.perf_counter()
        value = fn()
        out[("star", name)] = (build, time.perf_counter() - start, float(value.sum()))
    del x
    return numpy_self(tables, blocks, timeout, out, chosen) if "self" in joins else out


def numpy_self(tables, blocks, timeout, out, chosen):
    """The self-join's models with numpy, X a chunk of pairs at a time."""
    theta = tpch_ml.weights()[0]
    join = tpch_ml.SelfJoin(tables, blocks)
    t = theta[: tpch_ml.SELF_FEATURES]
    for name in [m for m in SELF_MODELS if m in chosen]:
        build = model = total = 0.0
        start = began = time.perf_counter()
        for _, xc in join.chunks():
            if start - began > timeout:
                break
            built = time.perf_counter()
            build += built - start
            if name == "covariance":
                total += float((xc.T @ xc).sum())
            elif name == "linear_regression":
                total += float((xc @ t).sum())
            else:
                total += float(tpch_ml.sigmoid(xc @ t).sum())
            start = time.perf_counter()
            model += start - built
        out[("self", name)] = (build, model, total) if start - began <= timeout else None
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, default=0.25)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--binary", default=os.environ.get("EINSQL_BINARY", "target/release/einsql"))
    parser.add_argument("--tpchgen", required=True)
    parser.add_argument("--skip-self-join-naive", action="store_true",
                        help="skip DuckDB's naive self-join SQL (X has ~9 entries per pair)")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run each einsql and DuckDB model this many times in one "
                             "process and report the best (the first run in columns "
                             "of its own)")
    parser.add_argument("--plot", help="also draw the times into this PNG file")
    parser.add_argument("--joins", default="star,self", help="which joins: star, self")
    parser.add_argument("--models", default=",".join(STAR_MODELS),
                        help="which models (of each join): " + ", ".join(STAR_MODELS))
    parser.add_argument("--systems", default="einsql,none,duckdb,numpy",
                        help="which systems: einsql, none (optimizer = 'none'), duckdb, numpy")
    args = parser.parse_args()

    import duckdb

    print(
        f"# {platform.processor() or platform.machine()}, numpy {np.__version__}, "
        f"duckdb {duckdb.__version__}, einsql {args.binary}, SF {args.sf}, "
        f"threads {args.threads}, load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    star = sections(REPO / "sql" / "tpch_star.sql")
    selfjoin = sections(REPO / "sql" / "tpch_selfjoin.sql")
    settings = [f"SET threads = {args.threads};",
                f"SET memory_limit = '{os.environ.get('EINSQL_MEMORY_LIMIT', '12GB')}';"]
    joins = args.joins.split(",")
    systems = args.systems.split(",")
    chosen = args.models.split(",")
    unknown = [m for m in chosen if m not in STAR_MODELS]
    if unknown:
        parser.error(f"unknown model {unknown[0]!r}: the models are {', '.join(STAR_MODELS)}")
    plan = [(j, s, [m for m in ms if m in chosen])
            for j, s, ms in [("star", star, STAR_MODELS), ("self", selfjoin, SELF_MODELS)]
            if j in joins]
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        db = f"{tmp}/einsql-db"
        modes = [(m, e) for m, e in [("einsql", []), ("none", ["SET optimizer = 'none';"])]
                 if m in systems]
        start = time.perf_counter()
        modes and einsql(args.binary, db,
               settings + [f"CALL dbgen(sf = {args.sf});"] + star["features"]
               + selfjoin["features"] + [f"DROP TABLE {t};" for t in TPCH], 3600)
        print(f"# einsql: dbgen and features in {time.perf_counter() - start:.1f} s", flush=True)
        for join, scripts, models in plan:
            for model in models:
                for mode, extra in modes:
                    r = einsql_model(args.binary, db, scripts[model], settings + extra,
                                     args.timeout, args.repeat)
                    results[(join, model, mode)] = r
                    print(f"# {join} {model} {mode}: {r}", flush=True)

        if "duckdb" not in systems and "numpy" not in systems:
            return
        tpch_ml.generate(args.tpchgen, args.sf, Path(tmp) / "parquet")
        tables = tpch_ml.load(Path(tmp) / "parquet")
        blocks = tpch_ml.feature_blocks(tables)
        duck = f"{tmp}/duck.db"
        con = duckdb.connect(duck)
        duckdb_tables(con, tables, blocks)
        con.close()
        for join, _, models in plan if "duckdb" in systems else []:
            for model in models:
                for mode, factorized in [("duckdb_naive", False), ("duckdb_factorized", True)]:
                    if join == "self" and not factorized and args.skip_self_join_naive:
                        r = "skipped"
                    else:
                        r = duckdb_model(duck, duckdb_sql(join, model, factorized),
                                         args.threads, args.timeout, f"{tmp}/duck-temp",
                                         args.repeat)
                    results[(join, model, mode)] = r
                    print(f"# {join} {model} {mode}: {r}", flush=True)
        for (join, model), r in (numpy_models(tables, blocks, args.timeout, joins, chosen).items()
                                 if "numpy" in systems else []):
            results[(join, model, "numpy")] = r
            print(f"# {join} {model} numpy: {r}", flush=True)

    fmt = lambda r: "" if r is None else r if isinstance(r, str) else f"{r:.3f}"
    print("join,model,einsql_opt_s,einsql_s,einsql_none_s,duckdb_naive_s,"
          "duckdb_factorized_s,numpy_build_x_s,numpy_model_s,einsql_first_s,"
          "duckdb_factorized_first_s")
    for join, _, models in plan:
        for model in models:
            e = results.get((join, model, "einsql"), "")
            none = results.get((join, model, "none"), "")
            dn = results.get((join, model, "duckdb_naive"), "")
            df = results.get((join, model, "duckdb_factorized"), "")
            nb, nm, _ = results.get((join, model, "numpy")) or (None, None, None)
            if isinstance(e, str) and e:
                e = (e, e)
            print(",".join([
                join, model, fmt(e and e[0]), fmt(e and e[1]),
                fmt(none if isinstance(none, str) else none and none[1]),
                fmt(dn if isinstance(dn, str) else dn and dn[0]),
                fmt(df if isinstance(df, str) else df and df[0]),
                fmt(nb), fmt(nm),
                fmt(e and e[-1]),
                fmt(df if isinstance(df, str) else df and df[-1])]), flush=True)
    if args.plot:
        plot(results, args)


def plot(results, args) -> None:
    """Seconds per model and system (log scale); a run that did not finish
    is drawn at the timeout, hatched."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    systems = [("einsql", "einsql"), ("none", "einsql, optimizer = 'none'"),
               ("duckdb_naive", "DuckDB, naive SQL"),
               ("duckdb_factorized", "DuckDB, hand-factorized SQL"),
               ("numpy", "numpy on materialized X (build + model)")]
    labels = [f"{m.replace('_', ' ')} ({'star' if j == 'star' else 'self-join'})"
              for j, ms in [("star", STAR_MODELS), ("self", SELF_MODELS)] for m in ms]
    keys = [(j, m) for j, ms in [("star", STAR_MODELS), ("self", SELF_MODELS)] for m in ms]
    fig, ax = plt.subplots(figsize=(9, 4.6))
    width = 0.16
    for i, (system, name) in enumerate(systems):
        xs, heights, unfinished = [], [], []
        for n, key in enumerate(keys):
            if key + (system,) not in results:
                continue
            r = results[key + (system,)]
            if r == "skipped":
                continue
            if isinstance(r, str):
                r = None
            if system == "numpy":
                seconds = None if r is None else r[0] + r[1]
            elif system.startswith("duckdb"):
                seconds = None if r is None else r[0]
            else:
                seconds = None if r is None else r[1]
            xs.append(n + (i - 2) * width)
            heights.append(args.timeout if seconds is None else seconds)
            unfinished.append(seconds is None)
        bars = ax.bar(xs, heights, width, label=name)
        for bar, late in zip(bars, unfinished):
            if late:
                bar.set_hatch("//")
                bar.set_alpha(0.5)
    ax.set_yscale("log")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels(labels, rotation=25, ha="right", fontsize=8)
    ax.set_ylabel(f"seconds ({args.threads} threads)")
    ax.set_title(f"Galley's TPC-H models at SF {args.sf} (hatched: not finished in "
                 f"{args.timeout:.0f} s, or out of memory)", fontsize=10)
    ax.grid(True, axis="y", which="both", alpha=0.3)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(args.plot, dpi=110)


if __name__ == "__main__":
    main()
