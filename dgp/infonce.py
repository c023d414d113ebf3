r"""The w-InfoNCE loss and its entropic (Gibbs) lower bound, in nats summed over anchors.

.. math::

    L(Z) = \sum_i \sum_{j \ne i} p_{ij}\Big(-s_{ij} + \log \sum_{k \ne i} e^{s_{ik}}\Big)
         = \sum_i H(p_i, q_i) \;\ge\; \sum_i H(p_i).

Both are computed in log space from canonical log-weights (:mod:`dgp.engine.target`): weights
near the largest float, subnormal weights and log-weights all give finite, exact values.
"""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from dgp.errors import ParameterError, check_choice, check_positive, check_temperature

__all__ = ["SIMILARITIES", "entropic_bound", "similarity_matrix", "winfonce_loss"]

SIMILARITIES = ("cosine", "euclidean")


def entropic_bound(W: object = None, *, log_weights: object = None) -> float:
    r"""The entropic bound :math:`\sum_i H(p_i)` in nats (with :math:`0 \log 0 = 0`).

    Give the weights ``W`` or their logarithms ``log_weights``.

    Raises
    ------
    ValueError
        As :func:`dgp.engine.target.log_weights`.

    >>> round(entropic_bound([[0, 1, 1], [1, 0, 1], [1, 1, 0]]), 6)  # 3 log 2
    2.079442
    >>> round(entropic_bound(1e308 * np.ones((3, 3))), 6)
    2.079442
    """
    from dgp.engine.target import entropic_bound as bound
    from dgp.engine.target import log_weights as canonical

    return bound(canonical(W, log_weights=log_weights))


def _embeddings(Z: object, n: int, similarity: str) -> np.ndarray:
    arr = np.asarray(Z)
    if arr.dtype.kind not in "biuf":
        raise ParameterError("Z", f"must be a real N x d array, got dtype {arr.dtype}")
    Zf = np.array(arr, dtype=float)
    if Zf.ndim != 2 or Zf.shape[0] != n:
        raise ParameterError("Z", f"must be an N x d array with N = {n}, got shape {Zf.shape}")
    if not np.isfinite(Zf).all():
        raise ParameterError("Z", "holds a NaN or infinite value")
    if similarity == "cosine" and (np.linalg.norm(Zf, axis=1) == 0).any():
        raise ParameterError("Z", "has a zero row, which has no direction for the cosine "
                             "similarity")
    return Zf


def similarity_matrix(Z: np.ndarray, *, tau: float, similarity: str = "cosine") -> np.ndarray:
    r"""Latent similarities :math:`s_{ij}`: :math:`\langle z_i, z_j\rangle/\tau` on the unit sphere
    (rows of ``Z`` are normalised) or :math:`-\|z_i - z_j\|^2 / (2\tau)` (from differences)."""
    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    Z = np.asarray(Z, dtype=float)
    if similarity == "cosine":
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        return (Zn @ Zn.T) / tau
    from dgp._linalg import squared_distances

    return -squared_distances(Z) / (2.0 * tau)


def winfonce_loss(
    Z: object, W: object = None, *, log_weights: object = None, tau: float,
    similarity: str = "cosine",
) -> float:
    """The w-InfoNCE loss of embeddings ``Z`` under a weighting (nats, summed over anchors).

    Give the weights ``W`` or their logarithms ``log_weights``.

    Raises
    ------
    ValueError
        If the weighting is invalid, ``Z`` is not ``N x d`` with finite real entries matching it,
        a cosine embedding has a zero row, ``tau <= 0`` or ``similarity`` is unknown.
    """
    from dgp.engine.target import log_weights as canonical
    from dgp.engine.target import row_log_distribution

    tau = check_temperature(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    lw = canonical(W, log_weights=log_weights)
    Zf = _embeddings(Z, lw.n, similarity)
    # the similarities at tau = 1, less each row's largest, then scaled: every entry is <= 0,
    # so a small tau underflows q_ij to 0 (log q_ij = -inf) instead of overflowing to NaN
    S = similarity_matrix(Zf, tau=1.0, similarity=similarity)
    np.fill_diagonal(S, -np.inf)
    S -= S.max(axis=1, keepdims=True)
    with np.errstate(over="ignore"):
        S /= tau
    log_q = S - logsumexp(S, axis=1, keepdims=True)
    log_p = row_log_distribution(lw.L)
    P = np.exp(log_p)
    pos = P > 0
    with np.errstate(over="ignore"):
        loss = float(-(P[pos] * log_q[pos]).sum())
    if not np.isfinite(loss):
        raise ParameterError("tau", f"= {tau:g}: the loss of these embeddings is beyond the float "
                             "range (about 1.8e308) at this temperature (a positive pair below "
                             "its row's largest similarity costs its gap / tau); use a larger tau")
    return loss
