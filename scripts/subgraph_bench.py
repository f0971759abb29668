#!/usr/bin/env python3
"""Subgraph counting, einsql against DuckDB, on the same SQL text.

Run through `scripts/subgraph-bench`, which provides DuckDB and matplotlib
from a virtual environment. For each dataset (a name under
`../shared/datasets/subgraph` or a dataset folder):

1. `cargo bench --bench subgraph -- emit` converts the selected query graphs
   into SQL (`einsql::subgraph::to_sql`) and writes the data graph as CSV
   (`edges(src, dst, label)` with both directions of every edge,
   `labels(vertex, label)`), plus the trusted counts of `truth/`.
2. For each thread count: each einsql variant (`cargo bench --bench subgraph
   -- run`, one process that loads the data graph once) and DuckDB (loads the
   CSVs once, in memory) run every query warm: untimed runs until the
   warm-up time has passed (`--warm-up`, 5 ms by default, at least one
   run), then one timed run, each stopped at the timeout (einsql through
   its interrupt flag, DuckDB through `con.interrupt()`). The first
   warm-up run's time is kept too (`first_seconds`). Both engines get the
   same thread count, memory limit and timeout. The default variant and
   DuckDB take turns query by query (`run --paced`): einsql's runs of a
   query, then DuckDB's, so that the two timings of a query fall in the
   same window of a shared machine; the other variants run after them.
3. Every count is checked against `truth/` and, where there is no trusted
   truth, against the other engine.

Outputs, in the output folder (default `bench-results/subgraph/`):
`results.csv` (one row per dataset, query, thread count and engine),
`<dataset>.md` (a summary per thread count, stable formatting for the
README) and `<dataset>.png` (speedup over DuckDB per query, log scale).

Every outcome is also appended to `journal.jsonl` as soon as it is known.
A run that was stopped (a whole full set takes many hours) continues with
`--resume` and the same options and output folder: the queries the journal
holds for the same dataset, thread count and engine are not run again, and
the reports cover every query. The journal names the bench executable by
its SHA-256, and a resumed run must use the same executable, so that every
figure of the report comes from one build. Without `--resume` the journal
starts empty.
"""

import argparse
import csv
import hashlib
import json
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import duckdb

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

# einsql variants: name -> the SET statements (NAME=VALUE) of `run`.
VARIANTS = {
    "chain-exact": [],
    "uniform": ["estimator='uniform'"],
    "greedy": ["optimizer='greedy'"],
    "no-factorize": ["disabled_optimizers='factorize'"],
    "no-symmetry": ["disabled_optimizers='symmetry'"],
}
DEFAULT_VARIANT = "chain-exact"
DUCKDB = "duckdb"

CSV_FIELDS = [
    "dataset",
    "query",
    "vertices",
    "edges",
    "threads",
    "engine",
    "seconds",
    "first_seconds",
    "parse_seconds",
    "optimize_seconds",
    "count",
    "truth",
    "status",
    "check",
    "message",
]


def log(message):
    print(message, file=sys.stderr, flush=True)


class Journal:
    """`journal.jsonl` of the output folder: one line per outcome, written
    when it is known, so that a stopped run can continue (`--resume`)."""

    def __init__(self, path, binary, args):
        self.path = path
        self.binary = sha256(binary)
        # What every outcome of one run must share besides the build.
        self.settings = {
            "timeout": args.timeout,
            "warm_up": args.warm_up,
            "memory_limit": args.memory_limit,
            "one_label": args.one_label,
        }
        self.done = {}
        self.resumed = 0
        if not args.resume:
            path.unlink(missing_ok=True)
            return
        if not path.exists():
            sys.exit(f"--resume: {path} does not exist (no earlier run in this folder)")
        complete = []
        for number, line in enumerate(open(path), 1):
            try:
                entry = json.loads(line)
            except json.JSONDecodeError:
                # A line cut short when the run was stopped.
                log(f"--resume: {path}:{number} is not complete, ignored")
                continue
            complete.append(line.rstrip("\n") + "\n")
            if entry["binary"] != self.binary:
                sys.exit(
                    f"--resume: {path}:{number} was written by another build of the "
                    f"bench ({entry['binary'][:12]}, this one is {self.binary[:12]}); "
                    "resume with the same build or start again without --resume"
                )
            if entry["settings"] != self.settings:
                sys.exit(
                    f"--resume: {path}:{number} was run with {entry['settings']}, "
                    f"this run has {self.settings}"
                )
            key = (entry["dataset"], entry["threads"], entry["engine"])
            self.done.setdefault(key, {})[entry["outcome"]["name"]] = entry["outcome"]
        self.resumed = sum(len(outcomes) for outcomes in self.done.values())
        # New lines go after the complete ones, not after a cut one.
        path.write_text("".join(complete))

    def earlier(self, dataset, threads, engine):
        """The outcomes the journal holds, by query name."""
        return dict(self.done.get((dataset, threads, engine), {}))

    def write(self, dataset, threads, engine, outcome):
        entry = {
            "dataset": dataset,
            "threads": threads,
            "engine": engine,
            "binary": self.binary,
            "settings": self.settings,
            "outcome": outcome,
        }
        with open(self.path, "a") as file:
            file.write(json.dumps(entry) + "\n")


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# ---------------------------------------------------------------- einsql


def bench_binary(repo):
    """Builds the `subgraph` bench (release) and returns its executable."""
    command = [
        "cargo",
        "bench",
        "--bench",
        "subgraph",
        "--no-run",
        "--message-format=json-render-diagnostics",
    ]
    log("building: " + " ".join(command))
    done = subprocess.run(command, cwd=repo, stdout=subprocess.PIPE, text=True)
    if done.returncode != 0:
        sys.exit("cargo bench --bench subgraph --no-run failed")
    for line in done.stdout.splitlines():
        try:
            message = json.loads(line)
        except json.JSONDecodeError:
            continue
        if (
            message.get("reason") == "compiler-artifact"
            and message.get("target", {}).get("name") == "subgraph"
            and message.get("executable")
        ):
            return message["executable"]
    sys.exit("cargo did not report the subgraph bench executable")


def emit(binary, dataset, folder, args):
    command = [binary, "emit", dataset, "--out", str(folder)]
    command += ["--queries", args.set]
    for flag, value in [
        ("--max-vertices", args.max_vertices),
        ("--limit", args.limit),
        ("--sample", args.sample),
    ]:
        if value is not None:
            command += [flag, str(value)]
    if subprocess.run(command).returncode != 0:
        sys.exit(f"emit failed for dataset {dataset}")
    queries = [json.loads(line) for line in open(folder / "queries.jsonl") if line.strip()]
    info = json.loads((folder / "dataset.json").read_text())
    return info, queries


def one_label(dataset, repo, out):
    """A copy of `dataset` (a name under the datasets folder, or a folder)
    with every vertex label of the data graph and of its query graphs
    replaced by 0, in `out`; its `truth/` counts no longer hold and are
    left out. Returns the copy's folder."""
    source = Path(dataset)
    if not source.is_dir():
        root = Path(os.environ.get("EINSQL_DATA", repo.parent / "shared" / "datasets"))
        source = root / "subgraph" / dataset
    if not source.is_dir():
        sys.exit(f"no dataset folder for '{dataset}' (looked in {source})")
    target = out / "one-label" / f"{source.name}-1"
    shutil.rmtree(target, ignore_errors=True)

    def relabel(src, dst):
        dst.parent.mkdir(parents=True, exist_ok=True)
        with open(src) as lines, open(dst, "w") as copy:
            for line in lines:
                fields = line.split()
                if fields and fields[0] == "v" and len(fields) >= 3:
                    fields[2] = "0"
                    line = " ".join(fields) + "\n"
                copy.write(line)

    for graph in source.glob("*.graph"):
        relabel(graph, target / f"{source.name}-1.graph")
    for folder in ("queries", "queries-lite"):
        for query in sorted((source / folder).glob("*.graph")):
            relabel(query, target / folder / query.name)
    return str(target)


def einsql_command(binary, folder, variant, threads, args):
    """The `run` command line of one einsql variant."""
    command = [
        binary,
        "run",
        "--input",
        str(folder),
        "--threads",
        str(threads),
        "--timeout",
        str(args.timeout),
        "--warm-up",
        str(args.warm_up),
        "--memory-limit",
        args.memory_limit,
    ]
    for setting in VARIANTS[variant]:
        command += ["--setting", setting]
    return command


def failure_reason(stderr):
    """Why a `run` process stopped, from its standard error."""
    failure = [l for l in stderr.splitlines() if l.startswith("subgraph: ")]
    return failure[-1] if failure else stderr.strip()


def run_einsql(binary, folder, variant, threads, args, queries, journal):
    """One `run` process for the queries the journal does not hold: a dict
    query name -> outcome, or None when the variant's settings are not
    supported by this build."""
    dataset = folder.name
    outcomes = journal.earlier(dataset, threads, variant)
    left = [q["name"] for q in queries if q["name"] not in outcomes]
    if not left:
        return outcomes
    command = einsql_command(binary, folder, variant, threads, args)
    if outcomes:
        for name in left:
            command += ["--only", name]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in process.stdout:
        outcome = json.loads(line)
        outcomes[outcome["name"]] = outcome
        journal.write(dataset, threads, variant, outcome)
        progress(f"einsql/{variant}", threads, len(outcomes), len(queries), outcome)
    stderr = process.stderr.read()
    if process.wait() != 0:
        reason = failure_reason(stderr)
        if not outcomes and "SET " in reason:
            log(f"  einsql/{variant}: skipped, this build lacks its setting ({reason})")
            return None
        sys.exit(f"einsql/{variant} failed: {reason}")
    return outcomes


def run_paced(binary, folder, threads, args, con, queries, journal):
    """The default variant and DuckDB, taking turns query by query: one
    `run --paced` process is sent each query's name and answers with its
    outcome, then DuckDB runs the same query. Two dicts query name ->
    outcome (einsql's, DuckDB's); the queries whose two outcomes the
    journal holds are not run again."""
    dataset = folder.name
    einsql = journal.earlier(dataset, threads, DEFAULT_VARIANT)
    duck = journal.earlier(dataset, threads, DUCKDB)
    process = subprocess.Popen(
        einsql_command(binary, folder, DEFAULT_VARIANT, threads, args) + ["--paced"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    con.execute(f"SET threads = {threads}")

    def stopped():
        process.kill()
        process.wait()
        sys.exit(f"einsql/{DEFAULT_VARIANT} failed: {failure_reason(process.stderr.read())}")

    for query in queries:
        name = query["name"]
        if name in einsql and name in duck:
            continue
        try:
            process.stdin.write(name + "\n")
            process.stdin.flush()
        except BrokenPipeError:
            stopped()
        line = process.stdout.readline()
        if not line:
            stopped()
        einsql[name] = json.loads(line)
        journal.write(dataset, threads, DEFAULT_VARIANT, einsql[name])
        progress(f"einsql/{DEFAULT_VARIANT}", threads, len(einsql), len(queries), einsql[name])
        duck[name] = duckdb_outcome(con, query, args)
        journal.write(dataset, threads, DUCKDB, duck[name])
        progress(DUCKDB, threads, len(duck), len(queries), duck[name])
    process.stdin.close()
    stderr = process.stderr.read()
    if process.wait() != 0:
        sys.exit(f"einsql/{DEFAULT_VARIANT} failed: {failure_reason(stderr)}")
    return einsql, duck


def progress(engine, threads, done, total, outcome):
    status = outcome["status"]
    detail = f"{outcome['seconds']:.4f} s" if status == "ok" else outcome.get("message") or ""
    log(f"  [{engine} t={threads}] {done}/{total} {outcome['name']}: {status} {detail}")


# ---------------------------------------------------------------- DuckDB


def duckdb_connection(folder, spill, args):
    con = duckdb.connect(
        ":memory:",
        config={
            "memory_limit": args.memory_limit,
            "temp_directory": str(spill),
            "max_temp_directory_size": args.max_temp_size,
        },
    )
    con.execute("CREATE TABLE edges (src BIGINT, dst BIGINT, label BIGINT)")
    con.execute("CREATE TABLE labels (vertex BIGINT, label BIGINT)")
    for table in ["edges", "labels"]:
        path = str(folder / f"{table}.csv").replace("'", "''")
        con.execute(f"COPY {table} FROM '{path}' (HEADER)")
    return con


def duckdb_once(con, sql, timeout):
    """Runs `sql` once: (count, seconds), or raises TimeoutError."""
    lock = threading.Lock()
    running = [True]

    def stop():
        with lock:
            if running[0]:
                con.interrupt()

    timer = threading.Timer(timeout, stop)
    timer.start()
    started = time.perf_counter()
    try:
        row = con.execute(sql).fetchone()
    except duckdb.InterruptException as interrupted:
        raise TimeoutError from interrupted
    finally:
        with lock:
            running[0] = False
        timer.cancel()
    return row[0], time.perf_counter() - started


def duckdb_outcome(con, query, args):
    """One query on DuckDB: untimed runs until `args.warm_up` seconds have
    passed (at least one), then the timed run."""
    outcome = {"name": query["name"], "count": None, "optimize_seconds": None}
    try:
        started = time.perf_counter()
        _, outcome["first_seconds"] = duckdb_once(con, query["sql"], args.timeout)
        while time.perf_counter() - started < args.warm_up:
            duckdb_once(con, query["sql"], args.timeout)
        count, seconds = duckdb_once(con, query["sql"], args.timeout)
        outcome.update(status="ok", count=count, seconds=seconds, message=None)
    except TimeoutError:
        outcome.update(status="timeout", seconds=args.timeout, message=f"exceeded {args.timeout} s")
    except duckdb.Error as error:
        outcome.update(status="error", seconds=0.0, message=str(error).splitlines()[0])
    return outcome


def read_duckdb_results(path):
    """DuckDB's outcomes from the `results.csv` of an earlier run
    (`--duckdb-results`), by (dataset, threads, query name)."""
    found = {}
    with open(path, newline="") as file:
        for row in csv.DictReader(file):
            if row["engine"] == DUCKDB:
                found[(row["dataset"], int(row["threads"]), row["query"])] = {
                    "name": row["query"],
                    "count": int(row["count"]) if row["count"] else None,
                    "status": row["status"],
                    "seconds": float(row["seconds"]),
                    "first_seconds": float(row["first_seconds"])
                    if row.get("first_seconds")
                    else None,
                    "optimize_seconds": None,
                    "message": row["message"] or None,
                }
    return found


def reused_duckdb(found, path, dataset, queries, threads):
    """The outcomes of `read_duckdb_results` for one dataset and thread
    count; exits when a query is missing."""
    missing = [q["name"] for q in queries if (dataset, threads, q["name"]) not in found]
    if missing:
        sys.exit(
            f"{path}: no DuckDB result for {dataset} at {threads} threads for "
            f"{len(missing)} queries, e.g. {missing[0]}"
        )
    return {q["name"]: found[(dataset, threads, q["name"])] for q in queries}


# ---------------------------------------------------------------- checking


def check(outcome, truth, other):
    """`truth` (equal to truth/), `WRONG`, `agrees` (no truth, same count as
    the other engine), `DISAGREES`, or `unchecked`; empty unless ok."""
    if outcome["status"] != "ok":
        return ""
    count = outcome["count"]
    if truth is not None:
        return "truth" if count == truth else "WRONG"
    if other is not None and other["status"] == "ok":
        return "agrees" if count == other["count"] else "DISAGREES"
    return "unchecked"


def rows_for(dataset, queries, threads, results):
    """CSV rows for one dataset and thread count; `results` maps engine ->
    {query name -> outcome}."""
    rows = []
    for engine in sorted(results):
        other_engine = DEFAULT_VARIANT if engine == DUCKDB else DUCKDB
        for query in queries:
            outcome = results[engine][query["name"]]
            other = results.get(other_engine, {}).get(query["name"])
            rows.append(
                {
                    "dataset": dataset,
                    "query": query["name"],
                    "vertices": query["vertices"],
                    "edges": query["edges"],
                    "threads": threads,
                    "engine": engine if engine == DUCKDB else f"einsql/{engine}",
                    "seconds": f"{outcome['seconds']:.6f}",
                    "first_seconds": ""
                    if outcome.get("first_seconds") is None
                    else f"{outcome['first_seconds']:.6f}",
                    "parse_seconds": ""
                    if outcome.get("parse_seconds") is None
                    else f"{outcome['parse_seconds']:.6f}",
                    "optimize_seconds": ""
                    if outcome.get("optimize_seconds") is None
                    else f"{outcome['optimize_seconds']:.6f}",
                    "count": "" if outcome["count"] is None else outcome["count"],
                    "truth": "" if query["truth"] is None else query["truth"],
                    "status": outcome["status"],
                    "check": check(outcome, query["truth"], other),
                    "message": outcome.get("message") or "",
                }
            )
    return rows


# ---------------------------------------------------------------- reporting


def fmt_seconds(seconds):
    """Three significant digits, in ms below one second, in µs below 1 ms."""
    if seconds < 0.001:
        return f"{seconds * 1e6:.3g} µs"
    if seconds < 1:
        return f"{seconds * 1000:.3g} ms"
    return f"{seconds:.3g} s"


def fmt_ratio(ratio):
    return f"{ratio:.3g}x"


def geomean(values):
    return math.exp(sum(math.log(v) for v in values) / len(values))


def speedups(rows, engine):
    """Per query: (name, DuckDB seconds / engine seconds, lower_bound) where
    the engine finished; lower_bound when DuckDB timed out (its time is then
    the timeout)."""
    duck = {r["query"]: r for r in rows if r["engine"] == DUCKDB}
    out = []
    for r in rows:
        d = duck.get(r["query"])
        if r["engine"] != engine or r["status"] != "ok" or d is None:
            continue
        if d["status"] == "ok":
            out.append((r["query"], float(d["seconds"]) / float(r["seconds"]), False))
        elif d["status"] == "timeout":
            out.append((r["query"], float(d["seconds"]) / float(r["seconds"]), True))
    return out


def first_runs(rows, engine):
    """The first warm-up runs of `engine` and DuckDB on the queries both
    finished: (engine's seconds, DuckDB's seconds, speedups), or None when
    a row lacks the time (results of an earlier version)."""
    if not all(r.get("first_seconds") for r in rows if r["status"] == "ok"):
        return None
    duck = {r["query"]: r for r in rows if r["engine"] == DUCKDB and r["status"] == "ok"}
    pairs = [
        (float(r["first_seconds"]), float(duck[r["query"]]["first_seconds"]))
        for r in rows
        if r["engine"] == engine and r["status"] == "ok" and r["query"] in duck
    ]
    if not pairs:
        return None
    return (
        [mine for mine, _ in pairs],
        [theirs for _, theirs in pairs],
        [theirs / mine for mine, theirs in pairs],
    )


def plan_excerpt(plan, lines=14, width=140):
    """The logical plan (one line per step, with its estimated entries) and
    the entries each step produced; without those sections, the physical
    plan's steps and loops. Long lines are shortened."""
    if not plan:
        return ["(no plan)"]
    picked = []
    section = None
    for line in plan.splitlines():
        if line and not line.startswith(" "):
            section = line
            if line.startswith(("Logical plan", "Execution")):
                picked.append(line)
        elif section and section.startswith(("Logical plan", "Execution")):
            picked.append(line)
    if not picked:
        text = plan.split("Physical plan:", 1)[-1].split("Result:", 1)[0]
        picked = [
            l[2:] if l.startswith("  ") else l
            for l in text.splitlines()
            if l.strip().startswith(("Query ", "for "))
        ]
    if not picked:
        picked = [l.strip() for l in plan.splitlines() if l.strip()]
    shown = [l if len(l) <= width else l[: width - 3] + "..." for l in picked[:lines]]
    if len(picked) > lines:
        shown.append(f"... ({len(picked) - lines} more lines)")
    return shown


def summary(dataset, info, rows_by_threads, plans, args, meta):
    """The Markdown summary of one dataset."""
    lines = [
        f"### {dataset}: {args.set_description} ({info['vertices']} vertices, "
        f"{info['edges']} edges)",
        "",
        f"{meta['date']}, einsql {meta['commit']}, DuckDB {duckdb.__version__}, "
        f"{meta['machine']}; timeout {args.timeout:g} s per query, memory limit "
        f"{args.memory_limit} for both, warm (untimed runs for at least "
        f"{args.warm_up * 1000:g} ms, at least one, before the timed one)"
        + (
            f"; DuckDB's figures are those of an earlier run ({args.duckdb_results.name})."
            if args.duckdb_results
            else f"; einsql/{DEFAULT_VARIANT} and DuckDB take turns query by query."
        )
        + (
            f" Continued with --resume: {meta['resumed']} outcomes come from the "
            "journal of an earlier invocation (the same build)."
            if meta["resumed"]
            else ""
        ),
        "",
    ]
    for threads, rows in rows_by_threads:
        engines = sorted({r["engine"] for r in rows}, key=lambda e: (e == DUCKDB, e))
        queries = len({r["query"] for r in rows})
        lines += [
            f"**{threads} thread{'s' if threads != 1 else ''}**, {queries} queries",
            "",
            "| engine | finished | timeouts | errors | wrong | median time "
            "| median parse | median optimize | speedup geo-mean | speedup median "
            "| slower than DuckDB |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for engine in engines:
            mine = [r for r in rows if r["engine"] == engine]
            ok = [r for r in mine if r["status"] == "ok"]
            times = [float(r["seconds"]) for r in mine if r["status"] != "error"]
            wrong = sum(r["check"] in ("WRONG", "DISAGREES") for r in mine)
            cells = [
                engine,
                str(len(ok)),
                str(sum(r["status"] == "timeout" for r in mine)),
                str(sum(r["status"] == "error" for r in mine)),
                str(wrong),
                fmt_seconds(statistics.median(times)) if times else "-",
            ]
            for field in ("parse_seconds", "optimize_seconds"):
                spent = [float(r[field]) for r in ok if r.get(field)]
                cells.append(fmt_seconds(statistics.median(spent)) if spent else "-")
            if engine == DUCKDB:
                cells += ["-", "-", "-"]
            else:
                both = [s for _, s, bound in speedups(rows, engine) if not bound]
                cells += [
                    fmt_ratio(geomean(both)) if both else "-",
                    fmt_ratio(statistics.median(both)) if both else "-",
                    str(sum(s < 1 for s in both)),
                ]
            lines.append("| " + " | ".join(cells) + " |")
        default = f"einsql/{DEFAULT_VARIANT}"
        bounded = speedups(rows, default)
        lower = [s for _, s, bound in bounded if bound]
        everything = [s for _, s, _ in bounded]
        lines += [
            "",
            "Median times count a timeout as the timeout and leave errors out. Speedups are DuckDB time "
            "over einsql time on the queries both finished"
            + (
                f"; on the {len(lower)} queries where only einsql finished, the "
                f"speedup is at least {fmt_ratio(min(lower))} (median at least "
                f"{fmt_ratio(statistics.median(lower))})."
                if lower
                else "."
            )
            + (
                f" Counting DuckDB's timeouts at the timeout, the {default} speedup over "
                f"the {len(everything)} queries is at least {fmt_ratio(statistics.median(everything))} "
                f"(median) and {fmt_ratio(geomean(everything))} (geo-mean)."
                if lower
                else ""
            ),
            "",
        ]
        first = first_runs(rows, default)
        if first:
            mine, theirs, ratios = first
            lines += [
                f"First runs (each query's first warm-up run: after the other engine's "
                f"turn, and on einsql before its caches hold the query's indexes and "
                f"semijoin reductions), on the {len(ratios)} queries both finished: "
                f"{default} median "
                f"{fmt_seconds(statistics.median(mine))}, DuckDB median "
                f"{fmt_seconds(statistics.median(theirs))}, speedup median "
                f"{fmt_ratio(statistics.median(ratios))}, geo-mean {fmt_ratio(geomean(ratios))}, "
                f"smallest {fmt_ratio(min(ratios))}.",
                "",
            ]
        slowest = sorted(
            (r for r in rows if r["engine"] == default),
            key=lambda r: (-float(r["seconds"]), r["query"]),
        )[:5]
        duck = {r["query"]: r for r in rows if r["engine"] == DUCKDB}
        lines += [f"Slowest {default} queries at {threads} thread(s):", ""]
        for r in slowest:
            d = duck.get(r["query"])
            other = (
                f"DuckDB {fmt_seconds(float(d['seconds']))}"
                if d and d["status"] == "ok"
                else f"DuckDB {d['status']}" if d else "DuckDB not run"
            )
            status = fmt_seconds(float(r["seconds"])) if r["status"] == "ok" else r["status"]
            lines.append(
                f"- `{r['query']}` ({r['vertices']} vertices, {r['edges']} edges): "
                f"einsql {status}, {other}, count {r['count'] or '-'}"
            )
            lines.append("")
            lines.append("  ```")
            lines += [
                "  " + l for l in plan_excerpt(plans.get((threads, r["query"])))
            ]
            lines.append("  ```")
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"


def plot(dataset, rows_by_threads, path, timeout):
    figure, axes = plt.subplots(figsize=(8, 4.5), dpi=100)
    markers = ["o", "s", "^", "D"]
    for (threads, rows), marker in zip(rows_by_threads, markers):
        points = sorted(speedups(rows, f"einsql/{DEFAULT_VARIANT}"), key=lambda p: p[1])
        if not points:
            continue
        xs = list(range(1, len(points) + 1))
        label = f"{threads} thread{'s' if threads != 1 else ''}"
        axes.plot(
            xs,
            [s for _, s, _ in points],
            marker=marker,
            markersize=3,
            linewidth=1,
            label=label,
        )
        bounded = [(x, s) for x, (_, s, b) in zip(xs, points) if b]
        if bounded:
            axes.scatter(
                [x for x, _ in bounded],
                [s for _, s in bounded],
                marker="^",
                s=30,
                facecolors="none",
                edgecolors="black",
                linewidths=0.6,
                zorder=3,
            )
    axes.axhline(1, color="grey", linewidth=0.8, linestyle="--")
    axes.set_yscale("log")
    axes.set_xlabel("query (sorted by speedup)")
    axes.set_ylabel("DuckDB time / einsql time")
    axes.set_title(
        f"{dataset}: einsql speedup over DuckDB per query "
        f"(open triangles: DuckDB timed out at {timeout:g} s, a lower bound)",
        fontsize=9,
    )
    axes.grid(True, which="both", linewidth=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, metadata={"Software": None})
    plt.close(figure)


# ---------------------------------------------------------------- main


def machine():
    model = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{os.cpu_count()} cores{' of ' + model if model else ''}, {platform.system()}"


def commit(repo):
    done = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=repo, stdout=subprocess.PIPE, text=True
    )
    return done.stdout.strip() or "unknown"


def thread_counts(text):
    counts = []
    for part in text.split(","):
        part = part.strip()
        n = os.cpu_count() if part == "all" else int(part)
        if n < 1:
            sys.exit(f"--threads: {part} is not a thread count")
        if n not in counts:
            counts.append(n)
    return counts


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument(
        "--datasets", default="yeast,hprd", help="comma-separated names or folders"
    )
    parser.add_argument("--set", choices=["lite", "full"], default="lite")
    parser.add_argument("--max-vertices", type=int, help="only queries up to N vertices")
    parser.add_argument("--limit", type=int, help="the first N queries per dataset")
    parser.add_argument("--sample", type=int, help="N queries spread over the set")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per query")
    parser.add_argument(
        "--warm-up",
        type=float,
        default=0.005,
        help="untimed runs of a query, on both engines, until this many seconds "
        "have passed (at least one run)",
    )
    parser.add_argument("--threads", default="1,all", help="e.g. 1,all or 1,2")
    parser.add_argument("--memory-limit", default="4GB")
    parser.add_argument("--max-temp-size", default="8GB", help="DuckDB spill limit")
    parser.add_argument(
        "--variants",
        default=",".join(VARIANTS),
        help=f"einsql variants among {', '.join(VARIANTS)} (skipped when this "
        "build lacks their setting)",
    )
    parser.add_argument(
        "--duckdb-results",
        type=Path,
        help="take DuckDB's outcomes from this results.csv of an earlier run "
        "(same datasets, queries, threads and timeout) instead of running DuckDB",
    )
    parser.add_argument(
        "--one-label",
        action="store_true",
        help="replace every vertex label (data and query graphs) by one label; "
        "counts are then checked between the engines only",
    )
    parser.add_argument("--out", type=Path, help="default: REPO/bench-results/subgraph")
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue a stopped run in the same output folder: the queries its "
        "journal.jsonl holds are not run again (same options, same build)",
    )
    args = parser.parse_args()
    if not args.warm_up >= 0:
        sys.exit(f"--warm-up: {args.warm_up} is not a number of seconds, 0 or more")

    repo = args.repo.resolve()
    out = (args.out or repo / "bench-results" / "subgraph").resolve()
    variants = [v.strip() for v in args.variants.split(",") if v.strip()]
    for v in variants:
        if v not in VARIANTS:
            sys.exit(f"unknown variant '{v}': expected one of {', '.join(VARIANTS)}")
    if DEFAULT_VARIANT not in variants:
        variants.insert(0, DEFAULT_VARIANT)
    threads_list = thread_counts(args.threads)
    args.set_description = (
        "queries-lite"
        if args.set == "lite"
        else "queries" + (f" up to {args.max_vertices} vertices" if args.max_vertices else "")
    )
    if args.limit or args.sample:
        args.set_description += (
            f", first {args.limit}" if args.limit else f", sample of {args.sample}"
        )

    earlier = read_duckdb_results(args.duckdb_results) if args.duckdb_results else {}
    binary = bench_binary(repo)
    meta = {"date": date.today().isoformat(), "commit": commit(repo), "machine": machine()}
    # One spill folder per run, so that runs side by side never clear
    # each other's.
    spill_root = repo / "target" / "subgraph-bench-tmp" / f"{out.name}-{os.getpid()}"
    out.mkdir(parents=True, exist_ok=True)
    journal = Journal(out / "journal.jsonl", binary, args)
    meta["resumed"] = journal.resumed
    all_rows = []
    for dataset in [d.strip() for d in args.datasets.split(",") if d.strip()]:
        if args.one_label:
            dataset = one_label(dataset, repo, out)
        name = Path(dataset).name
        folder = out / "input" / name
        info, queries = emit(binary, dataset, folder, args)
        log(f"{name}: {len(queries)} queries")
        spill = spill_root / name
        con = None
        if not args.duckdb_results:
            shutil.rmtree(spill, ignore_errors=True)
            spill.mkdir(parents=True)
            con = duckdb_connection(folder, spill, args)
        rows_by_threads = []
        plans = {}
        for threads in threads_list:
            results = {}
            if con is not None:
                results[DEFAULT_VARIANT], results[DUCKDB] = run_paced(
                    binary, folder, threads, args, con, queries, journal
                )
            for variant in list(variants):
                if variant in results:
                    outcomes = results[variant]
                else:
                    outcomes = run_einsql(binary, folder, variant, threads, args, queries, journal)
                if outcomes is None:
                    variants.remove(variant)
                else:
                    results[variant] = outcomes
                    if variant == DEFAULT_VARIANT:
                        for q, o in outcomes.items():
                            plans[(threads, q)] = o.get("plan")
            if args.duckdb_results:
                results[DUCKDB] = reused_duckdb(
                    earlier, args.duckdb_results, name, queries, threads
                )
            rows = rows_for(name, queries, threads, results)
            rows_by_threads.append((threads, rows))
            all_rows += rows
            write_csv(out / "results.csv", all_rows)
            (out / f"{name}.md").write_text(
                summary(name, info, rows_by_threads, plans, args, meta)
            )
        if con is not None:
            con.close()
        shutil.rmtree(spill, ignore_errors=True)
        plot(name, rows_by_threads, out / f"{name}.png", args.timeout)
        log(f"{name}: wrote {out / (name + '.md')} and {out / (name + '.png')}")
    shutil.rmtree(spill_root, ignore_errors=True)
    log(f"wrote {out / 'results.csv'}")


def write_csv(path, rows):
    with open(path, "w", newline="") as file:
        writer = csv.DictWriter(file, fieldnames=CSV_FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()
