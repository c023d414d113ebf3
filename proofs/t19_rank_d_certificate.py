r"""Theorem (certificates of a fixed-dimension optimum). Let :math:`F` be convex on the elliptope
:math:`\mathcal E_K`, ``G`` feasible (for instance :math:`X^\top X` with unit columns in
:math:`\mathbb R^d`), :math:`g = \nabla F(G)`, :math:`y = \operatorname{diag}(Gg)` and
:math:`S = g - \operatorname{Diag}(y)`. Then :math:`\langle S, G\rangle = 0`, and for every
feasible :math:`G'` and every vector :math:`u`,

.. math::

    F(G') \ge F(G) - \langle g, G\rangle + \sum_c u_c
        + K\,\lambda_{\min}(g - \operatorname{Diag}(u)),

in particular :math:`F^\star \ge F(G) + K\min(0, \lambda_{\min}(S))`. So :math:`S \succeq 0`
proves ``G`` globally optimal — in every dimension, whatever ``d`` — and otherwise the bound is a
certified lower bound on the convex optimum, hence on the optimum in :math:`\mathbb R^d`.

Proof: convexity gives :math:`F(G') \ge F(G) + \langle g, G' - G\rangle`;
:math:`\langle g, G'\rangle = \langle g - \operatorname{Diag}(u), G'\rangle + \sum u_c` (unit
diagonal) and :math:`\langle A, G'\rangle \ge \lambda_{\min}(A)\operatorname{tr}G'` for
:math:`G' \succeq 0` with :math:`\operatorname{tr}G' = K`; :math:`\langle S, G\rangle =
\operatorname{tr}(gG) - \sum_c y_c G_{cc} = 0`. Checked symbolically (the trace identity) and by
properties: on random weightings, the bounds the package reports (KKT gap bound and Frank–Wolfe
bound) never exceed the convex optimum of an independent conic program (cvxpy), and the
package's rank-``d`` optimum lies above that optimum and equals it when it reports a PSD dual.

For many classes (the factor path, :class:`dgp.solver.BlockFactor`) :math:`\lambda_{\min}(S)` is
not computed by an eigendecomposition but bounded below: if the Cholesky factorisation of
:math:`S + \mu I` runs to completion in floating point then :math:`\lambda_{\min}(S) \ge -\mu -
\delta` with :math:`\delta = (K+1)Ku\max_c(S_{cc} + \mu)/(1 - (K+1)u)` (Higham, Thm. 10.7: the
computed factor is exact for :math:`S + \mu I + \Delta`, :math:`|\Delta| \le \gamma_{K+1}
|R^\top||R|`, whose 2-norm is at most :math:`\gamma_{K+1}K\max_c(S_{cc} + \mu)`); the bound
above holds with that floor in place of :math:`\lambda_{\min}(S)`. Checked by properties: the
floor never exceeds ``numpy.linalg.eigvalsh``'s lowest eigenvalue, and the factor path's bound
never exceeds the certified free-dimension optimum.
"""

from __future__ import annotations

import warnings

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.optima import optimum
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.prototypes import supcon_prototypes
from dgp.solver import BlockFactor, block_problem, frank_wolfe_bound, row_certificate

THEOREM = Theorem(
    id="rank-d-certificate",
    statement="For feasible G with dual S = grad F - Diag(diag(G grad F)): <S, G> = 0 and "
    "min F >= F(G) + K min(0, lambda_min(S)) (and the Frank-Wolfe bound for any multipliers); "
    "S PSD proves G globally optimal in every dimension; a Cholesky factorisation of S + mu I "
    "that completes bounds lambda_min(S) below by -mu less its rounding allowance.",
    method="both",
)


def test_symbolic_trace_identity():
    """tr(S G) = 0 for symmetric unit-diagonal G and y = diag(G g)."""
    K = 3
    G = sp.Matrix(K, K, lambda i, j: 1 if i == j else sp.Symbol(f"G{min(i, j)}{max(i, j)}"))
    g = sp.Matrix(K, K, lambda i, j: 0 if i == j else sp.Symbol(f"g{min(i, j)}{max(i, j)}"))
    y = [(G * g)[c, c] for c in range(K)]
    S = g - sp.diag(*y)
    assert sp.expand((S * G).trace()) == 0


def _convex_optimum(W: np.ndarray, tau: float) -> float:
    """min of the loss over all Gram matrices by a generic conic program (cvxpy + Clarabel,
    exponential and PSD cones), its solution made exactly feasible and its loss evaluated from
    the definition: an upper estimate of the optimum, within about 1e-10 of it here."""
    import cvxpy as cp

    N = W.shape[0]
    P = W / W.sum(axis=1, keepdims=True)
    rows = np.repeat(np.arange(N), N - 1)
    cols = np.array([k for i in range(N) for k in range(N) if k != i])
    G = cp.Variable((N, N), symmetric=True)
    off = cp.reshape(G[rows, cols], (N, N - 1), order="C")
    obj = cp.sum(-cp.sum(cp.multiply(P[rows, cols].reshape(N, N - 1), off - 1.0), axis=1) / tau
                 + cp.log_sum_exp((off - 1.0) / tau, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        cp.Problem(cp.Minimize(obj), [G >> 0, cp.diag(G) == 1]).solve(solver="CLARABEL")
    lam, U = np.linalg.eigh(0.5 * (G.value + G.value.T))
    M = (U * np.clip(lam, 0.0, None)) @ U.T
    d = np.sqrt(np.diag(M))
    return ref.loss_from_gram(M / np.outer(d, d), W, tau)


@st.composite
def weightings(draw):
    n = draw(st.integers(4, 6))
    rng = np.random.default_rng(draw(ds.seeds()))
    Y = rng.standard_normal((n, 2))
    sigma = draw(st.floats(0.3, 1.5))
    W = np.exp(-((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1) / (2 * sigma**2))
    np.fill_diagonal(W, 0.0)
    return W


@property_settings()
@given(W=weightings(), tau=ds.temperatures(0.2, 1.0), d=st.integers(1, 3), seed=ds.seeds())
def test_property_bounds_never_exceed_the_convex_optimum(W, tau, d, seed):
    """At a random rank-d feasible point both reported lower bounds are <= min F."""
    N = W.shape[0]
    X = np.random.default_rng(seed).standard_normal((d, N))
    X /= np.linalg.norm(X, axis=0)
    G = X.T @ X
    prob = block_problem(np.ones(N), W, tau=tau)
    prob.set_scale(G)
    F = prob.loss(G)[0]
    assert abs(F - ref.loss_from_gram(G, W, tau)) <= 1e-9 * max(1.0, abs(F))
    cert = row_certificate(prob, G)
    star = _convex_optimum(W, tau)
    tol = 1e-7 * max(1.0, abs(star))
    assert F - cert.gap_bound <= star + tol
    assert frank_wolfe_bound(prob, G) <= star + tol
    assert abs(float(np.sum(G * (prob.gradient(prob.state(G)) - np.diag(cert.multipliers))))) \
        <= 1e-9 * max(1.0, cert.gradient_scale)


@property_settings()
@given(W=weightings(), tau=ds.temperatures(0.2, 1.0), d=st.integers(1, 3))
def test_property_rank_d_optimum_is_certified_when_the_dual_is_psd(W, tau, d):
    """The package's rank-d point lies above the convex optimum, its lower bound below it, and it
    equals the convex optimum when it reports a PSD dual."""
    opt = optimum(W, tau=tau, dim=d, starts=1)
    star = _convex_optimum(W, tau)
    tol = 1e-7 * max(1.0, abs(star))
    assert opt.lower_bound <= star + tol and star <= opt.loss + tol
    if opt.certified_global:
        assert abs(opt.loss - star) <= 1e-6 * max(1.0, abs(star))
    assert opt.rank <= d


@property_settings()
@given(K=st.integers(3, 30), d=st.integers(1, 4), tau=ds.temperatures(0.1, 1.0), seed=ds.seeds())
def test_property_cholesky_floor_bounds_the_dual_and_the_optimum(K, d, tau, seed):
    """The factor path's certified floor of lambda_min(S) is at most the exact lowest eigenvalue,
    and the bound built on it is at most the certified free-dimension SupCon optimum."""
    rng = np.random.default_rng(seed)
    n = rng.integers(2, 40, K)
    X = rng.standard_normal((d, K))
    X /= np.linalg.norm(X, axis=0)
    obj = BlockFactor(n, tau)
    obj.set_scale(X)
    prob = block_problem(n, np.eye(K), tau=tau)
    prob.set_scale(X.T @ X)
    exact = row_certificate(prob, X.T @ X).min_eig_dual
    floor, _ = obj.dual_min_eig(X, seed=seed)
    assert floor <= exact
    loss = obj.loss(X)[0]
    low = loss - K * max(0.0, -floor) * obj.gradient_scale(X) * obj.N * np.exp(obj.log_t)
    free = supcon_prototypes(n, tau=tau)
    free_low = free.loss - (0.0 if free.certificate is None else free.certificate.gap_bound)
    assert low <= free.loss + 1e-9 * abs(free.loss) and free_low <= free.loss
