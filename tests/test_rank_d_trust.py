"""The preconditioned trust region of the factor path (many classes) of the rank-d search:
``dgp.solver.rtr(..., precondition=True)``, the one trust region with the columns' curvature as
its preconditioner.

Two methods agreeing: from the same L-BFGS point of a long-tailed class problem, the trust region
preconditioned by the columns' curvature and the unpreconditioned one reach first-order critical
points with the same loss (the preconditioned one the more stationary: 1e-8 against 1.5e-7
here); the preconditioned one keeps its product budget, never raises the loss, and its point has
unit columns. On a row problem (no column curvature) the flag changes nothing, exactly.
"""

from __future__ import annotations

import numpy as np
import pytest

from dgp.constants import RANK_D_TRUST_REJECTIONS
from dgp.solver import BlockFactor, block_problem, rtr
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


def _preconditioned(obj, X, *, gtol, products, maxinner=1000):
    return rtr(obj, X, maxiter=1000, gtol=gtol, maxinner=maxinner, stall=None,
               products=products, precondition=True, rejections=RANK_D_TRUST_REJECTIONS)


def test_preconditioned_and_plain_trust_regions_agree():
    obj, X = _problem()
    start = obj.loss(X)[0]
    assert obj.stationarity(X) > 1e-6  # the descent stopped short: something to polish
    P, _ = _preconditioned(obj, X.copy(), gtol=1e-10, products=4000)
    obj.set_scale(P)
    assert obj.stationarity(P) <= 1e-8
    np.testing.assert_allclose(np.linalg.norm(P, axis=0), 1.0, rtol=1e-12)
    obj.set_scale(X)
    Q, _ = rtr(obj, X.copy(), maxiter=1000, gtol=1e-10, maxinner=1000, stall=None)
    obj.set_scale(Q)
    assert obj.stationarity(Q) <= 1e-6  # the plain one stops at 1.5e-7 here (rejected steps)
    lp, lq = obj.loss(P)[0], obj.loss(Q)[0]
    assert lp <= start and lq <= start
    assert lp == pytest.approx(lq, rel=1e-10)


@pytest.mark.parametrize("budget", [1, 7, 25])
def test_preconditioned_trust_region_keeps_its_budget(budget):
    obj, X = _problem()
    start = obj.loss(X)[0]
    calls = []
    hessian = obj.hessian

    def counted(Y):
        h = hessian(Y)

        def product(v):
            calls.append(1)
            return h(v)

        return product

    obj.hessian = counted
    P, _ = _preconditioned(obj, X.copy(), gtol=1e-14, products=budget, maxinner=10)
    assert 1 <= len(calls) <= budget
    obj.set_scale(P)
    assert obj.loss(P)[0] <= start


def test_preconditioning_a_row_problem_changes_nothing():
    # a row problem's factor objective gives no column curvature: the same steps, bit for bit
    n = np.array([7, 5, 4, 3, 2, 2])
    prob = block_problem(n, np.ones((6, 6)) - np.eye(6), tau=0.2)
    X0 = np.random.default_rng([3, 1]).standard_normal((2, 6))
    X0 /= np.linalg.norm(X0, axis=0)
    prob.set_scale(X0.T @ X0)
    X, _ = bm_lbfgs(prob, X0, maxiter=20)
    prob.set_scale(X.T @ X)
    A, ia = rtr(prob, X.copy(), maxiter=30, stall=None)
    B, ib = rtr(prob, X.copy(), maxiter=30, stall=None, precondition=True)
    assert ia == ib
    np.testing.assert_array_equal(A, B)
