"""Gram/EDM conversions, Schoenberg's criterion, ranks and embeddings."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dgp.geometry import (
    embedding_from_edm,
    embedding_from_gram,
    gram_to_edm,
    numerical_rank,
    schoenberg_matrix,
)


def _points(seed, n, d):
    return np.random.default_rng(seed).standard_normal((n, d))


@given(st.integers(0, 10_000), st.integers(2, 9), st.integers(1, 4))
def test_edm_roundtrip_and_schoenberg(seed, n, d):
    X = _points(seed, n, d)
    D = ((X[:, None] - X[None]) ** 2).sum(-1)
    assert np.allclose(gram_to_edm(X @ X.T), D)
    B = schoenberg_matrix(D)
    Xc = X - X.mean(0)
    assert np.allclose(B, Xc @ Xc.T)  # Gram of the centred points
    Z = embedding_from_edm(D)
    assert Z.shape[1] == numerical_rank(np.linalg.eigvalsh(B)) <= min(d, n - 1)
    assert np.allclose(((Z[:, None] - Z[None]) ** 2).sum(-1), D, atol=1e-8 * (1 + D.max()))


def test_non_edm_is_rejected():
    D = np.array([[0.0, 1.0, 9.0], [1.0, 0.0, 1.0], [9.0, 1.0, 0.0]])  # violates the triangle
    assert np.linalg.eigvalsh(schoenberg_matrix(D))[0] < 0
    with pytest.raises(ValueError, match="not positive semidefinite"):
        embedding_from_edm(D)


@given(st.integers(0, 10_000))
def test_embedding_signs_are_deterministic_and_rotation_free(seed):
    X = _points(seed, 6, 3)
    G = X @ X.T
    Z1 = embedding_from_gram(G)
    rng = np.random.default_rng(seed + 1)
    Q = np.linalg.qr(rng.standard_normal((3, 3)))[0]
    Z2 = embedding_from_gram((X @ Q) @ (X @ Q).T)
    # the Gram is rotation invariant, so the embedding must be the same array (signs fixed)
    assert np.allclose(Z1, Z2, atol=1e-8)
    assert np.allclose(Z1 @ Z1.T, G)
    assert np.all(np.abs(Z1).max(0) == Z1.max(0))  # largest entry of each column positive


def test_numerical_rank_uses_relative_tolerance():
    assert numerical_rank([1e6, 1.0, 0.0]) == 2  # 1.0 > 1e-8 * 1e6
    assert numerical_rank([1e6, 1e-3, 0.0], rtol=1e-8) == 1  # 1e-3 < 1e-8 * 3 * 1e6
    assert numerical_rank([1.0, 1e-9], rtol=1e-8) == 1
    assert numerical_rank([1.0, 1e-9], rtol=1e-10) == 2
