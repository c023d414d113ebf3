"""The one rank-d (fixed-dimension) solver, :func:`dgp.solver.solve_rank_d`, and its policy.

* The answer never gets worse with a larger budget: candidates are nested (candidate ``i`` is
  computed from its own seed stream, whatever the budget), so the losses of the first ``s``
  candidates are the same with ``s + k`` starts and the best loss can only go down — checked
  exactly (``<=`` on floats, and equal prefixes).
* ``dgp.optimum`` on a class weighting, ``dgp.supcon_prototypes`` on its sizes and
  ``dgp.loss_floors`` at the same ``dim`` give one loss (1e-9) through the one solver.
* No internal error on small class problems (the ``ScaleOverflow`` of [9,7,5,4,3,2,2] at
  tau = 0.1, and seeded random draws).
* The search reaches the best loss that 256 independent random-start descents (with moves that
  exchange two classes) find, on a small seeded set: the reference is a batched Riemannian
  gradient descent on the oblique manifold of the collapsed SupCon loss, written here from its
  formula (no dgp code).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import logsumexp

import dgp
from dgp.prototypes import block_weights
from dgp.solver import block_problem, rank_d_certificate, solve_rank_d
from dgp.weights import supcon_weights

TOL = 1e-10


# ---------------------------------------------------------------------------------------------
# the independent reference: batched Riemannian gradient descent on the product of spheres
# ---------------------------------------------------------------------------------------------


def collapsed_supcon(X: np.ndarray, n: np.ndarray, tau: float):
    """The collapsed SupCon loss in nats, :math:`\\sum_c n_c \\log((n_c - 1) + \\sum_{c' \\ne c}
    n_{c'} e^{(G_{cc'} - 1)/\\tau})`, of unit-column factors ``X`` (B, d, K), and its Euclidean
    gradient in ``X``."""
    K = n.size
    G = np.einsum("bdk,bdl->bkl", X, X)
    A = (G - 1.0) / tau + np.log(n)[None, None, :]
    A[:, np.arange(K), np.arange(K)] = np.log(n - 1.0)[None, :]  # the positives' own term
    lse = logsumexp(A, axis=2)
    Q = np.exp(A - lse[:, :, None])
    Q[:, np.arange(K), np.arange(K)] = 0.0
    M = n[None, :, None] * Q / tau  # dF/dG_cc' = n_c q_cc' / tau
    grad = np.einsum("bdk,bkl->bdl", X, M + M.transpose(0, 2, 1))
    return (lse * n).sum(axis=1), grad


def riemannian_descent(X: np.ndarray, n: np.ndarray, tau: float, iters: int):
    """Riemannian gradient descent with projected gradients, a column-normalising retraction and
    a step that grows on success and halves on failure, for every factor of the batch."""
    f, g = collapsed_supcon(X, n, tau)
    eta = np.full(X.shape[0], 0.05 * tau / n.sum())
    for _ in range(iters):
        rg = g - X * np.sum(X * g, axis=1, keepdims=True)
        Y = X - eta[:, None, None] * rg
        Y /= np.linalg.norm(Y, axis=1, keepdims=True)
        fy, gy = collapsed_supcon(Y, n, tau)
        ok = fy < f
        X = np.where(ok[:, None, None], Y, X)
        f, g = np.where(ok, fy, f), np.where(ok[:, None, None], gy, g)
        eta = np.where(ok, eta * 1.2, eta * 0.5)
    return X, f


def reference_best(n, tau: float, dim: int, *, starts: int = 256, swaps: int = 3,
                   iters: int = 300, seed: int = 0) -> float:
    """Best loss of ``starts`` random-start descents, each followed by ``swaps`` moves that
    exchange the places of two classes (descended again, kept when lower)."""
    n = np.asarray(n, dtype=float)
    K = n.size
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((starts, dim, K))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    X, f = riemannian_descent(X, n, tau, iters)
    for _ in range(swaps):
        Y = X.copy()
        for b in range(starts):
            i, j = rng.choice(K, size=2, replace=False)
            Y[b][:, [i, j]] = X[b][:, [j, i]]
        Y, fy = riemannian_descent(Y, n, tau, iters // 2)
        ok = fy < f
        X, f = np.where(ok[:, None, None], Y, X), np.where(ok, fy, f)
    return float(f.min())


def test_reference_loss_is_the_collapsed_supcon_loss():
    # the reference's formula against dgp's prototype loss at a random Gram (independent codes)
    rng = np.random.default_rng(0)
    n = np.array([6, 5, 4, 3, 2, 2])
    X = rng.standard_normal((1, 3, 6))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    G = X[0].T @ X[0]
    ours = dgp.prototypes.prototype_loss(G, n, tau=0.2)
    assert collapsed_supcon(X, n.astype(float), 0.2)[0][0] == pytest.approx(ours, rel=1e-12)


# ---------------------------------------------------------------------------------------------
# monotone in the budget
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes,tau,dim", [
    ([30, 3, 12, 2, 8, 20, 5], 0.3, 2),
    ([9, 7, 5, 4, 3, 2, 2], 0.1, 2),
    ([12, 5, 22, 3, 9, 17, 2, 8], 0.2, 3),
])
def test_more_starts_never_worse_and_nested(sizes, tau, dim):
    n = np.array(sizes)
    prob = block_problem(n, block_weights(n.size, None), tau=tau)
    runs = {s: solve_rank_d(prob, dim, starts=s, seed=7, tol=TOL) for s in (1, 2, 4)}
    for s, t in ((1, 2), (2, 4), (1, 4)):
        assert runs[t].loss <= runs[s].loss  # exactly: the larger budget contains the smaller
        assert runs[t].candidate_losses[:s] == runs[s].candidate_losses
    for r in runs.values():
        assert r.loss == min(r.candidate_losses)
        assert r.random_starts + 0 == len(r.candidate_losses) - (r.starts - r.random_starts)


@pytest.mark.parametrize("sizes,tau,dim,seed", [
    ([20, 3, 17, 9, 25, 4, 11, 6], 0.2, 2, 0),
    ([6, 5, 4], 0.5, 3, 2),
])
def test_screen_halves_many_steps_a_call_as_one_a_call_would(monkeypatch, sizes, tau, dim, seed):
    """The screen's backtracking tries 1, 2, 4, ... halvings of every point that failed in one
    batched call; with room for one trial point a call (SCREEN_CHUNK_ENTRIES = 1) it is the
    plain one-halving-a-call Armijo loop. Each point takes the same halving both ways: after a
    few steps the lowest point is the same to rounding (a batch's arithmetic may differ in the
    last bits, which 100 steps can amplify), after 100 its loss is, in far fewer calls."""
    import dgp.solver._rank_d_screen as screen

    n = np.array(sizes)
    prob = block_problem(n, block_weights(n.size, None), tau=tau)
    points = np.random.default_rng(seed).standard_normal((32, dim, n.size))
    loss = screen.batched_row_loss(prob)
    calls = []

    def counted(p):
        def f(X):
            calls.append(X.shape[0])
            return loss(X)
        return f

    monkeypatch.setattr(screen, "batched_row_loss", counted)
    batched = {s: screen.screened_start(prob, points, s) for s in (1, 3, 10, 100)}
    batched_calls = len(calls)
    calls.clear()
    monkeypatch.setattr(screen, "SCREEN_CHUNK_ENTRIES", 1)
    one = {s: screen.screened_start(prob, points, s) for s in (1, 3, 10, 100)}
    assert max(calls) == 32 and len(calls) > 3 * batched_calls  # one halving a call
    for s in (1, 3, 10):
        np.testing.assert_allclose(batched[s], one[s], rtol=0, atol=1e-9)
    f_batched, f_one = loss(batched[100][None])[0][0], loss(one[100][None])[0][0]
    assert f_batched == pytest.approx(f_one, rel=1e-12, abs=0)


def test_certificate_comes_from_the_point():
    n = np.array([6, 5, 4, 3, 2, 2])
    prob = block_problem(n, block_weights(6, None), tau=0.2)
    sol = solve_rank_d(prob, 2, starts=2, seed=0, tol=TOL)
    again = rank_d_certificate(prob, sol.factor, tol=TOL, seed=0)
    assert sol.certificate == again
    assert sol.certificate.first_order and sol.certificate.second_order
    assert dgp.prototypes.prototype_loss(sol.gram, n, tau=0.2) == pytest.approx(sol.loss,
                                                                                rel=1e-12)


# ---------------------------------------------------------------------------------------------
# one solver behind optimum, supcon_prototypes and loss_floors
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_optimum_prototypes_and_floors_agree():
    sizes, tau, dim = [6, 5, 4, 3, 2, 2], 0.2, 2
    labels = np.repeat(np.arange(len(sizes)), sizes)
    opt = dgp.optimum(supcon_weights(labels), tau=tau, dim=dim)
    protos = dgp.supcon_prototypes(sizes, tau=tau, dim=dim)
    floors = dgp.loss_floors("supcon", sizes=sizes, tau=tau, dim=dim)
    assert opt.loss == pytest.approx(protos.loss, rel=1e-9, abs=0)
    assert floors.optimal_sum == pytest.approx(protos.loss, rel=1e-9, abs=0)
    _same_point(opt, protos)


@pytest.mark.parametrize("seed", [0, 3])
def test_optimum_and_prototypes_agree_at_any_budget(seed):
    sizes, tau, dim = [9, 7, 5, 4, 3, 2, 2], 0.1, 2
    labels = np.repeat(np.arange(len(sizes)), sizes)
    opt = dgp.optimum(supcon_weights(labels), tau=tau, dim=dim, starts=2, seed=seed)
    protos = dgp.supcon_prototypes(sizes, tau=tau, dim=dim, starts=2, seed=seed)
    assert opt.loss == pytest.approx(protos.loss, rel=1e-9, abs=0)
    assert opt.starts == 3  # the free optimum's truncation and two random candidates
    _same_point(opt, protos)


def _same_point(opt, protos):
    # the same point: the same convex certificate, and the rank-d one of the prototypes
    assert opt.dual_min_eig == pytest.approx(protos.certificate.min_eig_dual, abs=1e-7)
    assert opt.certified_global == (protos.certificate.min_eig_dual >= -1e-8)
    assert protos.rank_d is not None and protos.rank_d.first_order
    np.testing.assert_allclose(np.sort(np.linalg.eigvalsh(opt.quotient_gram)),
                               np.sort(np.linalg.eigvalsh(protos.gram)), atol=1e-6)


def test_the_issue_example_is_no_longer_two_answers():
    labels = np.repeat(np.arange(6), [6, 5, 4, 3, 2, 2])
    opt = dgp.optimum(supcon_weights(labels), tau=0.2, dim=2)
    assert opt.loss <= 27.60879 + 1e-5  # was 27.64575 through optimum's own search


@pytest.mark.parametrize("tau", [0.1, 0.05])
def test_no_internal_error_on_small_class_problems(tau):
    sizes = [9, 7, 5, 4, 3, 2, 2]
    labels = np.repeat(np.arange(7), sizes)
    opt = dgp.optimum(supcon_weights(labels), tau=tau, dim=2, starts=2)
    assert np.isfinite(opt.loss) and opt.lower_bound <= opt.loss
    assert opt.loss >= opt.entropic_bound


def test_no_internal_error_on_random_small_class_problems():
    rng = np.random.default_rng(11)
    for _ in range(4):
        K = int(rng.integers(3, 7))
        sizes = rng.integers(2, 10, size=K)
        tau = float(rng.choice([0.03, 0.05, 0.1, 0.5, 2.0]))
        dim = int(rng.integers(1, K))
        labels = np.repeat(np.arange(K), sizes)
        opt = dgp.optimum(supcon_weights(labels), tau=tau, dim=dim, starts=1)
        assert np.isfinite(opt.loss) and opt.lower_bound <= opt.loss + 1e-9 * abs(opt.loss)


# ---------------------------------------------------------------------------------------------
# quality: the best of 256 random-start descents, reached at default settings
# ---------------------------------------------------------------------------------------------


@pytest.mark.slow  # more than about 10 s of CPU on a loaded machine
def test_reaches_the_best_of_256_descents_on_a_seeded_set():
    rng = np.random.default_rng(2024)
    hits = total = 0
    for _ in range(10):
        dim = int(rng.integers(2, 4))
        K = int(rng.integers(dim + 2, 9))
        sizes = rng.integers(2, 30, size=K)
        tau = float(rng.choice([0.1, 0.2, 0.5]))
        ref = reference_best(sizes, tau, dim, seed=int(rng.integers(1 << 30)))
        ours = dgp.supcon_prototypes(sizes, tau=tau, dim=dim).loss
        assert ours <= ref * (1 + 1e-3)  # never far off
        hits += ours <= ref + 1e-7 * abs(ref)
        total += 1
    assert hits >= 0.95 * total - 1e-12, f"{hits} of {total}"


def test_relu_example_reaches_the_known_configuration():
    p = dgp.supcon_prototypes([20, 12, 8, 5, 3, 2], tau=0.3, dim=3, nonnegative=True)
    assert p.loss <= 139.1960 + 1e-4  # the default search stopped at 139.3808 before
    Z = p.factor
    assert Z.min() >= 0 and np.allclose(np.linalg.norm(Z, axis=1), 1.0)
    assert dgp.prototypes.prototype_loss(Z @ Z.T, [20, 12, 8, 5, 3, 2], tau=0.3) == \
        pytest.approx(p.loss, rel=1e-12)


def test_nonnegative_more_starts_never_worse():
    from dgp.solver import nonnegative_factor

    n = np.array([20, 12, 8, 5, 3, 2])
    prob = block_problem(n, block_weights(6, None), tau=0.3)
    losses = []
    for s in (1, 2, 3):
        Z, _, _ = nonnegative_factor(prob, 3, starts=s, seed=1)
        losses.append(dgp.prototypes.prototype_loss(Z @ Z.T, n, tau=0.3))
    assert losses[1] <= losses[0] and losses[2] <= losses[1]
