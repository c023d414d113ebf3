r"""Metrics of a learned embedding ``Z`` against a reference ``Zref`` (numpy only).

- :func:`entropic_gap`: :math:`L(Z) - \sum_i H(p_i)` in nats summed over anchors; zero exactly at an
  optimum that attains the entropic bound, positive elsewhere.
- :func:`similarity_r2`: squared Pearson correlation of the off-diagonal pairwise similarities.
- :func:`procrustes_r2`:
  :math:`1 - \min_{Q, t} \|ZQ + t - Z_{ref}\|^2 / \|Z_{ref} - \bar Z_{ref}\|^2` over
  orthogonal ``Q`` and translations ``t``; rigid (no scaling), the narrower input is padded with
  zero columns.
"""

from __future__ import annotations

import numpy as np

from dgp.errors import check_choice, check_positive
from dgp.infonce import SIMILARITIES, entropic_bound, winfonce_loss

__all__ = ["entropic_gap", "pairwise_similarities", "procrustes_r2", "similarity_r2"]


def _check_embedding(Z: object, name: str, *, min_rows: int = 2) -> np.ndarray:
    try:
        arr = np.array(Z, dtype=float, copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real-valued N x d array: {exc}") from None
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be an N x d array, got shape {arr.shape}")
    if arr.shape[0] < min_rows:
        raise ValueError(f"{name} must have at least {min_rows} rows, got {arr.shape[0]}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise ValueError(f"row {i} of {name} holds a NaN or infinite value")
    return arr


def _check_pair(Z: object, Zref: object, *, min_rows: int = 2) -> tuple[np.ndarray, np.ndarray]:
    A = _check_embedding(Z, "Z", min_rows=min_rows)
    B = _check_embedding(Zref, "Zref", min_rows=min_rows)
    if A.shape[0] != B.shape[0]:
        raise ValueError(
            f"Z and Zref must have the same number of rows (one per sample); got Z with "
            f"{A.shape[0]} and Zref with {B.shape[0]}"
        )
    return A, B


def _pad(A: np.ndarray, width: int) -> np.ndarray:
    if A.shape[1] == width:
        return A
    return np.hstack([A, np.zeros((A.shape[0], width - A.shape[1]))])


def procrustes_r2(Z: object, Zref: object) -> float:
    r"""Rigid Procrustes :math:`r^2` of ``Z`` against ``Zref``.

    .. math::

        r^2 = 1 - \frac{\min_{Q^\top Q = I,\ t} \|Z Q + t - Z_{ref}\|_F^2}
                       {\|Z_{ref} - \mathbf{1}\bar z_{ref}^\top\|_F^2}

    No scaling is allowed, so a scaled copy of ``Zref`` scores below 1. The narrower of the two
    inputs is padded with zero columns. The value is 1 exactly when ``Z`` is a rigid motion of
    ``Zref`` and can be negative when ``Z`` is far off.

    Parameters
    ----------
    Z, Zref : array_like, shape (N, d) and (N, d')
        Learned and reference embeddings; row ``i`` of both describes sample ``i``.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If an input is not numeric.
    ValueError
        If an input is not 2-D, has fewer than 2 rows, holds a NaN/infinity, the row counts
        differ, or ``Zref`` has all its rows equal (zero spread, so :math:`r^2` is undefined).

    Examples
    --------
    >>> import numpy as np
    >>> Y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    >>> R = np.array([[0.0, -1.0], [1.0, 0.0]])
    >>> round(procrustes_r2(Y @ R + 3.0, Y), 12)
    1.0
    """
    A, B = _check_pair(Z, Zref)
    width = max(A.shape[1], B.shape[1])
    A = _pad(A - A.mean(axis=0), width)
    B = _pad(B - B.mean(axis=0), width)
    ref = float(np.sum(B * B))
    if ref <= 1e-300:
        raise ValueError("Zref has all rows equal (zero spread); Procrustes r² is undefined")
    sv = np.linalg.svd(A.T @ B, compute_uv=False)
    residual = max(float(np.sum(A * A)) + ref - 2.0 * float(sv.sum()), 0.0)
    return 1.0 - residual / ref


def pairwise_similarities(Z: object, *, similarity: str = "cosine") -> np.ndarray:
    r"""The off-diagonal pairwise similarities of ``Z`` (upper triangle, row-major).

    Cosine: :math:`\langle z_i, z_j\rangle / (\|z_i\|\|z_j\|)`; Euclidean:
    :math:`-\|z_i - z_j\|^2`. No temperature: the squared correlation does not depend on it.

    Raises
    ------
    ValueError
        If ``Z`` is invalid, ``similarity`` is unknown, or a cosine embedding has a zero row.
    """
    check_choice(similarity, SIMILARITIES, "similarity")
    A = _check_embedding(Z, "Z")
    if similarity == "cosine":
        norms = np.linalg.norm(A, axis=1)
        if (norms == 0).any():
            i = int(np.flatnonzero(norms == 0)[0])
            raise ValueError(f"row {i} of Z is zero and has no direction for the cosine similarity")
        An = A / norms[:, None]
        S = An @ An.T
    else:
        sq = np.einsum("ij,ij->i", A, A)
        S = -np.maximum(sq[:, None] + sq[None, :] - 2.0 * (A @ A.T), 0.0)
    iu = np.triu_indices(A.shape[0], k=1)
    return S[iu]


def similarity_r2(Z: object, Zref: object, *, similarity: str = "cosine") -> float:
    r"""Squared Pearson correlation between the off-diagonal pairwise similarities of ``Z`` and
    of ``Zref``.

    Invariant to rotations (and, for the Euclidean similarity, translations) of either input, to
    a common permutation of the samples, and to scaling.

    Parameters
    ----------
    Z, Zref : array_like, shape (N, d) and (N, d')
        Learned and reference embeddings, ``N >= 3`` (at least three pairs are needed for a
        correlation to mean anything).
    similarity : {"cosine", "euclidean"}
        Cosine similarity, or minus the squared Euclidean distance.

    Returns
    -------
    float
        In ``[0, 1]``. When the similarities of one input are all equal (e.g. a regular simplex,
        or any equiangular set) the correlation is undefined: the result is 1.0 if those of the
        other input are all equal too (up to a relative 1e-12), else ``nan``.

    Raises
    ------
    TypeError
        If an input is not numeric.
    ValueError
        If an input is invalid (shape, NaN, fewer than 3 rows, zero row for cosine), the row counts
        differ, or ``similarity`` is unknown.
    """
    check_choice(similarity, SIMILARITIES, "similarity")
    A, B = _check_pair(Z, Zref, min_rows=3)
    a_raw = pairwise_similarities(A, similarity=similarity)
    b_raw = pairwise_similarities(B, similarity=similarity)
    a = a_raw - a_raw.mean()
    b = b_raw - b_raw.mean()
    na, nb = float(np.sqrt(a @ a)), float(np.sqrt(b @ b))
    flat_a = na <= 1e-12 * max(1.0, float(np.abs(a_raw).max())) * np.sqrt(a.size)
    flat_b = nb <= 1e-12 * max(1.0, float(np.abs(b_raw).max())) * np.sqrt(b.size)
    if flat_a or flat_b:
        return 1.0 if (flat_a and flat_b) else float("nan")
    r = float(a @ b) / (na * nb)
    return min(1.0, r * r)


def entropic_gap(Z: object, W: object, *, tau: float, similarity: str = "cosine") -> float:
    r"""The entropic gap :math:`L(Z) - \sum_i H(p_i)` (nats, summed over anchors).

    It is ``>= 0`` for every ``Z`` (Gibbs' inequality), and zero exactly when every softmax row
    :math:`q_i` equals the target row distribution :math:`p_i`, i.e. at an optimum that attains
    the entropic bound.

    Parameters
    ----------
    Z : array_like, shape (N, d)
        Embeddings (rows are normalised for the cosine similarity).
    W : array_like, shape (N, N)
        Weighting; see :func:`dgp.errors.check_weights`.
    tau : float
        Temperature ``> 0``.
    similarity : {"cosine", "euclidean"}

    Raises
    ------
    TypeError
        If an input is not numeric.
    ValueError
        If ``W`` is invalid, ``Z`` is not ``N x d`` with finite entries, ``tau <= 0``, or
        ``similarity`` is unknown.
    """
    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITIES, "similarity")
    A = _check_embedding(Z, "Z")
    loss = winfonce_loss(A, W, tau=tau, similarity=similarity)
    return loss - entropic_bound(W)
