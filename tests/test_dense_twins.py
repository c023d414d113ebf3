"""Twin classes found in a dense weighting (dgp.engine.blocks.dense_blocks): the classes are
exactly the brute-force twin classes, and classifying through them gives the dense engine's
answer (verdict, rank, c-interval, embedding) on class weightings written out as matrices."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import dgp
import dgp.constants
from dgp.engine.blocks import dense_blocks


def brute_twin_classes(ell: np.ndarray) -> set[frozenset[int]]:
    """Twin classes by the definition: i ~ j iff ell[i, m] == ell[j, m] for all m not in
    {i, j} (O(N^3), independent of the screened search)."""
    n = ell.shape[0]
    label = -np.ones(n, dtype=int)
    for i in range(n):
        if label[i] >= 0:
            continue
        label[i] = i
        for j in range(i + 1, n):
            keep = np.ones(n, dtype=bool)
            keep[[i, j]] = False
            if label[j] < 0 and np.array_equal(ell[i, keep], ell[j, keep]):
                label[j] = i
    return {frozenset(np.flatnonzero(label == c).tolist()) for c in np.unique(label)}


def planted(sizes: list[int], seed: int, values: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """A symmetric block-constant log-target with classes of ``sizes``, samples shuffled;
    block values drawn from a few levels, so that different classes can share values."""
    rng = np.random.default_rng(seed)
    K = len(sizes)
    levels = rng.standard_normal(values)
    B = levels[rng.integers(0, values, (K, K))]
    B = np.triu(B) + np.triu(B, 1).T
    labels = rng.permutation(np.repeat(np.arange(K), sizes))
    ell = B[np.ix_(labels, labels)]
    np.fill_diagonal(ell, 0.0)
    return ell, labels


@given(sizes=st.lists(st.integers(1, 6), min_size=2, max_size=6), seed=st.integers(0, 10**6),
       flips=st.integers(0, 3))
def test_classes_are_the_brute_force_twin_classes(sizes, seed, flips):
    with pytest.MonkeyPatch.context() as mp:  # the search without its early stop
        mp.setattr(dgp.constants, "TWIN_MIN_MEAN_SIZE", 1)
        mp.setattr(dgp.constants, "TWIN_WORK_BUDGET", 1e9)
        ell, _ = planted(sizes, seed)
        rng = np.random.default_rng(seed + 1)
        for _ in range(flips):  # break some twinships (symmetrically)
            i, j = rng.integers(0, ell.shape[0], 2)
            if i != j:
                ell[i, j] = ell[j, i] = ell[i, j] + 0.5
        found = dense_blocks(ell, 1.0)
        assert found is not None
        target, members = found
        assert {frozenset(m.tolist()) for m in members} == brute_twin_classes(ell)
        # the block target reproduces every off-diagonal entry
        label = np.empty(ell.shape[0], dtype=int)
        for k, m in enumerate(members):
            label[m] = k
        M = target.quotient_base()[np.ix_(label, label)]
        off = ~np.eye(ell.shape[0], dtype=bool)
        assert np.array_equal(M[off], ell[off])


def test_no_twins_costs_one_screen_and_returns_none():
    y = np.random.default_rng(0).standard_normal((400, 3))
    ell = -((y[:, None, :] - y[None, :, :]) ** 2).sum(-1)
    np.fill_diagonal(ell, 0.0)
    assert dense_blocks(ell, 1.0) is None


def _dense_answer(monkeypatch, W, **kw):
    with monkeypatch.context() as mp:
        mp.setattr(dgp.constants, "TWIN_MIN_MEAN_SIZE", 10**9)
        return dgp.classify(W, **kw)


CASES = [
    (np.arange(240) % 6, 0.3, dict(tau=0.5, dim=20)),                      # realizable simplex
    (np.arange(240) % 6, 0.3, dict(tau=0.5, dim=3)),                       # too few dimensions
    (np.repeat(np.arange(5), [90, 50, 40, 20, 10]), 0.1, dict(tau=0.3, dim=4)),
    (np.repeat(np.arange(4), [60, 60, 30, 10]), 0.05, dict(tau=1.5, dim=10)),
    (np.arange(240) % 6, 0.3, dict(tau=0.5, dim=20, similarity="euclidean")),
    (np.repeat(np.arange(3), [100, 60, 40]), 0.4, dict(tau=0.2, dim=2, similarity="euclidean")),
]


@pytest.mark.parametrize(("labels", "eps", "kw"), CASES)
def test_dense_class_weighting_answers_as_the_dense_engine(monkeypatch, labels, eps, kw):
    from dgp.weights import soft_supcon_weights

    order = np.random.default_rng(3).permutation(labels.size)
    W = soft_supcon_weights(labels[order], eps=eps)
    fast = dgp.classify(W, **kw)
    assert "quotient_eigenvalues" in (fast.certificate.to_dict().get("structure") or {})
    slow = _dense_answer(monkeypatch, W, **kw)
    assert "quotient_eigenvalues" not in (slow.certificate.to_dict().get("structure") or {})
    assert (fast.verdict, fast.rank, fast.attainable, fast.min_dim) == \
        (slow.verdict, slow.rank, slow.attainable, slow.min_dim)
    assert (fast.c_interval is None) == (slow.c_interval is None)
    for a, b in zip(fast.c_interval or (), slow.c_interval or (), strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert a == pytest.approx(b, rel=1e-9, abs=1e-9)
    if slow.embedding is not None:
        # the same canonical embedding (not only the same Gram)
        np.testing.assert_allclose(fast.embedding, slow.embedding, atol=1e-9)


def test_dense_class_weighting_is_invariant_under_permutation_and_scaling():
    from dgp.weights import supcon_weights

    labels = np.repeat(np.arange(4), [50, 30, 30, 10]).astype(float)
    W = supcon_weights(labels) + 0.2
    base = dgp.classify(W, tau=0.4, dim=6)
    perm = np.random.default_rng(5).permutation(labels.size)
    for W2, alpha in ((W[np.ix_(perm, perm)], 1.0), (1e-200 * W, 1e-200), (1e200 * W, 1e200)):
        other = dgp.classify(W2, tau=0.4, dim=6)
        assert (other.verdict, other.rank) == (base.verdict, base.rank)
        for a, b in zip(other.c_interval, base.c_interval, strict=True):
            assert (a is None) == (b is None)
            if a is not None:  # the target log(alpha w) + c: c moves by -log(alpha)
                assert a == pytest.approx(b - np.log(alpha), abs=1e-9 * (1.0 + abs(np.log(alpha))))
