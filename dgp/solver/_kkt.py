r"""KKT certificates of a row problem, computed from the Gram matrix alone.

For :math:`\min_{M \in \mathcal E_K} F(M)` with :math:`g = \nabla\hat F(M)` (symmetric, zero
diagonal), the multiplier of :math:`\operatorname{diag}M = 1` is taken as
:math:`y = \operatorname{diag}(Mg)` and the dual matrix is :math:`S = g - \operatorname{Diag}(y)`.
``M`` is optimal iff :math:`M \in \mathcal E_K`, :math:`S \succeq 0` and :math:`MS = 0`; the
reported residuals measure each condition, and by convexity, for every feasible :math:`M^\star`,

.. math::

    F(M) - F(M^\star) \le \langle S, M\rangle + K \max(0, -\lambda_{\min}(S))

(because :math:`\langle S, M^\star\rangle \ge \lambda_{\min}(S)\operatorname{tr}M^\star`), which
is ``gap_bound`` in nats once the scaling is undone. The same inequality, read the other way, is
the convex lower bound of a point that is not optimal (a rank-``d`` Burer–Monteiro point).
Ranks come from strict complementarity: :math:`\operatorname{rank}M + \operatorname{rank}S = K`
with both spectra split at a relative tolerance that is reported. Nothing here reads a solver
status.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from dgp.constants import GRAM_RANK_RTOL, SCALE_FLOOR, SOLVER_TOL
from dgp.records import CertificateProtocol
from dgp.solver._program import RowProblem
from dgp.tolerance import DEFAULT_POLICY

__all__ = ["KKTCertificate", "kkt_from_spectra", "row_certificate"]


@dataclass(frozen=True)
class KKTCertificate(CertificateProtocol):
    """KKT certificate of a Gram matrix for a convex problem over the elliptope.

    Attributes
    ----------
    kkt_residual : float
        ``max(primal, dual, complementarity)`` (dimensionless).
    primal_residual : float
        :math:`\\max(\\|\\operatorname{diag}M - 1\\|_\\infty, -\\lambda_{\\min}(M))`.
    dual_residual : float
        :math:`\\max(0, -\\lambda_{\\min}(S)) / \\nu`, with :math:`\\nu` the size of the larger
        of the exponential and the linear part of the scaled gradient.
    complementarity_residual : float
        :math:`\\|MS\\|_F / (\\nu\\max(1, \\lambda_{\\max}(M)))`.
    min_eig_gram : float
        Smallest eigenvalue of ``M``.
    max_eig_gram : float
        Largest eigenvalue of ``M``.
    min_eig_dual : float
        :math:`\\lambda_{\\min}(S)/\\nu`.
    rank : int
        Eigenvalues of ``M`` above ``rank_tol``.
    dual_rank : int
        Eigenvalues of :math:`S/\\nu` above ``dual_tol``.
    rank_tol : float
        The threshold of the rank of ``M`` (absolute).
    dual_tol : float
        The threshold of the rank of ``S``, relative to :math:`\\nu`.
    strictly_complementary : bool
        ``rank + dual_rank == K``: the ranks of ``M`` and ``S`` are then decided by spectral gaps
        on both sides, not by one threshold.
    gram_gap : float
        Smallest eigenvalue of ``M`` counted in the rank over the largest one left out
        (``inf`` if none is left out).
    dual_gap : float
        The same for ``S``.
    gradient_scale : float
        :math:`\\nu` (without class blocks, at least the size of the gradient's terms before
        the symmetrisation, :meth:`~dgp.solver.RowProblem.term_scale`).
    gap_bound : float
        Upper bound on :math:`F(M) - \\min F` in nats (module docstring).
    log_gap_bound : float
        Its natural log (finite where ``gap_bound`` underflows).
    log_scale : float
        :math:`\\log t` of the scaled objective.
    multipliers : tuple of float
        :math:`y` of the scaled objective.
    target : float
        The KKT target the point is held to (the solver's ``tol``): ``certified`` is the
        statement's conclusion, that ``M`` is optimal, within the one acceptance rule
        (:meth:`dgp.tolerance.TolerancePolicy.accepts` of ``kkt_residual`` at ``target``). A
        point that is only critical in a fixed dimension is not certified here (its ``rank-d``
        certificate says what it is).
    """

    kkt_residual: float
    primal_residual: float
    dual_residual: float
    complementarity_residual: float
    min_eig_gram: float
    max_eig_gram: float
    min_eig_dual: float
    rank: int
    dual_rank: int
    rank_tol: float
    dual_tol: float
    strictly_complementary: bool
    gram_gap: float
    dual_gap: float
    gradient_scale: float
    gap_bound: float
    log_gap_bound: float
    log_scale: float
    multipliers: tuple[float, ...]
    target: float = SOLVER_TOL

    kind: ClassVar[str] = "kkt"
    statement: ClassVar[str] = (
        "M is optimal iff M is in the elliptope, S = g - Diag(diag(M g)) is PSD and M S = 0; "
        "kkt_residual is the largest violation, gap_bound = <S, M> + K max(0, -lambda_min(S)) "
        "bounds F(M) - min F in nats; ranks split the spectra of M and S at rank_tol, dual_tol, "
        "and gram_gap, dual_gap are the smallest eigenvalue kept in each rank over the largest "
        "left out (large: the rank is clear-cut)"
    )

    def claims(self) -> Iterator[tuple[str, bool]]:
        K = len(self.multipliers)
        yield ("kkt_residual is the largest of the three residuals", self.kkt_residual
               == max(self.primal_residual, self.dual_residual, self.complementarity_residual))
        yield ("the primal residual covers the lowest eigenvalue of M",
               self.primal_residual >= -self.min_eig_gram)
        yield ("the dual residual covers the lowest eigenvalue of S",
               self.dual_residual >= -self.min_eig_dual)
        yield "the ranks fit in K", 0 <= self.rank <= K and 0 <= self.dual_rank <= K
        yield ("strict complementarity is rank + dual_rank = K",
               self.strictly_complementary == (self.rank + self.dual_rank == K))
        yield "gap_bound is non-negative", self.gap_bound >= 0

    @property
    def certified(self) -> bool:
        """``M`` is optimal: ``kkt_residual`` within the acceptance rule at ``target``, and the
        certificate's own numbers support it (:meth:`check`)."""
        return DEFAULT_POLICY.accepts(self.kkt_residual, self.target) and not self.check()


def _split(lam_desc: np.ndarray, tol: float) -> tuple[int, float]:
    """Count of eigenvalues above ``tol`` and the ratio across the split."""
    k = int(np.sum(lam_desc > tol))
    if k == lam_desc.size:
        return k, math.inf
    below = max(float(lam_desc[k]), 0.0)
    if k == 0:
        return 0, math.inf if below == 0 else float(tol / below)
    return k, math.inf if below == 0 else float(lam_desc[k - 1] / below)


def row_certificate(prob: RowProblem, gram: np.ndarray, *,
                    target: float = SOLVER_TOL) -> KKTCertificate:
    """The KKT certificate of ``gram`` for ``prob`` (module docstring), held to the KKT
    ``target``; ``prob``'s scale is kept.

    >>> from dgp.solver._program import block_problem
    >>> prob = block_problem(np.array([3, 3]), np.eye(2), tau=0.5)
    >>> G = np.array([[1.0, -1.0], [-1.0, 1.0]])
    >>> _ = prob.set_scale(G)
    >>> cert = row_certificate(prob, G)
    >>> cert.kkt_residual < 1e-12, cert.rank, cert.strictly_complementary
    (True, 1, True)
    """
    G = 0.5 * (gram + gram.T)
    st = prob.state(G)
    ge, gl = prob.gradient_parts(st)
    g = ge - gl
    y = np.einsum("ij,ji->i", G, g)
    S = g - np.diag(y)
    nu = max(float(np.linalg.norm(ge)), float(np.linalg.norm(gl)), SCALE_FLOOR)
    if prob.block is None:
        # rows of an asymmetric weighting may cancel in the symmetric parts (a directed cycle
        # does, exactly, at its optimum): the terms' size before the symmetrisation counts too,
        # or every residual would be measured against SCALE_FLOOR. (A class-block problem keeps
        # the symmetric parts, the scale its factor form computes without the Gram.)
        nu = max(nu, prob.term_scale(st))
    return kkt_from_spectra(
        np.linalg.eigvalsh(G), np.linalg.eigvalsh(S),
        diag_error=float(np.max(np.abs(np.diag(G) - 1.0))),
        product_norm=float(np.linalg.norm(G @ S)), inner=float(np.sum(S * G)),
        gradient_scale=nu, multipliers=y, log_scale=prob.log_t,
        weight_total=prob.alpha_total, target=target)


def kkt_from_spectra(lam_gram: np.ndarray, lam_dual: np.ndarray, *, diag_error: float,
                     product_norm: float, inner: float, gradient_scale: float,
                     multipliers: np.ndarray, log_scale: float, weight_total: float,
                     target: float = SOLVER_TOL) -> KKTCertificate:
    r"""The KKT certificate (module docstring) from what it is computed of, however that was
    obtained: the ascending spectra of ``M`` and of :math:`S` (scaled), the largest deviation
    of :math:`\operatorname{diag}M` from 1, :math:`\|MS\|_F`, :math:`\langle S, M\rangle`,
    the gradient scale :math:`\nu`, the multipliers :math:`y`, :math:`\log t` and
    :math:`\sum_r\alpha_r` (the units of the gap). :func:`row_certificate` passes dense
    eigenvalues; a structured Gram (an equiangular closed form) passes its known spectra.

    >>> c = kkt_from_spectra(np.array([0.0, 2.0]), np.array([0.0, 1.0]), diag_error=0.0,
    ...     product_norm=0.0, inner=0.0, gradient_scale=1.0, multipliers=np.zeros(2),
    ...     log_scale=0.0, weight_total=4.0)
    >>> c.kkt_residual, c.rank, c.dual_rank, c.strictly_complementary
    (0.0, 1, 1, True)
    """
    lam_G, lam_S, nu = np.asarray(lam_gram), np.asarray(lam_dual), gradient_scale
    K = lam_G.size
    g_norm = max(float(lam_G[-1]), 1.0)
    r_primal = max(diag_error, max(0.0, -float(lam_G[0])))
    r_dual = max(0.0, -float(lam_S[0])) / nu
    r_comp = product_norm / (nu * g_norm)
    kkt = max(r_primal, r_dual, r_comp)
    gap_scaled = max(0.0, inner) + K * max(0.0, -float(lam_S[0]))
    if gap_scaled > 0:
        log_gap = math.log(gap_scaled) + math.log(weight_total) + log_scale
        gap = math.exp(log_gap) if log_gap > -745 else 0.0
    else:
        log_gap, gap = -math.inf, 0.0
    # stationarity sets the rank, not the dual
    rel = max(GRAM_RANK_RTOL, 1e3 * max(r_primal, r_comp))
    rank_tol = rel * g_norm
    rank, gram_gap = _split(lam_G[::-1], rank_tol)
    dual_rank, dual_gap = _split(lam_S[::-1] / nu, rel)
    return KKTCertificate(
        kkt_residual=kkt,
        primal_residual=r_primal,
        dual_residual=r_dual,
        complementarity_residual=r_comp,
        min_eig_gram=float(lam_G[0]),
        max_eig_gram=float(lam_G[-1]),
        min_eig_dual=float(lam_S[0]) / nu,
        rank=rank,
        dual_rank=dual_rank,
        rank_tol=rank_tol,
        dual_tol=rel,
        strictly_complementary=rank + dual_rank == K,
        gram_gap=gram_gap,
        dual_gap=dual_gap,
        gradient_scale=nu,
        gap_bound=gap,
        log_gap_bound=log_gap,
        log_scale=log_scale,
        multipliers=tuple(float(v) for v in multipliers),
        target=float(target),
    )

