"""The preconditioned trust region of the factor path (many classes) of the rank-d search.

Two methods agreeing: from the same L-BFGS point of a long-tailed class problem, the trust region
preconditioned by the columns' curvature and the unpreconditioned one (``dgp.solver.rtr``) reach
first-order critical points with the same loss (the preconditioned one the more
stationary: 1e-8 against 1.5e-7 here); the preconditioned one keeps its product budget,
never raises the loss, and its point has unit columns.
"""

from __future__ import annotations

import numpy as np
import pytest

from dgp.solver import BlockFactor, rtr
from dgp.solver._rank_d_trust import preconditioned_rtr
from dgp.solver._solve import bm_lbfgs


def _problem():
    K, dim = 40, 4
    n = np.array([max(2, round(200 * 0.02 ** (k / (K - 1)))) for k in range(K)])
    obj = BlockFactor(n, 0.1)
    X0 = np.random.default_rng([0, 1, 0]).standard_normal((dim, K))
    X0 /= np.linalg.norm(X0, axis=0)
    obj.set_scale(X0)
    X, _ = bm_lbfgs(obj, X0, maxiter=150, precondition=True)
    obj.set_scale(X)
    return obj, X


def test_preconditioned_and_plain_trust_regions_agree():
    obj, X = _problem()
    start = obj.loss(X)[0]
    assert obj.stationarity(X) > 1e-6  # the descent stopped short: something to polish
    P, used = preconditioned_rtr(obj, X.copy(), gtol=1e-10, products=4000)
    obj.set_scale(P)
    assert obj.stationarity(P) <= 1e-8
    np.testing.assert_allclose(np.linalg.norm(P, axis=0), 1.0, rtol=1e-12)
    assert 0 < used <= 4000
    obj.set_scale(X)
    Q, _ = rtr(obj, X.copy(), maxiter=1000, gtol=1e-10, maxinner=1000, stall=None)
    obj.set_scale(Q)
    assert obj.stationarity(Q) <= 1e-6  # the plain one stops at 1.5e-7 here (rejected steps)
    lp, lq = obj.loss(P)[0], obj.loss(Q)[0]
    assert lp <= start and lq <= start
    assert lp == pytest.approx(lq, rel=1e-10)


def test_preconditioned_trust_region_keeps_its_budget():
    obj, X = _problem()
    _, used = preconditioned_rtr(obj, X, gtol=1e-14, products=25, maxinner=10)
    assert used <= 25
