r"""The w-InfoNCE loss and its entropic (Gibbs) lower bound, in nats summed over anchors.

.. math::

    L(Z) = \sum_i \sum_{j \ne i} p_{ij}\Big(-s_{ij} + \log \sum_{k \ne i} e^{s_{ik}}\Big)
         = \sum_i H(p_i, q_i) \;\ge\; \sum_i H(p_i).
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dgp.errors import check_choice, check_positive, check_weights

__all__ = ["SIMILARITIES", "entropic_bound", "row_entropies", "similarity_matrix", "winfonce_loss"]

SIMILARITIES = ("cosine", "euclidean")


def entropic_bound(W: object) -> float:
    r"""The entropic bound :math:`\sum_i H(p_i)` in nats (with :math:`0 \log 0 = 0`).

    >>> round(entropic_bound([[0, 1, 1], [1, 0, 1], [1, 1, 0]]), 6)  # 3 log 2
    2.079442
    """
    return row_entropies(check_weights(W)).sum().item()


def row_entropies(A: np.ndarray, logA: np.ndarray | None = None) -> np.ndarray:
    r""":math:`H(p_i) = \log m_i - \sum_j w_{ij}\log w_{ij} / m_i` for a validated weighting
    (zero diagonal) with row masses :math:`m_i`; ``logA`` may pass :math:`\log A` if known."""
    mass = A.sum(axis=1)
    pos = A > 0
    if logA is None:
        logA = np.log(A, out=np.zeros_like(A), where=pos)
    with np.errstate(invalid="ignore"):  # 0 * -inf on the diagonal, zeroed next
        wlogw = A * logA
    wlogw[~pos] = 0.0
    return np.log(mass) - wlogw.sum(axis=1) / mass


def similarity_matrix(Z: np.ndarray, *, tau: float, similarity: str = "cosine") -> np.ndarray:
    r"""Latent similarities :math:`s_{ij}`: :math:`\langle z_i, z_j\rangle/\tau` on the unit sphere
    (rows of ``Z`` are normalised) or :math:`-\|z_i - z_j\|^2 / (2\tau)`."""
    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    Z = np.asarray(Z, dtype=float)
    if similarity == "cosine":
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        return (Zn @ Zn.T) / tau
    sq = np.einsum("ij,ij->i", Z, Z)
    D = np.maximum(sq[:, None] + sq[None, :] - 2.0 * (Z @ Z.T), 0.0)
    return -D / (2.0 * tau)


def winfonce_loss(Z: object, W: object, *, tau: float, similarity: str = "cosine") -> float:
    """The w-InfoNCE loss of embeddings ``Z`` under weighting ``W`` (nats, summed over anchors).

    Raises
    ------
    ValueError
        If ``W`` is invalid, ``Z`` is not ``N x d`` with finite entries matching ``W``, a cosine
        embedding has a zero row, ``tau <= 0`` or ``similarity`` is unknown.
    """
    A = check_weights(W)
    Zf = np.asarray(Z, dtype=float)
    if Zf.ndim != 2 or Zf.shape[0] != A.shape[0]:
        raise ValueError(f"Z must be an N x d array with N = {A.shape[0]}, got shape {Zf.shape}")
    if not np.isfinite(Zf).all():
        raise ValueError("Z holds a NaN or infinite value")
    if similarity == "cosine" and (np.linalg.norm(Zf, axis=1) == 0).any():
        raise ValueError("Z has a zero row, which has no direction for the cosine similarity")
    S = similarity_matrix(Zf, tau=tau, similarity=similarity)
    np.fill_diagonal(S, -np.inf)
    P = A / A.sum(axis=1, keepdims=True)
    log_q = S - logsumexp(S, axis=1, keepdims=True)
    np.fill_diagonal(log_q, 0.0)
    return float(-(P * log_q).sum())
