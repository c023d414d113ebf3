r"""Theorem (X-CLR condition). X-CLR weights
:math:`w_{ij} = e^{\hat y_i\cdot\hat y_j/\tau_y}/Z_i` (row softmax, :math:`\hat y` the normalised
label embeddings) always satisfy the cycle condition (row offsets :math:`c_i = \log Z_i`), with
symmetric target :math:`\ell_{ij} = \hat y_i\cdot\hat y_j/\tau_y`. If the :math:`\hat y` span
:math:`\mathbb R^p` affinely and :math:`N \ge d + p + 3`, the bound is attained in
:math:`\mathbb R^d` iff :math:`\tau \le \tau_y` and :math:`d \ge p + [\tau < \tau_y]`; at
:math:`\tau = \tau_y` the optimum is :math:`z_i = \hat y_i` itself (rank ``p``).

Checked symbolically (the log-softmax splits into a symmetric part and a row offset; the target at
:math:`\tau = \tau_y` is :math:`\hat Y\hat Y^\top`) and by properties at temperatures near
:math:`\tau_y`: least-squares potentials fit the weights (built entry by entry) exactly, verdicts
of the dense and structured engines flip at :math:`\tau = \tau_y`, and there the embedding matches
:math:`\hat y` by orthogonal Procrustes and attains the bound.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import dgp
from dgp import strategies as ds
from dgp.classification import classify
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="xclr-condition",
    statement="X-CLR weights always satisfy the cycle condition with ell_ij = yh_i.yh_j/tau_y; "
    "for yh spanning R^p affinely and N >= d+p+3 the bound is attained iff tau <= tau_y and "
    "d >= p + [tau < tau_y]; at tau = tau_y the optimum is z = yh.",
    method="both",
)


def test_symbolic_softmax_offsets():
    """log w_ij = yh_i.yh_j / tau_y - log Z_i: log w_ij - log w_ji = c_j - c_i with c = log Z."""
    n = 3
    tau_y = sp.symbols("tau_y", positive=True)
    g = {}
    for i in range(n):
        for j in range(n):
            if i < j:
                g[i, j] = g[j, i] = sp.Symbol(f"g{i}{j}", real=True)
    Z = [sum(sp.exp(g[i, k] / tau_y) for k in range(n) if k != i) for i in range(n)]
    logw = {(i, j): sp.log(sp.exp(g[i, j] / tau_y) / Z[i]) for (i, j) in g}
    for i, j in g:
        lhs = sp.expand_log(logw[i, j] - logw[j, i], force=True)
        rhs = sp.log(Z[j]) - sp.log(Z[i])
        assert sp.simplify(lhs - rhs) == 0
    # target at tau = tau_y with c chosen to cancel the offsets: the Gram matrix of yh
    assert sp.simplify(tau_y * (g[0, 1] / tau_y)) == g[0, 1]


@property_settings()
@given(
    case=st.integers(2, 3).flatmap(
        lambda p: ds.xclr_near_critical(n=st.integers(2 * p + 4, 2 * p + 5), dim=p)
    )
)
def test_property_flip_at_label_temperature(case):
    """Cycle condition always; d = p: realizable iff tau = tau_y; d = p + 1: iff tau <= tau_y."""
    Y, tau_y = case.params["labels"], case.params["label_tau"]
    U = case.params["directions"]
    p = Y.shape[1]
    tau = case.tau
    W = ref.xclr_weights(Y, tau_y)
    _, resid = ref.potentials(W)
    assert resid <= 1e-9 * max(1.0, float(np.abs(np.log(W[W > 0])).max()))
    for dim, real in ((p, case.delta == 0), (p + 1, case.delta <= 0)):
        dense = classify(W, similarity="cosine", tau=tau, dim=dim)
        structured = dgp.classify_objective("x-clr", Y, label_tau=tau_y, tau=tau, dim=dim)
        for res in (dense, structured):
            assert res.verdict == ("realizable" if real else "inconsistent"), (
                dim,
                case.delta,
                res.reason,
            )
            if real:
                assert res.rank == (p if case.delta == 0 else p + 1)
    if case.delta == 0:
        X = classify(W, similarity="cosine", tau=tau, dim=p).embedding
        assert ref.procrustes_residual(X, U, translate=False) <= 1e-6
        B = ref.bound(W)
        assert abs(ref.loss(U, W, tau) - B) <= 1e-8 * max(1.0, B)
