r"""Theorem (Euclidean target family). For a weighting satisfying the cycle condition with
positive weights, the Euclidean targets :math:`D(c)_{ij} = -2\tau(\ell_{ij} + c)` satisfy

.. math::

    -\tfrac12 J D(c) J = -\tfrac12 J D(0) J - \tau c\, J, \qquad J = I - \tfrac1N 11^\top,

so every eigenvalue of the Schoenberg matrix on :math:`1^\perp` moves by :math:`-\tau c`.
Hence :math:`D(c)` is an EDM (Schoenberg) iff :math:`c \le c_{\max} = \lambda_{\min}/\tau`,
:math:`\lambda_{\min}` the smallest eigenvalue of :math:`-\tfrac12 J D(0) J` on
:math:`1^\perp`; below :math:`c_{\max}` the rank is :math:`N - 1`, at :math:`c_{\max}` it drops
by the multiplicity of :math:`\lambda_{\min}`.

Checked symbolically (:math:`J(11^\top - I)J = -J` and the shift identity with symbolic
:math:`\ell`) and by properties: the half-line and end-point rank of :func:`dgp.classify`
(tridiagonal engine) agree with dense ``eigvalsh`` of explicitly double-centred :math:`D(c)`,
and the EDM property flips exactly at :math:`c_{\max}`.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.classification import classify
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="euclidean-target-family",
    statement="-1/2 J D(c) J = -1/2 J D(0) J - tau c J, so D(c) is an EDM iff c <= c_max = "
    "lambda_min(-1/2 J D(0) J on 1-perp)/tau; rank N-1 below c_max, lower at c_max.",
    method="both",
)


def test_symbolic_shift_identity():
    """J (11^T - I) J = -J, and -1/2 J D(c) J + 1/2 J D(0) J = -tau c J for symbolic ell."""
    tau, c = sp.symbols("tau c", positive=True)
    for n in (3, 4):
        J = sp.eye(n) - sp.ones(n, n) / n
        E = sp.ones(n, n) - sp.eye(n)
        assert sp.simplify(J * E * J + J) == sp.zeros(n, n)
        ell = sp.Matrix(n, n, lambda i, j: 0 if i == j else sp.Symbol(f"l{min(i, j)}{max(i, j)}"))

        def D(cc, ell=ell, n=n):
            return sp.Matrix(n, n, lambda i, j: 0 if i == j else -2 * tau * (ell[i, j] + cc))

        diff = -J * D(c) * J / 2 + J * D(0) * J / 2
        assert sp.simplify(diff + tau * c * J) == sp.zeros(n, n)


@property_settings()
@given(
    W=st.one_of(ds.symmetric_weights(log_range=2.0), ds.symmetrizable_weights(log_range=2.0)),
    tau=ds.temperatures(0.05, 2.0),
)
def test_property_half_line_matches_dense(W, tau):
    """c_max and the end-point rank of classify against dense Schoenberg spectra."""
    n = W.shape[0]
    res = classify(W, similarity="euclidean", tau=tau, dim=n)
    ell = ref.log_target(W)
    c_ref = ref.euclidean_c_max(ell, tau)
    lo, hi = res.c_interval
    assert lo is None
    assert abs(hi - c_ref) <= 1e-8 * max(1.0, abs(c_ref))
    spec = ref.schoenberg_spectrum(ref.edm(ell, tau, hi))
    scale = max(1.0, float(np.abs(spec).max()))
    assert spec[0] >= -1e-8 * scale  # an EDM at c_max
    delta = 1e-5 * max(1.0, abs(hi))
    assert ref.schoenberg_spectrum(ref.edm(ell, tau, hi + delta))[0] < 0  # not beyond
    below = ref.schoenberg_spectrum(ref.edm(ell, tau, hi - 1.0))
    assert below[0] > 0  # strictly inside: rank N - 1
    # the shift: eigenvalues on 1-perp move by exactly -tau * c
    s0 = ref.schoenberg_spectrum(ref.edm(ell, tau, 0.0))
    s1 = ref.schoenberg_spectrum(ref.edm(ell, tau, 0.7))
    assert np.allclose(s1, s0 - 0.7 * tau, atol=1e-9 * max(1.0, float(np.abs(s0).max())))
    cert = res.certificate
    # rank at c_max: eigenvalues of the Schoenberg matrix relative to its spectral norm at c = 0
    r = ref.euclidean_end_rank(ell, tau)
    if not r.ambiguous:
        assert cert.rank_at_c_max == r.rank, (cert, s0)
        assert cert.rank_at_c_max + cert.zeros_at_c_max == n - 1


@property_settings()
@given(
    n=st.integers(3, 7),
    w=st.floats(0.01, 100.0),
    tau=ds.temperatures(0.05, 2.0),
    dim=st.integers(1, 5),
)
def test_property_uniform_weights_collapse(n, w, tau, dim):
    """Uniform weights: D(c) is a regular simplex of squared edge -2 tau (log w + c), so
    c_max = -log w, where every point coincides (rank 0): realizable in every dim < N - 1."""
    W = np.full((n, n), w)
    np.fill_diagonal(W, 0.0)
    res = classify(W, similarity="euclidean", tau=tau, dim=dim)
    assert abs(res.c_interval[1] + np.log(w)) <= 1e-9 * max(1.0, abs(np.log(w)))
    assert res.certificate.rank_at_c_max == 0
    assert res.verdict == ("degenerate" if dim >= n - 1 else "realizable")
