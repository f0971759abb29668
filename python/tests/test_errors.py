"""einsql errors are Python exceptions of one class per engine error, with
the engine's messages."""

import numpy as np
import pyarrow as pa
import pytest

import einsql


@pytest.fixture
def con():
    con = einsql.connect()
    con.execute("CREATE TABLE edges (src INT, dst INT)")
    return con


def test_every_class_derives_from_einsql_error():
    for name in einsql.__all__:
        obj = getattr(einsql, name)
        if isinstance(obj, type) and name.endswith("Error"):
            assert issubclass(obj, einsql.Error)
            assert obj.__module__ == "einsql"


def test_unknown_table_with_suggestion_and_position(con):
    with pytest.raises(einsql.UnknownNameError) as caught:
        con.sql("SELECT * FROM edgse")
    assert "Table 'edgse' does not exist (did you mean 'edges'?)" in str(caught.value)
    with pytest.raises(einsql.UnknownNameError) as caught:
        con.execute("y[i] = SUM(j) edgse[i,j];")
    assert (caught.value.line, caught.value.column) == (1, 15)
    assert str(caught.value).startswith("1:15: ")
    assert "^" in str(caught.value)


def test_parse_error(con):
    with pytest.raises(einsql.ParseError, match="Syntax error"):
        con.sql("SELEC * FROM edges")


def test_table_exists(con):
    with pytest.raises(einsql.TableExistsError, match="Table 'edges' already exists"):
        con.execute("CREATE TABLE edges (a INT)")


def test_index_exists(con):
    con.execute("CREATE INDEX edges_by_dst ON edges (dst, src)")
    with pytest.raises(einsql.IndexExistsError, match="Index 'edges_by_dst' already exists"):
        con.execute("CREATE INDEX edges_by_dst ON edges (dst, src) USING (compressed, compressed)")


def test_not_supported(con):
    with pytest.raises(einsql.NotSupportedError, match="Not supported"):
        con.sql("SELECT src FROM edges UNION SELECT dst FROM edges")


def test_invalid_input_from_registration(con):
    with pytest.raises(einsql.InvalidInputError, match="negative coordinate -1"):
        con.register("N", pa.table({"i": [-1, 2], "v": [1.0, 2.0]}))
    with pytest.raises(einsql.UnknownNameError, match="Column 'vv' does not exist"):
        con.register("N", pa.table({"i": [1, 2], "v": [1.0, 2.0]}), values=["vv"])


def test_type_mismatch(con):
    with pytest.raises(einsql.TypeMismatchError, match="holds strings and cannot be a value"):
        con.register("S", pa.table({"i": [0], "s": ["a"]}), values=["s"])


def test_integer_overflow(con):
    big = np.array([2**62, 2**62], dtype=np.int64)
    con.register("B", pa.table({"i": [0, 1], "v": big}))
    # A sum past 64 bits is an exact HUGEINT; past 128 bits an error.
    result = con.sql("SELECT SUM(v) AS s FROM B")
    assert result.arrow().schema.field("s").type == pa.decimal128(38, 0)
    assert result.fetchall() == [(2**63,)]
    with pytest.raises(einsql.IntegerOverflowError, match="Integer overflow"):
        con.sql("SELECT SUM(v * v * v) FROM B")


def test_file_errors(con, tmp_path):
    with pytest.raises(einsql.IoError, match="I/O error"):
        con.sql(f"SELECT * FROM read_csv('{tmp_path / 'missing.csv'}')")
    bad = tmp_path / "bad.mtx"
    bad.write_text("%%MatrixMarket matrix coordinate real general\n2 2 1\n1 x 1.0\n")
    with pytest.raises(einsql.FileFormatError, match="bad.mtx"):
        con.sql(f"SELECT * FROM read_mtx('{bad}')")


def test_closed_connection(con):
    con.close()
    with pytest.raises(einsql.Error, match="closed"):
        con.sql("SELECT * FROM edges")
