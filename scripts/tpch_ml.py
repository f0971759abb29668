"""Galley's TPC-H machine-learning workloads (issue 21) computed with pandas
and numpy on the materialized feature matrix: the oracle that
scripts/record-tpch-ml-answers records and benches/python/tpch_ml.py times.

The TPC-H tables come from tpchgen-cli (the same generator as einsql's
CALL dbgen), written as Parquet. The features, weights and models are those
of sql/tpch_star.sql and sql/tpch_selfjoin.sql: one-hot categoricals and
floor(x) % 100 of the numeric columns (% truncating toward zero, as
np.fmod), the weights from formulas of their indices.
"""

import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

MFGR = [f"Manufacturer#{i}" for i in range(1, 6)]
BRAND = [f"Brand#{a}{b}" for a in range(1, 6) for b in range(1, 6)]
CONTAINER = [
    f"{size} {kind}"
    for size in ["SM", "LG", "MED", "JUMBO", "WRAP"]
    for kind in ["CASE", "BOX", "BAG", "JAR", "PKG", "PACK", "CAN", "DRUM"]
]
STATUS = ["F", "O", "P"]
PRIORITY = ["1-URGENT", "2-HIGH", "3-MEDIUM", "4-NOT SPECIFIED", "5-LOW"]
SEGMENT = ["AUTOMOBILE", "BUILDING", "FURNITURE", "HOUSEHOLD", "MACHINERY"]

STAR_FEATURES = 139
SELF_FEATURES = 124
HIDDEN = 25


def generate(tpchgen: str, sf: float, out: Path) -> None:
    """Writes the TPC-H tables at `sf` as Parquet files into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [tpchgen, "parquet", "-s", str(sf), "--output-dir", str(out), "--overwrite",
         "--tables", "supplier,part,orders,customer,lineitem"],
        check=True,
    )


def load(directory: Path) -> dict:
    """The tables the workloads read, decimals as doubles."""
    columns = {
        "supplier": ["s_suppkey", "s_nationkey", "s_acctbal"],
        "part": ["p_partkey", "p_mfgr", "p_brand", "p_size", "p_container", "p_retailprice"],
        "orders": ["o_orderkey", "o_custkey", "o_orderstatus", "o_totalprice",
                   "o_orderpriority", "o_shippriority"],
        "customer": ["c_custkey", "c_nationkey", "c_acctbal", "c_mktsegment"],
        "lineitem": ["l_orderkey", "l_linenumber", "l_suppkey", "l_partkey"],
    }
    decimals = {"s_acctbal", "p_retailprice", "o_totalprice", "c_acctbal"}
    tables = {}
    for name, cols in columns.items():
        frame = pd.read_parquet(directory / f"{name}.parquet", columns=cols)
        for col in decimals.intersection(cols):
            frame[col] = frame[col].astype("float64")
        tables[name] = frame
    return tables


def numeric(values) -> np.ndarray:
    """floor(x) % 100, the remainder truncated toward zero."""
    return np.fmod(np.floor(np.asarray(values, dtype=np.float64)), 100.0)


def one_hot(matrix: np.ndarray, values, names: list, first: int) -> None:
    codes = pd.Index(names).get_indexer(pd.Series(values).astype(str))
    assert (codes >= 0).all(), "an unknown category value"
    matrix[np.arange(len(codes)), first + codes] = 1.0


def feature_blocks(t: dict) -> dict:
    """Each dimension table's features (a dense row per key, 139 columns,
    the block's columns filled) and the key of each row."""
    s, p, o, c = t["supplier"], t["part"], t["orders"], t["customer"]
    blocks = {}
    m = np.zeros((len(s), STAR_FEATURES))
    m[:, 0] = numeric(s.s_acctbal)
    m[np.arange(len(s)), 1 + s.s_nationkey.to_numpy()] = 1.0
    blocks["supplier"] = (s.s_suppkey.to_numpy(), m)
    m = np.zeros((len(p), STAR_FEATURES))
    m[:, 26] = numeric(p.p_retailprice)
    m[:, 27] = np.fmod(p.p_size.to_numpy(), 100)
    one_hot(m, p.p_mfgr, MFGR, 28)
    one_hot(m, p.p_brand, BRAND, 33)
    one_hot(m, p.p_container, CONTAINER, 58)
    blocks["part"] = (p.p_partkey.to_numpy(), m)
    m = np.zeros((len(o), STAR_FEATURES))
    m[:, 98] = numeric(o.o_totalprice)
    one_hot(m, o.o_orderstatus, STATUS, 99)
    one_hot(m, o.o_orderpriority, PRIORITY, 102)
    m[np.arange(len(o)), 107 + o.o_shippriority.to_numpy()] = 1.0
    blocks["orders"] = (o.o_orderkey.to_numpy(), m)
    m = np.zeros((len(c), STAR_FEATURES))
    m[:, 108] = numeric(c.c_acctbal)
    m[np.arange(len(c)), 109 + c.c_nationkey.to_numpy()] = 1.0
    one_hot(m, c.c_mktsegment, SEGMENT, 134)
    blocks["customer"] = (c.c_custkey.to_numpy(), m)
    return blocks


def rows_of(keys: np.ndarray, wanted) -> np.ndarray:
    """The row of each wanted key in a block whose keys are `keys`."""
    order = np.argsort(keys)
    found = order[np.searchsorted(keys[order], np.asarray(wanted))]
    assert (keys[found] == wanted).all()
    return found


def weights():
    """theta, W1, W2, W3 as sql/tpch_star.sql computes them."""
    i = np.arange(STAR_FEATURES)
    theta = (i * 7 % 11 - 5) / 100.0
    k = np.arange(HIDDEN)
    w1 = ((k[:, None] * 5 + i[None, :] * 3) % 13 - 6) / 500.0
    w2 = ((k[:, None] * 3 + k[None, :] * 7) % 11 - 4) / 10.0
    w3 = (k * 4 % 9 - 4) / 2.0
    return theta, w1, w2, w3


def sigmoid(x):
    return 1.0 / (1.0 + np.exp(-x))


class Star:
    """The star join: one row per line item, keyed (o, n)."""

    def __init__(self, t: dict, blocks: dict):
        li = t["lineitem"].merge(t["orders"][["o_orderkey", "o_custkey"]],
                                 left_on="l_orderkey", right_on="o_orderkey")
        self.keys = np.stack([li.l_orderkey.to_numpy(), li.l_linenumber.to_numpy()], axis=1)
        self.rows = {
            "supplier": rows_of(blocks["supplier"][0], li.l_suppkey.to_numpy()),
            "part": rows_of(blocks["part"][0], li.l_partkey.to_numpy()),
            "orders": rows_of(blocks["orders"][0], li.l_orderkey.to_numpy()),
            "customer": rows_of(blocks["customer"][0], li.o_custkey.to_numpy()),
        }
        self.blocks = blocks

    def matrix(self) -> np.ndarray:
        """The materialized feature matrix X (dense)."""
        x = np.zeros((len(self.keys), STAR_FEATURES))
        for name, rows in self.rows.items():
            x += self.blocks[name][1][rows]
        return x


def star_models(x: np.ndarray, theta, w1, w2, w3) -> dict:
    y = x @ theta
    h1 = np.maximum(x @ w1.T, 0.0)
    h2 = np.maximum(h1 @ w2.T, 0.0)
    return {
        "y": y,
        "logistic": sigmoid(y),
        "cov": x.T @ x,
        "nn": sigmoid(h2 @ w3),
    }


class SelfJoin:
    """The self-join: one row per pair of line items of the same part,
    keyed (o1, n1, o2, n2), with the features of both suppliers and of the
    part (124 columns)."""

    def __init__(self, t: dict, blocks: dict):
        li = t["lineitem"].sort_values(["l_partkey", "l_orderkey", "l_linenumber"])
        self.o = li.l_orderkey.to_numpy()
        self.n = li.l_linenumber.to_numpy()
        s_keys, s_m = blocks["supplier"]
        p_keys, p_m = blocks["part"]
        self.supplier = s_m[rows_of(s_keys, li.l_suppkey.to_numpy())][:, 0:26]
        self.part = p_m[rows_of(p_keys, li.l_partkey.to_numpy())][:, 26:98]
        parts = li.l_partkey.to_numpy()
        starts = np.flatnonzero(np.r_[True, parts[1:] != parts[:-1]])
        self.groups = list(zip(starts, np.r_[starts[1:], len(parts)]))

    def chunks(self, pairs: int = 200_000):
        """(keys, X) for runs of parts of about `pairs` pairs: X
        materialized a chunk at a time."""
        first, second, size = [], [], 0
        for start, end in self.groups:
            idx = np.arange(start, end)
            first.append(np.repeat(idx, end - start))
            second.append(np.tile(idx, end - start))
            size += (end - start) ** 2
            if size >= pairs:
                yield self.chunk(np.concatenate(first), np.concatenate(second))
                first, second, size = [], [], 0
        if first:
            yield self.chunk(np.concatenate(first), np.concatenate(second))

    def chunk(self, a, b):
        keys = np.stack([self.o[a], self.n[a], self.o[b], self.n[b]], axis=1)
        x = np.hstack([self.supplier[a], self.supplier[b], self.part[a]])
        return keys, x


def self_models(join: SelfJoin, theta) -> dict:
    theta = theta[:SELF_FEATURES]
    keys, ys, cov = [], [], np.zeros((SELF_FEATURES, SELF_FEATURES))
    for k, x in join.chunks():
        keys.append(k)
        ys.append(x @ theta)
        cov += x.T @ x
    keys, y = np.concatenate(keys), np.concatenate(ys)
    return keys, {"y2": y, "logistic2": sigmoid(y), "cov2": cov}
