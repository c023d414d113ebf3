"""The time estimate of the expected-batch optimum (issue 40): calibrated on the run itself, so
that the time it says is left is within a factor 2 of the time the rest of the solve takes,
whatever the load (the estimate from batches timed before the work was 2.2 times the measured
time on a quiet machine, at K = 1000 classes: 305 s said, 140 s taken)."""

from __future__ import annotations

import re
import sys
import time

import numpy as np
import pytest
from _stderr_clock import ClockedStderr, said_seconds

import dgp.solver._expected as expected
from dgp.solver import BatchSpec, DenseBatchWeights, batch_optimum

#: the factor within which the estimate must hold either way
FACTOR = 2.0
#: and the seconds of slack either way: the noise of a shared machine on a remainder of a few
#: seconds (a CI run took 3.2 s where 1.3 s were said), which a factor alone cannot absorb
SLACK_S = 2.0


def _calibrated(lines: list[tuple[float, str]]) -> tuple[float, float, float]:
    """(when, seconds left, seconds in all) of the calibrated estimate's line."""
    found = [(t, m) for t, line in lines
             if (m := re.search(r"about (\S+ (?:s|min)) left, (\S+ (?:s|min)) in all", line))]
    assert len(found) == 1, [line for _, line in lines]
    t, m = found[0]
    return t, said_seconds(m.group(1)), said_seconds(m.group(2))


def _problem(n: int, seed: int = 0) -> DenseBatchWeights:
    y = np.random.default_rng(seed).standard_normal((n, 2))
    L = -((y[:, None] - y[None]) ** 2).sum(-1) / 2.0
    np.fill_diagonal(L, -np.inf)
    return DenseBatchWeights(L)


class _SlowBatch:
    """A batch's loss that costs ``delay`` seconds more at every evaluation (a loaded
    machine)."""

    def __init__(self, fn, delay: float):
        self.fn, self.delay = fn, delay

    def terms(self, Zb, gradient=True):
        time.sleep(self.delay)
        return self.fn.terms(Zb, gradient)

    def value_grad(self, Zb, gradient=True):
        time.sleep(self.delay)
        return self.fn.value_grad(Zb, gradient)


class _LoadedAfterTiming:
    """Dense weights whose batch losses become slow once ``loaded`` is set: the machine's load
    rises between the timing before the work and the work."""

    def __init__(self, inner: DenseBatchWeights, delay: float):
        self.inner, self.delay, self.loaded = inner, delay, False
        self.n = inner.n

    def log_block(self, idx):
        return self.inner.log_block(idx)

    def batch_function(self, idx, counts, *, tau, spec):
        fn = self.inner.batch_function(idx, counts, tau=tau, spec=spec)
        return _SlowBatch(fn, self.delay) if self.loaded else fn


def _run(monkeypatch, weights, **kwargs):
    err = ClockedStderr()
    monkeypatch.setattr(sys, "stderr", err)
    t0 = time.monotonic()
    res = batch_optimum(weights, BatchSpec(32, "uniform", None, "mean", "drop"), tau=0.5,
                        dim=4, seed=0, progress=True, replicates=1, min_batches=200,
                        half_width=0.01, bound_batches=2, **kwargs)
    return res, err.lines, t0, time.monotonic()


def test_the_calibrated_estimate_holds_on_a_short_run(monkeypatch):
    """A solve of one to three seconds (N = 128, B = 32, d = 4): the seconds said to be left
    after the first run are within a factor 2 of the seconds the rest took, and the total said
    within a factor 2 of the whole solve's."""
    res, lines, t0, t1 = _run(monkeypatch, _problem(128))
    when, left, total = _calibrated(lines)
    assert lines[0][1].startswith("dgp: expected-batch optimum") and "before the work" in (
        lines[0][1])
    assert left / FACTOR - SLACK_S <= t1 - when <= FACTOR * left + SLACK_S, \
        (t1 - when, left)
    assert total / FACTOR - SLACK_S <= t1 - t0 <= FACTOR * total + SLACK_S, \
        (t1 - t0, total)
    assert res.batch.lower_bound <= res.batch.expected_loss


@pytest.mark.slow  # the loaded solve takes 10-20 s
def test_a_load_that_rises_after_the_timing_moves_the_calibrated_estimate(monkeypatch):
    """Every batch loss made 1 ms slower once the timing before the work is done (a load
    that rises): the first run measures it (its seconds more than twice those of its steps and
    monitor readings by the timed batches), and the calibrated estimate is still within a
    factor 2 of what the rest took."""
    weights = _LoadedAfterTiming(_problem(128), delay=1e-3)
    real = expected._estimate

    def timed_then_loaded(*args, **kwargs):
        plan = real(*args, **kwargs)
        weights.loaded = True
        return plan

    monkeypatch.setattr(expected, "_estimate", timed_then_loaded)
    _, lines, _, t1 = _run(monkeypatch, weights)
    when, left, _ = _calibrated(lines)
    load = re.search(r"; (\S+) times its timed batches' seconds\)", " ".join(
        line for _, line in lines))
    assert float(load.group(1)) > FACTOR  # the run saw the load that the timing before missed
    assert left / FACTOR - SLACK_S <= t1 - when <= FACTOR * left + SLACK_S, \
        (t1 - when, left)
