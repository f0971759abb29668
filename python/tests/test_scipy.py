"""scipy.sparse round trips: values, formats and shapes are preserved."""

import numpy as np
import pytest
import scipy.sparse as sp

import einsql


@pytest.fixture
def con():
    return einsql.connect()


def random_matrix(shape, density, seed):
    rng = np.random.default_rng(seed)
    return sp.random_array(shape, density=density, format="coo", rng=rng)


def same(a, b):
    assert a.shape == b.shape
    assert a.dtype == b.dtype
    np.testing.assert_array_equal(a.toarray(), b.toarray())


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_round_trip_keeps_values_and_format(con, fmt):
    a = random_matrix((60, 45), 0.1, 1).asformat(fmt)
    con.register("A", a)
    b = con.table("A").to_scipy(fmt)
    assert b.format == fmt
    same(a, b)


def test_shape_with_empty_trailing_rows_and_columns(con):
    a = sp.coo_array(([1.5, -2.0], ([0, 2], [1, 0])), shape=(10, 20)).tocsr()
    con.register("A", a)
    assert con.table("A").to_scipy("csr").shape == (10, 20)
    info = {row[0]: row for row in con.sql("DESCRIBE A").fetchall()}
    assert set(info) >= {"i", "j", "v"}


def test_three_dimensional_coo(con):
    rng = np.random.default_rng(7)
    coords = tuple(rng.integers(0, n, 200) for n in (5, 6, 7))
    a = sp.coo_array((rng.random(200), coords), shape=(5, 6, 9))
    a.sum_duplicates()
    con.register("T", a, keys=["x", "y", "z"], values=["w"])
    b = con.table("T").to_scipy("coo")
    assert b.shape == (5, 6, 9)
    np.testing.assert_array_equal(a.toarray(), b.toarray())
    assert con.table("T").columns == ["x", "y", "z", "w"]
    with pytest.raises(ValueError, match="CSR needs two key columns"):
        con.table("T").to_scipy("csr")


def test_duplicates_add_up_and_unsorted_input_is_sorted(con):
    a = sp.coo_array(([1.0, 2.0, 4.0], ([2, 0, 2], [1, 1, 1])), shape=(3, 3))
    con.register("A", a)
    assert con.table("A").fetchall() == [(0, 1, 2.0), (2, 1, 5.0)]


@pytest.mark.parametrize("fmt", ["lil", "dok", "bsr", "dia"])
def test_other_formats_register(con, fmt):
    a = random_matrix((12, 9), 0.3, 3)
    con.register("A", a.asformat(fmt))
    same(a.tocsr(), con.table("A").to_scipy("csr"))


def test_matrices_and_integer_values(con):
    a = sp.csr_matrix(np.array([[0, 3, 0], [4, 0, 0]], dtype=np.int64))
    con.register("A", a)
    b = con.table("A").to_scipy("csr")
    assert b.dtype == np.int64
    np.testing.assert_array_equal(b.toarray(), a.toarray())


def test_query_results_become_sparse_and_dense(con):
    a = random_matrix((30, 20), 0.2, 5).tocsr()
    con.register("A", a)
    at = a.T.tocsr()
    con.register("B", at)
    c = con.sql(
        "SELECT a.i, b.j, SUM(a.v * b.v) AS v FROM A a JOIN B b ON a.j = b.i GROUP BY a.i, b.j"
    )
    expected = (a @ at).toarray()
    np.testing.assert_allclose(c.to_scipy("csr", shape=(30, 30)).toarray(), expected)
    np.testing.assert_allclose(c.numpy(shape=(30, 30)), expected)
    row_sums = con.sql("SELECT i, SUM(v) FROM A GROUP BY i").numpy(shape=(30,))
    np.testing.assert_allclose(row_sums, a.sum(axis=1))


def test_pattern_of_two_key_columns(con):
    con.execute("CREATE TABLE e (src INT, dst INT)")
    con.execute("INSERT INTO e VALUES (0, 1), (1, 2), (0, 1)")
    pattern = con.sql("SELECT src, dst FROM e").to_scipy("csr")
    np.testing.assert_array_equal(pattern.toarray(), [[0, 2, 0], [0, 0, 1]])


def test_dense_numpy_round_trip(con):
    rng = np.random.default_rng(11)
    x = rng.random((4, 5, 3))
    con.register("X", x)
    assert con.table("X").columns == ["i", "j", "k", "v"]
    np.testing.assert_array_equal(con.table("X").numpy(), x)
    assert len(con.table("X")) == x.size
