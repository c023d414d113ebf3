"""``dgp.optimum`` and ``dgp.supcon_prototypes`` answer the same class problem with the same
numbers by default: one expected-batch solver, and one default number of further runs
(``replicates``, :data:`dgp.constants.BATCH_REPLICATES`) beyond exact enumeration."""

from __future__ import annotations

import inspect

import numpy as np
import pytest

import dgp
from dgp.constants import BATCH_REPLICATES


def test_one_default_in_one_place():
    for entry in (dgp.optimum, dgp.supcon_prototypes):
        assert inspect.signature(entry).parameters["replicates"].default == BATCH_REPLICATES
    # two further runs by default: a per-entry t interval of 2 degrees of freedom (4.3 standard
    # errors; 12.7 with the least, 1)
    assert BATCH_REPLICATES >= 2


@pytest.mark.parametrize(("sizes", "batch_size", "dim"), [
    ([3, 2, 2], 4, 2), ([3, 2, 2, 2], 6, 3), ([4, 3, 2, 2], 8, 3),
    # K > dim + 1: the rank-d search over every composition's rows, in both (about 3 s)
    pytest.param([4, 3, 2, 2], 8, 2, marks=pytest.mark.slow)])
def test_exact_expectation_same_numbers(sizes, batch_size, dim):
    """Every composition enumerated: the two entry points' Grams and losses agree (the Gram of
    optimum is over samples; its class-level Gram is ``quotient_gram``)."""
    p = dgp.Problem(objective="supcon", sizes=sizes, tau=0.5)
    o = dgp.optimum(p, batch_size=batch_size, dim=dim, progress=False)
    s = dgp.supcon_prototypes(p, batch_size=batch_size, dim=dim, progress=False)
    assert o.batch.exact and s.batch.exact
    assert o.loss == pytest.approx(s.loss, rel=1e-9, abs=1e-12)
    np.testing.assert_allclose(o.quotient_gram, s.gram, atol=1e-8)
    # the sample Gram is the class Gram lifted: samples of one class share their prototype
    cls = np.repeat(np.arange(len(sizes)), sizes)
    np.testing.assert_allclose(o.gram, s.gram[np.ix_(cls, cls)], atol=1e-8)


@pytest.mark.slow  # two stochastic solves of three seeded runs each: about 25 s of CPU
def test_beyond_enumeration_same_numbers_by_default():
    """Beyond ``exact_max`` both run the stochastic solver from the same seeds: with the one
    default they run as many runs (``1 + BATCH_REPLICATES``), keep the same best one and report
    the same spread over them; with optimum's former default (``replicates=0``: one run fewer)
    its identifiability report compared two solutions, not three."""
    p = dgp.Problem(objective="supcon", sizes=[4, 3, 2], tau=0.5)
    common = dict(batch_size=6, dim=2, exact_max=3, samples=200, progress=False)
    o = dgp.optimum(p, **common)
    s = dgp.supcon_prototypes(p, **common)
    assert s.method == "stochastic" and not s.batch.exact
    assert o.loss == pytest.approx(s.loss, rel=1e-12)
    np.testing.assert_allclose(o.gram, s.gram, atol=1e-12)
    assert o.identifiability.solutions == 1 + BATCH_REPLICATES == 1 + s.batch.replicates
    assert o.identifiability.spread == pytest.approx(s.identifiability.spread, rel=1e-9)
    assert o.identifiability.statement == s.identifiability.statement


@pytest.mark.slow  # three stochastic solves: about 9 s
def test_one_further_run_is_one_in_both_entry_points():
    """``replicates`` is used as given (at least 1) by both entry points, ReLU heads included:
    supcon_prototypes raised 1 to 2 and optimum 0 to 1 without a word, so one value meant
    different numbers of runs (and different numbers for one class problem)."""
    p = dgp.Problem(objective="supcon", sizes=[4, 3, 2], tau=0.5)
    common = dict(batch_size=6, dim=2, exact_max=3, samples=60, replicates=1, progress=False)
    o = dgp.optimum(p, **common)
    s = dgp.supcon_prototypes(p, **common)
    r = dgp.supcon_prototypes(p, nonnegative=True, **common)
    assert o.batch.expectation == "stochastic" and len(o.runs) == 2
    for res in (s, r):  # one further run: in the entries' spread, or said to be left out
        # (then a restart of the kept prototypes may take its place in the spread)
        b = res.batch
        assert not b.exact and b.replicates <= 1
        assert b.replicates - b.restarts + b.runs_left_out <= 1
    for res in (o, s, r):  # 2 runs and the full-batch optimum at most, each counted once
        assert 1 <= res.identifiability.solutions <= 3
    # the same class problem and runs: the same numbers in both entry points
    assert o.loss == pytest.approx(s.loss, rel=1e-12)
    assert o.identifiability.solutions == s.identifiability.solutions
