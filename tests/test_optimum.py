"""dgp.optimum: the true minimiser of a cosine w-InfoNCE as a convex program over the Gram.

Tolerances: Clarabel's default accuracy is about 1e-5 in G, so agreement with the certified
prototype solver is asserted to 1e-4 in G and 1e-6 (relative) in the loss.
"""

from __future__ import annotations

import numpy as np
import pytest

from dgp.infonce import entropic_bound, winfonce_loss
from dgp.optimum import optimum
from dgp.prototypes import soft_supcon_tau_star, supcon_prototypes
from dgp.weights import soft_supcon_weights, supcon_weights


def labels_of(sizes):
    return np.repeat(np.arange(len(sizes)), sizes)


@pytest.mark.parametrize(("sizes", "tau"), [([2, 3, 2], 0.5), ([2, 4], 0.3), ([3, 2, 2, 2], 1.0)])
def test_supcon_collapses_and_matches_prototypes(sizes, tau):
    y = labels_of(sizes)
    opt = optimum(supcon_weights(y), tau=tau)
    same = y[:, None] == y[None, :]
    assert opt.gram[same].min() >= 1 - 1e-5  # class collapse
    proto = supcon_prototypes(sizes, tau=tau)
    np.testing.assert_allclose(opt.gram, proto.gram[np.ix_(y, y)], atol=1e-4)
    assert opt.loss == pytest.approx(proto.loss, rel=1e-6)
    assert opt.loss >= proto.loss - 1e-9 * proto.loss  # certified solver is never beaten
    assert opt.rank == len(sizes) - 1 == proto.certificate["rank"]
    assert opt.unique
    assert 0 <= opt.duality_gap <= 1e-3
    # the gap is an upper bound on the suboptimality, measured against the certified optimum
    assert opt.loss - proto.loss <= opt.duality_gap + 1e-9
    assert opt.entropic_bound == pytest.approx(entropic_bound(supcon_weights(y)))


def test_soft_supcon_unrealizable_collapses():
    sizes, eps = [2, 3, 2], 0.2
    tau = 1.5 * soft_supcon_tau_star(K=3, eps=eps)
    y = labels_of(sizes)
    opt = optimum(soft_supcon_weights(y, eps=eps), tau=tau)
    assert opt.gram[y[:, None] == y[None, :]].min() >= 1 - 1e-5
    proto = supcon_prototypes(sizes, tau=tau, eps=eps)
    np.testing.assert_allclose(opt.gram, proto.gram[np.ix_(y, y)], atol=1e-4)
    assert opt.loss == pytest.approx(proto.loss, rel=1e-6)
    assert opt.loss > opt.entropic_bound + 1e-3


def test_soft_supcon_realizable_attains_bound_on_a_face():
    sizes, eps = [2, 3, 2], 0.2
    tau = 0.5 * soft_supcon_tau_star(K=3, eps=eps)
    W = soft_supcon_weights(labels_of(sizes), eps=eps)
    opt = optimum(W, tau=tau)
    assert opt.loss == pytest.approx(entropic_bound(W), abs=1e-6)
    # the loss is flat along G + c(J - I): below tau* that segment has positive length
    assert not opt.unique and opt.face[1] - opt.face[0] > 0.05
    shifted = opt.gram + opt.face[0] * 0.5 * (np.ones((7, 7)) - np.eye(7))
    Z = np.linalg.cholesky(shifted + 1e-12 * np.eye(7))
    assert winfonce_loss(Z, W, tau=tau) == pytest.approx(opt.loss, abs=1e-6)


def test_embedding_reproduces_gram_and_is_deterministic():
    W = supcon_weights(labels_of([2, 3, 3]))
    a = optimum(W, tau=0.4)
    b = optimum(W, tau=0.4)
    assert a.embedding.shape == (8, a.rank)
    np.testing.assert_allclose(a.embedding @ a.embedding.T, a.gram, atol=1e-5)
    np.testing.assert_allclose(a.embedding, b.embedding, atol=1e-8)
    big = np.argmax(np.abs(a.embedding), axis=0)
    assert (a.embedding[big, np.arange(a.rank)] > 0).all()
    assert winfonce_loss(a.embedding, W, tau=0.4) == pytest.approx(a.loss, abs=1e-5)
    d = a.to_dict()
    for key in ("gram", "loss", "entropic_bound", "duality_gap", "rank", "rank_rtol", "unique"):
        assert key in d


def test_generic_weights():
    rng = np.random.default_rng(3)
    W = rng.uniform(0.1, 1.0, (6, 6))
    opt = optimum(W, tau=0.5)  # non-symmetric weights are accepted, as check_weights does
    assert opt.duality_gap <= 1e-3 and opt.loss >= opt.entropic_bound - 1e-9
    assert np.abs(np.diag(opt.gram) - 1).max() <= 1e-12
    assert np.linalg.eigvalsh(opt.gram)[0] >= -1e-10


@pytest.mark.parametrize(
    ("W", "kwargs", "exc"),
    [
        (np.ones((3, 4)), {"tau": 0.5}, ValueError),
        ([[0, 1], [-1, 0]], {"tau": 0.5}, ValueError),
        ([[0, 0], [1, 0]], {"tau": 0.5}, ValueError),
        ([["a", "b"], ["c", "d"]], {"tau": 0.5}, TypeError),
        (np.ones((3, 3)), {"tau": 0.0}, ValueError),
        (np.ones((3, 3)), {"tau": 0.5, "solver": "NOPE"}, ValueError),
    ],
)
def test_bad_input(W, kwargs, exc):
    with pytest.raises(exc):
        optimum(W, **kwargs)
