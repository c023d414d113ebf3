r"""The expected batch loss of sample-level batches, exactly: the mean over every ``B``-subset.

Uniform batches without replacement of ``n`` distinct samples are the :math:`C = \binom{n}{B}`
subsets, each with probability :math:`1/C`; the expected batch loss is their mean, a finite sum
evaluated here for all subsets at once (arrays of shape ``(C, B, B)``), with the batch loss of
:func:`dgp.solver.batch_loss` (one composition of ``B`` distinct points). It is minimised in
``R^d`` by L-BFGS on the product of spheres from several starts, and certified twice from the
point alone:

* first order: the norm of the Riemannian gradient, relative to the gradient's scale;
* a lower bound on the convex problem over all ``n x n`` Gram matrices (so on every dimension):
  the expectation is convex in the Gram matrix (each batch's loss is, in its own block), and
  with :math:`C_G` its gradient and :math:`S = C_G - \operatorname{Diag}(\operatorname{diag}
  (C_G G))`, :math:`F^\star \ge F(G) + n\,\lambda_{\min}(S)` (theorem ``rank-d-certificate``).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from dgp.solver._batch import BatchSpec
from dgp.solver._sphere_lbfgs import sphere_lbfgs

__all__ = ["FINITE_MAX_ENTRIES", "FiniteBatches", "FiniteSolution", "all_subsets",
           "finite_batches", "solve_finite"]

#: largest number of ``(subset, row, column)`` entries the exact sum holds per array
FINITE_MAX_ENTRIES = 30_000_000


def all_subsets(n: int, B: int) -> np.ndarray:
    """Every ``B``-subset of ``range(n)`` as a ``(C, B)`` array, in lexicographic order."""
    C = math.comb(n, B)
    out = np.fromiter(itertools.chain.from_iterable(itertools.combinations(range(n), B)),
                      dtype=np.int64, count=C * B)
    return out.reshape(C, B)


@dataclass(frozen=True, eq=False)
class FiniteBatches:
    """Every batch of a sample-level weighting with its log-weights (``L[c]``: the ``B x B``
    block of subset ``c``, diagonal ``-inf``) and the target rows (``P``, ``has``) that do not
    depend on the embedding."""

    n: int
    subsets: np.ndarray
    P: np.ndarray
    has: np.ndarray
    rho: np.ndarray
    tau: float

    @property
    def count(self) -> int:
        return int(self.subsets.shape[0])

    @cached_property
    def scatter(self):
        """The ``n x (C B)`` 0/1 matrix that adds each batch row's value to its sample."""
        import scipy.sparse as sp

        idx = self.subsets.ravel()
        return sp.csr_matrix((np.ones(idx.size), (idx, np.arange(idx.size))),
                             shape=(self.n, idx.size))

    def value_grad(self, Z: np.ndarray, *, gradient: bool = True):
        """The expected batch loss at unit rows ``Z`` and its Euclidean gradient (``None`` when
        not asked), with the derivative with respect to each batch's Gram (``Gam``, for the
        certificate)."""
        Zb = Z[self.subsets]  # (C, B, d)
        G = np.matmul(Zb, Zb.transpose(0, 2, 1))
        B = G.shape[1]
        diag = np.arange(B)
        S = G / self.tau
        S[:, diag, diag] = -np.inf
        top = S.max(axis=2)
        E = np.exp(S - top[:, :, None])
        tot = E.sum(axis=2)
        lse = top + np.log(tot)
        lin = np.einsum("cij,cij->ci", self.P, G) / self.tau
        w = self.rho[:, None] * self.has
        F = float(np.sum(w * (lse - lin)) / self.count)
        if not gradient:
            return F, None, None
        Gam = (w / self.tau)[:, :, None] * (E / tot[:, :, None] - self.P)
        Gam[:, diag, diag] = 0.0
        gZb = np.matmul(Gam + Gam.transpose(0, 2, 1), Zb)
        grad = self.scatter @ gZb.reshape(-1, Z.shape[1])
        return F, grad / self.count, Gam

    def gram_gradient(self, Gam: np.ndarray) -> np.ndarray:
        """The symmetric derivative of the expectation with respect to the ``n x n`` Gram."""
        out = np.zeros((self.n, self.n))
        rows = np.repeat(self.subsets, self.subsets.shape[1], axis=1).ravel()
        cols = np.tile(self.subsets, (1, self.subsets.shape[1])).ravel()
        np.add.at(out, (rows, cols), Gam.ravel())
        out /= self.count
        return 0.5 * (out + out.T)


def finite_batches(log_weights: np.ndarray, batch_size: int, spec: BatchSpec, *,
                   tau: float) -> FiniteBatches:
    """Every batch of ``batch_size`` of the ``n`` samples of dense ``log_weights`` (``n x n``,
    ``-inf`` for a zero weight; the diagonal ignored)."""
    n = log_weights.shape[0]
    sub = all_subsets(n, batch_size)
    L = log_weights[sub[:, :, None], sub[:, None, :]].copy()
    d = np.arange(batch_size)
    L[:, d, d] = -np.inf
    top = L.max(axis=2)
    has = np.isfinite(top)
    P = np.zeros_like(L)
    P[has] = np.exp(L[has] - top[has][:, None])
    P /= np.maximum(P.sum(axis=2, keepdims=True), np.finfo(float).tiny)
    if spec.reduction == "sum":
        rho = np.ones(sub.shape[0])
    elif spec.anchors_without_positives == "zero":
        rho = np.full(sub.shape[0], 1.0 / batch_size)
    else:
        A = has.sum(axis=1)
        rho = np.divide(1.0, A, out=np.zeros(sub.shape[0]), where=A > 0)
    return FiniteBatches(n, sub, P, has.astype(float), rho, tau)


@dataclass(frozen=True, eq=False)
class FiniteSolution:
    """The best rank-``d`` point over the starts, with its certificates.

    Attributes
    ----------
    embedding : ndarray, shape (n, d)
    loss : float
        The exact expected batch loss at ``embedding``.
    lower_bound : float
        Certified lower bound on the minimum over all Gram matrices (every dimension).
    gradient_norm : float
        Riemannian gradient over the gradient's scale (first-order residual).
    losses : tuple of float
        The loss reached from each start, in the order of the starts.
    embeddings : tuple of ndarray
        The point reached from each start.
    iterations : int
        L-BFGS iterations of the best start.
    """

    embedding: np.ndarray
    loss: float
    lower_bound: float
    gradient_norm: float
    losses: tuple[float, ...]
    embeddings: tuple[np.ndarray, ...]
    iterations: int


def _descend(fb: FiniteBatches, X0: np.ndarray, maxiter: int):
    return sphere_lbfgs(lambda Z: fb.value_grad(Z)[:2], X0, maxiter=maxiter, gtol=1e-13,
                        ftol=1e-16, maxcor=30)


def solve_finite(fb: FiniteBatches, dim: int, *, starts: list[np.ndarray], n_random: int,
                 seed: int, maxiter: int = 3000) -> FiniteSolution:
    """Minimise the exact expectation over unit rows in ``R^dim`` from the given ``starts``
    (``n x dim``) and ``n_random`` seeded random ones (start ``i`` from
    ``default_rng([seed, 7, i])``, so a larger budget only adds candidates)."""
    pool = [np.asarray(s, dtype=float) for s in starts]
    for i in range(n_random):
        X = np.random.default_rng([seed, 7, i]).standard_normal((fb.n, dim))
        pool.append(X / np.linalg.norm(X, axis=1, keepdims=True))
    out = [_descend(fb, X0, maxiter) for X0 in pool]
    losses = [fb.value_grad(Z, gradient=False)[0] for Z, _ in out]
    k = int(np.argmin(losses))
    Z, nit = out[k]
    F, g, Gam = fb.value_grad(Z)
    rg = g - np.sum(g * Z, axis=1, keepdims=True) * Z
    scale = max(float(np.linalg.norm(g)), np.finfo(float).tiny)
    lower = _dual_bound(fb, Z, F, Gam)
    if dim < fb.n:  # the free problem (rank n) from the best point: a tighter bound
        pad = 1e-2 * np.random.default_rng([seed, 8]).standard_normal((fb.n, fb.n - dim))
        Zf, _ = _descend(fb, np.hstack([Z, pad]), maxiter)
        Ff, _, Gf = fb.value_grad(Zf)
        lower = max(lower, min(_dual_bound(fb, Zf, Ff, Gf), F))
    return FiniteSolution(Z, F, lower, float(np.linalg.norm(rg)) / scale,
                          tuple(losses), tuple(z for z, _ in out), nit)


def _dual_bound(fb: FiniteBatches, Z: np.ndarray, F: float, Gam: np.ndarray) -> float:
    r""":math:`F(G) + n\lambda_{\min}(S)` at ``G = Z Z^T`` (module docstring)."""
    Cg = fb.gram_gradient(Gam)
    G = Z @ Z.T
    S = Cg - np.diag(np.einsum("ij,ji->i", Cg, G))
    return min(F, F + fb.n * min(0.0, float(np.linalg.eigvalsh(S)[0])))
