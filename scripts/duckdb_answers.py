#!/usr/bin/env python3
"""Records DuckDB's answers to random SQL queries over random tables.

Run through `scripts/record-duckdb-answers`, which provides DuckDB from a
virtual environment. Writes `tests/slt/duckdb_random.slt`: the tables (as
`CREATE TABLE` / `INSERT` statements), then `query` records whose expected
results are DuckDB's, formatted as einsql's sqllogictest runner prints cells
(`tests/slt.rs`, fn `cell`). `cargo test --test slt` then checks einsql
against them without DuckDB.

Everything is drawn from one fixed seed, so re-running the script reproduces
the file byte for byte. The tables respect einsql's table semantics: tables
with value columns have unique primary keys, tables without value columns are
bags (duplicate rows allowed), keys are small non-negative integers or short
strings, values are small integers, multiples of 0.25 (so sums are exact in
any order) or booleans, and nothing is NULL.

A query is drawn from a family of templates with random tables, columns and
constants; a draw is rejected and redrawn when its answer is not a good test
(no rows where rows are expected, too many rows, NULLs or -0.0 where they are
not the point, magnitudes outside [1e-6, 1e15], DECIMAL results).
"""

import argparse
import decimal
import math
import random
import re
import sys
import tempfile
from pathlib import Path

import duckdb

SEED = 20250611
OUTPUT = "tests/slt/duckdb_random.slt"
MAX_ROWS = 30
MAX_DRAWS = 200

# einsql has these functions built in; DuckDB gets them as macros, which are
# not part of the recorded file.
MACROS = [
    "CREATE MACRO sigmoid(x) AS 1 / (1 + exp(-x))",
    "CREATE MACRO relu(x) AS greatest(x, 0)",
]

NAMES = ["ant", "bee", "cat", "dog", "eel"]
TAGS = ["blue", "green", "red"]


class Rejected(Exception):
    """A query whose answer is not a good test; the family draws again."""


# ---------------------------------------------------------------- tables


def quarter(rng):
    """A double that is a multiple of 0.25 in [-4, 4]."""
    return rng.randint(-16, 16) / 4


def unique_keys(rng, domains, count):
    """`count` distinct key tuples drawn from the product of `domains`."""
    universe = [()]
    for domain in domains:
        universe = [t + (d,) for t in universe for d in domain]
    return sorted(rng.sample(universe, count))


def literal(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return "'" + value + "'"
    if isinstance(value, float):
        return format_double(value)
    return str(value)


def with_zero(rows, column):
    """Makes sure some row holds a zero in `column` (zeros are entries)."""
    if not any(row[column] == 0 for row in rows):
        row = list(rows[0])
        row[column] = 0.0 if isinstance(row[column], float) else 0
        rows[0] = tuple(row)
    return rows


def make_tables(rng):
    """The setup statements: (create, rows) per table."""
    tables = []

    # A directed graph as a bag: a few edges appear twice.
    nodes = range(6)
    edges = unique_keys(rng, [nodes, nodes], 16)
    edges += rng.sample(edges, 4)
    rng.shuffle(edges)
    tables.append(("CREATE TABLE edges (src INTEGER, dst INTEGER)", edges))

    # A sparse matrix with an integer and a double value.
    r = [
        k + (rng.randint(-5, 5), quarter(rng))
        for k in unique_keys(rng, [range(6), range(6)], 14)
    ]
    r = with_zero(with_zero(r, 2), 3)
    tables.append(
        (
            "CREATE TABLE r (i INTEGER, j INTEGER, v INTEGER, x DOUBLE, "
            "PRIMARY KEY (i, j))",
            r,
        )
    )

    # A second matrix sharing r's column dimension j.
    s = [
        k + (quarter(rng), rng.randint(-5, 5))
        for k in unique_keys(rng, [range(6), range(5)], 12)
    ]
    s = with_zero(s, 2)
    tables.append(
        (
            "CREATE TABLE s (j INTEGER, k INTEGER, w DOUBLE, n INTEGER, "
            "PRIMARY KEY (j, k))",
            s,
        )
    )

    # A vector with an integer and a boolean value.
    u = [
        k + (rng.randint(-5, 5), rng.random() < 0.5)
        for k in unique_keys(rng, [range(7)], 5)
    ]
    tables.append(
        (
            "CREATE TABLE u (i INTEGER, score INTEGER, flag BOOLEAN, "
            "PRIMARY KEY (i))",
            u,
        )
    )

    # A matrix with a string key and an integer key.
    p = [
        k + (rng.randint(-5, 5), quarter(rng), rng.random() < 0.5)
        for k in unique_keys(rng, [NAMES, range(5)], 11)
    ]
    tables.append(
        (
            "CREATE TABLE p (name VARCHAR, i INTEGER, qty INTEGER, "
            "price DOUBLE, ok BOOLEAN, PRIMARY KEY (name, i))",
            p,
        )
    )

    # A vector keyed by strings, one of them absent from p.
    q = [k + (rng.randint(-5, 5),) for k in unique_keys(rng, [NAMES + ["fox"]], 4)]
    tables.append(
        ("CREATE TABLE q (name VARCHAR, bonus INTEGER, PRIMARY KEY (name))", q)
    )

    # Node labels as a bag with a string column: some rows twice.
    tags = unique_keys(rng, [range(7), TAGS], 10)
    tags += rng.sample(tags, 3)
    rng.shuffle(tags)
    tables.append(("CREATE TABLE tags (node INTEGER, tag VARCHAR)", tags))

    # An empty table.
    tables.append(("CREATE TABLE nothing (i INTEGER, v DOUBLE, PRIMARY KEY (i))", []))
    return tables


def insert_statement(create, rows):
    name = create.split()[2]
    values = ", ".join("(" + ", ".join(literal(v) for v in row) + ")" for row in rows)
    return f"INSERT INTO {name} VALUES {values}"


# ---------------------------------------------------------------- formatting


def format_double(x):
    """A double as Rust's `f64::to_string()` prints it."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        if math.copysign(1.0, x) < 0:
            raise Rejected("-0.0")
        return "0"
    if not 1e-6 <= abs(x) <= 1e15:
        raise Rejected(f"magnitude of {x!r}")
    # repr gives the shortest round-trip digits (as Rust does); Rust never
    # switches to exponent notation and drops a trailing `.0`.
    text = format(decimal.Decimal(repr(x)), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_cell(value):
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_double(value)
    if isinstance(value, str):
        if value == "" or any(c.isspace() for c in value):
            raise Rejected(f"string {value!r}")
        return value
    raise Rejected(f"a {type(value).__name__} result")


INTEGER_TYPES = {
    "TINYINT",
    "SMALLINT",
    "INTEGER",
    "BIGINT",
    "HUGEINT",
    "UTINYINT",
    "USMALLINT",
    "UINTEGER",
    "UBIGINT",
    "UHUGEINT",
}


def type_letter(duck_type):
    name = str(duck_type)
    if name in INTEGER_TYPES:
        return "I"
    if name in ("DOUBLE", "FLOAT"):
        return "R"
    if name in ("VARCHAR", "BOOLEAN"):
        return "T"
    raise Rejected(f"a {name} column")


# ---------------------------------------------------------------- queries


class Query:
    """One drawn query and how its answer must look."""

    def __init__(self, sql, ordered=False, empty=False, nulls=False):
        self.sql = sql
        self.ordered = ordered  # has a total ORDER BY: keep DuckDB's order
        self.empty = empty  # may answer with no rows
        self.nulls = nulls  # may answer NULL


def key_const(rng):
    return rng.randint(0, 5)


def val_const(rng):
    return rng.randint(-2, 2)


def variant(n, options):
    """The `n`th of `options`, cycling: successive draws cover every option."""
    return options[n % len(options)]


def chunk(n, items, size):
    """The `n`th run of `size` items, cycling: successive draws cover all."""
    return [items[(size * n + k) % len(items)] for k in range(size)]


def pick(rng, items, count):
    """`count` distinct items, in the order they were listed."""
    chosen = set(rng.sample(range(len(items)), count))
    return [item for n, item in enumerate(items) if n in chosen]


def r_predicate(rng, n=None):
    """A filter on r: the `n`th form, or a random one."""
    c, d, z = key_const(rng), key_const(rng), val_const(rng)
    return variant(
        rng.randrange(1000) if n is None else n,
        [
            f"r.v > {z}",
            f"r.x <= {z}",
            "r.i < r.j",
            "r.v > r.x",
            f"r.i = {c} AND r.v <> 0",
            f"r.i = {c} OR r.j = {d}",
            f"NOT (r.i = {c})",
            f"NOT (r.v < 0) AND r.j >= {c}",
            f"r.x >= 0 OR r.v < {z}",
            f"r.i >= {c} AND NOT (r.x > r.v)",
            f"r.i <> r.j AND r.x > {z}",
        ],
    )


def q_join_rows(rng, n):
    col = rng.choice(["r.v", "r.x", "r.v, r.x"])
    extra = rng.choice(["", f" AND r.v >= {val_const(rng)}", " AND e.src <> e.dst"])
    return Query(
        f"SELECT e.src, e.dst, {col} FROM edges e, r "
        f"WHERE e.src = r.i AND e.dst = r.j{extra}"
    )


def q_path_rows(rng, n):
    c = key_const(rng)
    where = variant(
        n, [f"a.src = {c}", f"b.dst = {c}", f"a.src = {c} AND b.dst <> a.src"]
    )
    return Query(
        f"SELECT a.src, a.dst, b.dst FROM edges a JOIN edges b ON a.dst = b.src WHERE {where}"
    )


def q_matmul_rows(rng, n):
    c = key_const(rng)
    return Query(
        f"SELECT r.i, r.j, s.k, r.x * s.w AS m, r.v + s.n FROM r JOIN s ON r.j = s.j "
        f"WHERE r.i = {c}"
    )


def q_string_join_rows(rng, n):
    name = rng.choice(NAMES)
    form = variant(
        n,
        [
            f"SELECT p.name, p.i, p.qty, u.score FROM p JOIN u ON p.i = u.i WHERE p.name = '{name}'",
            f"SELECT p.name, p.i, p.price * q.bonus FROM p, q WHERE p.name = q.name AND p.i >= {key_const(rng)}",
            f"SELECT p.name, p.i, p.qty FROM p WHERE p.name < '{name}' AND p.ok",
            f"SELECT p.name, p.i, p.price FROM p WHERE NOT p.ok OR p.name = '{name}'",
        ],
    )
    return Query(form)


def q_tag_rows(rng, n):
    tag = rng.choice(TAGS)
    return Query(
        variant(
            n,
            [
                f"SELECT t.tag, e.src, e.dst FROM tags t JOIN edges e ON t.node = e.src WHERE t.tag = '{tag}'",
                f"SELECT t.node, t.tag FROM tags t WHERE t.tag <> '{tag}'",
                f"SELECT t.node, u.score FROM tags AS t JOIN u ON t.node = u.i WHERE t.tag = '{tag}' AND u.flag",
            ],
        )
    )


def q_filter_rows(rng, n):
    cols = rng.choice(["r.i, r.j, r.v", "r.i, r.j, r.x", "r.j, r.i, r.v, r.x"])
    return Query(f"SELECT {cols} FROM r WHERE {r_predicate(rng, n)}")


def q_expression_rows(rng, n):
    c = key_const(rng)
    exprs = pick(
        rng,
        [
            "r.v * 2 + 1",
            "r.x - r.v",
            "r.v > r.x",
            "r.x * r.x",
            f"r.v - {rng.randint(1, 3)} AS shifted",
            "r.x / 4",
            "-r.v",
            "r.v * r.v - 3 * r.v",
            "r.x = 0",
        ],
        3,
    )
    return Query(f"SELECT r.i, r.j, {', '.join(exprs)} FROM r WHERE r.i <= {c}")


def q_function_rows(rng, n):
    c = key_const(rng)
    exprs = chunk(
        n,
        [
            "abs(r.v)",
            "exp(r.x)",
            "sqrt(abs(r.x))",
            "ln(1 + abs(r.x))",
            "log(1 + abs(r.v))",
            "power(r.x, 2)",
            "power(2, r.v)",
            "greatest(r.v, r.x)",
            "least(r.v, 0)",
            "sigmoid(r.x)",
            "relu(r.x)",
            "relu(r.v)",
            "greatest(r.x, 0.5)",
        ],
        3,
    )
    return Query(f"SELECT r.i, r.j, {', '.join(exprs)} FROM r WHERE r.j >= {c}")


def q_case_rows(rng, n):
    case = variant(
        n,
        [
            "CASE WHEN r.v > r.x THEN r.v ELSE r.x END",
            "CASE WHEN r.v < 0 THEN -1 WHEN r.v = 0 THEN 0 ELSE 1 END AS sign",
            "CASE WHEN r.i = r.j THEN r.x * 2 ELSE r.x END",
        ],
    )
    return Query(f"SELECT r.i, r.j, {case} FROM r WHERE {r_predicate(rng)}")


def q_scalar_aggregates(rng, n):
    aggs = pick(
        rng,
        [
            "COUNT(*)",
            "SUM(r.v)",
            "SUM(r.x)",
            "MIN(r.x)",
            "MAX(r.v)",
            "AVG(r.v)",
            "AVG(r.x)",
            "COUNT(r.x)",
        ],
        rng.randint(2, 4),
    )
    return Query(f"SELECT {', '.join(aggs)} FROM r WHERE {r_predicate(rng)}")


def q_join_aggregates(rng, n):
    c = key_const(rng)
    return Query(
        variant(
            n,
            [
                "SELECT SUM(r.x * s.w), COUNT(*) FROM r JOIN s ON r.j = s.j",
                f"SELECT SUM(r.v * s.n), MAX(r.x * s.w), MIN(s.n) FROM r, s WHERE r.j = s.j AND s.k = {c % 5}",
                "SELECT COUNT(*), SUM(u.score) FROM edges e JOIN u ON e.dst = u.i",
                "SELECT COUNT(e.src), AVG(r.x) FROM edges e JOIN r ON e.src = r.i AND e.dst = r.j",
                f"SELECT SUM(p.qty * q.bonus), COUNT(*) FROM p JOIN q ON p.name = q.name WHERE p.i <> {c % 5}",
            ],
        )
    )


# Fixed queries: triangle and 4-cycle counts over the bag, a labelled path
# count, a sigmoid over an aggregate.
FIXED = [
    Query(
        "SELECT COUNT(*) FROM edges a, edges b, edges c "
        "WHERE a.dst = b.src AND b.dst = c.src AND c.dst = a.src"
    ),
    Query(
        "SELECT COUNT(*) FROM edges a JOIN edges b ON a.dst = b.src "
        "JOIN edges c ON a.src = c.src AND b.dst = c.dst "
        "WHERE a.src < a.dst AND b.src < b.dst"
    ),
    Query(
        "SELECT COUNT(*) FROM edges a, edges b, edges c, edges d "
        "WHERE a.dst = b.src AND b.dst = c.src AND c.dst = d.src AND d.dst = a.src"
    ),
    Query(
        "SELECT COUNT(*) FROM edges a, edges b, edges c, edges d "
        "WHERE a.dst = b.src AND b.dst = c.src AND c.dst = d.src AND d.dst = a.src "
        "AND a.src < b.src AND a.src < c.src AND a.src < d.src"
    ),
    Query(
        "SELECT a.src, COUNT(*) FROM edges a, edges b, edges c "
        "WHERE a.dst = b.src AND b.dst = c.src AND c.dst = a.src GROUP BY a.src"
    ),
    Query(
        "SELECT COUNT(*) FROM edges a JOIN edges b ON a.dst = b.src "
        "JOIN tags t ON t.node = b.dst WHERE t.tag = 'red'"
    ),
    Query(
        "SELECT r.i, sigmoid(SUM(r.x * s.w)) FROM r JOIN s ON r.j = s.j "
        "WHERE s.k = 0 GROUP BY r.i"
    ),
]


def q_group_one(rng, n):
    aggs = ", ".join(
        pick(
            rng,
            [
                "SUM(r.v)",
                "COUNT(*)",
                "MIN(r.x)",
                "MAX(r.x)",
                "AVG(r.x)",
                "COUNT(r.v)",
                "AVG(r.v)",
            ],
            3,
        )
    )
    return Query(
        variant(
            n,
            [
                f"SELECT r.i, {aggs} FROM r GROUP BY r.i",
                f"SELECT r.j, {aggs} FROM r WHERE {r_predicate(rng)} GROUP BY r.j",
                "SELECT src, COUNT(*) FROM edges GROUP BY src",
                "SELECT e.dst, COUNT(*) AS indegree FROM edges e GROUP BY e.dst",
                "SELECT a.src, COUNT(*) FROM edges a JOIN edges b ON a.dst = b.src GROUP BY a.src",
                "SELECT p.name, SUM(p.qty), MAX(p.price), COUNT(*) FROM p GROUP BY p.name",
                "SELECT t.tag, COUNT(*) FROM tags t GROUP BY t.tag",
                "SELECT t.tag, COUNT(*), SUM(u.score) FROM tags t JOIN u ON t.node = u.i GROUP BY t.tag",
            ],
        )
    )


def q_group_two(rng, n):
    c = key_const(rng)
    return Query(
        variant(
            n,
            [
                "SELECT r.i, s.k, SUM(r.x * s.w) FROM r JOIN s ON r.j = s.j GROUP BY r.i, s.k",
                f"SELECT r.i, s.k, SUM(r.v * s.n), COUNT(*) FROM r, s WHERE r.j = s.j AND r.i <= {c} GROUP BY r.i, s.k",
                "SELECT a.src, b.dst, COUNT(*) FROM edges a JOIN edges b ON a.dst = b.src GROUP BY a.src, b.dst",
                "SELECT p.name, u.i, SUM(p.qty) FROM p JOIN u ON p.i = u.i WHERE u.flag GROUP BY p.name, u.i",
                "SELECT t.tag, e.dst, COUNT(*) FROM tags t JOIN edges e ON t.node = e.src GROUP BY t.tag, e.dst",
            ],
        )
    )


def q_aggregate_arithmetic(rng, n):
    exprs = pick(
        rng,
        [
            "SUM(r.v * s.w) / COUNT(*)",
            "MAX(s.w) - MIN(r.x)",
            "2 * SUM(r.v) + 1",
            "SUM(r.x) * SUM(s.w)",
            "SUM(r.v) / 2",
            "COUNT(*) - COUNT(s.n)",
            "AVG(r.x + s.w)",
            "SUM(r.v + s.n) * 3",
        ],
        3,
    )
    group = variant(
        n, [("r.i, ", " GROUP BY r.i"), ("s.k, ", " GROUP BY s.k"), ("", "")]
    )
    return Query(
        f"SELECT {group[0]}{', '.join(exprs)} FROM r JOIN s ON r.j = s.j{group[1]}"
    )


def q_case_aggregates(rng, n):
    return Query(
        variant(
            n,
            [
                "SELECT r.i, SUM(CASE WHEN r.v > 0 THEN r.v ELSE 0 END), SUM(CASE WHEN r.x < 0 THEN 1 ELSE 0 END) FROM r GROUP BY r.i",
                "SELECT r.j, CASE WHEN SUM(r.v) > 0 THEN SUM(r.v) ELSE 0 - SUM(r.v) END FROM r GROUP BY r.j",
                "SELECT p.name, SUM(CASE WHEN p.ok THEN p.qty ELSE 0 END), MAX(CASE WHEN p.ok THEN p.price ELSE -4 END) FROM p GROUP BY p.name",
                "SELECT CASE WHEN COUNT(*) > 10 THEN 1 ELSE 0 END, SUM(CASE WHEN e.src < e.dst THEN 1 ELSE -1 END) FROM edges e",
                "SELECT s.k, MAX(CASE WHEN s.n >= 0 THEN s.w ELSE 0 END) - MIN(s.w) FROM s GROUP BY s.k",
            ],
        )
    )


def q_function_aggregates(rng, n):
    exprs = chunk(
        n,
        [
            "sigmoid(SUM(r.x))",
            "exp(AVG(r.x))",
            "sqrt(SUM(r.v * r.v))",
            "abs(SUM(r.v))",
            "power(SUM(r.x), 2)",
            "greatest(MAX(r.v), 0)",
            "least(MIN(r.x), SUM(r.x))",
            "log(1 + COUNT(*))",
            "ln(SUM(exp(r.x)))",
            "SUM(sigmoid(r.x))",
            "relu(SUM(r.x))",
            "SUM(relu(r.v))",
        ],
        3,
    )
    group = variant(
        n, [("r.i, ", " GROUP BY r.i"), ("r.j, ", " GROUP BY r.j"), ("", "")]
    )
    return Query(f"SELECT {group[0]}{', '.join(exprs)} FROM r{group[1]}")


def q_having(rng, n):
    c = rng.randint(1, 3)
    z = val_const(rng)
    return Query(
        variant(
            n,
            [
                f"SELECT r.i, SUM(r.v) FROM r GROUP BY r.i HAVING COUNT(*) > {c}",
                f"SELECT r.j, SUM(r.x), COUNT(*) FROM r GROUP BY r.j HAVING SUM(r.x) > {z}",
                f"SELECT a.src, COUNT(*) FROM edges a JOIN edges b ON a.dst = b.src GROUP BY a.src HAVING COUNT(*) >= {c + 2}",
                f"SELECT p.name, AVG(p.price) FROM p GROUP BY p.name HAVING MAX(p.qty) > {z} AND COUNT(*) >= 2",
            ],
        )
    )


def q_distinct(rng, n):
    c = key_const(rng)
    return Query(
        variant(
            n,
            [
                "SELECT DISTINCT e.src FROM edges e",
                f"SELECT DISTINCT a.src, b.dst FROM edges a JOIN edges b ON a.dst = b.src WHERE a.src <= {c}",
                "SELECT DISTINCT t.tag FROM tags t JOIN edges e ON t.node = e.dst",
                "SELECT DISTINCT r.i FROM r JOIN s ON r.j = s.j",
                "SELECT DISTINCT t.node, t.tag FROM tags t",
                "SELECT DISTINCT p.name FROM p WHERE p.qty > 0 OR p.ok",
            ],
        )
    )


def q_order_limit(rng, n):
    limit = rng.randint(2, 5)
    m = rng.randint(1, 3)
    return Query(
        variant(
            n,
            [
                f"SELECT e.src, COUNT(*) AS d FROM edges e GROUP BY e.src ORDER BY d DESC, e.src ASC LIMIT {limit}",
                f"SELECT r.i, r.j, r.x FROM r ORDER BY 3 DESC, 1, 2 LIMIT {limit} OFFSET {m}",
                "SELECT p.name, SUM(p.qty) AS total FROM p GROUP BY p.name ORDER BY total, p.name",
                f"SELECT a.src, a.dst FROM edges a ORDER BY a.dst DESC, a.src LIMIT {limit + 3}",
                f"SELECT r.i, SUM(r.v) AS sv FROM r GROUP BY r.i ORDER BY 2 DESC, 1 OFFSET {m}",
                f"SELECT r.i, s.k, SUM(r.x * s.w) AS m FROM r JOIN s ON r.j = s.j GROUP BY r.i, s.k ORDER BY m DESC, r.i, s.k LIMIT {limit}",
                "SELECT t.tag, t.node FROM tags t ORDER BY t.tag DESC, t.node DESC",
                f"SELECT DISTINCT e.dst FROM edges e ORDER BY e.dst DESC LIMIT {limit}",
            ],
        ),
        ordered=True,
    )


DEGREE = "SELECT e.src AS n, COUNT(*) AS d FROM edges e GROUP BY e.src"


def q_with(rng, n):
    c = rng.randint(1, 3)
    return Query(
        variant(
            n,
            [
                f"WITH deg AS ({DEGREE}) SELECT deg.n, deg.d FROM deg WHERE deg.d > {c}",
                f"WITH deg AS ({DEGREE}) SELECT e.src, e.dst, a.d * b.d FROM edges e JOIN deg a ON e.src = a.n JOIN deg b ON e.dst = b.n",
                "WITH o AS (SELECT src AS n, COUNT(*) AS d FROM edges GROUP BY src), "
                "i AS (SELECT dst AS n, COUNT(*) AS d FROM edges GROUP BY dst) "
                "SELECT o.n, o.d, i.d, o.d - i.d FROM o JOIN i ON o.n = i.n",
                "WITH t AS (SELECT r.i AS i, SUM(r.x * s.w) AS m FROM r JOIN s ON r.j = s.j GROUP BY r.i) "
                "SELECT MAX(t.m), MIN(t.m), SUM(t.m), COUNT(*) FROM t",
                "WITH m AS (SELECT r.i AS i, s.k AS k, SUM(r.x * s.w) AS val FROM r JOIN s ON r.j = s.j GROUP BY r.i, s.k) "
                "SELECT m.k, SUM(m.val * u.score) FROM m JOIN u ON m.i = u.i GROUP BY m.k",
                f"WITH deg AS ({DEGREE}), hubs AS (SELECT deg.n AS n FROM deg WHERE deg.d >= {c}) "
                "SELECT COUNT(*) FROM edges e JOIN hubs a ON e.src = a.n JOIN hubs b ON e.dst = b.n",
            ],
        )
    )


def q_subquery(rng, n):
    c = rng.randint(1, 3)
    return Query(
        variant(
            n,
            [
                f"SELECT q.i, q.c FROM (SELECT r.i AS i, COUNT(*) AS c FROM r GROUP BY r.i) AS q WHERE q.c >= {c}",
                "SELECT SUM(q.m), MAX(q.m) FROM (SELECT a.src AS n, COUNT(*) AS m FROM edges a JOIN edges b ON a.dst = b.src GROUP BY a.src) q",
                "SELECT u.i, u.score * q.c FROM u JOIN (SELECT e.src AS n, COUNT(*) AS c FROM edges e GROUP BY e.src) q ON u.i = q.n",
                "SELECT x.i, x.j, x.y FROM (SELECT r.i AS i, r.j AS j, r.v * r.x AS y FROM r WHERE r.v > 0) x WHERE x.i <= x.j",
            ],
        )
    )


# Aggregates over no rows (SUM, MIN, MAX, AVG are NULL, COUNT is 0) and
# queries answering no rows.
EMPTY = [
    Query(
        "SELECT SUM(n.v), COUNT(*), COUNT(n.v), MIN(n.v), MAX(n.v), AVG(n.v) FROM nothing n",
        nulls=True,
    ),
    Query("SELECT SUM(r.v), COUNT(*), MAX(r.x) FROM r WHERE r.v > 5", nulls=True),
    Query("SELECT COUNT(*), SUM(r.x) FROM r JOIN nothing n ON r.i = n.i", nulls=True),
    Query("SELECT n.i, SUM(n.v) FROM nothing n GROUP BY n.i", empty=True),
    Query("SELECT COUNT(*), SUM(p.qty) FROM p WHERE p.name = 'yak'", nulls=True),
    Query("SELECT e.src, e.dst FROM edges e WHERE e.src = 2 AND e.src = 3", empty=True),
]


# Tables created from queries, then queried.
CREATE_AS = [
    (
        f"CREATE TABLE deg AS {DEGREE}",
        [
            "SELECT deg.n, deg.d FROM deg",
            "SELECT SUM(deg.d), MAX(deg.d) FROM deg",
            "SELECT e.src, e.dst FROM edges e JOIN deg ON e.dst = deg.n WHERE deg.d >= 3",
        ],
    ),
    (
        "CREATE TABLE rs AS SELECT r.i AS i, s.k AS k, SUM(r.x * s.w) AS m FROM r JOIN s ON r.j = s.j GROUP BY r.i, s.k",
        [
            "SELECT rs.k, SUM(rs.m), COUNT(*) FROM rs GROUP BY rs.k",
            "SELECT rs.i, rs.k, rs.m - u.score FROM rs JOIN u ON rs.i = u.i",
        ],
    ),
    (
        "CREATE TABLE paths AS SELECT a.src AS x, b.dst AS y FROM edges a JOIN edges b ON a.dst = b.src",
        [
            "SELECT paths.x, COUNT(*) FROM paths GROUP BY paths.x",
            "SELECT COUNT(*) FROM paths WHERE paths.x = paths.y",
        ],
    ),
]

# (family, instances drawn).
FAMILIES = [
    (q_join_rows, 4),
    (q_path_rows, 3),
    (q_matmul_rows, 2),
    (q_string_join_rows, 4),
    (q_tag_rows, 3),
    (q_filter_rows, 11),
    (q_expression_rows, 3),
    (q_function_rows, 5),
    (q_case_rows, 3),
    (q_scalar_aggregates, 4),
    (q_join_aggregates, 5),
    (q_group_one, 8),
    (q_group_two, 5),
    (q_aggregate_arithmetic, 4),
    (q_case_aggregates, 5),
    (q_function_aggregates, 5),
    (q_having, 4),
    (q_distinct, 6),
    (q_order_limit, 8),
    (q_with, 6),
    (q_subquery, 4),
]


# ---------------------------------------------------------------- recording


def answer(con, query):
    """DuckDB's answer as (type letters, formatted rows), or Rejected."""
    relation = con.sql(query.sql)
    letters = "".join(type_letter(t) for t in relation.types)
    raw = relation.fetchall()
    if len(raw) > MAX_ROWS:
        raise Rejected(f"{len(raw)} rows")
    if not raw and not query.empty:
        raise Rejected("no rows")
    if not query.nulls and any(v is None for row in raw for v in row):
        raise Rejected("NULL")
    rows = [[format_cell(v) for v in row] for row in raw]
    if not query.ordered:
        # The runner sorts einsql's rows as lists of strings (rowsort).
        rows.sort()
    return letters, rows


def record(lines, query, letters, rows):
    mode = "" if query.ordered else " rowsort"
    lines.append(f"query {letters}{mode}")
    lines.append(query.sql)
    lines.append("----")
    lines.extend(" ".join(row) for row in rows)
    lines.append("")


def draw(con, rng, family, n, seen):
    """One accepted query of `family`: redraws rejected or repeated ones."""
    reasons = []
    for _ in range(MAX_DRAWS):
        query = family(rng, n)
        if query.sql in seen:
            continue
        try:
            letters, rows = answer(con, query)
        except Rejected as reason:
            reasons.append(str(reason))
            continue
        seen.add(query.sql)
        return query, letters, rows
    raise SystemExit(
        f"{family.__name__}: no acceptable query in {MAX_DRAWS} draws "
        f"(rejections: {sorted(set(reasons))})"
    )


CONSTRUCTS = [
    ("JOIN ... ON", r"\bJOIN\b"),
    ("FROM list (comma join)", r"\bFROM \w+(?: AS)? \w+, \w"),
    ("self-join of edges", r"edges \w+ JOIN edges|edges \w+, edges"),
    ("WHERE", r"\bWHERE\b"),
    ("string constant", r"'\w+'"),
    ("AND", r"\bAND\b"),
    ("OR", r"\bOR\b"),
    ("NOT", r"\bNOT\b"),
    ("comparison < <= > >= <>", r"<|>"),
    ("GROUP BY", r"\bGROUP BY\b"),
    ("GROUP BY two columns", r"\bGROUP BY [\w.]+, "),
    ("SUM", r"\bSUM\("),
    ("COUNT(*)", r"COUNT\(\*\)"),
    ("COUNT(x)", r"COUNT\([\w.]+\)"),
    ("MIN", r"\bMIN\("),
    ("MAX", r"\bMAX\("),
    ("AVG", r"\bAVG\("),
    ("/ (division)", r" / "),
    ("CASE", r"\bCASE\b"),
    ("HAVING", r"\bHAVING\b"),
    ("DISTINCT", r"\bDISTINCT\b"),
    ("ORDER BY", r"\bORDER BY\b"),
    ("ORDER BY position", r"ORDER BY \d"),
    ("DESC", r"\bDESC\b"),
    ("LIMIT", r"\bLIMIT\b"),
    ("OFFSET", r"\bOFFSET\b"),
    ("WITH", r"^WITH\b"),
    ("WITH two CTEs", r"^WITH \w+ AS \(.*\), \w+ AS \("),
    ("subquery in FROM", r"(FROM|JOIN) \(SELECT"),
    ("exp", r"\bexp\("),
    ("ln", r"\bln\("),
    ("log", r"\blog\("),
    ("sqrt", r"\bsqrt\("),
    ("abs", r"\babs\("),
    ("power", r"\bpower\("),
    ("greatest", r"\bgreatest\("),
    ("least", r"\bleast\("),
    ("sigmoid", r"\bsigmoid\("),
    ("relu", r"\brelu\("),
    ("boolean column", r"\b(ok|flag)\b"),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repo", type=Path, default=Path(__file__).resolve().parent.parent
    )
    args = parser.parse_args()

    rng = random.Random(SEED)
    with tempfile.TemporaryDirectory(prefix="einsql-duckdb-") as spill:
        con = duckdb.connect(
            ":memory:",
            config={
                "threads": 1,
                "memory_limit": "256MB",
                "temp_directory": spill,
                "max_temp_directory_size": "64MB",
            },
        )
        for macro in MACROS:
            con.execute(macro)

        lines = [
            "# GENERATED FILE, do not edit: recorded by `scripts/record-duckdb-answers`",
            f"# (scripts/duckdb_answers.py, seed {SEED}, DuckDB {duckdb.__version__}).",
            "# Random tables and SQL queries; the expected results are DuckDB's answers,",
            "# so einsql must agree with DuckDB on every query.",
            "",
        ]
        for create, rows in make_tables(rng):
            statements = [create] + ([insert_statement(create, rows)] if rows else [])
            for sql in statements:
                con.execute(sql)
                lines += ["statement ok", sql, ""]

        seen = set()
        queries = []
        for query in FIXED + EMPTY:
            queries.append((query,) + answer(con, query))
            seen.add(query.sql)
        for family, count in FAMILIES:
            for n in range(count):
                queries.append(draw(con, rng, family, n, seen))
        for query, letters, rows in queries:
            record(lines, query, letters, rows)

        for create, follow_ups in CREATE_AS:
            con.execute(create)
            lines += ["statement ok", create, ""]
            for sql in follow_ups:
                query = Query(sql)
                letters, rows = answer(con, query)
                record(lines, query, letters, rows)
                queries.append((query, letters, rows))
        con.close()

    output = args.repo / OUTPUT
    output.write_text("\n".join(lines).rstrip("\n") + "\n")

    print(f"wrote {output} with {len(queries)} queries", file=sys.stderr)
    for construct, pattern in CONSTRUCTS:
        count = sum(1 for q, _, _ in queries if re.search(pattern, q.sql))
        print(f"  {count:3d}  {construct}", file=sys.stderr)


if __name__ == "__main__":
    main()
