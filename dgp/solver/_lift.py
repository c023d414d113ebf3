r"""From a collapsed ``K x K`` optimum to the ``N x N`` problem: collapse and uniqueness
certificates, computed from the quotient alone (no ``N x N`` matrix).

**Lift.** Classes of :math:`n_c` samples collapsed on prototypes with Gram ``M`` give
:math:`G = E M E^\top` (``E`` the ``N x K`` class indicator). With :math:`\hat g^K` the scaled
gradient of the quotient, :math:`y = \operatorname{diag}(M\hat g^K)` and
:math:`h_c = \partial\hat F/\partial a_c` the derivative with respect to the within-class cosine
of class ``c``, the ``N x N`` dual matrix is
block-constant and satisfies

* on the :math:`n_c - 1` within-class directions (vectors supported on class ``c`` summing to
  zero): eigenvalue :math:`\lambda_{w,c} = -h_c/(n_c - 1) - y_c/n_c`;
* on the class indicators: :math:`v^\top S_N v = u^\top S_K u` for
  :math:`v = E\,\mathrm{diag}(n)^{-1}u`, with :math:`S_K = \hat g^K - \operatorname{Diag}(y)`
  the quotient's dual matrix;
* :math:`G S_N = E\,M S_K\,\mathrm{diag}(n)^{-1}E^\top`.

Hence the lifted point is optimal for the ``N x N`` problem iff the quotient is optimal
(:math:`M \succeq 0`, :math:`S_K \succeq 0`, :math:`MS_K = 0`) **and** every
:math:`\lambda_{w,c} \ge 0` — the collapse condition. For SupCon it always holds
(:math:`h_c < 0`, :math:`y_c \le 0`); a class whose within-class weight is small next to its
cross weights can fail it, and then it does not collapse.

**Uniqueness.** The loss is constant along :math:`G + c(J - I)` and strictly convex across it
(each anchor's log-sum-exp is strictly convex but along constants, and symmetry forces the same
constant in every row), so the minimisers form a segment
:math:`\{G^\star + c(J - I)\} \cap \mathcal E_N` containing :math:`c = 0`. With :math:`V` an
orthonormal basis of :math:`\ker G^\star` (dimension ``k``) and
:math:`s = \|V^\top\mathbb 1\|^2`, the compression :math:`V^\top(J - I)V` has eigenvalues
:math:`s - 1` and :math:`-1` (``k - 1`` times). A direction with :math:`v^\top(J - I)v < 0`,
:math:`v \in \ker G^\star`, blocks every :math:`c > 0`; one with :math:`> 0` blocks every
:math:`c < 0`. So the minimiser is unique iff :math:`k \ge 2` and :math:`s > 1`, not unique if
:math:`k \le 1` or :math:`s < 1`, and undecided at first order when :math:`s = 1` (reported as
near the threshold). At strict complementarity (the dual :math:`S` is positive definite on
:math:`\ker G^\star`, :math:`S = V\Sigma V^\top`, :math:`\Sigma \succ 0`) the threshold case
decides itself: the loss is constant along :math:`J - I`, so :math:`\langle S, J - I\rangle =
b^\top\Sigma b - \operatorname{tr}\Sigma = 0` with :math:`b = V^\top 1`. For :math:`k \ge 2`
this forces :math:`s = \|b\|^2 > 1` (else :math:`b^\top\Sigma b \le \lambda_{\max}(\Sigma)
< \operatorname{tr}\Sigma`): unique. For :math:`k = 1` it forces :math:`s = 1` exactly, and then
no :math:`c \ne 0` works: with :math:`a_\mu = (u_\mu^\top 1)^2` over the positive eigenpairs
:math:`(\mu, u_\mu)` of :math:`G^\star` (:math:`\sum a_\mu = N - 1 > 0`), the secular
equation of the rank-one update :math:`G^\star - cI + c11^\top` says it is PSD for
:math:`0 < c < \mu_{\min}` iff :math:`(1 - s) + c\sum_\mu a_\mu/(\mu - c) \le 0`, and for
:math:`c < 0` iff :math:`(1 - s) - |c|\sum_\mu a_\mu/(\mu + |c|) \ge 0`; at :math:`s = 1`
neither holds, and the feasible :math:`c` form an interval containing 0, so it is
:math:`\{0\}`: unique. For the lift, :math:`s = N - n^\top V_r(V_r^\top\mathrm{diag}(n)V_r)^{-1}
V_r^\top n` with :math:`V_r` the range of ``M`` and :math:`k = N - \operatorname{rank}M`.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dgp.constants import COLLAPSE_TOL_RANGE, FACE_UNIQUENESS_TOL
from dgp.records import CertificateProtocol
from dgp.solver._kkt import KKTCertificate
from dgp.solver._program import RowProblem

__all__ = ["LiftCertificate", "face_uniqueness", "lift_certificate"]


@dataclass(frozen=True)
class LiftCertificate(CertificateProtocol):
    """Collapse and uniqueness certificate of a collapsed optimum lifted to ``N`` samples.

    Attributes
    ----------
    within_margins : tuple of float
        :math:`\\lambda_{w,c}` of each class relative to the size of its two terms (``nan`` for
        a single-sample class, which has no within-class direction).
    collapsed : bool
        Every margin is ``>= -collapse_tol``: the collapsed point is optimal for the ``N x N``
        problem (given the quotient certificate).
    collapse_tol : float
    kernel_dim : int
        ``k = N - rank``.
    ones_in_kernel : float
        :math:`s = \\|P_{\\ker}\\mathbb 1\\|^2`.
    unique : bool or None
        Whether the ``N x N`` minimiser is unique (up to isometry); ``None`` when undecided.
    near_threshold : bool
        ``s`` within tolerance of 1, or the rank not decided by strict complementarity or a
        spectral gap.
    reason : str
        One sentence.
    """

    within_margins: tuple[float, ...]
    collapsed: bool
    collapse_tol: float
    kernel_dim: int
    ones_in_kernel: float
    unique: bool | None
    near_threshold: bool
    reason: str

    kind: ClassVar[str] = "lift"
    statement: ClassVar[str] = (
        "the collapsed point is optimal for the N x N problem iff the quotient is optimal and "
        "every within-class eigenvalue of the lifted dual (within_margins) is >= -collapse_tol; "
        "the minimiser is unique iff the kernel has dimension >= 2 and |P_ker 1|^2 > 1"
    )

    def claims(self) -> Iterator[tuple[str, bool]]:
        finite = [v for v in self.within_margins if math.isfinite(v)]
        yield ("collapsed is every within-class margin >= -collapse_tol",
               self.collapsed == all(v >= -self.collapse_tol for v in finite))
        if self.unique is True:
            yield ("a unique minimiser has a kernel of dimension >= 2 with |P_ker 1|^2 > 1",
                   self.kernel_dim >= 2 and self.ones_in_kernel > 1 and self.collapsed)
        if self.kernel_dim <= 1:
            yield "a kernel of dimension <= 1 gives no unique minimiser", self.unique is not True


def face_uniqueness(
    M: np.ndarray, sizes: np.ndarray, *, rank: int, tol: float = FACE_UNIQUENESS_TOL,
    strict: bool = False,
) -> tuple[bool | None, int, float, str]:
    """Uniqueness of the ``N x N`` minimiser ``E M E^T`` from the face test (module docstring).

    Returns ``(unique, k, s, reason)``; ``unique`` is ``None`` within ``tol * N`` of ``s = 1``
    unless ``strict`` (the lifted dual is strictly complementary: positive definite on the
    kernel), which proves a rank-deficient minimiser unique whatever the computed ``s``
    (module docstring: ``s = 1`` exactly for ``k = 1``, ``s > 1`` for ``k >= 2``).

    >>> face_uniqueness(np.array([[1.0, -1.0], [-1.0, 1.0]]), np.array([3, 3]), rank=1)[0]
    True
    """
    n = np.asarray(sizes, dtype=float)
    N = float(n.sum())
    lam, V = np.linalg.eigh(0.5 * (M + M.T))
    Vr = V[:, np.argsort(lam)[::-1][:rank]]
    k = round(N) - rank
    if rank > 0:
        B = Vr.T @ (n[:, None] * Vr)
        b = Vr.T @ n
        s = N - float(b @ np.linalg.solve(B, b))
    else:
        s = N
    margin = tol * N
    if k == 0:
        return False, k, s, "the optimum has full rank: G + c(J - I) stays optimal for small |c|"
    if strict:  # decides every k >= 1 (module docstring); s differs from 1 by rounding only
        why = ("a one-dimensional kernel at strict complementarity: <S, J - I> = 0 forces "
               f"|P_ker 1|^2 = 1 (here {s:.12g}), and then G + c(J - I) has a negative "
               "eigenvalue for every c != 0 (secular equation)") if k == 1 else (
               f"a kernel of dimension {k} >= 2 at strict complementarity: <S, J - I> = 0 "
               f"forces |P_ker 1|^2 > 1 (here {s:.12g}), so no shift G + c(J - I), c != 0, is "
               "PSD")
        return True, k, s, why + ", so the minimiser is unique"
    if abs(s - 1.0) <= margin:
        return None, k, s, (
            f"|P_ker 1|^2 = {s:.6g} is within {margin:.1g} of 1: the first-order face test "
            "cannot decide"
        )
    if s < 1.0:
        return False, k, s, (
            f"|P_ker 1|^2 = {s:.6g} < 1: G - c(J - I) stays optimal for small c > 0 (a face of "
            "minimisers)"
        )
    if k == 1:
        return False, k, s, (
            f"a one-dimensional kernel with |P_ker 1|^2 = {s:.6g} > 1: G + c(J - I) stays "
            "optimal for small c > 0"
        )
    return True, k, s, (
        f"kernel of dimension {k} >= 2 with |P_ker 1|^2 = {s:.6g} > 1: no shift G + c(J - I), "
        "c != 0, is PSD, so the minimiser is unique"
    )


def lift_certificate(
    prob: RowProblem,
    M: np.ndarray,
    sizes: np.ndarray,
    cert: KKTCertificate,
    *,
    collapse_tol: float | None = None,
) -> LiftCertificate:
    """Collapse and uniqueness certificate of the quotient optimum ``M`` of ``prob`` (whose points
    are classes of ``sizes`` samples), lifted to the ``N x N`` problem (module docstring).

    ``collapse_tol`` (relative to the gradient scale) defaults to ``1e3 * kkt_residual`` clipped
    to ``[1e-8, 1e-4]``: a margin within it of zero is a class at its collapse threshold, to the
    accuracy the quotient was solved to."""
    n = np.asarray(sizes, dtype=float)
    if collapse_tol is None:
        lo, hi = COLLAPSE_TOL_RANGE
        collapse_tol = max(lo, min(1e3 * cert.kkt_residual, hi))
    st = prob.state(M)
    h = prob.within_gradient(st)
    y = np.asarray(cert.multipliers)
    nu = cert.gradient_scale
    margins = [
        (-h[c] / (n[c] - 1.0) - y[c] / n[c]) / nu if n[c] >= 2 else math.nan
        for c in range(n.size)
    ]
    finite = [v for v in margins if math.isfinite(v)]
    collapsed = all(v >= -collapse_tol for v in finite)
    strict_within = all(v > collapse_tol for v in finite)
    rank_decided = cert.strictly_complementary or cert.gram_gap >= 1e6
    unique, k, s, reason = face_uniqueness(
        M, n, rank=cert.rank, strict=bool(cert.strictly_complementary and strict_within))
    near = unique is None or not rank_decided or not strict_within
    if not collapsed:
        worst = int(np.nanargmin(np.where(np.isfinite(margins), margins, np.nan)))
        unique = None
        reason = (
            f"class {worst} does not collapse: its within-class eigenvalue of the lifted dual is "
            f"negative ({margins[worst]:.3g}, relative), so the collapsed point is not optimal"
        )
    elif not rank_decided:
        unique = None if unique else unique
        reason += "; the rank is not decided by strict complementarity (near a threshold)"
    elif not strict_within and unique:
        reason += " (a class sits exactly at its collapse threshold)"
    return LiftCertificate(
        within_margins=tuple(float(v) for v in margins),
        collapsed=collapsed,
        collapse_tol=collapse_tol,
        kernel_dim=k,
        ones_in_kernel=s,
        unique=unique,
        near_threshold=near,
        reason=reason,
    )
