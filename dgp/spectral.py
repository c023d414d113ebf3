r"""The spectral engine: the whole one-parameter target family from one tridiagonalisation.

Cosine: :math:`G(\mu) = A + \mu(11^\top - I)` with :math:`A = I + \tau\ell` and
:math:`\mu = \tau c`. In the orthonormal basis :math:`(1/\sqrt N, V)` given by one Householder
reflection, :math:`11^\top - I = \mathrm{diag}(N-1, -1, \dots, -1)`; tridiagonalising
:math:`HAH` with :math:`e_1` fixed gives :math:`G(\mu) \cong T + \mu(Ne_1e_1^\top - I)`, still
tridiagonal. :math:`\varphi(\mu) = \lambda_{\min}(G(\mu))` is concave (a minimum of affine
functions), so :math:`\{\mu : G(\mu) \succeq 0\}` is an interval, found by maximising
:math:`\varphi` and bracketing its two roots, each evaluation :math:`O(N)`.

Euclidean: :math:`-\tfrac12 V^\top D(c) V = B' - \tau c I`, so every eigenvalue on
:math:`1^\perp` moves by :math:`-\tau c`: :math:`D(c)` is an EDM iff
:math:`c \le \lambda_{\min}(B')/\tau`, with rank :math:`N-1` below that and the multiplicity of
:math:`\lambda_{\min}` lost at the end point.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import brentq

from dgp._tridiag import (
    Tridiagonal,
    ones_reflector_apply,
    ones_reflector_vectors,
    tridiagonal_count_below,
    tridiagonal_eigh,
    tridiagonal_eigvals,
)
from dgp.geometry import fix_signs

__all__ = [
    "Family",
    "argmax_concave",
    "argmax_concave_values",
    "concave_family",
    "cosine_family",
    "euclidean_family",
]


@dataclass(frozen=True)
class Family:
    """The admissible part of a target family and its ranks.

    ``lo``/``hi`` are values of ``c`` (``None`` for an unbounded side); ``empty`` when no member
    is PSD (an EDM); ``point`` when the admissible set is one value. Ranks are numerical ranks
    with absolute tolerance ``atol`` (``rtol`` times the spectral norm of the member).
    """

    lo: float | None
    hi: float | None
    empty: bool
    point: bool
    rank_lo: int | None
    rank_hi: int | None
    rank_interior: int | None
    atol: float
    certificate: dict = field(default_factory=dict)
    embed: Callable[[float, int], np.ndarray] | None = None


def _norm_tol(lam_lo: float, lam_hi: float, rtol: float) -> float:
    scale = max(abs(lam_lo), abs(lam_hi))
    return rtol * scale if scale > 0 else rtol


def argmax_concave(
    f: Callable[[float], tuple[float, float]], a: float, b: float, gap: float
) -> float:
    """Maximiser of a concave function from values and supergradients (1-D cutting planes).

    ``f(x)`` returns the value and one supergradient. The tangents at the bracket ends meet
    above the maximum, so their intersection bounds it: we cut there (or bisect when the
    bracket shrinks slowly) until the bound is within ``gap`` of the best value or the bracket
    stops shrinking in floating point. At a kink, where two eigenvalue branches cross and the
    rank drops, the cut lands on the crossing in a few steps, to machine precision.
    """
    fa, sa = f(a)
    fb, sb = f(b)
    best_x, best_f = (a, fa) if fa >= fb else (b, fb)
    width = b - a
    for _ in range(200):
        if sa <= 0:
            return a if fa >= best_f else best_x
        if sb >= 0:
            return b if fb >= best_f else best_x
        m = (fb - fa + sa * a - sb * b) / (sa - sb)  # tangents meet here
        bound = fa + sa * (m - a)
        if bound - best_f <= gap or b - a <= 4.0 * np.finfo(float).eps * max(1.0, abs(a), abs(b)):
            break
        if not a < m < b or b - a > 0.5 * width:
            m = 0.5 * (a + b)  # safeguard: halve the bracket at least every other step
        width = b - a
        fm, sm = f(m)
        if fm > best_f:
            best_x, best_f = m, fm
        if sm > 0:
            a, fa, sa = m, fm, sm
        elif sm < 0:
            b, fb, sb = m, fm, sm
        else:
            return m
    return best_x


def argmax_concave_values(f: Callable[[float], float], a: float, b: float) -> float:
    """Golden-section search for the maximiser of a concave function, to machine precision.

    For callers without supergradients (each value cheap); see :func:`argmax_concave`.
    """
    g = (np.sqrt(5.0) - 1.0) / 2.0
    x1, x2 = b - g * (b - a), a + g * (b - a)
    f1, f2 = f(x1), f(x2)
    for _ in range(200):
        if b - a <= 4.0 * np.finfo(float).eps * max(1.0, abs(a), abs(b)):
            break
        if f1 < f2:
            a, x1, f1 = x1, x2, f2
            x2 = a + g * (b - a)
            f2 = f(x2)
        else:
            b, x2, f2 = x2, x1, f1
            x1 = b - g * (b - a)
            f1 = f(x1)
    return x1 if f1 >= f2 else x2


def _infeasible_end(lam_min: Callable[[float], float], mu_star: float, x: float) -> float:
    """Move ``x`` away from ``mu_star`` (doubling the distance) until ``lam_min(x) < 0``."""
    step = x - mu_star if x != mu_star else 1.0
    for _ in range(64):
        if lam_min(x) < 0:
            return x
        step *= 2.0
        x = mu_star + step
    raise RuntimeError("no infeasible bracket end found: is the family bounded?")


def concave_family(
    lam_min: Callable[[float], float],
    tol_at: Callable[[float], float],
    rank_at: Callable[[float], int],
    mu_star: float,
    a: float,
    b: float,
    tau: float,
    *,
    embed: Callable[[float, int], np.ndarray] | None,
    empty_certificate: Callable[[float, float, float], dict],
) -> Family:
    r"""The decisions along a family with concave :math:`\varphi(\mu) = \lambda_{\min}(G(\mu))`.

    ``mu_star`` maximises :math:`\varphi` on ``[a, b]``, where :math:`\varphi(a), \varphi(b) < 0`.
    Empty when :math:`\varphi(\mu^*) < -atol`; one point when :math:`|\varphi(\mu^*)| \le atol`;
    otherwise the interval between the two roots, with ranks at its ends and inside.
    """
    phi_star = lam_min(mu_star)
    atol = tol_at(mu_star)
    if phi_star < -atol:
        cert = empty_certificate(mu_star, phi_star, atol)
        return Family(None, None, True, False, None, None, None, atol, cert, embed)
    if phi_star <= atol:
        r = rank_at(mu_star)
        c0 = mu_star / tau
        cert = {"kind": "spectrum", "c": c0, "min_eigenvalue": phi_star, "atol": atol}
        return Family(c0, c0, False, True, r, r, r, atol, cert, embed)
    # phi -> -inf on both sides (N >= 2); widen a bracket end that is not yet infeasible
    a, b = _infeasible_end(lam_min, mu_star, a), _infeasible_end(lam_min, mu_star, b)
    xtol = 1e-15 * max(1.0, abs(mu_star))
    lo = brentq(lam_min, a, mu_star, xtol=xtol, rtol=4 * np.finfo(float).eps)
    hi = brentq(lam_min, mu_star, b, xtol=xtol, rtol=4 * np.finfo(float).eps)
    r_lo, r_hi, r_mid = rank_at(lo), rank_at(hi), rank_at(0.5 * (lo + hi))
    cert = {
        "kind": "spectrum",
        "min_eigenvalue_at_lo": lam_min(lo),
        "min_eigenvalue_at_hi": lam_min(hi),
        "max_min_eigenvalue": phi_star,
        "atol": atol,
    }
    return Family(lo / tau, hi / tau, False, False, r_lo, r_hi, r_mid, atol, cert, embed)


def cosine_family(ell: np.ndarray, tau: float, rtol: float) -> Family:
    """Admissible interval of :math:`G(c)` and the ranks along it (see the module docstring)."""
    n = ell.shape[0]
    A = tau * ell
    np.fill_diagonal(A, 1.0)
    tri = Tridiagonal(ones_reflector_apply(A))
    d0, e = tri.d, tri.e

    def diag(mu: float) -> np.ndarray:
        d = d0 - mu
        d[0] = d0[0] + mu * (n - 1)
        return d

    def lam_min(mu: float) -> float:
        return float(tridiagonal_eigvals(diag(mu), e, 0, 0)[0])

    def lam_min_slope(mu: float) -> tuple[float, float]:
        # d/dmu x^T (T + mu (N e1 e1^T - I)) x = N x_1^2 - 1 for the bottom eigenvector x
        lam, x = tridiagonal_eigh(diag(mu), e, 0, 0)
        return float(lam[0]), float(n * x[0, 0] ** 2 - 1.0)

    def tol_at(mu: float) -> float:
        d = diag(mu)
        return _norm_tol(
            float(tridiagonal_eigvals(d, e, 0, 0)[0]),
            float(tridiagonal_eigvals(d, e, n - 1, n - 1)[0]),
            rtol,
        )

    def rank_at(mu: float) -> int:
        return n - tridiagonal_count_below(diag(mu), e, tol_at(mu))

    # every off-diagonal entry tau*ell_ij + mu must lie in [-1, 1]; one unit beyond, some 2x2
    # minor has an eigenvalue <= -1, so phi < 0 at both ends of the bracket
    off = ell[~np.eye(n, dtype=bool)]
    box_lo, box_hi = -1.0 - tau * float(off.min()), 1.0 - tau * float(off.max())
    a, b = min(box_lo, box_hi) - 1.0, max(box_lo, box_hi) + 1.0
    mu_star = argmax_concave(lam_min_slope, a, b, gap=1e-3 * tol_at(0.5 * (a + b)))

    def embed(c: float, r: int) -> np.ndarray:
        mu = tau * c
        lam, Y = tridiagonal_eigh(diag(mu), e, n - r, n - 1)
        X = ones_reflector_vectors(tri.apply_q(Y))[:, ::-1]
        return fix_signs(X) * np.sqrt(np.clip(lam[::-1], 0.0, None))

    def empty(mu: float, phi: float, atol: float) -> dict:
        cert = _farkas(tri, diag, e, n, mu, phi, ell, tau)
        cert.update({"max_min_eigenvalue": phi, "at_c": mu / tau, "atol": atol})
        return cert

    return concave_family(
        lam_min, tol_at, rank_at, mu_star, a, b, tau, embed=embed, empty_certificate=empty
    )


def _farkas(tri, diag, e, n, mu_star, phi_star, ell, tau) -> dict:
    r"""A dual certificate :math:`Y \succeq 0` with :math:`\langle Y, 11^\top - I\rangle = 0` and
    :math:`\langle Y, A\rangle < 0`, so :math:`\langle Y, G(c)\rangle < 0` for every :math:`c`.

    At the maximiser of the concave :math:`\varphi`, zero lies between the one-sided slopes
    :math:`(1^\top x_\pm)^2 - 1` of the bottom eigenvectors :math:`x_\pm` on each side; the convex
    combination of :math:`x_\pm x_\pm^\top` with zero slope is the certificate.
    """
    delta = min(1e-7, abs(phi_star) / (8.0 * n)) * max(1.0, abs(mu_star))
    vecs, slopes = [], []
    for mu in (mu_star - delta, mu_star + delta):
        _, y = tridiagonal_eigh(diag(mu), e, 0, 0)
        x = ones_reflector_vectors(tri.apply_q(y))[:, 0]
        x = fix_signs(x[:, None])[:, 0]
        vecs.append(x)
        slopes.append(float(x.sum() ** 2 - 1.0))
    s_minus, s_plus = slopes
    if s_minus - s_plus > 1e-12 and s_minus >= 0 >= s_plus:
        alpha = -s_plus / (s_minus - s_plus)
    else:  # one smooth eigenvector already has (near) zero slope
        alpha = 1.0 if abs(s_minus) <= abs(s_plus) else 0.0
    weights = [alpha, 1.0 - alpha]
    Y_ones = sum(w * (x.sum() ** 2 - 1.0) for w, x in zip(weights, vecs, strict=True))
    # <xx^T, A> with A = I + tau*ell (ell has a zero diagonal), from the untouched input
    Y_A = sum(w * float(x @ x + tau * (x @ ell @ x)) for w, x in zip(weights, vecs, strict=True))
    return {
        "kind": "farkas",
        "statement": "Y = sum_k weights[k] * outer(vectors[k], vectors[k]) is PSD, "
        "<Y, 11^T - I> = 0 and <Y, G(c)> = <Y, A> < 0 for every c",
        "weights": weights,
        "vectors": [v.tolist() for v in vecs],
        "inner_ones_minus_identity": float(Y_ones),
        "inner_A": float(Y_A),
    }


def schoenberg_end_tolerance(lam_min: float, lam_max: float, rtol: float) -> float:
    r"""Rank tolerance at :math:`c_{\max}` from the extreme eigenvalues of :math:`B'` on the
    complement of 1.

    Rounding noise scales with the entries of :math:`B'`, not only with the spread of its
    spectrum: for uniform weights every eigenvalue coincides and :math:`D(c_{\max}) = 0`.
    """
    return _norm_tol(max(abs(lam_min), abs(lam_max)), lam_max - lam_min, rtol)


def euclidean_family(ell: np.ndarray, tau: float, rtol: float) -> Family:
    """Admissible half-line ``c <= c_max`` of :math:`D(c)` and the rank at its end point."""
    n = ell.shape[0]
    D0 = -2.0 * tau * ell
    np.fill_diagonal(D0, 0.0)
    # -1/2 V^T D0 V on the complement of 1 (the first coordinate after the reflection)
    Bp = -0.5 * ones_reflector_apply(D0)[1:, 1:]
    tri = Tridiagonal(Bp)
    m = n - 1
    lam_min = float(tridiagonal_eigvals(tri.d, tri.e, 0, 0)[0])
    lam_max = float(tridiagonal_eigvals(tri.d, tri.e, m - 1, m - 1)[0])
    c_max = lam_min / tau
    atol = schoenberg_end_tolerance(lam_min, lam_max, rtol)
    r_hi = m - tridiagonal_count_below(tri.d - lam_min, tri.e, atol)

    def embed(c: float, r: int) -> np.ndarray:
        if r == 0:
            return np.zeros((n, 0))
        lam, Y = tridiagonal_eigh(tri.d - tau * c, tri.e, m - r, m - 1)
        X = ones_reflector_vectors(np.vstack([np.zeros((1, r)), tri.apply_q(Y)]))[:, ::-1]
        return fix_signs(X) * np.sqrt(np.clip(lam[::-1], 0.0, None))

    low = tridiagonal_eigvals(tri.d - lam_min, tri.e, 0, min(m - 1, 2))
    cert = {
        "kind": "schoenberg",
        "c_max": c_max,
        "smallest_eigenvalues_at_c_max": low.tolist(),
        "largest_eigenvalue_at_c_max": lam_max - lam_min,
        "atol": atol,
    }
    return Family(None, c_max, False, False, None, r_hi, m, atol, cert, embed)
