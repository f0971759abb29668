#!/usr/bin/env python3
"""The README's results plot, drawn from a data file.

Run through `scripts/headline-plot`, which provides matplotlib from a
virtual environment. Reads `docs/bench/headline.csv` (one row per dataset,
thread count and engine, as `scripts/subgraph-bench` summarises a run; the
figures are copied from that run's `<dataset>.md`) and writes
`docs/bench/headline.png`: on the left the median time per query of each
engine, on the right einsql's median and geometric-mean speedup over DuckDB
on the queries both finished. The run's date and command come from the
file, so the plot names what produced it (the einsql commit stays in the
file and in docs/benchmarks.md).
"""

import argparse
import csv
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)

EINSQL = "einsql"
DUCKDB = "duckdb"


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        raise SystemExit(f"{path}: no rows")
    for key in ("date", "einsql", "command", "timeout_s", "query_set"):
        values = {row[key] for row in rows}
        if len(values) != 1:
            raise SystemExit(f"{path}: the rows must come from one run ({key}: {sorted(values)})")
    return rows


def groups(rows):
    """(dataset, threads) in file order, each with its einsql and DuckDB row."""
    order = []
    by_group = {}
    for row in rows:
        key = (row["dataset"], int(row["threads"]))
        if key not in by_group:
            order.append(key)
            by_group[key] = {}
        by_group[key][row["engine"]] = row
    for key in order:
        missing = {EINSQL, DUCKDB} - set(by_group[key])
        if missing:
            raise SystemExit(f"{key}: no row for {', '.join(sorted(missing))}")
    return [(key, by_group[key]) for key in order]


def milliseconds(value):
    """A time in ms as the summaries print it: 674 µs, 24.8 ms."""
    return f"{value * 1000:.0f} µs" if value < 1 else f"{value:.3g} ms"


def plot(rows, out):
    run = rows[0]
    grouped = groups(rows)
    labels = [f"{dataset}\n{threads} thread{'s' if threads > 1 else ''}" for (dataset, threads), _ in grouped]
    x = list(range(len(grouped)))
    width = 0.38

    figure, (times, speedups) = plt.subplots(1, 2, figsize=(10, 4.2), dpi=100)

    einsql_ms = [float(g[EINSQL]["median_ms"]) for _, g in grouped]
    duckdb_ms = [float(g[DUCKDB]["median_ms"]) for _, g in grouped]
    bars = times.bar([i - width / 2 for i in x], einsql_ms, width, label="einsql", color="#1f77b4")
    times.bar_label(bars, labels=[milliseconds(v) for v in einsql_ms], fontsize=8)
    bars = times.bar([i + width / 2 for i in x], duckdb_ms, width, label="DuckDB", color="#ff7f0e")
    times.bar_label(bars, labels=[milliseconds(v) for v in duckdb_ms], fontsize=8)
    times.set_yscale("log")
    times.set_ylim(0.1, 300)
    times.set_xticks(x, labels)
    times.set_ylabel("median time per query (ms, log scale)")
    timeouts = ", ".join(
        f"{dataset} {threads}t: {g[DUCKDB]['timeouts']}" for (dataset, threads), g in grouped
    )
    times.set_title(
        f"Median time per query ({run['queries']} queries each)\n"
        f"DuckDB timeouts at {run['timeout_s']} s, counted as {run['timeout_s']} s",
        fontsize=10,
    )
    times.text(0.01, 0.98, f"DuckDB timeouts: {timeouts}\neinsql: none", transform=times.transAxes,
               fontsize=7, va="top")
    times.legend(loc="upper right", fontsize=8)

    medians = [float(g[EINSQL]["speedup_median"]) for _, g in grouped]
    geomeans = [float(g[EINSQL]["speedup_geomean"]) for _, g in grouped]
    bars = speedups.bar([i - width / 2 for i in x], medians, width, label="median", color="#2ca02c")
    speedups.bar_label(bars, labels=[f"{v:g}x" for v in medians], fontsize=8)
    bars = speedups.bar([i + width / 2 for i in x], geomeans, width, label="geometric mean", color="#98df8a")
    speedups.bar_label(bars, labels=[f"{v:g}x" for v in geomeans], fontsize=8)
    speedups.set_xticks(x, labels)
    speedups.set_ylim(0, max(geomeans + medians) * 1.35)
    speedups.set_ylabel("DuckDB time / einsql time")
    speedups.set_title("einsql's speedup over DuckDB\n(on the queries both finished)", fontsize=10)
    speedups.legend(loc="upper left", fontsize=8)

    figure.suptitle(
        f"Subgraph counting, {run['query_set']} sets: einsql against DuckDB, run of {run['date']}",
        fontsize=11,
    )
    figure.text(0.5, 0.01, run["command"], ha="center", fontsize=7, family="monospace")
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    figure.savefig(out)
    print(f"wrote {out}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=Path(__file__).resolve().parent.parent)
    parser.add_argument("--data", type=Path, help="default: docs/bench/headline.csv")
    parser.add_argument("--out", type=Path, help="default: docs/bench/headline.png")
    args = parser.parse_args()
    data = args.data or args.repo / "docs/bench/headline.csv"
    out = args.out or args.repo / "docs/bench/headline.png"
    plot(read_rows(data), out)


if __name__ == "__main__":
    main()
