r"""The convex program every solver of dgp works on: a weighted sum of log-sum-exp rows over the
elliptope, in log space.

A *row problem* has ``K`` points (classes, or samples) with Gram matrix
:math:`M \in \mathcal E_K = \{M \succeq 0,\ \operatorname{diag}M = 1\}` and ``R`` rows. Row ``r``
is one kind of anchor: it reads row :math:`c_r` (its ``anchor``) of ``M``, sees
:math:`\mu_{rd} \ge 0` samples of point ``d`` among its candidates (the other samples of its own
class sit at cosine :math:`M_{c_r c_r} = 1`), puts target mass :math:`P_{rd}` on point ``d``
(:math:`\sum_d P_{rd} = 1`, spread evenly over the :math:`\mu_{rd}` samples) and has weight
:math:`\alpha_r > 0`. Its per-sample cross-entropy is

.. math::

    \ell_r(M) = -\sum_d P_{rd}\,\frac{M_{c_r d}}{\tau}
        + \log\sum_d \mu_{rd}\, e^{M_{c_r d}/\tau},
    \qquad F(M) = \sum_r \alpha_r\,\ell_r(M),

convex in ``M`` (a log-sum-exp of linear maps) and bounded below by the entropic bound
:math:`\sum_r \alpha_r H_r`, :math:`H_r = -\sum_d P_{rd}\log(P_{rd}/\mu_{rd})` (Gibbs). The
full-batch loss of a collapsed class-block weighting, the expected loss of a mini-batch sampler
and the dense ``N x N`` loss (``K = N`` singletons) are all of this form.

Log space, no cancellation. Each row is written relative to a reference point
:math:`\rho_r` (its own class when the anchor has own-class positives, else its largest target):
with :math:`u_{rd} = \log(\mu_{rd}/\mu_{r\rho}) + (M_{c_r d} - M_{c_r\rho})/\tau`,

.. math::

    \ell_r = \log\mu_{r\rho} + \sum_{d \ne \rho} P_{rd}\,\frac{M_{c_r\rho} - M_{c_r d}}{\tau}
        + \operatorname{softplus}\Big(\operatorname{LSE}_{d \ne \rho} u_{rd}\Big).

For SupCon rows every term after the constant is non-negative and the softplus is evaluated as
:math:`e^{Y}\,\log(1 + x)/x` from :math:`Y = \operatorname{LSE}u` alone, so the excess over the
bound is exact even where it is :math:`10^{-400}` and no longer a float. Solvers minimise the
scaled objective :math:`\hat F = \sum_r \hat\alpha_r (\ell_r - \log\mu_{r\rho}) / t`,
:math:`\hat\alpha = \alpha / \sum\alpha`, with the fixed scale :math:`t = e^{\log t}` of the
leading exponential at the starting point, so that its gradient is of order one at any
temperature.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sps

from dgp.constants import LOG1P_SERIES_BELOW, PROBABILITY_ATOL
from dgp.errors import SolverError, check_positive

__all__ = [
    "BlockForm",
    "RowProblem",
    "RowState",
    "ScaleOverflow",
    "block_problem",
    "scaled_softplus",
]


class ScaleOverflow(SolverError):
    """The objective, in the units of its scale :math:`t` (the excess at the point that set
    it), does not fit a float at the point asked for: that point is astronomically worse than
    the one that set the scale. A line search backtracks from it; anywhere else it is dgp's
    failure."""


def scaled_softplus(Y: np.ndarray, log_t: float) -> np.ndarray:
    r""":math:`\log(1 + e^{Y}) / t` without underflow: :math:`e^{Y - \log t}\,\phi(e^Y)` with
    :math:`\phi(x) = \log(1 + x)/x` for :math:`Y \le 0`, else :math:`\operatorname{softplus}(Y)/t`.

    >>> float(scaled_softplus(np.array([-1000.0]), -1000.0)[0])
    1.0
    """
    Y = np.asarray(Y, dtype=float)
    neg = Y <= 0
    x = np.exp(np.where(neg, Y, 0.0))
    big = x > LOG1P_SERIES_BELOW
    phi = np.where(big, np.log1p(x) / np.where(big, x, 1.0), 1.0 - 0.5 * x)
    small = np.exp(np.where(neg, Y - log_t, -np.inf)) * phi
    with np.errstate(over="ignore"):
        large = np.exp(np.log(np.logaddexp(0.0, np.where(neg, 1.0, Y))) - log_t)
    return np.where(neg, small, large)


@dataclass(frozen=True, eq=False)
class BlockForm:
    """The full-batch class-block data of a row problem (one row per class, every class of size
    ``>= 2``), which the dual Newton polish of :mod:`dgp.prototypes` exploits.

    Attributes
    ----------
    sizes : ndarray
        Class sizes :math:`n_c \\ge 2`.
    cross : ndarray, shape (K, K)
        :math:`P_{cd}` for ``d != c``: the target mass an anchor of class ``c`` puts on class
        ``d`` (zero diagonal).
    """

    sizes: np.ndarray
    cross: np.ndarray


class RowState:
    """Everything the value, gradient and Hessian of a row problem need at one ``M``."""

    __slots__ = ("D", "Mr", "Q", "Qs", "Y", "sp")

    def __init__(self, D, Mr, Q, Qs, Y, sp) -> None:
        self.D, self.Mr, self.Q, self.Qs, self.Y, self.sp = D, Mr, Q, Qs, Y, sp


class RowProblem:
    r"""A row problem (module docstring): ``K`` points, ``R`` weighted rows.

    Parameters
    ----------
    tau : float
        Temperature ``> 0``.
    anchor : array_like of int, shape (R,)
        The point whose row of ``M`` each row reads.
    alpha : array_like, shape (R,)
        Row weights ``> 0`` (nats of the loss per unit of ``ell_r``).
    log_mu : array_like, shape (R, K)
        :math:`\log\mu_{rd}`, ``-inf`` where row ``r`` has no candidate of point ``d``.
    target : array_like, shape (R, K)
        :math:`P_{rd} \ge 0`, each row summing to 1, zero where :math:`\mu_{rd} = 0`.
    block : BlockForm, optional
        Set by :func:`block_problem` for full-batch class-block weightings.

    Raises
    ------
    ValueError
        On inconsistent shapes, a negative or non-normalised target, target mass on a point the
        row cannot see, or a non-positive weight.
    """

    def __init__(
        self,
        *,
        tau: float,
        anchor: object,
        alpha: object,
        log_mu: object,
        target: object,
        block: BlockForm | None = None,
    ) -> None:
        self.tau = check_positive(tau, "tau")
        anchor = np.asarray(anchor, dtype=np.int64)
        alpha = np.asarray(alpha, dtype=float)
        log_mu = np.array(log_mu, dtype=float)
        P = np.array(target, dtype=float)
        if log_mu.ndim != 2 or P.shape != log_mu.shape or anchor.shape != (log_mu.shape[0],):
            raise ValueError("anchor, log_mu and target must have shapes (R,), (R, K), (R, K)")
        if alpha.shape != anchor.shape or not (np.isfinite(alpha) & (alpha > 0)).all():
            raise ValueError("alpha must hold one finite weight > 0 per row")
        R, K = log_mu.shape
        if K < 2 or R < 1 or (anchor < 0).any() or (anchor >= K).any():
            raise ValueError(f"need K >= 2 points and anchors in [0, {K}), got K = {K}")
        if (P < 0).any() or not np.allclose(P.sum(axis=1), 1.0, rtol=0, atol=PROBABILITY_ATOL):
            raise ValueError("target rows must be non-negative and sum to 1")
        if (P[np.isneginf(log_mu)] > 0).any():
            raise ValueError("target puts mass on a point the row has no candidate of")
        self.K, self.R = K, R
        self.anchor = anchor
        self.alpha = alpha
        self.alpha_total = float(alpha.sum())
        self.alpha_hat = alpha / self.alpha_total
        self.log_mu = log_mu
        self.P = P
        self.block = block
        rows = np.arange(R)
        own = P[rows, anchor] > 0
        self.ref = np.where(own, anchor, np.argmax(P, axis=1))
        self._rows = rows
        self._dense = R == K and bool((anchor == rows).all())
        lref = log_mu[rows, self.ref]
        self.log_mu_ref = lref
        lmr = log_mu - lref[:, None]
        lmr[rows, self.ref] = -np.inf
        self.lmr = lmr
        Pex = P.copy()
        Pex[rows, self.ref] = 0.0
        self.Pex = Pex
        # const_r - H_r = log mu_ref + sum_d P_d (log P_d - log mu_d): exactly 0 for rows whose
        # target is their reference alone (SupCon), so their excess keeps full relative accuracy
        pos = P > 0
        terms = np.zeros_like(P)
        terms[pos] = P[pos] * (np.log(P[pos]) - log_mu[pos])
        cme = lref + terms.sum(axis=1)
        cme[(Pex == 0).all(axis=1)] = 0.0
        self.const_minus_entropy = cme
        self.entropy = float(np.sum(alpha * (lref - cme)))  # sum_r alpha_r H_r
        self.excess_offset = float(np.sum(alpha * cme))
        # rows -> anchors: a diagonal scaling when every row is its own anchor
        self.agg = None if self._dense else sps.csr_matrix((self.alpha_hat, (anchor, rows)),
                                                           shape=(K, R))
        self.log_t = 0.0
        self.Pex_s = Pex

    def on_factor(self):
        """This problem on a factor of its Gram (:class:`~dgp.solver._rowfactor.RowFactor`, the
        factor-objective protocol of the rank-``r`` solvers), made once."""
        view = self.__dict__.get("_factor_view")
        if view is None:
            from dgp.solver._rowfactor import RowFactor  # the protocol stands on this module

            view = self._factor_view = RowFactor(self)
        return view

    # ------------------------------------------------------------------ evaluation
    def state(self, M: np.ndarray) -> RowState:
        """Per-row quantities at ``M`` (symmetric, unit diagonal)."""
        Mr = M if self._dense else M[self.anchor]
        D = Mr - Mr[self._rows, self.ref][:, None]
        U = D * (1.0 / self.tau)
        U += self.lmr  # -inf where absent and at the reference
        top = np.max(U, axis=1)
        top = np.where(np.isfinite(top), top, 0.0)
        U -= top[:, None]
        with np.errstate(under="ignore"):
            E = np.exp(U, out=U)
        total = E.sum(axis=1)
        with np.errstate(divide="ignore"):
            Y = top + np.log(total)
        sp = np.logaddexp(0.0, Y)
        with np.errstate(under="ignore", over="ignore", invalid="ignore"):  # checked below
            Qs = E * np.exp(top - sp - self.log_t)[:, None]  # Q / t
            Q = E
            Q *= np.exp(top - sp)[:, None]  # softmax mass of each point but the reference
        if not np.isfinite(Qs).all():
            raise ScaleOverflow(
                "the scaled objective overflowed (a cosine moved far from the starting point at "
                f"tau = {self.tau:g}); this is a failure of dgp's solver, please report it"
            )
        return RowState(D, Mr, Q, Qs, Y, sp)

    def set_scale(self, M: np.ndarray) -> float:
        """Fix :math:`\\log t` from the largest exponential and cross target at ``M``."""
        st = self.state(M)
        top = float(np.max(st.Y)) if np.isfinite(st.Y).any() else -np.inf
        lin = self.Pex[self.Pex > 0]
        if lin.size:
            top = max(top, float(np.log(lin.max())))
        self.log_t = min(0.0, top) if np.isfinite(top) else 0.0
        pos = self.Pex > 0  # P / t <= 1 by the choice of t: no overflow
        self.Pex_s = np.zeros_like(self.Pex)
        self.Pex_s[pos] = np.exp(np.log(self.Pex[pos]) - self.log_t)
        return self.log_t

    def value(self, st: RowState) -> float:
        """Scaled objective :math:`\\hat F` at a state."""
        v = -np.sum(self.Pex_s * st.D, axis=1) / self.tau + scaled_softplus(st.Y, self.log_t)
        return float(self.alpha_hat @ v)

    def _rows_to_matrix(self, rowvals: np.ndarray) -> np.ndarray:
        """Weighted sum of the rows of each anchor (their reference entry set to minus the row
        sum): the non-symmetric K x K derivative, whose diagonal is the derivative with respect
        to the anchor class's own (within-class) cosine."""
        rowvals[self._rows, self.ref] = 0.0
        rowvals[self._rows, self.ref] = -rowvals.sum(axis=1)
        if self.agg is None:
            return self.alpha_hat[:, None] * rowvals
        return np.asarray(self.agg @ rowvals)

    def _aggregate(self, rowvals: np.ndarray) -> np.ndarray:
        Rg = self._rows_to_matrix(rowvals)
        g = 0.5 * (Rg + Rg.T)
        np.fill_diagonal(g, 0.0)
        return g

    def within_gradient(self, st: RowState) -> np.ndarray:
        r""":math:`\partial\hat F/\partial a_c`: the scaled derivative with respect to the
        within-class cosine :math:`a_c` of each point, were its samples not collapsed."""
        Qs = st.Qs
        Rg = self._rows_to_matrix((Qs - self.Pex_s) / self.tau)
        return np.diag(Rg).copy()

    def gradient(self, st: RowState) -> np.ndarray:
        """Symmetric scaled gradient :math:`\\nabla\\hat F` (zero diagonal)."""
        Qs = st.Qs
        return self._aggregate((Qs - self.Pex_s) / self.tau)

    def gradient_parts(self, st: RowState) -> tuple[np.ndarray, np.ndarray]:
        """The exponential and the linear part of the scaled gradient (their difference is the
        gradient); their sizes scale the KKT residuals."""
        Qs = st.Qs
        return (
            self._aggregate(Qs / self.tau),
            self._aggregate(self.Pex_s / self.tau),
        )

    def term_scale(self, st: RowState) -> float:
        r"""The size of the scaled gradient's terms: the largest Frobenius norm of its
        exponential and linear parts, each taken before and after the symmetrisation (the
        diagonal left out). An asymmetric weighting may have the two rows of a pair cancel in
        the symmetric gradient (a directed cycle does at every :math:`M` with equal cosines):
        its symmetric parts then say nothing of the size of the terms, and a residual relative
        to them alone could never come below a tolerance."""
        sizes = []
        for part in (st.Qs / self.tau, self.Pex_s / self.tau):
            rows = self._rows_to_matrix(part)  # a new array: part is a temporary
            np.fill_diagonal(rows, 0.0)
            sizes += [float(np.linalg.norm(rows)), float(np.linalg.norm(0.5 * (rows + rows.T)))]
        return max(sizes)

    def hvp(self, st: RowState, Mdot: np.ndarray) -> np.ndarray:
        """Scaled Hessian of :math:`\\hat F` applied to a symmetric ``Mdot`` (zero diagonal)."""
        Qs = st.Qs
        Md = Mdot[self.anchor]
        Dd = Md - Md[self._rows, self.ref][:, None]
        inner = np.sum(st.Q * Dd, axis=1)
        return self._aggregate(Qs * (Dd - inner[:, None]) / self.tau**2)

    # ------------------------------------------------------------------ losses in nats
    def loss(self, M: np.ndarray) -> tuple[float, float, float]:
        """``(loss, excess, log_excess)`` in nats at ``M``: the loss :math:`F(M)`, its excess
        :math:`F - \\sum_r\\alpha_r H_r` over the entropic bound, and the natural log of the
        excess (finite even where the excess underflows)."""
        fh = self.value(self.state(M))
        if fh > 0:  # log(sum_r alpha_r v_r), finite even where the sum underflows
            log_var = math.log(self.alpha_total) + self.log_t + math.log(fh)
            var = math.exp(log_var) if log_var > -745 else 0.0
        else:
            var, log_var = self.alpha_total * fh * math.exp(self.log_t), -math.inf
        # the excess is >= 0 (Gibbs); clip the rounding of a bound-attaining point
        excess = max(0.0, self.excess_offset + var)
        if self.excess_offset == 0.0:
            log_excess = log_var
        else:
            log_excess = math.log(excess) if excess > 0 else -math.inf
        loss = float(np.sum(self.alpha * self.log_mu_ref)) + var
        return loss, excess, log_excess

    def row_losses(self, M: np.ndarray) -> np.ndarray:
        """Per-row losses :math:`\\ell_r(M)` in nats (for standard errors of averages)."""
        st = self.state(M)
        lin = -np.sum(self.Pex * st.D, axis=1) / self.tau
        return self.log_mu_ref + lin + st.sp


def block_problem(
    sizes: np.ndarray, weights: np.ndarray, *, tau: float
) -> RowProblem:
    r"""Full-batch row problem of a class-block weighting, every class collapsed to a point.

    ``weights[c, d]`` is the weight an anchor of class ``c`` gives each sample of class ``d``
    (``weights[c, c]``: each other sample of its own class). Row ``c`` has weight
    :math:`\alpha_c = n_c`, candidates :math:`\mu_{cd} = n_d - [c = d]` and target
    :math:`P_{cd} \propto \mu_{cd} w_{cd}`. A class whose anchors have no positive weight
    (isolated samples of a batch problem) has no row: its point is only a negative, as the
    full-batch loss drops anchors without positives.

    Raises
    ------
    ValueError
        If no class has a positive weight.
    """
    n = np.asarray(sizes, dtype=float)
    K = n.size
    mu = np.tile(n, (K, 1)) - np.eye(K)
    mass = mu * weights
    tot = mass.sum(axis=1)
    rows = np.flatnonzero(tot > 0)  # the classes whose anchors have positives
    if rows.size == 0:
        raise ValueError("no class has a positive weight: no anchor has a positive")
    P = mass[rows] / tot[rows, None]
    with np.errstate(divide="ignore"):
        log_mu = np.log(mu[rows])
    block = None
    if (n >= 2).all() and rows.size == K:
        cross = P.copy()
        np.fill_diagonal(cross, 0.0)
        block = BlockForm(sizes=n.astype(np.int64), cross=cross)
    return RowProblem(
        tau=tau, anchor=rows, alpha=n[rows], log_mu=log_mu, target=P, block=block
    )
