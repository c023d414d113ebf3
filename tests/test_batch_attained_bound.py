"""Soft SupCon's expected-batch prototypes at tau <= tau*: the full-batch optimum, in closed form.

Where the full-batch Gram has ``G_ab - tau log W_ab`` the same for every ``b`` (per class
``a``), every row of every batch composition attains its entropic bound (the proof is in
:mod:`dgp.prototypes._batched`), so that Gram minimises the expected batch loss whatever the
sampler and reduction. Checked here against two independent computations:

* the certified numeric solve of the exact expectation over every composition
  (``method="numeric"``) finds the same Gram and loss;
* a brute force at the sample level, written here from the loss's formula (no dgp code): every
  batch of a tiny data set enumerated, the batch's Soft SupCon loss of the closed form equals the
  batch's entropy (its least value), and random embeddings never do better.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dgp
from dgp.prototypes import soft_supcon_rho, soft_supcon_tau_star
from dgp.prototypes._batched import attains_every_batch_bound
from dgp.prototypes._blocks import block_weights
from dgp.prototypes._closed_forms import equiangular_gram


def batch_loss(Z: np.ndarray, y: np.ndarray, tau: float, eps: float) -> float:
    """Summed Soft SupCon loss of one batch of unit embeddings ``Z`` (rows) with labels ``y``:
    per anchor the cross-entropy of its softmax over the other samples against the weights
    (1 same class, ``eps`` otherwise) normalised over the other samples."""
    total = 0.0
    for i in range(len(y)):
        others = [j for j in range(len(y)) if j != i]
        s = np.array([Z[i] @ Z[j] for j in others]) / tau
        log_q = s - (s.max() + math.log(np.exp(s - s.max()).sum()))
        w = np.array([1.0 if y[j] == y[i] else eps for j in others])
        total -= (w / w.sum()) @ log_q
    return total


def batch_entropy(y: np.ndarray, eps: float) -> float:
    """The least value of :func:`batch_loss` (Gibbs): the entropies of the anchors' targets."""
    total = 0.0
    for i in range(len(y)):
        w = np.array([1.0 if y[j] == y[i] else eps for j in range(len(y)) if j != i])
        p = w / w.sum()
        total -= p @ np.log(p)
    return total


def embed(G: np.ndarray) -> np.ndarray:
    """Unit rows ``Z`` with ``Z Z^T = G`` (class prototypes)."""
    vals, vecs = np.linalg.eigh(G)
    return vecs * np.sqrt(np.clip(vals, 0.0, None))


@pytest.mark.parametrize("K,eps,mult", [(3, 0.25, 0.5), (4, 0.5, 1.0), (5, 0.1, 0.8)])
def test_the_condition_holds_exactly_up_to_tau_star(K, eps, mult):
    tau = mult * soft_supcon_tau_star(K=K, eps=eps)
    W = block_weights(K, eps)
    G = equiangular_gram(K, soft_supcon_rho(tau=tau, eps=eps))
    assert attains_every_batch_bound(G, W, tau)
    # any other cosine, SupCon's zero weights, or one entry moved: not attained
    assert not attains_every_batch_bound(equiangular_gram(K, -1.0 / (K - 1) + 0.05), W, tau)
    assert not attains_every_batch_bound(G, block_weights(K, None), tau)
    H = G.copy()
    H[0, 1] = H[1, 0] = G[0, 1] + 1e-6
    assert not attains_every_batch_bound(H, W, tau)


@pytest.mark.parametrize("sizes,B,eps,mult,sampler", [
    ([4, 3, 2], 4, 0.3, 0.6, "uniform"),
    ([5, 2, 2, 2], 5, 0.5, 1.0, "uniform"),
    ([3, 3, 2], 4, 0.2, 0.9, "class-balanced"),
])
def test_closed_form_is_the_numeric_optimum_of_the_exact_expectation(sizes, B, eps, mult,
                                                                       sampler):
    tau = mult * soft_supcon_tau_star(K=len(sizes), eps=eps)
    kw = dict(tau=tau, eps=eps, batch_size=B, sampler=sampler, reduction="sum")
    closed = dgp.supcon_prototypes(sizes, **kw)
    numeric = dgp.supcon_prototypes(sizes, **kw, method="numeric")
    assert closed.method == "closed-form" and numeric.method == "numeric"
    assert closed.batch.exact and numeric.batch.exact  # every composition
    np.testing.assert_allclose(closed.gram, numeric.gram, atol=1e-5)
    assert closed.loss == pytest.approx(numeric.loss, rel=1e-9)
    # the bound is attained: no gap to the entropic bound, and the full-batch Gram unmoved
    assert closed.loss == pytest.approx(closed.entropic_bound, rel=1e-12)
    assert closed.batch.shift == 0.0
    np.testing.assert_allclose(closed.gram, equiangular_gram(len(sizes),
                                                             soft_supcon_rho(tau=tau, eps=eps)))


def test_every_sample_level_batch_attains_its_entropy_and_nothing_does_better():
    sizes, B, eps = [3, 2, 2], 3, 0.4
    K = len(sizes)
    tau = 0.7 * soft_supcon_tau_star(K=K, eps=eps)
    p = dgp.supcon_prototypes(sizes, tau=tau, eps=eps, batch_size=B, reduction="sum")
    assert p.method == "closed-form"
    y = np.repeat(np.arange(K), sizes)
    P = embed(p.gram)
    batches = list(itertools.combinations(range(y.size), B))  # uniform: all equally likely
    expected = 0.0
    for idx in batches:
        yb = y[list(idx)]
        loss = batch_loss(P[yb], yb, tau, eps)
        assert loss == pytest.approx(batch_entropy(yb, eps), abs=1e-12)
        expected += loss / len(batches)
    assert p.loss == pytest.approx(expected, rel=1e-12)
    # random embeddings of the samples (not collapsed, any dimension) never do better
    rng = np.random.default_rng(0)
    for _ in range(20):
        Z = rng.standard_normal((y.size, int(rng.integers(2, 6))))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        other = np.mean([batch_loss(Z[list(idx)], y[list(idx)], tau, eps) for idx in batches])
        assert other > expected


def test_above_tau_star_the_bound_is_out_of_reach_and_the_path_is_not_taken():
    sizes, eps = [4, 3, 2], 0.3
    tau = 1.5 * soft_supcon_tau_star(K=3, eps=eps)
    p = dgp.supcon_prototypes(sizes, tau=tau, eps=eps, batch_size=4, reduction="sum")
    assert p.method != "closed-form"
    assert p.loss > p.entropic_bound
