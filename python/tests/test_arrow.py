"""Arrow interchange: zero-copy registration, and results read by DuckDB,
polars and pandas through the Arrow PyCapsule interface."""

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pyarrow as pa
import pytest
import scipy.sparse as sp

import einsql


def stored_value_address(con, table, column="v"):
    """The address of the buffer einsql stores for a value column."""
    chunks = con.table(table).arrow().column(column).chunks
    assert len(chunks) == 1
    return chunks[0].buffers()[1].address


def test_float64_column_of_a_pyarrow_table_is_not_copied():
    con = einsql.connect()
    n = 100_000
    values = np.random.default_rng(0).random(n)
    table = pa.table({"i": np.arange(n, dtype=np.int64), "v": values})
    assert table.column("v").chunks[0].buffers()[1].address == values.ctypes.data
    con.register("T", table)
    assert stored_value_address(con, "T") == values.ctypes.data
    assert con.sql("SELECT SUM(v) FROM T").fetchall()[0][0] == pytest.approx(values.sum())


def test_csr_values_and_dense_arrays_are_not_copied():
    con = einsql.connect()
    a = sp.random_array((200, 300), density=0.05, format="csr", rng=np.random.default_rng(1))
    assert a.has_canonical_format
    con.register("A", a)
    assert stored_value_address(con, "A") == a.data.ctypes.data
    x = np.random.default_rng(2).random((30, 40))
    con.register("X", x)
    assert stored_value_address(con, "X") == x.ctypes.data


def test_unsorted_input_is_sorted_into_a_copy():
    con = einsql.connect()
    values = np.array([3.0, 1.0, 2.0])
    con.register("T", pa.table({"i": [2, 0, 1], "v": values}))
    assert stored_value_address(con, "T") != values.ctypes.data
    assert con.table("T").fetchall() == [(0, 1.0), (1, 2.0), (2, 3.0)]


@pytest.fixture
def result():
    con = einsql.connect()
    con.execute("CREATE TABLE a (i INT, j INT, v DOUBLE, PRIMARY KEY (i, j))")
    con.execute("INSERT INTO a VALUES (0, 1, 2.5), (1, 0, 1.0), (1, 1, 0.5)")
    return con.sql("SELECT i, SUM(v) AS total FROM a GROUP BY i")


def test_duckdb_reads_a_result(result):
    rows = duckdb.sql("SELECT i, total FROM result ORDER BY i").fetchall()
    assert rows == [(0, 2.5), (1, 1.5)]


def test_polars_reads_a_result(result):
    frame = pl.DataFrame(result)
    assert frame.columns == ["i", "total"]
    assert frame["total"].to_list() == [2.5, 1.5]
    assert result.pl().equals(frame)


def test_pandas_pyarrow_and_python_readers(result):
    assert result.df()["total"].tolist() == [2.5, 1.5]
    assert pa.table(result).num_rows == 2
    assert result.fetchall() == [(0, 2.5), (1, 1.5)]
    np.testing.assert_array_equal(result.numpy(), [2.5, 1.5])
    assert result.columns == ["i", "total"]


def test_frames_and_foreign_arrow_objects_register():
    con = einsql.connect()
    con.register("P", pd.DataFrame({"city": ["oslo", "rome", "oslo"], "n": [1.0, 2.0, 3.0]}))
    assert con.sql("SELECT city, n FROM P ORDER BY city").fetchall() == [
        ("oslo", 4.0),
        ("rome", 2.0),
    ]
    con.register("Q", pl.DataFrame({"k": [0, 1], "x": [0.5, 1.5]}), keys=["k"])
    assert con.sql("SELECT SUM(x) FROM Q").fetchall() == [(2.0,)]
    con.register("R", duckdb.sql("SELECT range AS i, CAST(range * 2 AS DOUBLE) AS v FROM range(4)"))
    assert con.sql("SELECT SUM(v) FROM R").fetchall() == [(12.0,)]
    batch = pa.record_batch({"i": pa.array([0, 1], pa.int32()), "v": [1.0, 2.0]})
    con.register("B", batch)
    assert con.table("B").fetchall() == [(0, 1.0), (1, 2.0)]


def test_keys_order_the_dimensions_and_replace():
    con = einsql.connect()
    table = pa.table({"i": [0, 1], "j": [5, 3], "v": [1.0, 2.0]})
    con.register("T", table, keys=["j", "i"])
    assert con.table("T").columns == ["j", "i", "v"]
    assert con.table("T").fetchall() == [(3, 1, 2.0), (5, 0, 1.0)]
    con.register("T", table, values=["v"])
    assert con.table("T").columns == ["i", "j", "v"]
    assert con.tables() == ["T"]
    con.unregister("T")
    assert con.tables() == []


def test_unsupported_objects_are_type_errors():
    con = einsql.connect()
    with pytest.raises(TypeError, match="cannot register an object of type builtins.dict"):
        con.register("D", {"i": [0]})
    with pytest.raises(TypeError, match="complex"):
        con.register("C", np.ones(3, dtype=complex))
