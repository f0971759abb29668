"""einsum against numpy.einsum on random inputs, dense and sparse."""

import numpy as np
import pytest
import scipy.sparse as sp

import einsql

SIZES = {"i": 7, "j": 5, "k": 6, "l": 4}

SPECS = [
    "ij,j->i",
    "ij,jk->ik",
    "ij,jk",
    "ij,ij->",
    "ij->ji",
    "ii->",
    "ij,kj->ik",
    "ijk,jk->i",
    "ij,jk,kl->il",
    "i,i->",
    "i,j->ij",
    "ijk->kji",
]


def operand(term, rng, integers):
    shape = tuple(SIZES[c] if term.count(c) == 1 else SIZES["i"] for c in term)
    if integers:
        x = rng.integers(-3, 4, shape)
    else:
        x = rng.random(shape)
    # Sparse-looking inputs: about half the entries are zero.
    return np.where(rng.random(shape) < 0.5, 0, x)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("seed", [0, 1])
def test_dense_einsum_matches_numpy(spec, seed):
    rng = np.random.default_rng(seed)
    integers = seed == 1
    terms = spec.split("->")[0].split(",")
    operands = [operand(t, rng, integers) for t in terms]
    expected = np.einsum(spec, *operands)
    got = einsql.einsum(spec, *operands)
    assert np.shape(got) == np.shape(expected)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("spec", ["ij,jk->ik", "ij,j->i", "ij,ij->", "ij->ji"])
def test_sparse_einsum_matches_numpy(spec):
    rng = np.random.default_rng(3)
    terms = spec.split("->")[0].split(",")
    operands = [
        sp.random_array(tuple(SIZES[c] for c in t), density=0.3, format="csr", rng=rng)
        if len(t) == 2
        else rng.random(SIZES[t[0]])
        for t in terms
    ]
    dense = [o.toarray() if sp.issparse(o) else o for o in operands]
    expected = np.einsum(spec, *dense)
    got = einsql.einsum(spec, *operands)
    if sp.issparse(got):
        assert got.format == "csr"
        got = got.toarray()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_connection_einsum_with_named_operands():
    con = einsql.connect()
    rng = np.random.default_rng(5)
    a = sp.random_array((40, 30), density=0.1, format="csr", rng=rng)
    x = rng.random(30)
    y = con.einsum("y[i] = SUM(j) A[i,j] * x[j]", A=a, x=x)
    assert isinstance(y, np.ndarray) and y.shape == (40,)
    np.testing.assert_allclose(y, a @ x)
    c = con.einsum("C[i,k] = SUM(j) A[i,j] * A[k,j]", A=a)
    assert sp.issparse(c) and c.shape == (40, 40)
    np.testing.assert_allclose(c.toarray(), (a @ a.T).toarray())
    total = con.einsum("t = SUM(i,j) A[i,j]")
    assert total == pytest.approx(a.sum())
    assert set(con.tables()) == {"A", "C", "t", "x", "y"}


def test_explain_shows_the_plan():
    con = einsql.connect()
    con.register("A", np.eye(3))
    plan = con.explain("y[i] = SUM(j) A[i,j];")
    assert "Program (tensor index notation):" in plan


def test_bad_subscripts():
    with pytest.raises(ValueError, match="no ellipsis"):
        einsql.einsum("...ij,j", np.ones((2, 2)), np.ones(2))
    with pytest.raises(ValueError, match="sizes 2 and 3"):
        einsql.einsum("ij,j->i", np.ones((2, 2)), np.ones(3))
