r"""Theorem (Soft SupCon simplex condition). The collapsed Soft SupCon target is the centred
regular simplex exactly at

.. math::

    \tau^* = \frac{K}{(K-1)(-\log\varepsilon)},

independently of the class sizes. Hence in dimension :math:`d = K - 1` the verdict is realizable
only at :math:`\tau = \tau^*` (rank :math:`K-1`; the prototypes sum to zero), and in dimension
:math:`d = K` it is realizable iff :math:`\tau \le \tau^*` (rank ``K`` below, ``K-1`` at
:math:`\tau^*`), provided :math:`N \ge K + 2`. Above :math:`\tau^*` it is inconsistent.

Checked symbolically (solving :math:`1 + \tau\log\varepsilon = -1/(K-1)`; the equiangular Gram
at :math:`-1/(K-1)` has rank :math:`K-1` and zero row sums) and by properties at temperatures
near :math:`\tau^*` (exactly at it, and :math:`10^{-3}` to :math:`10^{-1}` relatively away on
either side) for balanced, long-tailed and size-2 classes: the verdicts of :func:`dgp.classify`
(dense) and :func:`dgp.classify_objective` (structured) flip exactly there, the package's
:math:`\tau^*` equals the sympy closed form, and at :math:`\tau^*` the embedding is the regular
simplex (Gram recomputed from the embedding).
"""

from __future__ import annotations

import importlib.util
import math

import numpy as np
import sympy as sp
from hypothesis import given

import dgp
from dgp import strategies as ds
from dgp.classification import classify
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="soft-supcon-simplex",
    statement="Soft SupCon's collapsed target is the centred regular simplex exactly at tau* = "
    "K/((K-1)(-log eps)), for any class sizes: realizable in d = K-1 only at tau*, in d = K iff "
    "tau <= tau* (N >= K+2).",
    method="both",
)

_tau, _eps, _K = sp.symbols("tau epsilon K", positive=True)
TAU_STAR = sp.solve(sp.Eq(1 + _tau * sp.log(_eps), -1 / (_K - 1)), _tau)[0]
_tau_star = sp.lambdify((_K, _eps), TAU_STAR, "math")


def test_symbolic_tau_star():
    """tau* = K / ((K-1)(-log eps)); the equiangular Gram at -1/(K-1) is the centred simplex."""
    assert sp.simplify(TAU_STAR - _K / ((_K - 1) * (-sp.log(_eps)))) == 0
    for K in (2, 3, 4, 5):
        M = sp.Matrix(K, K, lambda i, j, k=K: 1 if i == j else sp.Rational(-1, k - 1))
        assert M.rank() == K - 1
        assert all(sum(M.row(i)) == 0 for i in range(K))  # prototypes sum to zero
        assert all(ev >= 0 for ev in M.eigenvals())


@property_settings()
@given(case=ds.soft_supcon_near_critical())
def test_property_verdict_flips_at_tau_star(case):
    """d = K-1: realizable iff tau = tau*; d = K: iff tau <= tau* (dense and structured)."""
    sizes, eps = case.params["sizes"], case.params["eps"]
    K = len(sizes)
    tau_star = _tau_star(K, eps)
    assert abs(case.tau_critical - tau_star) <= 1e-12 * case.tau_critical
    if importlib.util.find_spec("dgp.prototypes") is not None:
        from dgp.prototypes import soft_supcon_tau_star

        assert abs(soft_supcon_tau_star(K=K, eps=eps) - tau_star) <= 1e-12 * tau_star
    labels = np.repeat(np.arange(K), sizes)
    W = ref.class_weights(labels, eps)
    tau = case.tau if case.delta != 0 else tau_star
    for dim, expect_real in ((K - 1, case.delta == 0), (K, case.delta <= 0)):
        dense = classify(W, similarity="cosine", tau=tau, dim=dim)
        structured = dgp.classify_objective("soft-supcon", labels, eps=eps, tau=tau, dim=dim)
        for res in (dense, structured):
            assert res.verdict == ("realizable" if expect_real else "inconsistent"), (
                dim,
                case.delta,
                res.reason,
            )
            if expect_real:
                assert res.rank == (K - 1 if case.delta == 0 else K)
    if case.delta == 0:
        res = classify(W, similarity="cosine", tau=tau, dim=K - 1)
        X = res.embedding
        G = X @ X.T
        same = labels[:, None] == labels[None, :]
        assert np.allclose(G[same], 1.0, atol=1e-7)
        assert np.allclose(G[~same], -1.0 / (K - 1), atol=1e-7)
        first = [int(np.flatnonzero(labels == k)[0]) for k in range(K)]
        assert np.allclose(X[first].sum(axis=0), 0.0, atol=1e-7)  # centred simplex
        assert abs(1.0 + tau * math.log(eps) + 1.0 / (K - 1)) <= 1e-12
