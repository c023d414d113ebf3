r"""Theorem (Euclidean–Euclidean uniqueness). With the Gaussian label kernel
:math:`w_{ij} = e^{-|y_i - y_j|^2/2\sigma^2}` and a Euclidean latent, :math:`\ell = \log W` and

.. math::

    D(c)_{ij} = \frac{\tau}{\sigma^2}|y_i - y_j|^2 - 2\tau c\,(1 - \delta_{ij}),

so :math:`D(0)` is the distance matrix of :math:`(\sqrt\tau/\sigma)\,y` and, by the shift
identity of the Euclidean family, :math:`c_{\max} = 0` whenever the labels' affine dimension
``m`` is below :math:`N - 1`. For :math:`m \le d < N - 1` the optimum is unique:
:math:`z = (\sqrt\tau/\sigma)\,y` up to a rigid motion, with zero entropic gap — for any labels,
on a sphere or not. For :math:`d \ge N - 1` it is degenerate.

Checked symbolically (the target at ``c = 0``) and by properties on labels on and off spheres:
the dense and structured engines report ``c_max = 0``, rank ``m``; the embedding matches
:math:`(\sqrt\tau/\sigma) y` by Procrustes with translation (scipy); the loss of
:math:`(\sqrt\tau/\sigma) y` equals the bound (from the definition) and ``dgp.metrics``'s entropic
gap vanishes there.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import dgp
from dgp import strategies as ds
from dgp.classification import classify
from dgp.metrics import entropic_gap
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="euclid-euclid-uniqueness",
    statement="Gaussian label kernel with a Euclidean latent: c_max = 0 and, for "
    "affine-dim(y) <= d < N-1, the unique optimum is z = (sqrt(tau)/sigma) y up to rigid motion, "
    "with zero entropic gap; degenerate for d >= N-1.",
    method="both",
)


def test_symbolic_target_at_zero():
    """-2 tau (log w_ij + 0) = (tau/sigma^2)|y_i - y_j|^2 = |sqrt(tau)/sigma (y_i - y_j)|^2."""
    tau, sigma = sp.symbols("tau sigma", positive=True)
    y = sp.Matrix(sp.symbols("a0:3", real=True)) - sp.Matrix(sp.symbols("b0:3", real=True))
    d2 = y.dot(y)
    log_w = -d2 / (2 * sigma**2)
    scaled = (sp.sqrt(tau) / sigma) * y
    assert sp.simplify(-2 * tau * log_w - scaled.dot(scaled)) == 0


_labels = st.one_of(
    st.integers(1, 3).flatmap(lambda p: ds.off_sphere_labels(n=st.integers(p + 3, 8), dim=p)),
    st.integers(2, 3).flatmap(
        lambda p: ds.sphere_labels(n=st.integers(p + 2, 8), dim=p).map(lambda s: s.labels)
    ),
)


@property_settings()
@given(Y=_labels, tau=ds.temperatures(0.05, 2.0), sigma=st.floats(0.5, 5.0))
def test_property_unique_scaled_labels(Y, tau, sigma):
    """Realizable at c = 0 with z = (sqrt(tau)/sigma) y; zero gap; degenerate for d >= N - 1."""
    n = Y.shape[0]
    W = ref.gaussian_weights(Y, sigma)
    if np.min(W[~np.eye(n, dtype=bool)]) < 1e-250:
        return  # weights underflow: not a positive weighting in floating point
    m = int(np.linalg.matrix_rank(Y - Y.mean(axis=0), tol=1e-9 * max(1.0, np.abs(Y).max())))
    Zstar = (math.sqrt(tau) / sigma) * Y
    B = ref.bound(W)
    assert abs(ref.loss(Zstar, W, tau, "euclidean") - B) <= 1e-8 * max(1.0, B)
    assert abs(entropic_gap(Zstar, W, tau=tau, similarity="euclidean")) <= 1e-8 * max(1.0, B)
    for dim in sorted({m, n - 2}):
        dense = classify(W, similarity="euclidean", tau=tau, dim=dim)
        structured = dgp.classify_objective(
            "euclid-euclid", Y, sigma=sigma, tau=tau, dim=dim, embed=True
        )
        for res in (dense, structured):
            assert res.verdict == "realizable", (dim, res.reason)
            assert res.rank == m
            assert abs(res.c_interval[1]) <= 1e-7 * max(1.0, float(np.abs(np.log(W[W > 0])).max()))
            assert res.embedding is not None
            assert ref.procrustes_residual(res.embedding, Zstar) <= 1e-6
    res = classify(W, similarity="euclidean", tau=tau, dim=n - 1)
    assert res.verdict == "degenerate"
