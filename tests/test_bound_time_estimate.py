"""The time estimate of the expected-batch optimum counts the lower bound's whole cost (issue
40): where the rule shares batches (few points) and the per-batch bound is loose (a k-NN graph),
the shared-Gram replicates are drawn after the per-batch bound, and the estimate before the work
and the calibrated one include them; where the per-batch bound is tight they are not drawn and
not counted."""

from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest
from _stderr_clock import ClockedStderr, said_seconds

import dgp.solver._expected as expected
from dgp.solver import (
    BatchSpec,
    DenseBatchWeights,
    SampleBatches,
    SparseBatchWeights,
    batch_optimum,
)
from dgp.solver._shared_bound import shared_batches, shared_gaps, shared_seconds
from dgp.weights import knn_weights

N, B, DIM, TAU = 128, 32, 4, 0.1
SPEC = BatchSpec(B, "uniform", None, "mean", "drop")
#: the factor within which a time estimate must hold either way
FACTOR = 2.0
#: and the seconds of slack either way: the noise of a shared machine on a remainder of a few
#: seconds (a CI run took 3.2 s where 1.3 s were said), which a factor alone cannot absorb
SLACK_S = 2.0


def _knn() -> SparseBatchWeights:
    X = np.random.default_rng(3).standard_normal((N, 3))
    return SparseBatchWeights(knn_weights(X, 3).tocsr())


def test_the_shared_replicates_are_timed_and_counted_where_they_may_be_drawn():
    """k-NN, N = 128, B = 32: the rule shares 32 batches; the plan before the work holds the
    replicates' seconds, counts them (at a random start the timed batch's gap is loose), and
    their modelled seconds are within a factor 3 of three replicates timed here (both on the
    same machine, one after the other)."""
    weights, sampler = _knn(), SampleBatches(N, B)
    m = shared_batches(N, B)
    assert m == 32
    plan = expected._estimate(weights, sampler, SPEC, tau=TAU, dim=DIM, seed=0, runs=1,
                              warm=False, min_batches=200, bound_batches=8, candidates=1,
                              half_width=0.01)
    assert plan.shared > 0 and plan.shared_likely
    assert plan.total == plan.runs + plan.evaluation + plan.bound + plan.shared
    said = shared_seconds(weights, sampler, SPEC, tau=TAU, dim=DIM, seed=1, m=m)
    Z = np.random.default_rng(0).standard_normal((N, DIM))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    t0 = time.perf_counter()
    shared_gaps(Z, weights, sampler, SPEC, tau=TAU, seed=0, m=m, replicates=3)
    taken = time.perf_counter() - t0
    assert 1 / 3 <= taken / said <= 3, (taken, said)


def test_where_the_rule_shares_no_batches_none_are_timed():
    """Where the rule gives one batch (N = 300, B = 16: two points meet in 0.003 batches, too
    rarely) nothing is timed: the plan's shared seconds are 0 and the total is the three
    parts."""
    y = np.random.default_rng(0).standard_normal((300, 2))
    L = -((y[:, None] - y[None]) ** 2).sum(-1)
    np.fill_diagonal(L, -np.inf)
    spec = BatchSpec(16, "uniform", None, "mean", "drop")
    assert shared_batches(300, 16) == 1
    plan = expected._estimate(DenseBatchWeights(L), SampleBatches(300, 16), spec, tau=0.5,
                              dim=3, seed=0, runs=1, warm=False, min_batches=200,
                              bound_batches=4, candidates=1, half_width=0.01)
    assert plan.shared == 0 and plan.total == plan.runs + plan.evaluation + plan.bound


@pytest.mark.slow  # 3 s, and a timing on the shared machine
def test_the_calibrated_estimate_holds_where_the_shared_bound_is_drawn(monkeypatch):
    """The k-NN graph through batch_optimum: the shared-Gram replicates are drawn (the bound's
    batches exceed the per-batch ones), and the seconds the calibrated line says are left are
    within a factor 2 of what the rest took (without the replicates counted: 3.6 and 4.1 times,
    two solves on the loaded machine)."""
    err = ClockedStderr()
    monkeypatch.setattr(sys, "stderr", err)
    res = batch_optimum(_knn(), SPEC, tau=TAU, dim=DIM, seed=0, progress=True, replicates=0,
                        min_batches=200, half_width=0.01, bound_batches=4)
    t1 = time.monotonic()
    assert res.batch.bound_batches > 4  # the shared replicates were drawn
    found = [(t, m) for t, line in err.lines
             if (m := re.search(r"about (\S+ (?:s|min)) left, (\S+ (?:s|min)) in all", line))]
    assert len(found) == 1, err.lines
    when, m = found[0]
    left = said_seconds(m.group(1))
    assert left / FACTOR - SLACK_S <= t1 - when <= FACTOR * left + SLACK_S, \
        (t1 - when, left)
    assert res.batch.lower_bound <= res.batch.expected_loss
