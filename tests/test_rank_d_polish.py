"""The rank-d polish policy: the trust region's stopping criteria in one place
(:class:`dgp.solver._trust_region.TrustRegionStop`), checked before it runs.

* Each criterion stops the trust region alone, and a point that meets the gradient criterion
  takes no step (returned as given).
* A step rejected inside the trust region is never computed again: the region shrinks below the
  step's length (a seeded draw where a quarter of the old radius still held the same step).
* On a problem above the size of the second-order check the polish aims at the first-order
  target: where the L-BFGS descent already met it, no trust region runs, and the certificate
  states what it states when the trust region is forced (first order, global optimality; the
  loss to 1e-9 relative).
"""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

import dgp.solver._policy as policy_module
import dgp.solver._trust_region as trust_module
from dgp.prototypes import block_weights
from dgp.solver import block_problem, bm_lbfgs, rank_d_certificate, solve_rank_d, stationarity
from dgp.solver._rank_d_budget import rank_d_policy
from dgp.solver._trust_region import TrustRegionStop, rtr

TOL = 1e-10


def test_each_criterion_stops_alone_and_the_gradient_first():
    stop = TrustRegionStop(gradient=1e-6, iterations=10, products=100, stall=3, rejections=2,
                           radius=1e-12)
    running = {"gradient": 1e-3, "iteration": 3, "products": 50, "stalled": 1, "rejected": 1,
               "radius": 1.0}
    assert stop.reason(**running) is None
    for field, value, reason in [("gradient", 1e-6, "stationary"), ("iteration", 10, "iterations"),
                                 ("products", 100, "products"), ("rejected", 2, "rejections"),
                                 ("stalled", 3, "stall"), ("radius", 1e-13, "radius collapsed")]:
        assert stop.reason(**dict(running, **{field: value})) == reason
    assert stop.reason(**dict(running, gradient=0.0, iteration=10)) == "stationary"
    # None switches a rule off
    free = dataclasses.replace(stop, products=None, stall=None)
    assert free.reason(**dict(running, products=10**9, stalled=10**9)) is None


def _drawn(seed=32):
    """A seeded class problem and an early L-BFGS point (the draw of the test below)."""
    rng = np.random.default_rng(seed)
    K, d = int(rng.integers(5, 14)), int(rng.integers(2, 4))
    tau = float(rng.choice([0.1, 0.2, 0.5]))
    n = rng.integers(2, 30, K)
    prob = block_problem(n, block_weights(K, None), tau=tau)
    X0 = rng.standard_normal((d, K))
    X0 /= np.linalg.norm(X0, axis=0)
    prob.set_scale(X0.T @ X0)
    X, _ = bm_lbfgs(prob, X0, maxiter=int(rng.integers(3, 30)))
    prob.set_scale(X.T @ X)
    return prob, X


def test_a_point_meeting_the_gradient_criterion_takes_no_step():
    prob, X = _drawn()
    Y, _ = rtr(prob, X, maxiter=200, stall=None, gtol=1e-11)
    res = stationarity(prob, Y)
    assert res <= 1e-11 < stationarity(prob, X)
    Z, again = rtr(prob, Y, maxiter=200, stall=None, gtol=1e-11)
    assert again == 0 and Z is Y
    # a looser criterion the start already meets: nothing done either
    W, none = rtr(prob, Y, maxiter=200, stall=None, gtol=2 * res)
    assert none == 0 and W is Y


def _recording(monkeypatch):
    steps = []
    tcg = trust_module._tcg

    def recorded(*args, **kwargs):
        out = tcg(*args, **kwargs)
        steps.append(out[0].copy())
        return out

    monkeypatch.setattr(trust_module, "_tcg", recorded)
    return steps


@pytest.mark.parametrize("budget", [None, 300])
def test_a_rejected_step_is_counted_not_computed_again(monkeypatch, budget):
    prob, X = _drawn()
    steps = _recording(monkeypatch)
    Y, taken = rtr(prob, X, maxiter=60, stall=None, products=budget)
    counted = len(steps)
    assert not any(np.array_equal(a, b) for a, b in itertools.pairwise(steps))
    # the plain algorithm (every step computed: no margin admits a repeat) takes the same
    # steps to the same point, bit for bit, computing some steps twice
    monkeypatch.setattr(trust_module, "RTR_REPEAT_MARGIN", math.inf)
    steps.clear()
    Z, plain = rtr(prob, X, maxiter=60, stall=None, products=budget)
    assert plain == taken
    np.testing.assert_array_equal(Y, Z)
    assert len(steps) > counted
    assert any(np.array_equal(a, b) for a, b in itertools.pairwise(steps))
    if budget is None:
        assert stationarity(prob, Y) <= 1e-9  # and the trust region converges


def _large_problem():
    """K = 100 long-tailed classes in d = 32 (K d = 3200, above the second-order check) through
    the row problem (not the factor path), where the L-BFGS descent of a round already meets
    the target."""
    n = np.array([max(2, round(10 * 0.5 ** (k / 99))) for k in range(100)])
    return block_problem(n, block_weights(100, None), tau=0.3)


def _count_trust_regions(monkeypatch, prob) -> list[float]:
    """The stationarity of every point the search hands to its trust region, in order."""
    calls: list[float] = []
    real = policy_module.rtr

    def counted(*args, **kwargs):
        calls.append(stationarity(prob, args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(policy_module, "rtr", counted)
    return calls


@pytest.mark.slow  # about 3 s
def test_first_order_polish_skips_the_trust_region_the_descent_made_redundant(monkeypatch):
    prob = _large_problem()
    policy = rank_d_policy(prob.K, 32)
    assert policy.first_order_polish and not policy.hessian
    calls = _count_trust_regions(monkeypatch, prob)
    skipped = solve_rank_d(prob, 32, starts=1, seed=0, tol=TOL)
    runs = len(calls)
    target = skipped.certificate.first_order_tol
    assert all(r > target for r in calls)  # only points short of the target are polished
    forced = solve_rank_d(prob, 32, starts=1, seed=0, tol=TOL,
                          policy=dataclasses.replace(policy, first_order_polish=False))
    assert len(calls) - runs > runs  # the forced search polished a point the default left
    assert any(r <= target for r in calls[runs:])
    a, b = skipped.certificate, forced.certificate
    assert a.first_order and b.first_order
    assert (a.second_order, a.global_optimal, a.hessian_method) == (
        b.second_order, b.global_optimal, b.hessian_method)
    assert skipped.loss == pytest.approx(forced.loss, rel=1e-9)
    # the certificate is the point's own
    assert rank_d_certificate(prob, skipped.factor, tol=TOL, seed=0,
                              hessian=policy.hessian) == skipped.certificate


def test_small_problems_keep_the_trust_region(monkeypatch):
    """Below the size of the second-order check the trust region runs from every descent's
    point, as before: the polish's step that the second-order certificate checks."""
    n = np.array([6, 5, 4, 3, 2, 2])
    prob = block_problem(n, block_weights(6, None), tau=0.2)
    policy = rank_d_policy(6, 2)
    assert not policy.first_order_polish
    calls = _count_trust_regions(monkeypatch, prob)
    sol = solve_rank_d(prob, 2, starts=1, seed=0, tol=TOL)
    # a point already below the accepted target is polished all the same
    assert any(r <= sol.certificate.first_order_tol for r in calls)
    assert sol.certificate.first_order and sol.certificate.second_order
