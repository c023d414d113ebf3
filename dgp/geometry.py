r"""Gram matrices, Euclidean distance matrices and embeddings.

Conventions: a Gram matrix :math:`G = ZZ^\top`; a (squared) Euclidean distance matrix
:math:`D_{ij} = \|z_i - z_j\|^2`; the Schoenberg matrix :math:`B = -\tfrac12 JDJ` with
:math:`J = I - \tfrac1N 11^\top`, so that :math:`D` is an EDM iff :math:`B \succeq 0`
(Schoenberg 1935), and then :math:`B` is the Gram matrix of the centred points.

Ranks and PSD-ness are decided from eigenvalues with the engine's tolerance policy
(:mod:`dgp.tolerance`): ``atol = max(rtol, 4 u) * N * max|eigenvalue|``.
"""

from __future__ import annotations

import numpy as np
import scipy.linalg as sla

from dgp._linalg import embedding_from_eigh, fix_signs
from dgp.constants import REPULSION_STEP, REPULSION_TEMPERATURE
from dgp.errors import InputError, check_int
from dgp.tolerance import DEFAULT_RTOL, Tolerance

__all__ = [
    "canonical_frame",
    "edm_to_gram",
    "eigen_tolerance",
    "embedding_from_edm",
    "embedding_from_gram",
    "fix_signs",
    "gram_to_edm",
    "numerical_rank",
    "schoenberg_matrix",
    "uniform_sphere_points",
]

def _square(M: object, name: str) -> np.ndarray:
    A = np.asarray(M, dtype=float)
    if A.ndim != 2 or A.shape[0] != A.shape[1] or A.shape[0] == 0:
        raise InputError(f"{name} must be a non-empty square matrix, got shape {A.shape}")
    if not np.isfinite(A).all():
        raise InputError(f"{name} holds a NaN or infinite value")
    return A


def gram_to_edm(G: object) -> np.ndarray:
    r"""Squared distances :math:`D_{ij} = G_{ii} + G_{jj} - 2G_{ij}`.

    >>> gram_to_edm([[1.0, 0.0], [0.0, 1.0]])
    array([[0., 2.],
           [2., 0.]])
    """
    A = _square(G, "G")
    g = np.diag(A)
    D = g[:, None] + g[None, :] - 2.0 * A
    np.fill_diagonal(D, 0.0)
    return D


def schoenberg_matrix(D: object) -> np.ndarray:
    r"""The Schoenberg matrix :math:`-\tfrac12 JDJ` (the Gram matrix of the centred points).

    >>> schoenberg_matrix([[0.0, 4.0], [4.0, 0.0]])
    array([[ 1., -1.],
           [-1.,  1.]])
    """
    A = _square(D, "D")
    # double centring: subtract row and column means, add back the grand mean
    r = A.mean(axis=1)
    B = -0.5 * (A - r[:, None] - r[None, :] + r.mean())
    return 0.5 * (B + B.T)


def edm_to_gram(D: object) -> np.ndarray:
    """Gram matrix of the centred configuration of an EDM (alias of :func:`schoenberg_matrix`)."""
    return schoenberg_matrix(D)


def eigen_tolerance(eigenvalues: np.ndarray, rtol: float = DEFAULT_RTOL) -> float:
    """Absolute tolerance deciding ranks and PSD-ness: the policy of :mod:`dgp.tolerance`
    with ``N = len(eigenvalues)`` and the spectral norm as scale."""
    lam = np.asarray(eigenvalues, dtype=float)
    scale = float(np.max(np.abs(lam))) if lam.size else 0.0
    return Tolerance.make(rtol, n=max(1, lam.size)).atol(scale)


def numerical_rank(eigenvalues: np.ndarray, *, rtol: float = DEFAULT_RTOL) -> int:
    """Number of eigenvalues above :func:`eigen_tolerance`.

    >>> numerical_rank([2.0, 1e-17, 0.0])
    1
    """
    lam = np.asarray(eigenvalues, dtype=float)
    return int(np.count_nonzero(lam > eigen_tolerance(lam, rtol)))


def _top_embedding(B: np.ndarray, rank: int | None, rtol: float,
                   psd_atol: float = 0.0) -> np.ndarray:
    n = B.shape[0]
    lam, U = sla.eigh(B)
    atol = eigen_tolerance(lam, rtol)
    if lam[0] < -(atol + psd_atol):  # the known defect, plus this eigh's own rounding
        raise InputError(
            f"matrix is not positive semidefinite: smallest eigenvalue {lam[0]:.3g} is below "
            f"-{atol + psd_atol:.3g}"
        )
    r = int(np.count_nonzero(lam > atol)) if rank is None else int(rank)
    if not 0 <= r <= n:
        raise InputError(f"rank must lie in [0, {n}], got {rank}")
    return embedding_from_eigh(lam, U, r)


def embedding_from_gram(
    G: object, *, rank: int | None = None, rtol: float = DEFAULT_RTOL, psd_atol: float = 0.0
) -> np.ndarray:
    """Points ``Z`` (``N x rank``) with ``Z Z^T = G``, from the top eigenpairs.

    Parameters
    ----------
    G : array_like, shape (N, N)
        Symmetric positive semidefinite matrix.
    rank : int, optional
        Embedding dimension; the numerical rank of ``G`` by default.
    rtol : float
        Relative eigenvalue tolerance for the rank and the PSD test.
    psd_atol : float
        A known bound on how far ``G`` may be from PSD (e.g. the primal residual of a certified
        solve): eigenvalues down to ``-psd_atol`` (plus the rounding tolerance) are accepted
        and clipped at zero.

    Raises
    ------
    ValueError
        If ``G`` is not square and finite, or has an eigenvalue below ``-rtol * ||G||``.

    Examples
    --------
    >>> Z = embedding_from_gram([[1.0, -1.0], [-1.0, 1.0]])
    >>> Z.shape, bool(abs(Z @ Z.T - [[1, -1], [-1, 1]]).max() < 1e-12)
    ((2, 1), True)
    """
    A = _square(G, "G")
    return _top_embedding(0.5 * (A + A.T), rank, rtol, float(psd_atol))


def canonical_frame(Z: object) -> np.ndarray:
    """The points ``Z`` (``K x d``) in a canonical orientation that depends on their Gram alone:
    ``Z Q`` for the orthogonal ``Q`` of the QR factorisation ``Z^T = Q R`` with ``diag R >= 0``,
    i.e. ``R^T``, lower trapezoidal: the first point lies on the first axis, the second in the
    first coordinate plane with a non-negative second coordinate, and so on (the Cholesky
    factor of the Gram, padded with zero columns). Two configurations with the same Gram give
    the same array, up to rounding, wherever the first ``d`` points span their space.

    Raises
    ------
    ValueError
        If ``Z`` is not a finite two-dimensional array.

    >>> Z = canonical_frame([[0.0, 1.0], [1.0, 0.0], [-0.6, -0.8]])
    >>> Z.round(6).tolist()
    [[1.0, 0.0], [0.0, 1.0], [-0.8, -0.6]]
    """
    A = np.asarray(Z, dtype=float)
    if A.ndim != 2 or not np.isfinite(A).all():
        raise InputError(f"Z must be a finite K x d array, got shape {A.shape}")
    K, d = A.shape
    R = np.linalg.qr(A.T, mode="r")  # min(d, K) x K
    signs = np.where(np.diag(R) < 0, -1.0, 1.0)
    out = np.zeros((K, d))
    out[:, : R.shape[0]] = (signs[:, None] * R).T
    return out + 0.0  # no negative zeros


def uniform_sphere_points(K: int, dim: int, *, seed: int = 0, steps: int = 500) -> np.ndarray:
    r"""``K`` approximately uniform unit vectors of :math:`\mathbb R^{dim}` (rows): a seeded
    repulsion that lowers a soft maximum of the pairwise cosines (log-sum-exp at temperature
    :data:`~dgp.constants.REPULSION_TEMPERATURE`) by Riemannian gradient steps from Gaussian
    points (the largest move per step :data:`~dgp.constants.REPULSION_STEP` radians, annealed
    linearly to zero). These are the class-agnostic "uniform targets" of targeted supervised
    contrastive learning, to compare with :attr:`dgp.prototypes.Prototypes.prototypes`.

    Raises
    ------
    ValueError, TypeError
        If ``K < 2``, ``dim < 1``, ``steps < 0`` or ``seed < 0`` is not an integer.

    >>> U = uniform_sphere_points(4, 3)
    >>> C = U @ U.T
    >>> bool(abs(np.diag(C) - 1).max() < 1e-12), bool(C[~np.eye(4, dtype=bool)].max() < -0.3)
    (True, True)
    """
    K = check_int(K, "K", minimum=2)
    dim = check_int(dim, "dim", minimum=1)
    steps = check_int(steps, "steps", minimum=0)
    seed = check_int(seed, "seed", minimum=0)
    U = np.random.default_rng(seed).standard_normal((K, dim))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    off = ~np.eye(K, dtype=bool)
    for k in range(steps):
        A = (U @ U.T) / REPULSION_TEMPERATURE
        A[~off] = -np.inf
        P = np.exp(A - A.max())
        P /= P.sum()
        g = (P + P.T) @ U  # gradient direction of the soft maximum
        g -= U * np.sum(U * g, axis=1, keepdims=True)
        top = float(np.linalg.norm(g, axis=1).max())
        if top == 0.0:
            break
        U = U - (REPULSION_STEP * (1.0 - k / steps) / top) * g  # annealed step
        U /= np.linalg.norm(U, axis=1, keepdims=True)
    return U


def embedding_from_edm(
    D: object, *, rank: int | None = None, rtol: float = DEFAULT_RTOL
) -> np.ndarray:
    """Classical MDS: centred points whose squared distances are ``D``.

    Raises
    ------
    ValueError
        If ``D`` is not square and finite, or is not an EDM within tolerance.
    """
    return _top_embedding(schoenberg_matrix(D), rank, rtol)
