#!/usr/bin/env python3
"""Checks einsql's subgraph counts against truth, per query group.

Reads the `queries.jsonl` that `cargo bench --bench subgraph -- emit` wrote
(one query per line, with its `truth`) and the JSON lines that `cargo bench
--bench subgraph -- run` printed for the same folder, and prints a Markdown
table: per group (`dense_16`, `sparse_8`, ...) the number of queries, how
many counts equal `truth/`, how many differ, time out or fail, and the
median, 95th percentile and maximum time of the queries that finished.
Exits with status 1 when a count differs from its truth.

    python3 scripts/subgraph_check.py DIR/queries.jsonl RUN_OUTPUT.jsonl
"""

import json
import re
import sys
from collections import defaultdict


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, round((len(values) - 1) * p))]


def seconds(value):
    if value is None:
        return "-"
    return f"{value * 1e3:.1f} ms" if value < 1 else f"{value:.2f} s"


def group_of(name):
    found = re.search(r"(dense|sparse)_(\d+)", name)
    return f"{found.group(1)}_{found.group(2)}" if found else "other"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1].strip())
    truth = {}
    for line in open(sys.argv[1]):
        if line.strip():
            query = json.loads(line)
            truth[query["name"]] = query.get("truth")
    groups = defaultdict(list)
    for line in open(sys.argv[2]):
        if line.strip():
            outcome = json.loads(line)
            groups[group_of(outcome["name"])].append(outcome)
    print("| group | queries | equal to truth | wrong | no truth | timeouts | errors "
          "| median | p95 | max |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    wrong_names = []
    for group in sorted(groups, key=lambda g: (g.split("_")[0], int(g.split("_")[-1]))):
        outcomes = groups[group]
        finished = [o for o in outcomes if o["status"] == "ok"]
        known = [o for o in finished if truth.get(o["name"]) is not None]
        equal = [o for o in known if o["count"] == truth[o["name"]]]
        wrong = [o["name"] for o in known if o["count"] != truth[o["name"]]]
        wrong_names += wrong
        times = [o["seconds"] for o in finished]
        print(
            f"| {group} | {len(outcomes)} | {len(equal)} | {len(wrong)} "
            f"| {len(finished) - len(known)} "
            f"| {sum(o['status'] == 'timeout' for o in outcomes)} "
            f"| {sum(o['status'] == 'error' for o in outcomes)} "
            f"| {seconds(percentile(times, 0.5))} | {seconds(percentile(times, 0.95))} "
            f"| {seconds(max(times) if times else None)} |"
        )
    for name in wrong_names:
        print(f"wrong count: {name}", file=sys.stderr)
    sys.exit(1 if wrong_names else 0)


if __name__ == "__main__":
    main()
