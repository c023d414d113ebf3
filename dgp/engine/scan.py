r"""The target family on a grid of constants ``c``: every eigenvalue of every member (dense
``eigvalsh``), for figures and phase maps.

Cosine: :math:`G(c) = A + \tau c(11^\top - I)`, :math:`A = I + \tau\ell`. Euclidean: on
:math:`1^\perp`, :math:`-\tfrac12 J D(c) J = \tau(B - cI)`, :math:`B = V^\top\ell V`. ``c`` is in
the user's convention :math:`s^*_{ij} = \log w_{ij} + c`. A member is admissible on the grid
when its smallest eigenvalue is at least minus the tolerance policy's ``atol``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgp.engine.target import LogWeights, log_target
from dgp.errors import ParameterError
from dgp.tolerance import Tolerance

__all__ = ["FamilyGrid", "default_c_range", "family_grid"]


@dataclass(frozen=True, eq=False)
class FamilyGrid:
    """Eigenvalues of the family on a grid.

    Attributes
    ----------
    c : ndarray, shape (num,)
        The grid, user convention.
    eigenvalues : ndarray, shape (num, M)
        Ascending eigenvalues of each member (``M = N`` cosine, ``N - 1`` Euclidean; the
        Euclidean ones are those of :math:`\\tau(B - cI)`).
    admissible : ndarray of bool, shape (num,)
        Members that are PSD within tolerance.
    similarity : str
    tau : float
    ell_range : tuple of float
        ``(min, max)`` of the log-target off the diagonal, user convention.
    """

    c: np.ndarray
    eigenvalues: np.ndarray
    admissible: np.ndarray
    similarity: str
    tau: float
    ell_range: tuple[float, float]


def _matrices(weights: LogWeights, tau: float, similarity: str, tol: Tolerance):
    if weights.has_zeros:
        raise ParameterError("W", "has zero weights: its target has no c family (s = -inf)")
    tgt = log_target(weights, tol)
    if not tgt.consistent:
        raise ParameterError(
            "W", f"breaks the cycle condition around {tgt.cycle}: it has no symmetric target "
            "family"
        )
    ell = tgt.ell
    tol = tol.widened(tgt.roundoff_factor)  # as the engine decides (dgp.engine.pipeline)
    n = ell.shape[0]
    off = ~np.eye(n, dtype=bool)
    rng = (weights.to_user_c(ell[off].min()), weights.to_user_c(ell[off].max()))
    if similarity == "cosine":
        B = tau * ell
        np.fill_diagonal(B, 1.0)
        return B, tau * off.astype(float), rng, tol
    V = np.linalg.qr(np.c_[np.ones(n), np.eye(n)[:, : n - 1]])[0][:, 1:]
    return tau * (V.T @ ell @ V), -tau * np.eye(n - 1), rng, tol


def default_c_range(ell_range: tuple[float, float], tau: float, similarity: str,
                    c_max: float | None = None) -> tuple[float, float]:
    """A range of ``c`` that shows the whole admissible set and its surroundings."""
    lmin, lmax = ell_range
    if similarity == "cosine":
        # PSD with unit diagonal needs |tau (ell_ij + c)| <= 1: every admissible c lies in
        # [-1/tau - min ell, 1/tau - max ell], inside this wider box
        lo, hi = -1.0 / tau - lmax, 1.0 / tau - lmin
        pad = 0.05 * (hi - lo)
        return lo - pad, hi + pad
    top = 0.0 if c_max is None else c_max
    w = max(1.0, 2.0 * (lmax - lmin))
    return top - w, top + 0.35 * w


def family_grid(
    weights: LogWeights,
    *,
    tau: float,
    similarity: str,
    tol: Tolerance,
    c_range: tuple[float, float] | None = None,
    num: int = 241,
    c_max: float | None = None,
) -> FamilyGrid:
    """Eigenvalues of the family at ``num`` constants (``weights`` is consumed).

    Raises
    ------
    ParameterError
        If the weighting has zero weights or breaks the cycle condition (no family), or
        ``c_range`` is not two finite numbers ``lo < hi``.
    """
    B, E, rng, tol = _matrices(weights, tau, similarity, tol)
    lo, hi = c_range if c_range is not None else default_c_range(rng, tau, similarity, c_max)
    if not (np.isfinite(lo) and np.isfinite(hi) and lo < hi):
        raise ParameterError("c_range", f"must be two finite numbers lo < hi, got {(lo, hi)}")
    cs = np.linspace(float(lo), float(hi), int(num))
    lam = np.array([np.linalg.eigvalsh(B + weights.to_canonical_c(c) * E) for c in cs])
    scale = np.maximum(np.abs(lam).max(axis=1), 1.0)
    admissible = lam[:, 0] >= -np.array([tol.atol(s) for s in scale])
    return FamilyGrid(cs, lam, admissible, similarity, tau, rng)
