"""The rank-d search of a row problem of many rows (the rows of every batch composition) runs
in two phases (dgp.solver.solve_rank_d): the whole search on a weighted sample of its rows,
then every candidate descended and polished on all the rows. The sample is an unbiased sample
of the loss; on a problem small enough to search in full both ways, the two phases reach the
same optimum; a larger budget is never worse."""

from __future__ import annotations

import numpy as np
import pytest

import dgp.solver._policy as policy_module
from dgp.constants import RANK_D_SAMPLED_FROM_ROWS, RANK_D_SAMPLED_ROWS
from dgp.solver import BatchSpec, batch_rows, compositions, solve_rank_d
from dgp.solver._policy import sampled_rows

_SPEC = BatchSpec(batch_size=5, sampler="class-balanced", samples_per_class=None,
                  reduction="mean", anchors_without_positives="drop")
_SIZES = np.array([6, 4, 3, 2, 2])


def _rows_problem(tau=0.3):
    comps = compositions(_SIZES, _SPEC, exact_max=10**6)
    prob, _ = batch_rows(comps, np.eye(_SIZES.size), _SPEC, tau=tau)  # SupCon
    return prob


def _loss(prob, X):
    G = X.T @ X
    return prob.loss(G)[0]


def test_the_sample_is_an_unbiased_sample_of_the_loss():
    prob = _rows_problem()
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, prob.K))
    X /= np.linalg.norm(X, axis=0)
    full = _loss(prob, X)
    draws = np.array([_loss(sampled_rows(prob, 40, seed), X) for seed in range(400)])
    se = draws.std(ddof=1) / np.sqrt(draws.size)
    assert abs(draws.mean() - full) <= 4 * se
    assert sampled_rows(prob, 40, 3).alpha_total == pytest.approx(prob.alpha_total, rel=1e-12)


def test_two_phases_reach_the_full_search_optimum(monkeypatch):
    prob = _rows_problem()
    assert prob.anchor.size < policy_module.RANK_D_SAMPLED_FROM_ROWS  # searched in full
    full = solve_rank_d(prob, 2, starts=4, seed=0, tol=1e-9)
    monkeypatch.setattr(policy_module, "RANK_D_SAMPLED_FROM_ROWS", prob.anchor.size)
    monkeypatch.setattr(policy_module, "RANK_D_SAMPLED_ROWS", prob.anchor.size // 4)
    two = solve_rank_d(prob, 2, starts=4, seed=0, tol=1e-9)
    assert "drawn by their weight" in two.reason and "drawn by" not in full.reason
    assert two.loss == pytest.approx(full.loss, rel=1e-9)
    more = solve_rank_d(prob, 2, starts=6, seed=0, tol=1e-9)  # a larger budget
    assert more.loss <= two.loss * (1 + 1e-12)


def test_the_sampled_phase_is_searched_in_full():
    """The sample is below the threshold: its own search does not recurse."""
    assert RANK_D_SAMPLED_ROWS < RANK_D_SAMPLED_FROM_ROWS
