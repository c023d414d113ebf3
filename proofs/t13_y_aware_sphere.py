r"""Theorem (y-Aware sphere condition). Let labels :math:`y_i = m + R u_i` lie on a sphere of
radius ``R`` (any centre) spanning an affine space of dimension ``p``, :math:`N \ge d + p + 3`,
and :math:`w_{ij} = e^{-|y_i - y_j|^2/2\sigma^2}` with a cosine latent. Since
:math:`|y_i - y_j|^2 = 2R^2(1 - u_i\cdot u_j)`, the target at :math:`c = 1/\tau` is

.. math::

    G(1/\tau) = \rho\, UU^\top + (1 - \rho)\, 11^\top, \qquad \rho = \tau R^2 / \sigma^2,

so the bound is attained in :math:`\mathbb R^d` iff :math:`\tau R^2 \le \sigma^2` and
:math:`d \ge p + [\tau R^2 < \sigma^2]`; at :math:`\tau R^2 = \sigma^2` the optimum is the
labels' directions :math:`z_i = u_i` (up to rotation), rank ``p``. Labels on no sphere never
attain the bound (for such ``N``).

Checked symbolically (the distance identity on the sphere and the target at :math:`c = 1/\tau`)
and by properties at temperatures near :math:`\sigma^2/R^2`: verdicts of the dense engine
(weights built entry by entry) and of :func:`dgp.classify_objective` (structured) flip exactly
at :math:`\tau R^2 = \sigma^2`; there the embedding matches :math:`u` by orthogonal Procrustes
(scipy) and the loss of :math:`u` equals the bound (from the definition); off-sphere labels are
inconsistent.
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
    id="y-aware-sphere",
    statement="y-Aware (cosine) with labels on a sphere of radius R spanning p dimensions, "
    "N >= d+p+3: the bound is attained iff tau R^2 <= sigma^2 and d >= p + [tau R^2 < sigma^2]; "
    "at tau R^2 = sigma^2 the optimum is z_i = (y_i - m)/R. Off every sphere: never.",
    method="both",
)


def test_symbolic_sphere_target():
    """|y_i - y_j|^2 = 2R^2(1 - u_i.u_j) and tau(log w_ij + 1/tau) = rho u_i.u_j + 1 - rho."""
    R, sigma, tau = sp.symbols("R sigma tau", positive=True)
    m = sp.Matrix(sp.symbols("m0:3", real=True))
    t1, t2, f1, f2 = sp.symbols("t1 t2 f1 f2", real=True)

    def unit(t, f):
        return sp.Matrix([sp.cos(t) * sp.cos(f), sp.sin(t) * sp.cos(f), sp.sin(f)])

    u1, u2 = unit(t1, f1), unit(t2, f2)
    y1, y2 = m + R * u1, m + R * u2
    dist2 = (y1 - y2).dot(y1 - y2)
    dot = u1.dot(u2)
    assert sp.simplify(sp.trigsimp(dist2 - 2 * R**2 * (1 - dot))) == 0
    log_w = -2 * R**2 * (1 - dot) / (2 * sigma**2)
    rho = tau * R**2 / sigma**2
    assert sp.simplify(tau * (log_w + 1 / tau) - (rho * dot + 1 - rho)) == 0
    # at rho = 1 the target is the Gram matrix of the directions
    assert sp.simplify((rho * dot + 1 - rho).subs(sigma, R * sp.sqrt(tau)) - dot) == 0


@property_settings()
@given(
    case=st.integers(2, 3).flatmap(
        lambda p: ds.y_aware_near_critical(
            n=st.integers(2 * p + 4, 2 * p + 5), dim=p, centred=False
        )
    )
)
def test_property_flip_at_critical_temperature(case):
    """d = p: realizable iff tau R^2 = sigma^2; d = p + 1: iff tau R^2 <= sigma^2."""
    sph = case.params["sphere"]
    sigma = case.params["sigma"]
    Y, U = sph.labels, sph.directions
    p = Y.shape[1]
    tau = case.tau
    W = ref.gaussian_weights(Y, sigma)
    for dim, real in ((p, case.delta == 0), (p + 1, case.delta <= 0)):
        dense = classify(W, similarity="cosine", tau=tau, dim=dim)
        structured = dgp.classify_objective("y-aware", Y, sigma=sigma, tau=tau, dim=dim)
        for res in (dense, structured):
            assert res.verdict == ("realizable" if real else "inconsistent"), (
                dim,
                case.delta,
                res.reason,
            )
            if real:
                assert res.rank == (p if case.delta == 0 else p + 1)
                assert abs(res.c - 1.0 / tau) <= 1e-6 * (1.0 / tau)
    if case.delta == 0:
        X = classify(W, similarity="cosine", tau=tau, dim=p).embedding
        assert ref.procrustes_residual(X, U, translate=False) <= 1e-6
        B = ref.bound(W)
        assert abs(ref.loss(U, W, tau) - B) <= 1e-8 * max(1.0, B)


@property_settings()
@given(
    Y=st.integers(1, 2).flatmap(lambda p: ds.off_sphere_labels(n=st.integers(p + 5, 8), dim=p)),
    tau=ds.temperatures(0.05, 2.0),
    sigma_rel=st.floats(0.2, 2.0),
)
def test_property_off_sphere_inconsistent(Y, tau, sigma_rel):
    """Labels on no sphere (sigma relative to their diameter): inconsistent for N >= d + p + 3."""
    n, p = Y.shape
    diam = float(np.sqrt(((Y[:, None] - Y[None]) ** 2).sum(-1).max()))
    sigma = sigma_rel * diam
    W = ref.gaussian_weights(Y, sigma)
    if np.min(W[~np.eye(n, dtype=bool)]) < 1e-250:
        return  # weights underflow: not a positive weighting in floating point
    for dim in range(1, n - p - 2):
        res = classify(W, similarity="cosine", tau=tau, dim=dim)
        rv = ref.verdict(W, "cosine", tau, dim)
        if not rv.ambiguous:
            assert rv.verdict == "inconsistent", (dim, rv)
            assert res.verdict == "inconsistent", (dim, res.reason)
