"""``unique`` of the free-dimension optimum is decided wherever the face test decides it (issue 27).

The case that was ``None``: an optimum of rank ``N - 1`` (a one-dimensional kernel) at strict
complementarity. There ``<S, J - I> = 0`` forces ``|P_ker 1|^2 = 1`` exactly, so the first-order
face test is at its threshold, and the second order (the secular equation of ``G - cI + c11^T``)
proves the minimiser unique. Checked independently: seeded minimisations of the loss over free
unit embeddings all reach the same Gram, and ``G + c(J - I)`` has a negative eigenvalue for
every tested ``c != 0``; the full-rank optimum, which is not unique, fails both checks.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize
from test_phase import loss_grad

import dgp
from dgp.solver import face_uniqueness


def _random_weights(n: int, seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).random((n, n))
    return (A + A.T) / 2


def _brute_force_grams(W: np.ndarray, tau: float, starts: int) -> list[np.ndarray]:
    """Grams reached by seeded L-BFGS runs over free unit embeddings in R^N."""
    P = W.copy()
    np.fill_diagonal(P, 0.0)
    P /= P.sum(axis=1, keepdims=True)
    n = W.shape[0]
    rng = np.random.default_rng(7)
    out = []
    for _ in range(starts):
        res = minimize(loss_grad, rng.standard_normal(n * n), args=(P, tau, n, n), jac=True,
                       method="L-BFGS-B",
                       options={"maxiter": 20000, "gtol": 1e-13, "ftol": 1e-16})
        X = res.x.reshape(n, n)
        Z = X / np.linalg.norm(X, axis=1, keepdims=True)
        out.append(Z @ Z.T)
    return out


def _psd_shifts(G: np.ndarray, shifts) -> list[float]:
    """The shifts c for which G + c(J - I) is PSD (its unit diagonal stays)."""
    n = G.shape[0]
    J = np.ones((n, n))
    return [c for c in shifts if np.linalg.eigvalsh(G + c * (J - np.eye(n)))[0] >= -1e-12]


# rank N - 1 optima of random symmetric weightings at strict complementarity, N = 3..6 (found
# by a seeded search); (4, 1, 5.0) has a computed |P_ker 1|^2 of 1 - 4.5e-8, read as "< 1" before
CASES = [(3, 0, 1.0), (4, 4, 1.0), (4, 1, 5.0), (5, 3, 0.5), (6, 0, 0.5)]


@pytest.mark.parametrize(("n", "seed", "tau"), CASES)
def test_a_one_dimensional_kernel_at_strict_complementarity_is_unique(n, seed, tau):
    W = _random_weights(n, seed)
    opt = dgp.optimum(W, tau=tau)
    assert opt.rank == n - 1 and opt.collapse.kernel_dim == 1
    assert opt.certificate.strictly_complementary
    assert abs(opt.collapse.ones_in_kernel - 1.0) < 1e-6  # the first-order test's threshold
    assert opt.unique is True and "secular" in opt.uniqueness
    assert opt.to_dict()["unique"] is True
    # independent 1: no shift along the direction the loss is constant on stays feasible
    shifts = [s * c for c in (1e-3, 1e-2, 1e-1, 0.5) for s in (1.0, -1.0)]
    assert _psd_shifts(opt.gram, shifts) == []
    # independent 2: seeded minimisations of the loss over free embeddings reach one Gram
    for G in _brute_force_grams(W, tau, starts=3):
        assert np.abs(G - opt.gram).max() < 1e-4


def test_a_face_of_minimisers_is_not_unique_and_the_checks_see_it():
    # the contrast (the checks can fail): with equal weights every equiangular Gram of cosine
    # in [-1/3, 1] attains the bound, so shifts stay feasible and the brute-force runs disagree
    W = np.ones((4, 4))
    opt = dgp.optimum(W, tau=0.5)
    assert opt.unique is False
    assert _psd_shifts(opt.gram, [1e-3, -1e-3]) != []
    grams = _brute_force_grams(W, 0.5, starts=3)
    assert max(np.abs(G - grams[0]).max() for G in grams[1:]) > 1e-3


def test_without_strictness_the_first_order_test_decides_and_full_rank_is_never_unique():
    t = 2 * np.pi / 3
    Z = np.array([[1.0, 0.0], [np.cos(t), np.sin(t)], [np.cos(-t), np.sin(-t)]])
    G = Z @ Z.T  # rank 2, kernel (1, 1, 1) / sqrt(3): s = 3, k = 1
    unique, k, s, _ = face_uniqueness(G, np.ones(3), rank=2)
    assert (k, round(s, 12), unique) == (1, 3.0, False)
    assert face_uniqueness(np.eye(3), np.ones(3), rank=3, strict=True)[0] is False  # k = 0
