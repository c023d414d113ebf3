"""The stochastic expected-batch run counts its budget in rounds that give every sample enough
partner terms (issue 40): where epochs are short (small batches) a round is many epochs, so a
run at N = 300, B = 16 is no worse than a long independent stochastic run, where the epoch
budget stopped 0.0027 nats per anchor above one; where epochs are long (B = 256, class-collapsed
problems) a round is one epoch and the run is the epoch schedule, step for step.

The reference here is written independently of dgp: plain Adam on free rows ``X`` (the embedding
``X / |X|``), elementwise moments, shuffled epochs, its own batch loss and gradient in numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.constants import ROUND_PARTNER_TERMS
from dgp.errors import ParameterError
from dgp.solver import (
    BatchSpec,
    ClassBatches,
    DenseBatchWeights,
    SampleBatches,
    batch_optimum,
    stochastic_optimum,
)
from dgp.solver._stochastic import round_steps


def _spec(B: int, sampler: str = "uniform") -> BatchSpec:
    return BatchSpec(B, sampler, None, "mean", "drop")


# ------------------------------------------------------------------- the round, in steps
@given(n=st.integers(2, 20_000), B=st.integers(2, 512), terms=st.floats(0.0, 1000.0))
@settings(max_examples=200, deadline=None)
def test_a_round_is_the_fewest_steps_that_give_each_point_its_partner_terms(n, B, terms):
    """At least one epoch; at least ``terms`` partner terms per point on average (a step gives
    the ``n`` points B (B - 1) / n each); and no step more than either asks."""
    B = min(B, n)
    sampler = SampleBatches(n, B)
    r = round_steps(sampler, _spec(B), partner_terms=terms)
    per_point = B * max(B - 1, 1) / n
    assert r >= sampler.steps_per_epoch
    assert r * per_point >= terms * (1 - 1e-12)
    assert r == sampler.steps_per_epoch or (r - 1) * per_point < terms * (1 + 1e-12)


@pytest.mark.parametrize("bad", [-1.0, math.nan, math.inf, "128"])
def test_a_bad_partner_count_is_refused_by_name(bad):
    sampler = SampleBatches(300, 16)
    with pytest.raises(ParameterError, match="partner_terms"):
        round_steps(sampler, _spec(16), partner_terms=bad)
    with pytest.raises(ParameterError, match="partner_terms"):
        stochastic_optimum(DenseBatchWeights(np.zeros((300, 300))), sampler, _spec(16),
                           tau=0.5, dim=2, seed=0, partner_terms=bad)


@pytest.mark.parametrize("N", [2000, 10_000])
def test_large_batches_keep_the_epoch(N):
    """B = 256 gives every sample 255 partner terms an epoch, more than a round asks: one round
    is one epoch, so the runs of N = 2000 and 10 000 are unchanged."""
    sampler = SampleBatches(N, 256)
    assert round_steps(sampler, _spec(256)) == sampler.steps_per_epoch


@pytest.mark.parametrize("K", [100, 1000])
def test_class_collapsed_problems_keep_the_epoch(K):
    """A collapsed class appears in most batches: one round is one epoch."""
    sizes = np.full(K, 20, dtype=np.int64)
    spec = _spec(256)
    sampler = ClassBatches(sizes, spec)
    assert round_steps(sampler, spec) == sampler.steps_per_epoch


def test_short_epochs_give_rounds_of_many_epochs():
    """N = 300, B = 16: an epoch is 18 steps and gives each sample 15 partner terms; a round is
    the 160 steps that give it 128 (ceil(128 * 300 / 240))."""
    sampler = SampleBatches(300, 16)
    assert sampler.steps_per_epoch == 18
    assert ROUND_PARTNER_TERMS == 128
    assert round_steps(sampler, _spec(16)) == math.ceil(128 * 300 / (16 * 15)) == 160


def test_where_a_round_is_an_epoch_the_run_is_the_epoch_schedule():
    """With rounds of one epoch (N = 600, B = 150: 4 steps an epoch, 149 terms each) the default
    run and the epoch schedule (partner_terms = 0) are the same run, step for step."""
    N, B, d = 600, 150, 4
    y = np.random.default_rng(3).standard_normal((N, 2))
    L = -((y[:, None] - y[None]) ** 2).sum(-1) / 2.0
    np.fill_diagonal(L, -np.inf)
    w, sampler, spec = DenseBatchWeights(L), SampleBatches(N, B), _spec(B)
    assert round_steps(sampler, spec) == sampler.steps_per_epoch
    kw = dict(tau=0.5, dim=d, seed=2, max_epochs=4, min_epochs=1, anneal_epochs=1.0,
              monitor_batches=4)
    a = stochastic_optimum(w, sampler, spec, **kw)
    b = stochastic_optimum(w, sampler, spec, partner_terms=0, **kw)
    assert a.steps == b.steps == 5 * sampler.steps_per_epoch
    np.testing.assert_array_equal(a.embedding, b.embedding)
    assert a.monitor == b.monitor


def test_the_monitor_is_read_once_a_round():
    """Where a round is many epochs the monitoring batches are read once a round (not once an
    epoch): the history has the start, one entry a round and the returned embedding's."""
    N, B = 60, 4
    y = np.random.default_rng(4).standard_normal((N, 2))
    L = -((y[:, None] - y[None]) ** 2).sum(-1) / 2.0
    np.fill_diagonal(L, -np.inf)
    sampler, spec = SampleBatches(N, B), _spec(B)
    per_round = round_steps(sampler, spec, partner_terms=20)
    assert per_round == 100 > sampler.steps_per_epoch == 15
    run = stochastic_optimum(DenseBatchWeights(L), sampler, spec, tau=0.5, dim=3, seed=0,
                             max_epochs=3, min_epochs=1, anneal_epochs=0.5, monitor_batches=4,
                             partner_terms=20)
    assert run.steps == 3 * per_round + per_round // 2
    assert len(run.monitor) == 1 + 3 + 1
    assert run.epochs == pytest.approx(run.steps / sampler.steps_per_epoch)
    assert "3 rounds of 100 steps" in run.status


# --------------------------------------------------------- an independent long reference
def _batch_losses(Z, L, batches, tau):
    """Each batch's loss (rows of ``batches``), as the common implementations compute it: for
    anchor i, targets w_ij normalised over j != i in the batch, log-softmax of z_i . z_j / tau
    over j != i; the mean over the anchors that have positives."""
    Zb = Z[batches]
    B = batches.shape[1]
    eye = np.eye(B, dtype=bool)
    S = np.where(eye, -np.inf, np.einsum("bid,bjd->bij", Zb, Zb) / tau)
    m = S.max(axis=2, keepdims=True)
    lse = m[..., 0] + np.log(np.exp(S - m).sum(axis=2))
    Wb = np.where(eye, 0.0, np.exp(L[batches[:, :, None], batches[:, None, :]]))
    tot = Wb.sum(axis=2)
    has = tot > 0
    P = Wb / np.where(has, tot, 1.0)[..., None]
    li = lse - np.sum(P * np.where(eye, 0.0, S), axis=2)
    return np.sum(np.where(has, li, 0.0), axis=1) / has.sum(axis=1)


def _adam_reference(L, tau, dim, B, steps, seed, lr=0.5, averaged=0.3):
    """Plain Adam on free rows X (the embedding X/|X|), only the batch's rows updated (bias
    corrections by each row's own count), shuffled epochs; the step lr/sqrt(1 + t/T) with T
    one epoch, then linear to zero over the last ``averaged`` share of the steps, whose
    normalised rows are averaged."""
    N = L.shape[0]
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((N, dim))
    M, V, count = np.zeros_like(X), np.zeros_like(X), np.zeros(N)
    T, decay_at = N // B, int((1 - averaged) * steps)
    avg, eye = np.zeros_like(X), np.eye(B, dtype=bool)
    order, pos = rng.permutation(N), 0
    for t in range(steps):
        if pos + B > N:
            order, pos = rng.permutation(N), 0
        idx = order[pos:pos + B]
        pos += B
        Xb = X[idx]
        norm = np.linalg.norm(Xb, axis=1, keepdims=True)
        Zb = Xb / norm
        S = Zb @ Zb.T / tau
        S[eye] = -np.inf
        E = np.exp(S - S.max(axis=1, keepdims=True))
        Q = E / E.sum(axis=1, keepdims=True)
        Wb = np.exp(L[np.ix_(idx, idx)])
        Wb[eye] = 0.0
        tot = Wb.sum(axis=1)
        has = tot > 0
        P = np.zeros_like(Wb)
        P[has] = Wb[has] / tot[has, None]
        dS = (Q - P) * has[:, None] / has.sum()  # d(mean loss)/dS
        dZ = (dS + dS.T) @ Zb / tau
        g = (dZ - np.sum(dZ * Zb, axis=1, keepdims=True) * Zb) / norm  # through X/|X|
        eta = (lr / math.sqrt(1 + t / T) if t < decay_at else
               lr / math.sqrt(1 + decay_at / T) * (steps - t) / (steps - decay_at))
        count[idx] += 1
        M[idx] = 0.9 * M[idx] + 0.1 * g
        V[idx] = 0.999 * V[idx] + 0.001 * g * g
        c = count[idx][:, None]
        X[idx] = Xb - eta * (M[idx] / (1 - 0.9**c)) / (np.sqrt(V[idx] / (1 - 0.999**c)) + 1e-8)
        if t >= decay_at:
            avg[idx] += X[idx] / np.linalg.norm(X[idx], axis=1, keepdims=True)
    Z = X / np.linalg.norm(X, axis=1, keepdims=True)
    seen = np.linalg.norm(avg, axis=1) > 0
    Z[seen] = avg[seen] / np.linalg.norm(avg[seen], axis=1, keepdims=True)
    return Z


@pytest.mark.slow  # a dgp solve, a 50 000-step reference and an epoch-schedule run: ~25 s
def test_small_batches_are_no_worse_than_a_long_independent_run():
    """The referee's case of issue 40 (N = 300 soft 2-D labels, B = 16, d = 8, tau = 0.2):
    dgp's embedding, on fresh batches of this test's own, is no worse than a long independent
    Adam run (50 000 steps, 2700 epochs) plus the half-width dgp reports, and short of it by
    less than a quarter of that half-width; the epoch schedule (rounds of one epoch) falls short
    by more than that, so the check can fail; the reported lower bound lies below the loss the
    reference attains."""
    N, B, d, tau = 300, 16, 8, 0.2
    y = np.random.default_rng(1).standard_normal((N, 2))
    L = -((y[:, None] - y[None]) ** 2).sum(-1)  # W = exp(-|y_i - y_j|^2)
    np.fill_diagonal(L, -np.inf)
    w, spec = DenseBatchWeights(L), _spec(B)
    res = batch_optimum(w, spec, tau=tau, dim=d, seed=0, replicates=0, progress=False)
    half = 0.5 * (res.batch.interval[1] - res.batch.interval[0])
    epoch_run = stochastic_optimum(w, SampleBatches(N, B), spec, tau=tau, dim=d, seed=0,
                                   partner_terms=0)
    ref = _adam_reference(L, tau, d, B, steps=50_000, seed=7)

    rng = np.random.default_rng(2024)
    batches = np.sort(np.array([rng.choice(N, B, replace=False) for _ in range(20_000)]),
                      axis=1)
    base = _batch_losses(ref, L, batches, tau)
    short = _batch_losses(res.embedding, L, batches, tau) - base  # paired on the same batches
    epoch_short = _batch_losses(epoch_run.embedding, L, batches, tau) - base
    se = short.std(ddof=1) / math.sqrt(short.size)
    assert se < 0.1 * half  # the paired comparison resolves far below the half-width
    assert short.mean() <= half  # issue 40, Must show
    assert short.mean() <= 0.25 * half
    assert epoch_short.mean() > 0.25 * half  # what the epoch budget left
    assert res.batch.lower_bound <= base.mean()
    assert res.batch.steps > epoch_run.steps
