"""The class-level path of the stochastic driver: a weights object that builds its own batch loss
(:class:`dgp.solver.ClassBlockWeights`, no ``u x u`` target, only the rows of anchors with
positives) drives the optimiser, the held-out evaluation, the relaxation bound and the time
estimate.

Independent references: the batch loss written here sample by sample from its definition (each
class expanded into its samples, every anchor's w-InfoNCE term with the trainer's reduction),
central finite differences, and the generic path (a weights object that only has ``log_block``),
which must give the same run to rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.solver import (
    BatchSpec,
    ClassBatches,
    ClassBlockWeights,
    batch_function,
    class_block_batch,
    evaluate,
    relaxation_bound,
    step_timings,
    stochastic_optimum,
)


class LogBlockOnly:
    """The same class-block weights seen only through ``log_block`` (the generic path)."""

    def __init__(self, inner: ClassBlockWeights):
        self.inner, self.n = inner, inner.n

    def log_block(self, idx):
        return self.inner.log_block(idx)


class Counting(ClassBlockWeights):
    """Class-block weights that count the batch losses built through them."""

    calls: list

    def batch_function(self, idx, counts, *, tau, spec):
        self.calls.append(idx.size)
        return super().batch_function(idx, counts, tau=tau, spec=spec)


def _sizes(K, top=300):
    return np.maximum(2, np.round(top * 0.01 ** (np.arange(K) / (K - 1)))).astype(np.int64)


def reference_loss(Zb, counts, *, tau, eps, spec):
    """The batch loss from its definition: every sample an anchor, its positives the other
    samples of its class (weight 1), the others weight ``eps`` (or 0), softmax over every other
    sample of the batch; the reduction of ``spec``."""
    labels = np.repeat(np.arange(counts.size), counts.astype(int))
    Z = Zb[labels]
    S = Z @ Z.T / tau
    B = labels.size
    losses, anchors = [], 0
    for i in range(B):
        others = np.arange(B) != i
        w = np.where(labels == labels[i], 1.0, 0.0 if eps is None else eps)[others]
        if w.sum() == 0:
            losses.append(0.0)
            continue
        anchors += 1
        p = w / w.sum()
        s = S[i, others]
        lse = s.max() + math.log(np.exp(s - s.max()).sum())
        losses.append(float(lse - p @ s))
    total = float(np.sum(losses))
    if spec.reduction == "sum":
        return total
    return total / (B if spec.anchors_without_positives == "zero" else max(anchors, 1))


@pytest.mark.parametrize("eps", [None, 0.2])
@pytest.mark.parametrize("reduction, drop", [("mean", "drop"), ("mean", "zero"), ("sum", "drop")])
def test_class_block_loss_is_the_loss_of_its_samples(eps, reduction, drop):
    K, B, tau = 12, 20, 0.3
    spec = BatchSpec(B, "uniform", None, reduction, drop)
    rng = np.random.default_rng(3)
    Z = rng.standard_normal((K, 5))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    src = ClassBatches(_sizes(K, 30), spec)
    for _ in range(10):
        idx, m = src.draw(rng)
        got = class_block_batch(m, tau=tau, spec=spec, eps=eps).terms(Z[idx], gradient=False)[0]
        assert got == pytest.approx(reference_loss(Z[idx], m, tau=tau, eps=eps, spec=spec),
                                    rel=1e-11, abs=1e-13)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), soft=st.booleans(), r=st.integers(2, 7))
def test_gradient_is_the_derivative_in_any_width(seed, soft, r):
    """The Euclidean gradient of ``value_grad`` (rows of any width: the relaxation bound works
    on wider rows than the embedding) is the derivative of the loss (central differences)."""
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 5, size=6).astype(float)
    m[0] = 3.0  # at least one anchor with positives
    spec = BatchSpec(int(m.sum()), "uniform", None, "mean", "drop")
    fn = class_block_batch(m, tau=0.4, spec=spec, eps=0.3 if soft else None)
    Z = rng.standard_normal((6, r))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    _, g = fn.value_grad(Z)
    E = rng.standard_normal(Z.shape)
    h = 1e-6
    fd = (fn.terms(Z + h * E, gradient=False)[0] - fn.terms(Z - h * E, gradient=False)[0]) / (2 * h)
    assert fd == pytest.approx(float(np.sum(g * E)), rel=1e-5, abs=1e-8)
    # the Gram derivative gives the same gradient: (Gam + Gam^T) Z
    _, Gam = fn.terms(Z)
    np.testing.assert_allclose((Gam + Gam.T) @ Z, g, atol=1e-12)


@pytest.mark.parametrize("eps", [None, 0.1])
@pytest.mark.parametrize("sampler", ["uniform", "class-balanced"])
def test_a_run_through_either_path_is_the_same_to_rounding(eps, sampler):
    """The same seeded run through the class-level loss and through the generic loss of the
    same log-weights: the same embedding, evaluation and bound to rounding."""
    K, d, tau = 30, 6, 0.2
    spec = BatchSpec(32, sampler, None, "mean", "drop")
    sampler_ = ClassBatches(_sizes(K, 60), spec)
    fast = ClassBlockWeights(K, eps)
    slow = LogBlockOnly(fast)
    kw = {"tau": tau, "dim": d, "seed": 4, "max_epochs": 6, "min_epochs": 2,
          "anneal_epochs": 1.0, "monitor_batches": 8}
    a = stochastic_optimum(fast, sampler_, spec, **kw)
    b = stochastic_optimum(slow, sampler_, spec, **kw)
    assert a.steps == b.steps
    np.testing.assert_allclose(a.embedding, b.embedding, atol=1e-9)
    np.testing.assert_allclose(a.monitor, b.monitor, rtol=1e-10)
    ea = evaluate([a.embedding], fast, sampler_, spec, tau=tau, seed=1, min_batches=50,
                  max_batches=50)[0]
    eb = evaluate([a.embedding], slow, sampler_, spec, tau=tau, seed=1, min_batches=50,
                  max_batches=50)[0]
    np.testing.assert_allclose(ea.values, eb.values, rtol=1e-11)
    ba = relaxation_bound(a.embedding, ea, fast, sampler_, spec, tau=tau, seed=1, batches=3,
                          iters=30)
    bb = relaxation_bound(a.embedding, eb, slow, sampler_, spec, tau=tau, seed=1, batches=3,
                          iters=30)
    assert ba.mean_gap == pytest.approx(bb.mean_gap, rel=1e-6, abs=1e-9)
    assert ba.value <= ea.mean  # a lower bound on the optimum lies below an attained loss


def test_the_driver_builds_every_loss_through_the_weights():
    """Optimiser steps, monitoring, evaluation, bound and estimate all ask the weights object
    for the batch loss (nothing calls the generic loss behind its back)."""
    K = 20
    spec = BatchSpec(24, "uniform", None, "mean", "drop")
    sampler = ClassBatches(_sizes(K, 40), spec)
    w = Counting(K)
    w.calls = []
    run = stochastic_optimum(w, sampler, spec, tau=0.3, dim=4, seed=0, max_epochs=2,
                             min_epochs=1, anneal_epochs=1.0, monitor_batches=4)
    assert len(w.calls) == run.steps + 4  # one per step, one per monitoring batch
    w.calls.clear()
    est = evaluate([run.embedding], w, sampler, spec, tau=0.3, seed=0, min_batches=30,
                   max_batches=30)[0]
    assert len(w.calls) == 30
    w.calls.clear()
    relaxation_bound(run.embedding, est, w, sampler, spec, tau=0.3, seed=0, batches=2, iters=5)
    assert len(w.calls) == 2
    w.calls.clear()
    t = step_timings(w, sampler, spec, tau=0.3, dim=4, seed=0, steps=5, bound_iters=5)
    assert min(t.step, t.build, t.value, t.bound_batch) > 0 and t.spread > 0
    assert len(w.calls) == 1 + 5 + 5  # a first step, the timed steps, the timed batches


def test_generic_batch_function_is_used_for_log_block_only_weights():
    K = 10
    spec = BatchSpec(16, "uniform", None, "mean", "drop")
    rng = np.random.default_rng(0)
    idx, m = ClassBatches(_sizes(K, 20), spec).draw(rng)
    Z = rng.standard_normal((idx.size, 3))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    inner = ClassBlockWeights(K, 0.3)
    a = batch_function(inner, idx, m, tau=0.5, spec=spec)
    b = batch_function(LogBlockOnly(inner), idx, m, tau=0.5, spec=spec)
    assert type(a) is type(b)  # both a RowBatch, built two ways
    assert a.terms(Z, gradient=False)[0] == pytest.approx(b.terms(Z, gradient=False)[0],
                                                          rel=1e-12)
