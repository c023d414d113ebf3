"""Exact enumeration beyond the old 20 000 (issue 40, point 3 and its must-show): cases with
2e4 to 1e5 batches or class compositions are now taken over every one of them by default, the
reported loss is the exact expected value (checked here by brute force written independently
of dgp's batch losses), and the optimum is one (no perturbation lowers that brute-force
expectation, and the stochastic method lands on or above it, within its reported gap)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

import dgp
from dgp.constants import EXACT_MAX_DEFAULT
from dgp.optima._batch_paths import batch_route, finite_cost
from dgp.solver import EXACT_RANK_D_MAX_S, BatchSpec, rows_rank_d_seconds
from dgp.weights import supcon_weights


def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


def _soft(N, seed):
    y = np.random.default_rng(seed).standard_normal((N, 2))
    W = np.exp(-((y[:, None] - y[None]) ** 2).sum(-1))
    np.fill_diagonal(W, 0.0)
    return W


def _subsets_expectation(Z, W, B, tau):
    """Mean over every B-subset of the batch loss (mean over anchors with positives; every
    anchor has them here), from the definitions: target rows of W normalised within the batch,
    log-softmax over the other members."""
    sub = np.array(list(itertools.combinations(range(len(W)), B)))
    G = np.einsum("cid,cjd->cij", Z[sub], Z[sub]) / tau
    Wb = W[sub[:, :, None], sub[:, None, :]]
    P = Wb / Wb.sum(axis=2, keepdims=True)
    eye = np.eye(B, dtype=bool)
    S = np.where(eye, -np.inf, G)
    top = S.max(axis=2, keepdims=True)
    lse = top[..., 0] + np.log(np.exp(S - top).sum(axis=2))
    return float(np.mean(np.mean(lse - (P * G).sum(axis=2), axis=1)))


def _compositions_expectation(G, sizes, B, tau):
    """SupCon's expected class-collapsed batch loss over uniform batches of B samples: every
    count vector with its hypergeometric probability, anchors without positives dropped from
    the mean."""
    n = np.asarray(sizes)
    K, N = n.size, int(n.sum())
    counts = np.array([m for m in itertools.product(*(range(min(c, B) + 1) for c in n))
                       if sum(m) == B], dtype=float)
    logp = np.array([sum(math.log(math.comb(int(c), int(k)))
                         for c, k in zip(n, m, strict=True))
                     for m in counts]) - math.log(math.comb(N, B))
    mu = counts[:, None, :] - np.eye(K)[None]  # copies of d an anchor of c sees
    with np.errstate(divide="ignore"):
        T = np.log(np.maximum(mu, 0.0)) + G[None] / tau
    top = T.max(axis=2, keepdims=True)
    loss_c = top[..., 0] + np.log(np.exp(T - top).sum(axis=2)) - np.diag(G)[None] / tau
    pos = counts >= 2
    anchors = (counts * pos).sum(axis=1)
    ok = anchors > 0
    batch = (counts * pos * np.where(pos, loss_c, 0.0)).sum(axis=1)[ok] / anchors[ok]
    p = np.exp(logp[ok])
    return float(p @ batch / p.sum()), counts.shape[0]


def test_the_default_enumerates_a_hundred_thousand():
    assert EXACT_MAX_DEFAULT >= 100_000
    spec = BatchSpec(5, "uniform", None, "mean", "drop")
    ones = np.ones(28, dtype=np.int64)  # C(28, 5) = 98 280 subsets
    assert batch_route(ones, spec, 3, EXACT_MAX_DEFAULT) == "finite"
    assert batch_route(ones, spec, 3, 20_000) == "stochastic"
    # the finite sum's estimate: measured 35 s of CPU, 133 s wall at load 8, 484 MB resident
    seconds, peak = finite_cost(28, 5, 3, 5)
    assert 35 / 2 < seconds < 133 * 2 and 100e6 < peak < 2e9
    sizes = np.array([12, 9, 7, 5, 4, 3, 3, 2])  # 57 481 compositions of B = 16
    assert batch_route(sizes, BatchSpec(16, "uniform", None, "mean", "drop"), None,
                       EXACT_MAX_DEFAULT) == "rows"
    # in a fixed dimension below the classes, the rank-d search over 23 248 compositions (the
    # issue's example, 0.02 from the exact Gram on fresh batches) runs in two phases (a search
    # on sampled rows, then every candidate on all of them) and is estimated within
    # EXACT_RANK_D_MAX_S: exact; over the 57 481 compositions of B = 16 it is not: fresh batches
    spec12 = BatchSpec(12, "uniform", None, "mean", "drop")
    assert rows_rank_d_seconds(sizes, spec12, 3, 8) <= EXACT_RANK_D_MAX_S
    assert batch_route(sizes, spec12, 3, EXACT_MAX_DEFAULT, 8) == "rows"
    spec16 = BatchSpec(16, "uniform", None, "mean", "drop")
    assert rows_rank_d_seconds(sizes, spec16, 3, 8) > EXACT_RANK_D_MAX_S
    assert batch_route(sizes, spec16, 3, EXACT_MAX_DEFAULT, 8) == "stochastic"
    small = np.array([3, 3, 2])
    spec4 = BatchSpec(4, "uniform", None, "mean", "drop")
    assert rows_rank_d_seconds(small, spec4, 2, 8) <= EXACT_RANK_D_MAX_S
    assert batch_route(small, spec4, 2, EXACT_MAX_DEFAULT, 8) == "rows"


def test_the_finite_sum_beyond_its_time_budget_goes_to_fresh_batches(monkeypatch):
    spec = BatchSpec(5, "uniform", None, "mean", "drop")
    ones = np.ones(28, dtype=np.int64)
    monkeypatch.setenv("DGP_TIME_BUDGET_S", "10")
    # the row problem of 98 280 subsets would be slower still: fresh batches, not rows
    assert batch_route(ones, spec, 3, EXACT_MAX_DEFAULT) == "stochastic"
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "1M")
    monkeypatch.delenv("DGP_TIME_BUDGET_S")
    assert batch_route(ones, spec, 3, EXACT_MAX_DEFAULT) == "stochastic"
    # free dimension: the row problem (its own guards), as before
    assert batch_route(np.ones(9, dtype=np.int64), spec, None, EXACT_MAX_DEFAULT) == "rows"


@pytest.mark.slow  # the finite sum over 26 334 subsets and a stochastic run: about a minute
def test_sample_level_batches_beyond_twenty_thousand_are_exact():
    W, B, tau, d = _soft(22, seed=3), 5, 0.5, 2  # C(22, 5) = 26 334
    res = dgp.optimum(W, tau=tau, dim=d, batch_size=B, progress=False)
    assert isinstance(res, dgp.BatchOptimum) and res.batch.expectation == "exact"
    assert res.batch.batches == math.comb(22, 5) > 20_000
    exact = _subsets_expectation(res.embedding, W, B, tau)
    assert res.loss == pytest.approx(exact, rel=1e-12)
    assert res.batch.interval == (res.loss, res.loss)
    assert res.lower_bound <= res.loss
    # a minimum: no small move of the embedding lowers the brute-force expectation
    rng = np.random.default_rng(0)
    for _ in range(6):
        moved = _unit(res.embedding + 1e-3 * rng.standard_normal(res.embedding.shape))
        assert _subsets_expectation(moved, W, B, tau) >= exact - 1e-12
    # the general method (fresh batches, held-out interval) agrees within what it reports: its
    # embedding is no better than the exact optimum, its interval holds its own exact value,
    # its lower bound holds and its gap covers its distance from the exact optimum (in d = 2
    # a run can stop in another local minimum: measured 0.0075 above, inside its gap)
    sto = dgp.optimum(W, tau=tau, dim=d, batch_size=B, exact_max=10, progress=False)
    assert sto.batch.expectation == "stochastic"
    sto_exact = _subsets_expectation(sto.embedding, W, B, tau)
    lo, hi = sto.batch.interval
    assert lo <= sto_exact <= hi
    assert exact - 1e-9 <= sto_exact <= exact + sto.batch.gap
    assert sto.lower_bound <= exact


@pytest.mark.slow  # 23 248 compositions, free dimension: about 10 s
def test_class_compositions_beyond_twenty_thousand_are_exact_and_certified():
    sizes, B, tau = [12, 9, 7, 5, 4, 3, 3, 2], 12, 0.5
    labels = np.repeat(np.arange(len(sizes)), sizes)
    res = dgp.optimum(supcon_weights(labels), tau=tau, batch_size=B, progress=False)
    assert res.batch.exact and res.batch.compositions > 20_000
    G = res.quotient_gram
    exact, count = _compositions_expectation(G, sizes, B, tau)
    assert count == res.batch.compositions
    assert res.loss == pytest.approx(exact, rel=1e-10)
    assert res.certified_global and res.gap <= 1e-6 * abs(res.loss)
    # no move of the class points lowers the brute-force expectation (convex in the Gram, and
    # the factor is of full rank: a local minimum in every direction is the global one)
    w, V = np.linalg.eigh(G)
    X = V * np.sqrt(np.clip(w, 0.0, None))
    rng = np.random.default_rng(1)
    for _ in range(5):
        Xm = _unit(X + 1e-3 * rng.standard_normal(X.shape))
        assert _compositions_expectation(Xm @ Xm.T, sizes, B, tau)[0] >= exact - 1e-12


def _with_twins(N, seed):
    """A soft weighting whose last sample is a twin of the first (identical row and column)."""
    W = _soft(N - 1, seed)
    W = np.vstack([W, W[:1]])
    W = np.hstack([W, W[:, :1]])
    W[-1, 0] = W[0, -1] = W[0, 1]
    W[-1, -1] = 0.0
    return W


@pytest.mark.slow  # about 5 s
def test_twins_that_leave_too_few_points_for_the_finite_sum_are_enumerated(monkeypatch):
    """Merged twins make a class of two, which the finite sum over subsets does not take; where
    the rows of every composition are refused (forced here), the samples themselves are
    enumerated exactly instead of going to fresh batches (a 3-NN graph of 25 points with one
    twin pair ended 3.1% above its exact optimum on fresh batches)."""
    import dgp.optima._batch_paths as paths

    monkeypatch.setattr(paths, "exact_rows_fit", lambda *a, **k: False)
    W, B, tau, d = _with_twins(13, seed=4), 4, 0.5, 2  # C(13, 4) = 715 subsets
    res = dgp.optimum(W, tau=tau, dim=d, batch_size=B, progress=False)
    assert isinstance(res, dgp.BatchOptimum) and res.batch.expectation == "exact"
    assert res.batch.batches == math.comb(13, B)
    assert res.loss == pytest.approx(_subsets_expectation(res.embedding, W, B, tau), rel=1e-12)
    # permuting the samples permutes the answer: the same exact optimum
    perm = np.random.default_rng(1).permutation(13)
    again = dgp.optimum(W[perm][:, perm], tau=tau, dim=d, batch_size=B, progress=False)
    assert again.loss == pytest.approx(res.loss, rel=1e-7)
    # where the rows are allowed, the finite sum is still taken when it is estimated faster
    # (two twin pairs of a 25-point graph: about 8 minutes of rows against 10 s), exact alike
    monkeypatch.undo()
    from dgp.optima._batch_paths import finite_seconds
    from dgp.solver import rows_rank_d_seconds

    spec = res.batch.spec
    sizes = np.array([2] + [1] * 11)
    assert finite_seconds(13, spec, d, 4) < rows_rank_d_seconds(sizes, spec, d, 4)
    fast = dgp.optimum(W, tau=tau, dim=d, batch_size=B, progress=False)
    assert isinstance(fast, dgp.BatchOptimum) and fast.batch.expectation == "exact"
    assert fast.loss == pytest.approx(res.loss, rel=1e-9)


@pytest.mark.slow  # about 5 s
def test_anchors_counted_as_zero_with_twins_answer_instead_of_an_internal_error(monkeypatch):
    """With anchors without positives counted as zero, the optimum need not collapse a twin
    pair; the full-batch solve of the merged problem then fails its lifted certificate, and a
    batch path solves the samples instead (it raised NoCollapse, an internal error). The path
    is forced to fresh batches here, where the NoCollapse came from."""
    import dgp.optima._api as api

    monkeypatch.setattr(api, "batch_route", lambda *a, **k: "stochastic")
    W = _zero_anchor_twins()
    res = dgp.optimum(W, tau=0.3, dim=3, batch_size=4, anchors_without_positives="zero",
                      reduction="mean", replicates=1, samples=200, progress=False)
    assert isinstance(res, dgp.BatchOptimum) and res.n == 13
    assert res.batch.expectation == "stochastic"
    assert res.batch.lower_bound <= res.loss


def _zero_anchor_twins():
    """A 2-NN graph of 12 points and a twin of point 0 (exact: 0.0790242 at tau = 0.3, d = 3,
    B = 4 with zero anchors in the 25-point original of the report; the merged pair does not
    collapse at the full-batch optimum)."""
    rng = np.random.default_rng(0)
    y = rng.standard_normal((12, 2))
    D = ((y[:, None] - y[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    W = np.zeros((12, 12))
    for i, row in enumerate(np.argsort(D, axis=1)[:, :2]):
        W[i, row] = 1.0
    W = np.vstack([W, W[:1]])
    W = np.hstack([W, W[:, :1]])
    W[-1, -1] = 0.0
    return W


def test_every_exact_route_reports_the_batch_fields_of_the_contract():
    """The row problem of every composition reports what the finite sum and fresh batches
    report (CONTRACT v4: batch.expected_loss, interval, lower_bound with its confidence, gap;
    full_batch_expected_loss beside it): a script reading them must not depend on the route.
    The full-batch value is the exact expectation of the full-batch Gram (brute force)."""
    sizes, B, tau = [3, 2, 2, 3], 4, 0.5
    labels = np.repeat(np.arange(len(sizes)), sizes)
    res = dgp.optimum(supcon_weights(labels), tau=tau, dim=2, batch_size=B, progress=False)
    d = res.to_dict()
    batch = d["batch"]
    assert batch["expectation"] == "exact"
    for key in ("expected_loss", "interval", "lower_bound", "confidence", "gap"):
        assert key in batch
    assert batch["expected_loss"] == res.loss
    assert batch["interval"] == [res.loss, res.loss] and batch["confidence"] == 1.0
    assert batch["lower_bound"] <= batch["expected_loss"]
    assert batch["gap"] == pytest.approx(batch["expected_loss"] - batch["lower_bound"])
    # brute force over the compositions, on the anchors' batches alone (a batch without a
    # positive pair is a step of zero loss in dgp's expectation, a factor common to both)
    full = np.asarray(batch["full_batch_gram"])
    ratio = (_compositions_expectation(full, sizes, B, tau)[0]
             / _compositions_expectation(res.quotient_gram, sizes, B, tau)[0])
    assert d["full_batch_expected_loss"] / res.loss == pytest.approx(ratio, rel=1e-9)
    assert d["full_batch_expected_loss"] == batch["full_batch_expected_loss"]


@pytest.mark.parametrize("bad", [2, 4.5, "8", 0])
def test_a_bad_batch_size_is_refused_in_one_wording(bad):
    """Below 3 or not an integer: one message naming the argument and its limit (a value of 2
    was 'at least 3', 4.5 'an integer >= 1')."""
    with pytest.raises(dgp.InvalidParameterError, match=r"batch_size must be an integer >= 3"):
        dgp.optimum(supcon_weights([0, 0, 1, 1, 2, 2]), tau=0.5, batch_size=bad)


def test_anchors_counted_as_zero_need_the_mean():
    """``anchors_without_positives="zero"`` says how a mean counts anchors without positives; a
    sum adds nothing for them either way, so with ``reduction="sum"`` it is refused by name
    (it was accepted silently), in Python and on the command line."""
    with pytest.raises(dgp.InvalidParameterError, match="anchors_without_positives"):
        dgp.optimum(supcon_weights([0, 0, 1, 1, 2, 2]), tau=0.5, batch_size=4,
                    reduction="sum", anchors_without_positives="zero")
    with pytest.raises(dgp.InvalidParameterError, match="anchors_without_positives"):
        dgp.supcon_prototypes([3, 2, 2], tau=0.5, batch_size=4, reduction="sum",
                              anchors_without_positives="zero")
