"""First-order criticality of the factor path's descent (issue 40 point 4, K = 1000, d = 128).

``bm_lbfgs`` normalises the columns inside the objective, so its steps lengthen them and the
gradient L-BFGS tests against ``gtol`` is the Riemannian gradient over the columns' lengths:
a long descent stopped on that test far from stationary (K = 1000, d = 128, tau = 0.1: after
1047 of its 5000 steps, the columns 7e3- to 1e5-fold longer, the Riemannian gradient 8e3 times
its target). The same happens on a small problem of the same kind (many long-tailed classes,
the free optimum's truncation as the start); with ``restart_memory`` the descent restarts from
the normalised columns and reaches the target. A first descent that spends its steps (tau =
0.5) restarts too, with the preconditioner of the point it reached. The K = 1000 measurement is
``python -m benchmarks.rank_d_k1000`` (minutes).
"""

from __future__ import annotations

import numpy as np
import pytest

from dgp import supcon_prototypes
from dgp.constants import RANK_D_FACTOR_RESTART_MEMORY, RANK_D_GTOL
from dgp.solver import BlockFactor, rank_d_policy
from dgp.solver._solve import bm_lbfgs, factor


def _sizes(K: int) -> np.ndarray:
    """Long-tailed sizes (ratio 100), the profile of the K = 1000 measurement."""
    return np.array([max(2, round(500 * 0.01 ** (k / (K - 1)))) for k in range(K)])


def _riemannian_max(obj: BlockFactor, X: np.ndarray) -> float:
    return float(np.max(np.abs(obj.riemannian_gradient(X))))


@pytest.fixture(scope="module")
def problem():
    n = _sizes(120)
    free = supcon_prototypes(n, tau=0.1)
    return n, factor(free.gram, 12)


def _descend(n, X0, restart_memory, maxiter=5000, restart_iters=0):
    obj = BlockFactor(n, 0.1)
    obj.set_scale(X0)
    target = RANK_D_GTOL * _riemannian_max(obj, X0)  # bm_lbfgs's absolute target at X0
    X, its = bm_lbfgs(obj, X0, maxiter=maxiter, gtol=RANK_D_GTOL, precondition=True,
                      restart_memory=restart_memory, restart_iters=restart_iters)
    return obj, X, its, target


def test_a_descent_stopped_by_its_columns_growth_restarts_to_the_target(problem):
    n, X0 = problem
    old, Xo, its_o, target = _descend(n, X0, None)
    new, Xn, its_n, _ = _descend(n, X0, RANK_D_FACTOR_RESTART_MEMORY)
    # the old descent stopped well within its budget, not stationary: its Riemannian gradient
    # is far above the target its (unnormalised) test met
    assert its_o < 5000
    assert _riemannian_max(old, Xo) > 10 * target
    assert old.stationarity(Xo) > 2e-6
    # the restarted one goes on (the same first descent, then more) to first-order criticality
    # (the relative Riemannian gradient 1e-6; its last descent may stall at rounding
    # just above the absolute target)
    assert its_o < its_n < 5000
    assert _riemannian_max(new, Xn) < _riemannian_max(old, Xo) / 10
    assert new.stationarity(Xn) <= 1e-6
    # and its loss is no higher (both at the scale of their own point)
    assert new.loss(Xn)[0] <= old.loss(Xo)[0] + 1e-12 * abs(old.loss(Xo)[0])
    # the restarts' own budget: the first descent given only what it used, the restarts
    # their own steps, the same point
    _, Xr, its_r, _ = _descend(n, X0, RANK_D_FACTOR_RESTART_MEMORY, maxiter=its_o,
                               restart_iters=5000 - its_o)
    assert its_r == its_n and np.array_equal(Xr, Xn)


def test_a_descent_that_stops_otherwise_is_unchanged(problem):
    """Stopped by its iterations (or already at its target), the descent with restarts is the
    old one bit for bit: nothing changes where the columns' growth did not stop it."""
    n, X0 = problem
    for maxiter in (50, 400):
        _, Xo, its_o, _ = _descend(n, X0, None, maxiter=maxiter)
        _, Xn, its_n, _ = _descend(n, X0, RANK_D_FACTOR_RESTART_MEMORY, maxiter=maxiter)
        assert its_o == its_n == maxiter
        assert np.array_equal(Xo, Xn)


def test_only_the_factor_path_restarts():
    """The row problems' policy (small problems: their answers unchanged) does not restart;
    the factor path restarts, with evaluations of its own (its first descent's as before)."""
    assert rank_d_policy(1000, 128, factor_path=True).restart_memory == (
        RANK_D_FACTOR_RESTART_MEMORY)
    for K, dim in ((6, 2), (30, 8), (2000, 128)):
        assert rank_d_policy(K, dim).restart_memory is None
    factor = rank_d_policy(1000, 128, factor_path=True)
    assert factor.restart_iters > 0
    assert [rank_d_policy(K, dim).restart_iters for K, dim in ((6, 2), (2000, 128))] == [0, 0]



@pytest.mark.slow  # about 2 s of CPU
def test_a_first_descent_that_spends_its_steps_restarts_with_a_fresh_preconditioner():
    """tau = 0.5: the first descent is not stopped early but spends its steps with the
    preconditioner of its start; a restart from the normalised columns (fresh preconditioner)
    reaches first-order criticality where the same number of steps without one does not."""
    n = _sizes(150)
    X0 = factor(supcon_prototypes(n, tau=0.5).gram, 16)
    out = []
    for restart_memory, maxiter, restart_iters in ((None, 2500, 0),
                                                   (RANK_D_FACTOR_RESTART_MEMORY, 1000, 1500)):
        obj = BlockFactor(n, 0.5)
        obj.set_scale(X0)
        X, its = bm_lbfgs(obj, X0, maxiter=maxiter, gtol=RANK_D_GTOL, precondition=True,
                          restart_memory=restart_memory, restart_iters=restart_iters)
        obj.set_scale(X)
        out.append((its, obj.stationarity(X), obj.loss(X)[0]))
    (its_o, stat_o, loss_o), (its_n, stat_n, loss_n) = out
    assert its_o == 2500 and stat_o > 1e-5
    assert its_n <= 2500 and stat_n <= 1e-6
    assert loss_n <= loss_o + 1e-12 * abs(loss_o)
