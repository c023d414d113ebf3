"""The rank-d search's screened starts and its progress lines (issues 40 and 42).

* The batched loss that screens a candidate's points is the row problem's loss (two codes
  agreeing, value and gradient) on a class problem and on a sample-level weighting.
* A screened start is the lowest of its points after the batched descent: never above the
  lowest of the same points descended one by one for fewer steps, and permuting the points
  does not change the start's loss.
* Progress: the solver floor prints nothing by itself; given a callable, it is called while the
  search runs (the clock set to zero so that every tick reports), the lines say the candidate
  and the stationarity, and the answer is the same bit for bit as without it.
"""

from __future__ import annotations

import numpy as np
import pytest

from dgp.display import stderr_progress
from dgp.prototypes import block_weights
from dgp.solver import RowProblem, block_problem, solve_rank_d
from dgp.solver._rank_d_screen import batched_row_loss, screened_start
from dgp.weights import gaussian_kernel_weights

TOL = 1e-10


def _sample_problem(W: np.ndarray, tau: float) -> RowProblem:
    """The w-InfoNCE row problem of a sample-level weighting ``W``: one row per anchor, every
    other sample a candidate, the target ``W``'s row without its diagonal, normalised."""
    K = W.shape[0]
    A = np.array(W, dtype=float)
    np.fill_diagonal(A, 0.0)
    log_mu = np.zeros((K, K))
    np.fill_diagonal(log_mu, -np.inf)
    return RowProblem(tau=tau, anchor=np.arange(K), alpha=np.ones(K), log_mu=log_mu,
                      target=A / A.sum(axis=1, keepdims=True))


def _problems():
    n = np.array([30, 3, 12, 2, 8, 20, 5])
    y = np.random.default_rng(4).standard_normal((9, 2))
    return [block_problem(n, block_weights(n.size, None), tau=0.3),
            _sample_problem(gaussian_kernel_weights(y, sigma=0.7), 0.2)]


@pytest.mark.parametrize("which", [0, 1])
def test_batched_loss_is_the_row_problems_loss(which):
    prob = _problems()[which]
    K = prob.K
    rng = np.random.default_rng(which)
    X = rng.standard_normal((3, 3, K))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    fun = batched_row_loss(prob)
    values, grads = fun(X)
    losses = []
    for b in range(3):
        G = X[b].T @ X[b]
        prob.log_t = 0.0
        prob.set_scale(G)
        losses.append(prob.loss(G)[0])
    # equal up to one constant, the same for every point (here the constant is zero)
    diff = values - np.array(losses)
    assert np.ptp(diff) <= 1e-10 * np.max(np.abs(losses))
    # the gradient against central differences along a random direction
    V = rng.standard_normal(X.shape)
    h = 1e-6
    num = (fun(X + h * V)[0] - fun(X - h * V)[0]) / (2 * h)
    np.testing.assert_allclose(np.sum(grads * V, axis=(1, 2)), num, rtol=1e-5)


def test_screened_start_is_the_lowest_point_and_ignores_order():
    prob = _problems()[0]
    fun = batched_row_loss(prob)
    pts = np.random.default_rng(5).standard_normal((12, 2, prob.K))
    X = screened_start(prob, pts, 60)
    assert X.shape == (2, prob.K)
    np.testing.assert_allclose(np.linalg.norm(X, axis=0), 1.0, rtol=1e-12)
    f_start = fun(X[None])[0][0]
    # each point alone after the same descent: the screened start is the lowest of them
    alone = [fun(screened_start(prob, p[None], 60)[None])[0][0] for p in pts]
    assert f_start == pytest.approx(min(alone), rel=1e-9)
    # and below every point's own value before the descent
    P = pts / np.linalg.norm(pts, axis=1, keepdims=True)
    assert f_start < fun(P)[0].min()
    shuffled = screened_start(prob, pts[::-1].copy(), 60)
    assert fun(shuffled[None])[0][0] == pytest.approx(f_start, rel=1e-9)


def test_progress_is_silent_by_default_and_reports_when_given(monkeypatch, capsys):
    import dgp.solver._search_clock as policy

    n = np.array([6, 5, 4, 3, 2, 2])
    prob = block_problem(n, block_weights(6, None), tau=0.2)
    quiet = solve_rank_d(prob, 2, starts=2, seed=3, tol=TOL)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""
    monkeypatch.setattr(policy, "RANK_D_PROGRESS_S", 0.0)
    lines: list[str] = []
    loud = solve_rank_d(prob, 2, starts=2, seed=3, tol=TOL, progress=lines.append)
    assert lines, "a search given a progress callable reported nothing"
    assert all(line.startswith("candidate ") and "Riemannian gradient" in line for line in lines)
    assert {line.split(",")[0] for line in lines} == {"candidate 1 of 2", "candidate 2 of 2"}
    assert loud.loss == quiet.loss
    np.testing.assert_array_equal(loud.factor, quiet.factor)
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""  # the callable was called, nothing printed


def test_stderr_progress_writes_one_flushed_line(capsys):
    stderr_progress("the rank-2 prototypes of K = 6 classes")("candidate 1 of 1: 5 s")
    out = capsys.readouterr()
    assert out.out == ""
    assert out.err == "dgp: the rank-2 prototypes of K = 6 classes: candidate 1 of 1: 5 s\n"


def test_optimum_in_a_dimension_reports_its_search_on_stderr_unless_told_not_to(monkeypatch,
                                                                                 capsys):
    """``dgp.optimum(..., dim=)`` hands the rank-d search a stderr reporter (lines at most every
    few seconds: here every event) unless ``progress=False``; the numbers are the same."""
    import dgp
    import dgp.solver._search_clock as policy

    y = np.linspace(0.0, 3.0, 9)
    W = gaussian_kernel_weights(y[:, None], sigma=0.7)
    quiet = dgp.optimum(W, tau=0.3, dim=1, progress=False)
    monkeypatch.setattr(policy, "RANK_D_PROGRESS_S", 0.0)
    silent = dgp.optimum(W, tau=0.3, dim=1, progress=False)
    assert capsys.readouterr().err == ""
    loud = dgp.optimum(W, tau=0.3, dim=1)
    err = capsys.readouterr().err.splitlines()
    assert err and all(line.startswith("dgp: the rank-1 optimum of 9 points: candidate ")
                       for line in err)
    assert loud.loss == silent.loss == quiet.loss
    np.testing.assert_array_equal(loud.gram, quiet.gram)
