r"""The full-batch class-block objective at the level of the factor, for many classes.

A rank-``d`` point :math:`G = X^\top X` of the collapsed SupCon / Soft SupCon problem is the
same row problem as :func:`~dgp.solver.block_problem` builds (row ``c``: anchor class ``c``,
weight :math:`\alpha_c = n_c`, candidates :math:`\mu_{cd} = n_d - [c = d]`), but its tables
are rank one in the class sizes, so nothing ``K x K`` has to be stored but the working
matrices of one point. With :math:`E_{cd} = e^{(G_{cd} - 1)/\tau - \log t}` (zero diagonal),
:math:`S_c = \sum_d n_d E_{cd}` and :math:`D_c = (n_c - 1) + t S_c`, the scaled objective of
:class:`~dgp.solver.RowProblem` is

.. math::

    \hat F = \sum_c \frac{n_c}{N}\Big(-\frac{\varepsilon\,(x_c^\top X n - N)}{Z_c\,t\,\tau}
        + \frac{\log(1 + t S_c/(n_c - 1))}{t}\Big),
    \qquad Z_c = (n_c - 1) + \varepsilon (N - n_c)

(:math:`\varepsilon = 0` for SupCon), and twice its gradient in ``G`` is the symmetric matrix

.. math::

    H_{cd} = \frac{n_c n_d E_{cd}}{N\tau}\Big(\frac1{D_c} + \frac1{D_d}\Big)
        - (b_c n_d + n_c b_d), \qquad b_c = \frac{n_c\,\varepsilon}{N Z_c t \tau},

so one evaluation is a Gram product, a few passes over one ``K x K`` buffer and one product
:math:`XH` (the linear part is :math:`O(dK)`); a Hessian-vector product needs one more buffer.
BLAS does the products; the elementwise passes run in blocks of rows (no other ``K x K``
temporary). The value and gradient agree with :class:`~dgp.solver.RowProblem`'s to rounding
(tested), so the certificates and stopping rules of :mod:`dgp.solver._rank` mean the same.
"""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse.linalg as spla
from scipy.linalg import lapack

from dgp.constants import (
    CHOLESKY_SHIFT_RTOL,
    DUAL_LANCZOS_RTOL,
    PRECONDITION_FLOOR,
    SCALE_FLOOR,
)
from dgp.resources import ROW_BLOCK_ELEMENTS, check_memory
from dgp.solver._program import ScaleOverflow, scaled_softplus

__all__ = ["BLOCK_FACTOR_BUFFERS", "BlockFactor"]

#: Lanczos vectors of the estimate of the dual's lowest eigenvalue (more converge in fewer
#: products of the ``K x K`` dual, each a pass over memory)
DUAL_LANCZOS_VECTORS = 40
#: ``K x K`` float64 buffers a :class:`BlockFactor` holds (the exponentials, twice the
#: gradient, the Hessian-vector product's work matrix)
BLOCK_FACTOR_BUFFERS = 3


class BlockFactor:
    r"""The class-block objective of sizes ``n`` at temperature ``tau`` (module docstring),
    evaluated at factors ``X`` (``d x K``, unit columns). The evaluation methods share the
    buffers: :meth:`evaluate` at a new point replaces the state of the previous one (the
    methods that need a state re-evaluate when it is stale).

    Parameters
    ----------
    sizes : array_like of int
        Class sizes, each ``>= 2``.
    tau : float
        Temperature ``> 0``.
    eps : float, optional
        Soft SupCon's cross-class weight (``None``: SupCon).
    """

    def __init__(self, sizes: object, tau: float, eps: float | None = None) -> None:
        n = np.asarray(sizes, dtype=float)
        self.K = K = n.size
        self.n, self.N, self.tau = n, float(n.sum()), float(tau)
        self.alpha_total = self.N
        self.log_nm1 = np.log(n - 1.0)
        self.eps = 0.0 if eps is None else float(eps)
        self.Z = (n - 1.0) + self.eps * (self.N - n)
        check_memory(BLOCK_FACTOR_BUFFERS * 8.0 * K * K,
                     what=f"the rank-d prototypes of K = {K} classes",
                     hint="use fewer classes")
        self.rows = max(1, ROW_BLOCK_ELEMENTS // K)
        self._E = np.empty((K, K))
        self._H = np.empty((K, K))
        self._W: np.ndarray | None = None
        self._at: np.ndarray | None = None
        self.log_t = 0.0

    def on_factor(self) -> BlockFactor:
        """Itself: a :class:`BlockFactor` is a factor objective
        (:class:`~dgp.solver._rowfactor.FactorObjective`)."""
        return self

    # ------------------------------------------------------------------ scale and losses
    def _blocks(self):
        for lo in range(0, self.K, self.rows):
            yield lo, min(lo + self.rows, self.K)

    def _exponentials(self, X: np.ndarray) -> np.ndarray:
        """``S_c`` at ``X``, with :math:`E` left in its buffer."""
        E = self._E
        np.matmul(X.T, X, out=E)
        shift = -1.0 / self.tau - self.log_t
        for lo, hi in self._blocks():
            blk = E[lo:hi]
            blk *= 1.0 / self.tau
            blk += shift
            blk[np.arange(hi - lo), np.arange(lo, hi)] = -np.inf
            with np.errstate(under="ignore", over="ignore"):
                np.exp(blk, out=blk)
        S = E @ self.n
        if not np.isfinite(S).all():
            raise ScaleOverflow(
                "the scaled objective overflowed (a cosine moved far from the starting point at "
                f"tau = {self.tau:g}); this is a failure of dgp's solver, please report it"
            )
        return S

    def _log_excess_rows(self, S: np.ndarray) -> np.ndarray:
        """:math:`Y_c = \\log(t S_c / (n_c - 1))`."""
        with np.errstate(divide="ignore"):
            return self.log_t + np.log(S) - self.log_nm1

    def set_scale(self, X: np.ndarray) -> float:
        """Fix :math:`\\log t` from the largest exponential and cross target at ``X``, as
        :meth:`dgp.solver.RowProblem.set_scale` does (each row's log-sum-exp shifted by its
        largest term: no underflow at any temperature)."""
        E = self._E
        np.matmul(X.T, X, out=E)
        Y = np.empty(self.K)
        for lo, hi in self._blocks():
            blk = E[lo:hi]
            blk -= 1.0
            blk *= 1.0 / self.tau
            blk += np.log(self.n)
            blk[np.arange(hi - lo), np.arange(lo, hi)] = -np.inf
            top = np.max(blk, axis=1)
            blk -= top[:, None]
            with np.errstate(under="ignore"):
                np.exp(blk, out=blk)
            Y[lo:hi] = top + np.log(np.sum(blk, axis=1)) - self.log_nm1[lo:hi]
        top = float(np.max(Y))
        if self.eps > 0:
            top = max(top, float(np.max(np.log(self.eps * self.n.max() / self.Z))))
        self.log_t = min(0.0, top) if np.isfinite(top) else 0.0
        self._at = None
        return self.log_t

    @property
    def entropy(self) -> float:
        """The entropic bound :math:`\\sum_c n_c H_c` in nats."""
        n, eps, Z = self.n, self.eps, self.Z
        H = -((n - 1.0) / Z) * np.log(1.0 / Z)
        if eps > 0:
            H = H - eps * (self.N - n) / Z * np.log(eps / Z)
        return float(n @ H)

    def loss(self, X: np.ndarray) -> tuple[float, float, float]:
        """``(loss, excess, log_excess)`` in nats at ``X``, as
        :meth:`dgp.solver.RowProblem.loss` (the excess of SupCon rows exact, finite logs)."""
        fh = self.evaluate(X)[0]
        log_var = math.log(self.N) + self.log_t + math.log(fh) if fh > 0 else -math.inf
        var = math.exp(log_var) if log_var > -745 else 0.0
        base = float(self.n @ self.log_nm1)
        loss = base + var
        if self.eps == 0:
            return loss, var, log_var
        excess = max(0.0, loss - self.entropy)
        return loss, excess, math.log(excess) if excess > 0 else -math.inf

    # ------------------------------------------------------------------ value and gradient
    def evaluate(self, X: np.ndarray) -> tuple[float, np.ndarray]:
        """The scaled objective and its Euclidean gradient :math:`2Xg` in ``X`` (unit
        columns); leaves the state of ``X`` in the buffers."""
        n, tau, N = self.n, self.tau, self.N
        S = self._exponentials(X)
        Y = self._log_excess_rows(S)
        D = (n - 1.0) + math.exp(self.log_t) * S
        u = 1.0 / D
        value = scaled_softplus(Y, self.log_t)
        H = self._H
        for lo, hi in self._blocks():
            h = H[lo:hi]
            np.multiply(self._E[lo:hi], n, out=h)
            h *= u[lo:hi, None] + u[None, :]
            h *= (n[lo:hi] / (N * tau))[:, None]
        Gam = X @ H
        if self.eps > 0:
            m = X @ n
            t = math.exp(self.log_t)
            b = n * self.eps / (N * self.Z * t * tau)
            value = value - (self.eps / (self.Z * t * tau)) * (m @ X - N)
            Gam -= np.outer(m, b) + np.outer(X @ b, n) - 2.0 * X * (b * n)
            self._b = b
        self._at, self._u, self._gam = X, u, Gam
        return float((n / N) @ value), Gam

    def _state(self, X: np.ndarray) -> None:
        if self._at is not X:
            self.evaluate(X)

    def gradient_scale(self, X: np.ndarray) -> float:
        r""":math:`\nu = \max(\|g_{\exp}\|, \|g_{\rm lin}\|)` at ``X``, the scale of the
        stopping rules (as :meth:`dgp.solver.RowProblem.gradient_parts`)."""
        self._state(X)
        H = self._H
        if self.eps > 0:  # H holds 2 g_exp alone; the linear part is rank two
            b, n = self._b, self.n
            lin = 0.25 * (2 * (b @ b) * (n @ n) + 2 * (b @ n) ** 2 - 4 * np.sum((b * n) ** 2))
        else:
            lin = 0.0
        ge = 0.5 * math.sqrt(float(np.vdot(H.ravel(), H.ravel())))
        return max(ge, math.sqrt(max(lin, 0.0)), SCALE_FLOOR)

    def column_curvature(self, X: np.ndarray) -> np.ndarray:
        """A curvature scale of each column at ``X``: the row sums of twice the exponential
        gradient over ``tau`` (the diagonal of the Hessian up to factors of order one), floored
        at a millionth of the largest so that no column's step is unbounded."""
        self._state(X)
        w = np.sum(self._H, axis=1) / self.tau
        return np.maximum(w, PRECONDITION_FLOOR * float(np.max(w)) + SCALE_FLOOR)

    def riemannian_gradient(self, X: np.ndarray) -> np.ndarray:
        """The Riemannian gradient at ``X``: the Euclidean one projected on the tangent space."""
        self._state(X)
        Gam = self._gam
        return Gam - X * np.sum(X * Gam, axis=0)

    def stationarity(self, X: np.ndarray) -> float:
        """:func:`dgp.solver.stationarity` of ``X`` (Riemannian gradient over the gradient
        scale)."""
        grad = self.riemannian_gradient(X)
        return float(np.linalg.norm(grad)) / self.gradient_scale(X)

    # ------------------------------------------------------------------ second order
    def hessian(self, X: np.ndarray):
        r"""The Riemannian Hessian at ``X`` as a map of tangent vectors (the map of
        :func:`dgp.solver.oblique_hessian`)."""
        self._state(X)
        if self._W is None:
            self._W = np.empty((self.K, self.K))
        n, tau, N, u = self.n, self.tau, self.N, self._u
        t = math.exp(self.log_t)
        two_y = np.sum(X * self._gam, axis=0)

        def hess(xi: np.ndarray) -> np.ndarray:
            self._state(X)
            W, E = self._W, self._E
            np.matmul(np.vstack([X, xi]).T, np.vstack([xi, X]), out=W)  # xi^T X + X^T xi
            inner = np.empty(self.K)
            for lo, hi in self._blocks():
                w = W[lo:hi]
                w[np.arange(hi - lo), np.arange(lo, hi)] = 0.0
                inner[lo:hi] = ((E[lo:hi] * w) @ n) * t * u[lo:hi]
            ui = u * inner
            for lo, hi in self._blocks():
                w = W[lo:hi]
                w *= u[lo:hi, None] + u[None, :]
                w -= ui[lo:hi, None] + ui[None, :]
                w *= E[lo:hi]
                w *= n
                w *= (n[lo:hi] / (N * tau * tau))[:, None]
            out = xi @ self._H + X @ W
            if self.eps > 0:
                b = self._b
                out -= np.outer(xi @ n, b) + np.outer(xi @ b, n) - 2.0 * xi * (b * n)
            out -= xi * two_y
            return out - X * np.sum(X * out, axis=0)

        return hess

    # ------------------------------------------------------------------ the dual bound
    def dual_min_eig(self, X: np.ndarray, seed: int = 0) -> tuple[float, float]:
        r"""A certified lower bound on :math:`\lambda_{\min}(S)/\nu`, with
        :math:`S = g - \operatorname{Diag}(\operatorname{diag}(Gg))` at ``X`` and the Lanczos
        estimate it was certified from: the bound :math:`-\mu` holds because the Cholesky
        factorisation of :math:`S + \mu I` succeeds, less its rounding allowance
        :math:`(K+1)K u\,\max_c (S_{cc} + \mu)/(1 - (K+1)u)` (Higham, *Accuracy and
        Stability*, Thm. 10.7 with :math:`\|\,|R^\top||R|\,\|_2 \le K \max_c a_{cc}`)."""
        self._state(X)
        K = self.K
        nu = self.gradient_scale(X)
        y = 0.5 * np.sum(X * self._gam, axis=0)  # diag(G g)
        if self._W is None:
            self._W = np.empty((K, K))
        S = self._W
        np.multiply(self._H, 0.5, out=S)
        if self.eps > 0:
            b, n = self._b, self.n
            for lo, hi in self._blocks():
                S[lo:hi] -= 0.5 * (np.outer(b[lo:hi], n) + np.outer(n[lo:hi], b))
        S[np.diag_indices(K)] = -y
        S /= nu
        op = spla.LinearOperator((K, K), matvec=lambda v: S @ v, dtype=float)
        v0 = np.random.default_rng(seed).standard_normal(K)
        try:
            est = float(spla.eigsh(op, k=1, which="SA", v0=v0, tol=DUAL_LANCZOS_RTOL,
                                   ncv=min(K, DUAL_LANCZOS_VECTORS),
                                   return_eigenvectors=False)[0])
        except spla.ArpackNoConvergence as exc:
            est = float(exc.eigenvalues[0]) if len(exc.eigenvalues) else 0.0
        diag = np.diag(S).copy()
        radius = np.concatenate([np.sum(np.abs(S[lo:hi]), axis=1) for lo, hi in self._blocks()])
        gersh = float(np.min(diag - (radius - np.abs(diag))))  # Gershgorin: a rigorous floor
        unit = np.finfo(float).eps / 2
        mu = max(0.0, -est) * (1.0 + CHOLESKY_SHIFT_RTOL) + CHOLESKY_SHIFT_RTOL
        while mu < -gersh:
            S[np.diag_indices(K)] = diag + mu
            allowance = (K + 1) * K * unit * float(np.max(diag + mu)) / (1 - (K + 1) * unit)
            _, info = lapack.dpotrf(S.T, lower=1, overwrite_a=1, clean=0)  # in place
            if info == 0:
                return -mu - allowance, est
            S[...] = 0.0  # restore S from the buffers for the next shift
            np.multiply(self._H, 0.5 / nu, out=S)
            if self.eps > 0:
                for lo, hi in self._blocks():
                    S[lo:hi] -= 0.5 * (np.outer(b[lo:hi], n) + np.outer(n[lo:hi], b)) / nu
            mu = 2.0 * mu + CHOLESKY_SHIFT_RTOL
        return min(gersh, 0.0), est
