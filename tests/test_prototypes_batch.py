"""Mini-batch predictions of SupCon / Soft SupCon prototypes.

Independent references, written here without the package's composition or row code: batches of
sample indices drawn with ``rng.choice`` (not the package's hypergeometric draws), batch losses
evaluated from the definition on explicit embeddings (per sample, per anchor, with the stated
reduction), and a minimiser of that Monte-Carlo objective written with scipy. Published facts:
balanced SupCon gives the regular simplex at every batch size (Graf et al. 2021), two imbalanced
classes are antipodal in full batch — and, by the batch prediction, at every batch size too.

Tolerances: Monte-Carlo values within 4 standard errors; the Monte-Carlo minimiser within 0.02
in G (its own sampling error at 20,000 batches is about 5e-3).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import logsumexp

from dgp.prototypes import (
    BatchSpec,
    batch_size_for_tolerance,
    block_weights,
    soft_supcon_tau_star,
    supcon_prototypes,
)
from dgp.solver import compositions, positive_pair_probability


def simplex(K: int) -> np.ndarray:
    G = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(G, 1.0)
    return G


def batch_loss(Z, y, tau, *, reduction="mean", zero=False, eps=None):
    """One batch's SupCon / Soft SupCon loss from the definition (L_out, one view)."""
    B = len(y)
    S = Z @ Z.T / tau
    np.fill_diagonal(S, -np.inf)
    logq = S - logsumexp(S, axis=1, keepdims=True)
    same = (y[:, None] == y[None, :]) & ~np.eye(B, dtype=bool)
    W = same.astype(float) if eps is None else np.where(same, 1.0, eps)
    np.fill_diagonal(W, 0.0)
    mass = W.sum(axis=1)
    has = mass > 0
    per = np.zeros(B)
    per[has] = -(W[has] * np.where(np.isfinite(logq[has]), logq[has], 0.0)).sum(1) / mass[has]
    if reduction == "sum":
        return per.sum()
    if zero:
        return per.sum() / B
    return per[has].mean() if has.any() else 0.0


def mc_expected_loss(G, sizes, tau, B, *, draws, seed, **kw):
    lam, U = np.linalg.eigh(G)
    V = U * np.sqrt(np.clip(lam, 0.0, None))
    labels = np.repeat(np.arange(len(sizes)), sizes)
    rng = np.random.default_rng(seed)
    vals = []
    for _ in range(draws):
        idx = rng.choice(labels.size, size=B, replace=False)
        vals.append(batch_loss(V[labels[idx]], labels[idx], tau, **kw))
    vals = np.asarray(vals)
    return vals.mean(), vals.std(ddof=1) / np.sqrt(draws)


# ----------------------------------------------------------------------- published facts


@pytest.mark.parametrize(("sizes", "B"), [([4, 4, 4], 3), ([4, 4, 4], 5), ([4, 4, 4], 12),
                                          ([3, 3, 3, 3], 6)])
def test_balanced_supcon_is_the_simplex_at_every_batch_size(sizes, B):
    res = supcon_prototypes(sizes, tau=0.2, batch_size=B, method="numeric")
    assert res.batch.exact and res.kkt_residual <= 1e-9
    np.testing.assert_allclose(res.gram, simplex(len(sizes)), atol=1e-8)
    auto = supcon_prototypes(sizes, tau=0.2, batch_size=B)
    assert auto.method == "closed-form" and auto.certificate.kkt_residual <= 1e-9


def test_balanced_supcon_simplex_with_a_sampled_expectation():
    res = supcon_prototypes([30] * 5, tau=0.1, batch_size=40, method="numeric", samples=800,
                            replicates=2)
    assert not res.batch.exact and res.batch.gram_se > 0 and res.batch.loss_se > 0
    # sampling breaks the symmetry by about the sampling error, no more
    assert np.abs(res.gram - simplex(5)).max() <= 6 * res.batch.gram_se


@pytest.mark.parametrize("sampler", ["uniform", "class-balanced"])
@pytest.mark.parametrize("B", [3, 8, 20])
def test_two_imbalanced_classes_stay_antipodal_in_batches(sampler, B):
    # the expected batch loss increases with the one cosine for every composition: batching does
    # not make two imbalanced classes collapse (a reported collapse must come from optimisation)
    res = supcon_prototypes([50, 5], tau=0.1, batch_size=B, sampler=sampler, method="numeric")
    assert res.gram[0, 1] <= -1 + 1e-9 and res.rank == 1
    assert supcon_prototypes([50, 5], tau=0.1).gram[0, 1] <= -1 + 1e-12


def test_samplers_that_treat_classes_alike_give_the_simplex_whatever_the_sizes():
    sizes = [40, 6, 3, 12]
    cb = supcon_prototypes(sizes, tau=0.2, batch_size=8, sampler="class-balanced",
                           method="numeric")
    np.testing.assert_allclose(cb.gram, simplex(4), atol=1e-7)
    mp = supcon_prototypes(sizes, tau=0.2, batch_size=6, sampler="m-per-class",
                           samples_per_class=2, method="numeric")
    assert mp.batch.exact and mp.batch.compositions == 4  # C(4, 3) class triples
    np.testing.assert_allclose(mp.gram, simplex(4), atol=1e-8)
    full = supcon_prototypes(sizes, tau=0.2)
    assert np.abs(full.gram - simplex(4)).max() > 0.05  # while the full batch is not
    # beyond enumeration (sampled compositions) the closed form keeps the simplex's rank
    wide = supcon_prototypes([50, 40, 30, 20, 10, 8, 5, 3], tau=0.1, batch_size=16,
                             sampler="class-balanced")
    assert wide.method == "closed-form" and not wide.batch.exact and wide.rank == 7


# ------------------------------------------------------------------ convergence to full batch


def test_uniform_batches_converge_to_the_full_batch():
    sizes, tau = [2, 5, 20], 0.2
    shifts = [supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric").batch.shift
              for B in (6, 12, 20, 27)]
    assert shifts[-1] <= 1e-10  # B = N: the only batch is the whole set
    assert shifts[0] > shifts[1] > shifts[2] > shifts[3]
    r = batch_size_for_tolerance(sizes, tau=tau, tol=0.02)
    table = {b: s for b, s, _, _ in r.table}
    assert r.batch_size is not None and table[r.batch_size] <= 0.02
    assert all(s > 0.02 for b, s in table.items() if b < r.batch_size)
    # exact here: every verdict is the shift against the tolerance, none undecided
    assert all(v == ("within" if s <= 0.02 else "beyond") for _, s, _, v in r.table)
    assert r.statement.startswith(f"from B = {r.batch_size}") and "undecided" not in r.statement


def test_a_tolerance_is_decided_beyond_the_noise_of_the_batched_gram():
    """U14: at K = 60 the answer B = 966 was read off shifts whose sampling errors (0.9) were
    20 times the tolerance. A sampled Gram counts as within the tolerance only where every
    entry's 95% interval is; a shift inside the noise is undecided, and so is any Gram where
    the loss does not pin the cosines."""
    from types import SimpleNamespace

    from dgp.prototypes._batched import tolerance_verdict

    G0 = np.eye(3)

    def fake(shift, half, pinned=True):
        G = G0 + shift * (1 - np.eye(3))
        interval = None if half is None else (G - half, G + half)
        batch = SimpleNamespace(shift=shift, gram_interval=interval, full_batch_gram=G0)
        return SimpleNamespace(batch=batch, cosines_pinned=pinned)

    assert tolerance_verdict(fake(0.01, None), 0.05) == ("within", "")  # exact
    assert tolerance_verdict(fake(0.06, None), 0.05) == ("beyond", "")
    assert tolerance_verdict(fake(0.01, 0.02), 0.05) == ("within", "")
    assert tolerance_verdict(fake(0.01, 0.9), 0.05) == ("undecided", "noise")  # U14's case
    assert tolerance_verdict(fake(0.5, 0.1), 0.05) == ("beyond", "")
    assert tolerance_verdict(fake(0.01, 0.02, pinned=False), 0.05) == ("undecided",
                                                                        "not pinned")
    assert tolerance_verdict(fake(0.01, np.nan), 0.05) == ("undecided", "no interval")
    assert tolerance_verdict(fake(0.01, None, pinned=None), 0.05) == ("within", "")


def test_soft_supcon_below_tau_star_is_unchanged_by_batching():
    sizes, eps = [3, 9, 4], 0.2
    tau = 0.5 * soft_supcon_tau_star(K=3, eps=eps)
    res = supcon_prototypes(sizes, tau=tau, eps=eps, batch_size=5, method="numeric")
    full = supcon_prototypes(sizes, tau=tau, eps=eps)
    np.testing.assert_allclose(res.gram, full.gram, atol=1e-7)
    assert res.excess_loss <= 1e-12  # every batch attains its own bound


# --------------------------------------------------------------- independent Monte Carlo


def test_expected_loss_matches_a_monte_carlo_of_real_batches():
    sizes, tau, B = [2, 5, 20], 0.2, 8
    for kw, opts in (
        ({}, {}),
        ({"reduction": "sum"}, {"reduction": "sum"}),
        ({"anchors_without_positives": "zero"}, {"zero": True}),
    ):
        res = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric", **kw)
        assert res.batch.exact
        mean, se = mc_expected_loss(res.gram, sizes, tau, B, draws=4000, seed=1, **opts)
        assert abs(mean - res.loss) <= 4 * se, (kw, mean, res.loss, se)


def test_soft_supcon_expected_loss_matches_monte_carlo():
    sizes, tau, B, eps = [3, 4, 10], 0.5, 6, 0.1
    res = supcon_prototypes(sizes, tau=tau, eps=eps, batch_size=B, method="numeric")
    mean, se = mc_expected_loss(res.gram, sizes, tau, B, draws=4000, seed=2, eps=eps)
    assert abs(mean - res.loss) <= 4 * se


def test_prediction_matches_an_independent_monte_carlo_minimiser():
    sizes, tau, B = [2, 4, 12], 0.3, 6
    K = len(sizes)
    labels = np.repeat(np.arange(K), sizes)
    rng = np.random.default_rng(7)
    counts = np.array([np.bincount(labels[rng.choice(labels.size, B, replace=False)],
                                   minlength=K) for _ in range(20000)])
    comp, freq = np.unique(counts, axis=0, return_counts=True)
    w = freq / freq.sum()

    def objective(v):
        V = v.reshape(K, K)
        V = V / np.linalg.norm(V, axis=1, keepdims=True)
        G = V @ V.T
        total = 0.0
        for m, p in zip(comp, w, strict=True):
            anchors = m * (m >= 2)
            if anchors.sum() == 0:
                continue
            for c in np.flatnonzero(m >= 2):
                terms = np.log(np.maximum(m - np.eye(K)[c], 1e-300)) + G[c] / tau
                terms[m - np.eye(K)[c] == 0] = -np.inf
                total += p * m[c] / anchors.sum() * (logsumexp(terms) - 1.0 / tau
                                                      - np.log(m[c] - 1))
        return total

    V0 = np.linalg.cholesky(simplex(K) + 1e-9 * np.eye(K))
    ref = minimize(objective, V0.ravel(), method="L-BFGS-B", options={"ftol": 1e-15,
                                                                      "gtol": 1e-10})
    V = ref.x.reshape(K, K)
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    ours = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric")
    assert ours.batch.exact
    np.testing.assert_allclose(ours.gram, V @ V.T, atol=0.02)
    assert ours.batch.shift > 0.05  # and the prediction really moved from the full batch


@pytest.mark.slow  # more than about 10 s of CPU on a loaded machine
def test_stochastic_expectation_agrees_with_the_exact_one():
    """Beyond enumeration the prototypes are optimised on fresh compositions and reported on
    others: the exact expected loss of their Gram lies in the reported interval, is never
    below the exact optimum, and every Gram entry's interval holds the exact prediction's."""
    from dgp.solver import BatchSpec, batch_rows, compositions

    sizes, tau, B = [6, 9, 30, 4], 0.2, 12
    exact = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric")
    assert exact.batch.exact
    sto = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric", exact_max=10,
                            samples=1500, replicates=2)
    assert sto.method == "stochastic" and not sto.batch.exact
    spec = BatchSpec(B, "uniform", None, "mean", "drop")
    comps = compositions(np.array(sizes), spec, exact_max=10**6)
    prob, _ = batch_rows(comps, np.eye(4), spec, tau=tau)
    true = prob.loss(sto.gram)[0]
    lo, hi = sto.batch.estimate.interval
    assert lo <= true <= hi
    assert true >= exact.loss - 1e-9
    assert sto.lower_bound <= exact.loss
    g_lo, g_hi = sto.batch.gram_interval
    assert ((exact.gram >= g_lo - 1e-9) & (exact.gram <= g_hi + 1e-9)).all()
    again = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric", exact_max=10,
                              samples=1500, replicates=2)
    np.testing.assert_array_equal(again.gram, sto.gram)  # seeded: deterministic
    # minority collapse: paired over the runs, and its interval holds the exact excess
    mc, ex = sto.minority_collapse, exact.minority_collapse
    assert "paired over 3" in mc.noise and "exact" in ex.noise and mc.pair == ex.pair == (0, 3)
    assert mc.excess_interval[0] <= ex.excess <= mc.excess_interval[1]


@pytest.mark.parametrize("eps", [None, 0.3])
def test_class_block_weights_are_the_dense_block(eps):
    from dgp.prototypes._sampled import ClassBlockWeights

    with np.errstate(divide="ignore"):
        L = np.log(block_weights(40, eps))
    idx = np.array([0, 3, 7, 8, 20, 39])
    np.testing.assert_array_equal(ClassBlockWeights(40, eps).log_block(idx), L[np.ix_(idx, idx)])


def test_reductions_change_the_prediction_as_stated():
    sizes, tau, B = [2, 5, 20], 0.2, 8
    drop = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric")
    zero = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric",
                             anchors_without_positives="zero")
    total = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric", reduction="sum")
    # the SupContrast mean divides by the constant B: the same minimiser as the sum
    np.testing.assert_allclose(zero.gram, total.gram, atol=1e-8)
    assert zero.loss == pytest.approx(total.loss / B, rel=1e-12)
    assert np.abs(drop.gram - total.gram).max() > 1e-3


def test_positive_pair_probability_matches_frequencies():
    sizes, B = np.array([2, 5, 20]), 8
    spec = BatchSpec(B, "uniform", None, "mean", "drop")
    p = positive_pair_probability(sizes, spec)
    labels = np.repeat(np.arange(3), sizes)
    rng = np.random.default_rng(3)
    hits = np.array([np.bincount(labels[rng.choice(27, B, replace=False)], minlength=3) >= 2
                     for _ in range(20000)]).mean(axis=0)
    np.testing.assert_allclose(p, hits, atol=0.015)
    comps = compositions(sizes, spec)
    assert comps.exact and comps.prob.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(comps.prob @ (comps.counts >= 2), p, atol=1e-12)


@pytest.mark.torch
def test_expected_loss_equals_dgp_torch_mean_reduction():
    torch = pytest.importorskip("torch")
    from dgp.torch.losses import SupConLoss

    sizes, tau, B = [3, 4, 9], 0.25, 6
    res = supcon_prototypes(sizes, tau=tau, batch_size=B, method="numeric")
    lam, U = np.linalg.eigh(res.gram)
    V = U * np.sqrt(np.clip(lam, 0.0, None))
    labels = np.repeat(np.arange(3), sizes)
    loss = SupConLoss(tau=tau, reduction="mean", empty_rows="skip")
    rng = np.random.default_rng(4)
    vals = []
    for _ in range(1500):
        idx = rng.choice(labels.size, B, replace=False)
        y = labels[idx]
        if np.bincount(y).max() < 2:
            continue  # no anchor has a positive: dgp.torch refuses the batch, we drop it
        vals.append(float(loss(torch.as_tensor(V[y]), torch.as_tensor(y))))
    vals = np.asarray(vals)
    # a batch without any positive adds 0 to the expected loss: condition on the others
    expected = res.loss / (1.0 - _no_pos(sizes, B))
    assert abs(vals.mean() - expected) <= 4 * vals.std(ddof=1) / np.sqrt(vals.size)


def _no_pos(sizes, B):
    spec = BatchSpec(B, "uniform", None, "mean", "drop")
    c = compositions(np.asarray(sizes), spec)
    return float(c.prob @ ((c.counts >= 2).sum(axis=1) == 0))
