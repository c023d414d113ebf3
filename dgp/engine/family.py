r"""The target family and the decisions along it, shared by every engine.

Cosine: :math:`G(\mu) = A + \mu(11^\top - I)`, :math:`\mu = \tau c`, :math:`A = I + \tau\ell`.
:math:`\varphi(\mu) = \lambda_{\min}(G(\mu))` is concave (a minimum of affine functions), so the
admissible set :math:`\{\mu : G(\mu) \succeq 0\}` is an interval. We maximise :math:`\varphi`
with cutting planes (a supergradient is :math:`(1^\top x)^2 - 1` for the bottom eigenvector
:math:`x`), then bracket its two roots. Strictly inside the interval every member has full
rank ``N`` (the determinant of :math:`A + t(11^\top - I)` is a non-zero polynomial of ``t``
and :math:`\varphi` is concave), so only the end points can have a lower rank.

Euclidean: on :math:`1^\perp`, :math:`-\tfrac12 J D(c) J = \tau(B - cI)` with
:math:`B = V^\top \ell V`, so :math:`D(c)` is an EDM iff :math:`c \le c_{\max} =
\lambda_{\min}(B)`, with rank :math:`N - 1` below and :math:`N - 1` minus the multiplicity of
:math:`\lambda_{\min}` at the end point.

Each engine supplies the spectrum through a small oracle (:class:`CosineSpectrum`,
:class:`EuclideanSpectrum`); the decisions (the concave search, the end points, their ranks, the
margins of every comparison) are made here, once.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgp._linalg import bracketed_root
from dgp.constants import (
    CLUSTER_WINDOW_RTOL,
    COSINE_TAU_SPREAD_MAX,
    PROBE_GROWTH,
    SCALE_FLOOR,
    SEARCH_RESOLUTION,
    SLOPE_FLOOR,
)
from dgp.engine._canonical import CanonicalShift
from dgp.engine._spectra import (
    CosineSpectrum,
    EuclideanSpectrum,
    FarkasData,
    MultiplicityEuclideanSpectrum,
    MultiplicitySpectrum,
    combine_farkas,
    farkas_offset,
    psd_box,
    repeat_smallest,
)
from dgp.errors import ParameterError, check_temperature
from dgp.tolerance import Margin, Tolerance

__all__ = [
    "CosineSpectrum",
    "End",
    "EuclideanSpectrum",
    "Family",
    "FarkasData",
    "MultiplicityEuclideanSpectrum",
    "MultiplicitySpectrum",
    "argmax_concave",
    "check_cosine_scale",
    "check_tau_inverse",
    "combine_farkas",
    "cosine_family",
    "euclidean_family",
    "farkas_offset",
    "psd_box",
    "repeat_smallest",
]

_EPS = float(np.finfo(float).eps)


@dataclass(frozen=True)
class End:
    """One admissible end point (or the single admissible point) of a family.

    Attributes
    ----------
    c : float
        The constant: canonical (the engine's log-weights) where the family is located, the
        user's once the family is lifted (:meth:`Family.in_user_frame`).
    rank : int
        Rank of the target there: the number of eigenvalues above ``atol``.
    low : tuple of float
        The smallest eigenvalues there, ascending: the first (at most ``LISTED``) of those
        counted as zero, then the next one.
    zeros : int
        How many eigenvalues are counted as zero (``N - rank``, Euclidean ``N - 1 - rank``).
    atol : float
        The tolerance of the rank decision.
    margin : Margin or None
        The smallest eigenvalue counted as non-zero, against ``atol`` (``None`` at rank 0).
    """

    c: float
    rank: int
    low: tuple[float, ...]
    atol: float
    margin: Margin | None
    zeros: int = 1


#: how many of the eigenvalues counted as zero an end point lists
LISTED = 8


def listed(low: np.ndarray, zeros: int) -> tuple[float, ...]:
    keep = list(low[: min(zeros, LISTED)]) + list(low[zeros : zeros + 1])
    return tuple(float(v) for v in keep)


@dataclass(frozen=True, eq=False)
class Family:
    """The admissible part of a target family and the decisions made on it.

    Attributes
    ----------
    similarity : {"cosine", "euclidean"}
    n : int
    status : {"empty", "point", "interval"}
        ``"interval"`` for a Euclidean family is the half-line ``c <= hi.c``.
    lo : End or None
        Lower end point (``None`` for the Euclidean half-line and for empty families).
    hi : End or None
        Upper end point (``None`` for empty families).
    interior_rank : int or None
        Rank strictly inside the admissible set (``N`` cosine, ``N - 1`` Euclidean).
    best_value : float
        Cosine: the maximum of :math:`\\lambda_{\\min}` over the family. Euclidean: the largest
        eigenvalue at ``c_max``.
    best_c : float
        Cosine: where that maximum is reached. Euclidean: ``c_max``. Every constant of a family
        (this, the end points', ``nearest``'s ``c_nearest``, the argument of ``embed``) is in
        the frame named by ``frame``.
    best_atol : float
        The tolerance there.
    margins : tuple of Margin
        Every decisive comparison (emptiness, ranks at the end points).
    farkas : FarkasData or None
        For an empty cosine family.
    nearest : dict or None
        For an empty family decided by semidefinite programs: the nearest realizable target
        (``solver_status``, ``distance``, ``c_nearest`` canonical, ``nearest_target``).
    structure : dict or None
        What a structured engine adds: its reduced spectrum.
    prototypes : dict or None
        Class prototypes when classes collapse at an end point (class-block engine).
    embed : callable or None
        ``embed(c, r)`` builds the ``N x r`` embedding of the target with constant ``c``.
    frame : {"canonical", "user"}
        The convention of every constant: ``"canonical"`` where the engines locate the family,
        ``"user"`` (:math:`s^* = \\log w + c`) after :meth:`in_user_frame`, the one place the
        canonical shift is inverted for a verdict.
    """

    similarity: str
    n: int
    status: str
    lo: End | None
    hi: End | None
    interior_rank: int | None
    best_value: float
    best_c: float
    best_atol: float
    margins: tuple[Margin, ...]
    farkas: FarkasData | None = None
    nearest: dict[str, Any] | None = None
    structure: dict[str, Any] | None = None
    prototypes: dict[str, Any] | None = None
    embed: Callable[[float, int], np.ndarray] | None = None
    frame: str = "canonical"

    def in_user_frame(self, shift: CanonicalShift) -> Family:
        """The family with every constant in the user's convention: the canonical shift's
        inverse (:meth:`~dgp.engine.target.CanonicalShift.to_user_c`) applied once, before a
        verdict is built from it."""
        if self.frame == "user":
            return self
        up = shift.to_user_c

        def end(e: End | None) -> End | None:
            return None if e is None else replace(e, c=up(e.c))

        nearest = self.nearest
        if nearest is not None and "c_nearest" in nearest:
            nearest = {**nearest, "c_nearest": up(nearest["c_nearest"])}
        lifted = None
        if self.embed is not None:
            # an end point's embedding from its own canonical constant, exactly (c - shift +
            # shift need not give c back in floating point); any other c through the inverse
            embed, down = self.embed, shift.to_canonical_c
            exact = {up(e.c): e.c for e in self.ends}

            def lifted(c: float, r: int) -> np.ndarray:
                return embed(exact[c] if c in exact else down(c), r)

        return replace(self, lo=end(self.lo), hi=end(self.hi), best_c=up(self.best_c),
                       nearest=nearest, embed=lifted, frame="user")

    @property
    def ends(self) -> tuple[End, ...]:
        """The admissible end points that exist (one for a point, up to two otherwise)."""
        if self.status == "point":
            return (self.hi,)  # type: ignore[return-value]
        return tuple(e for e in (self.lo, self.hi) if e is not None)


def check_tau_inverse(tau: float) -> None:
    """Refuse a ``tau`` whose inverse is beyond floating point (``tau < 5.5627e-309``): the
    targets' constants reach ``1 / tau`` (the unit diagonal is ``tau c = 1``), so no engine can
    form them. Every engine calls it first.

    Raises
    ------
    ParameterError
        Naming ``tau``, with the smallest ``tau`` taken.
    """
    check_temperature(tau, "tau")  # the one check of a temperature (dgp.errors)


def check_cosine_scale(tau: float, spread: float) -> None:
    """Refuse a cosine family whose constants leave floating point: ``tau`` times the spread of
    the log-weights above :data:`dgp.constants.COSINE_TAU_SPREAD_MAX` (the structured engines
    work with ``tau c`` and the box of ``c`` at that size). The verdict there is known (every
    ``tau`` above ``2 / spread`` is inconsistent), and the message says so.

    Raises
    ------
    ParameterError
        Naming ``tau``, with the largest ``tau`` taken.
    """
    if spread > 0 and tau * spread > COSINE_TAU_SPREAD_MAX:
        raise ParameterError(
            "tau", f"= {tau:.3g} times the spread of the log-weights ({spread:.3g} nats) is "
            "beyond floating point for the structured engine; the cosine target needs every "
            f"tau (ell_ij + c) in [-1, 1], so every tau above 2 / spread = {2.0 / spread:.3g} "
            f"is inconsistent; use tau <= {COSINE_TAU_SPREAD_MAX / spread:.3g}"
        )


def argmax_concave(
    f: Callable[[float], tuple[float, float]], a: float, b: float, gap: float,
    scale: Callable[[float], float] | None = None,
) -> float:
    """Maximiser of a concave function from values and supergradients (1-D cutting planes).

    ``f(x)`` returns the value and one supergradient. The tangents at the bracket ends meet
    above the maximum, so their intersection bounds it: we cut there until the bound is within
    ``gap`` (times ``scale(x)`` at the best point ``x`` so far, when given: the size of the
    values there, below which their rounding hides the difference) of the best value or the
    bracket stops shrinking in floating point. At a kink, where
    two eigenvalue branches cross and the rank drops, the cut lands on the crossing in a few
    steps, to machine precision, but on the same side each time (rounding): the other end then
    only moves when the bracket shrinks too slowly and the safeguard steps in. The safeguard
    alternates a probe just past the cut, on the side of the end that has not moved
    (``2 eps`` times the bracket's magnitude, growing by :data:`~dgp.constants.PROBE_GROWTH`
    at each consecutive probe, and never beyond the middle of the way there), with a bisection,
    so the bracket still halves at least every third step; at a kink the first probe
    that crosses it closes the bracket to a few ulps.
    """
    fa, sa = f(a)
    fb, sb = f(b)
    best_x, best_f = (a, fa) if fa >= fb else (b, fb)
    width = b - a
    moved = 0  # the end the last step moved: -1 for a, +1 for b
    slow = 0  # consecutive safeguard steps
    for _ in range(200):
        if sa <= 0:
            return a if fa >= best_f else best_x
        if sb >= 0:
            return b if fb >= best_f else best_x
        m = (fb - fa + sa * a - sb * b) / (sa - sb)  # tangents meet here
        bound = fa + sa * (m - a)
        ulps = 2.0 * _EPS * max(1.0, abs(a), abs(b))
        tol = gap if scale is None else gap * scale(best_x)
        if bound - best_f <= tol or b - a <= 2.0 * ulps:
            break
        if not a < m < b or b - a > 0.5 * width:  # safeguard: the bracket shrinks slowly
            m = _safeguard(a, b, m, moved, slow, ulps)
            slow += 1
        else:
            slow = 0
        width = b - a
        fm, sm = f(m)
        if fm > best_f:
            best_x, best_f = m, fm
        if sm > 0:
            a, fa, sa, moved = m, fm, sm, -1
        elif sm < 0:
            b, fb, sb, moved = m, fm, sm, 1
        else:
            return m
    return best_x


def _safeguard(a: float, b: float, cut: float, moved: int, slow: int, ulps: float) -> float:
    """The next point of :func:`argmax_concave` when its bracket shrinks slowly: every other
    time the middle, otherwise a probe just past the cut towards the end that has not moved."""
    if slow % 2 or moved == 0:
        return 0.5 * (a + b)
    c = min(max(cut, a), b)
    h = ulps * PROBE_GROWTH ** (slow // 2)
    if moved < 0:  # a creeps up: look just right of the cut
        return c + h if c + h < 0.5 * (c + b) else 0.5 * (a + b)
    return c - h if c - h > 0.5 * (a + c) else 0.5 * (a + b)


def _infeasible_end(lam_min: Callable[[float], float], mu_star: float, x: float) -> float:
    """Move ``x`` away from ``mu_star`` (doubling the distance) until ``lam_min(x) < 0``."""
    step = x - mu_star if x != mu_star else 1.0
    for _ in range(64):
        if lam_min(x) < 0:
            return x
        step *= 2.0
        x = mu_star + step
    raise ArithmeticError("no infeasible bracket end found: the family is not bounded")


def _root(lam_min: Callable[[float], float], a: float, b: float) -> float:
    """The root of ``lam_min`` between ``a`` and ``b``, to machine precision."""
    return bracketed_root(lam_min, a, b, xtol=SCALE_FLOOR, rtol=4.0 * _EPS, maxiter=400)


def _cosine_scale(spec: CosineSpectrum, mu: float, tau: float) -> float:
    """Scale of the eigenvalue decisions at ``mu``: the spectral norm of :math:`G(\\mu)`, and
    at least the size of the entries that rounding of the log-weights perturbs."""
    return max(abs(spec.lam_min(mu)), abs(spec.lam_max(mu)), 1.0 + abs(mu) + tau)


def _cosine_end(spec: CosineSpectrum, mu: float, tau: float, tol: Tolerance, which: str) -> End:
    r"""The end point near ``mu`` (a root of :math:`\lambda_{\min}`, or the maximiser of a
    family that is one point) and its rank.

    At a true end point :math:`\mu_e` every vanishing eigenvalue is :math:`s_j(\mu - \mu_e)`
    nearby, with slope :math:`s_j = (1^\top x_j)^2 - 1`. The root of the smallest eigenvalue is
    only as precise as its slope allows (rounding noise over :math:`|s|`), which the steeper
    vanishing eigenvalues amplify; so the end point is refined by a least-squares fit of the
    cluster of near-zero eigenvalues, and the rank is counted there.
    """
    n = spec.n
    atol = tol.atol(_cosine_scale(spec, mu, tau))
    _, s0 = spec.smallest_slopes(mu, 1)
    # every vanishing eigenvalue is within |s| * (noise / |s_min|) of zero, |s| <= N - 1
    loose = min(atol * (1.0 + (n - 1) / max(abs(float(s0[0])), SLOPE_FLOOR)),
                CLUSTER_WINDOW_RTOL * _cosine_scale(spec, mu, tau))
    # a few of the cluster suffice for the fit (they all vanish at the same end point)
    k = min(n, max(1, spec.count_at_most(mu, loose)) + 1, LISTED + 1)
    lam, slopes = spec.smallest_slopes(mu, k)
    cluster = lam <= max(loose, atol)
    cluster[0] = True
    denom = float(slopes[cluster] @ slopes[cluster])
    if denom > 0.0:
        mu_e = mu - float(slopes[cluster] @ lam[cluster]) / denom
        if mu_e != mu and spec.lam_min(mu_e) >= -tol.atol(_cosine_scale(spec, mu_e, tau)):
            mu = mu_e
            atol = tol.atol(_cosine_scale(spec, mu, tau))
    if denom > 0.0:
        mu, atol = _steep_refit(spec, mu, tau, tol, atol, atol / math.sqrt(denom))
    # an end point is a root of lambda_min: at least one eigenvalue is zero there
    zeros = min(n, max(1, spec.count_at_most(mu, atol)))
    low = list(spec.smallest(mu, min(zeros, LISTED)))
    margin = None
    if zeros < n:
        nxt = spec.kth(mu, zeros)
        low.append(nxt)
        margin = tol.margin(f"smallest non-zero eigenvalue of G(c) at {which}", nxt, atol,
                            zero_is_near=False)
    if zeros > 1:  # a rank that rests on a widened tolerance is near its threshold
        margin = tol.read_as_zero(f"largest eigenvalue of G(c) counted as zero at {which}",
                                  spec.kth(mu, zeros - 1), atol) or margin
    return End(mu / tau, n - zeros, tuple(float(v) for v in low), atol, margin, zeros)


def _steep_refit(spec: CosineSpectrum, mu: float, tau: float, tol: Tolerance, atol: float,
                 error: float) -> tuple[float, float]:
    r"""The end point refined once more with the steep eigenvalues that may vanish there.

    The fit of :func:`_cosine_end` uses the few smallest eigenvalues; when many vanish together
    (a kink: Soft SupCon at :math:`\tau^*` has :math:`N - K` within-class eigenvalues of slope
    :math:`-1` and one of slope near :math:`N - 1` vanishing at one :math:`c`), those are the
    shallow ones, the end point is known to ``error`` only, and a steep vanishing eigenvalue
    reads :math:`|s_j|` times that: whether it counts as zero would follow the rounding (the
    thread count, the order of the samples). Eigenvalues above ``atol`` that may vanish within
    ``error`` (:math:`\lambda_j \le \mathrm{atol} + |s_j|\,\mathrm{error}`) join the fit,
    which they dominate; the refined point is kept if the target stays PSD there within the
    tolerance (a steep eigenvalue that does not vanish pulls the others below it).
    """
    n = spec.n
    z0 = spec.count_at_most(mu, atol)
    z1 = min(n, spec.count_at_most(mu, atol + (n - 1) * error), z0 + LISTED + 1)
    if z1 <= z0:
        return mu, atol
    lam, slopes = spec.slopes_between(mu, z0, z1)
    steep = lam <= atol + np.abs(slopes) * error
    if not steep.any():
        return mu, atol
    lam0, s0 = spec.smallest_slopes(mu, max(1, min(z0, LISTED + 1)))
    lam = np.concatenate([lam0, lam[steep]])
    slopes = np.concatenate([s0, slopes[steep]])
    denom = float(slopes @ slopes)
    mu_e = mu - float(slopes @ lam) / denom
    atol_e = tol.atol(_cosine_scale(spec, mu_e, tau))
    if mu_e != mu and spec.lam_min(mu_e) >= -atol_e:
        return mu_e, atol_e
    return mu, atol


def cosine_family(spec: CosineSpectrum, *, tau: float, tol: Tolerance) -> Family:
    """The admissible interval of :math:`G(c)` and the ranks along it (module docstring)."""
    n = spec.n
    a, b = spec.box()
    # the search resolves the maximum far inside the band the verdict tolerates at the maximiser,
    # tol.atol of a scale at least its spectral norm (_cosine_scale): norm_floor is below that
    mu_star = argmax_concave(spec.lam_min_slope, a, b, SEARCH_RESOLUTION * tol.atol(1.0),
                             spec.norm_floor)
    phi = spec.lam_min(mu_star)
    atol = tol.atol(_cosine_scale(spec, mu_star, tau))
    m_phi = tol.margin("max over c of the smallest eigenvalue of G(c)", phi, atol,
                       zero_is_near=True)
    common = {"similarity": "cosine", "n": n, "best_value": phi, "best_c": mu_star / tau,
              "best_atol": atol, "embed": lambda c, r: spec.embedding(tau * c, r)}
    if phi < -atol:
        return Family(status="empty", lo=None, hi=None, interior_rank=None, margins=(m_phi,),
                      farkas=spec.farkas(mu_star, phi), structure=spec.structure(mu_star),
                      **common)
    if phi <= 0.0:
        end = _cosine_end(spec, mu_star, tau, tol, "the only admissible c")
        return _point(spec, end, m_phi, tau, common)
    a = _infeasible_end(spec.lam_min, mu_star, a)
    b = _infeasible_end(spec.lam_min, mu_star, b)
    lo, hi = _root(spec.lam_min, a, mu_star), _root(spec.lam_min, mu_star, b)
    e_lo = _cosine_end(spec, lo, tau, tol, "c_lo")
    e_hi = _cosine_end(spec, hi, tau, tol, "c_hi")
    if (n - 1) * (hi - lo) <= atol:
        # both ends are the same matrix within tolerance: one admissible point, the lower rank
        return _point(spec, e_lo if e_lo.rank < e_hi.rank else e_hi, m_phi, tau, common)
    margins = tuple(m for m in (m_phi, e_lo.margin, e_hi.margin) if m is not None)
    protos = {}
    for tag, e in (("lo", e_lo), ("hi", e_hi)):
        p = spec.prototypes(tau * e.c, e.atol)
        if p is not None:
            protos[tag] = p
    return Family(status="interval", lo=e_lo, hi=e_hi, interior_rank=n, margins=margins,
                  structure=spec.structure(mu_star), prototypes=protos or None, **common)


def _point(spec: CosineSpectrum, end: End, m_phi: Margin, tau: float, common: dict) -> Family:
    margins = tuple(m for m in (m_phi, end.margin) if m is not None)
    p = spec.prototypes(tau * end.c, end.atol)
    return Family(status="point", lo=end, hi=end, interior_rank=end.rank, margins=margins,
                  structure=spec.structure(tau * end.c),
                  prototypes=None if p is None else {"point": p}, **common)


def euclidean_family(spec: EuclideanSpectrum, *, tau: float, tol: Tolerance) -> Family:
    """The admissible half-line ``c <= c_max`` of :math:`D(c)` and the rank at ``c_max``."""
    n = spec.n
    m = n - 1
    lam_min, lam_max = spec.extremes()
    atol = tol.atol(max(lam_max - lam_min, 1.0 + spec.spread))
    zeros = min(m, max(1, spec.count_at_most(lam_min + atol)))
    low = list(spec.smallest(min(zeros, LISTED)) - lam_min)
    margin = None
    if zeros < m:
        nxt = spec.kth(zeros) - lam_min
        low.append(nxt)
        margin = tol.margin("smallest non-zero eigenvalue of B - c_max I", nxt, atol,
                            zero_is_near=False)
    if zeros > 1:  # a rank that rests on a widened tolerance is near its threshold
        margin = tol.read_as_zero("largest eigenvalue of B - c_max I counted as zero",
                                  spec.kth(zeros - 1) - lam_min, atol) or margin
    end = End(lam_min, m - zeros, tuple(float(v) for v in low), atol, margin, zeros)
    return Family(
        similarity="euclidean", n=n, status="interval", lo=None, hi=end, interior_rank=m,
        best_value=lam_max - lam_min, best_c=lam_min, best_atol=atol,
        margins=() if margin is None else (margin,), structure=spec.structure(),
        embed=lambda c, r: spec.embedding(c, r, tau),
    )
