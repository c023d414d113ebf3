r"""Theorem (cycle condition, Kolmogorov's criterion). For positive weights the system
:math:`\log w_{ij} + c_i = \log w_{ji} + c_j` (a symmetric target) is solvable iff every cycle
has :math:`\prod w_{ij} = \prod w_{ji}`; then :math:`\ell_{ij} = \log w_{ij} + c_i` is symmetric
and unique up to one global constant. On the complete graph it suffices to check the triangles.
Symmetrizable weights :math:`W = \operatorname{diag}(a) S` (``S`` symmetric) are exactly those
that pass, with :math:`\ell = \log S` up to a constant.

Checked symbolically (a row rescaling cancels around every cycle; the potentials
:math:`c_i = -\log a_i` symmetrise) and by properties: ``dgp.target.log_target`` accepts every
row-rescaled symmetric matrix and recovers :math:`\log S` up to a constant (compared with a
least-squares fit over all pairs), rejects every matrix with a broken triangle, and reports a
cycle whose log-ratio equals the product of its weights recomputed from ``W``.
"""

from __future__ import annotations

import itertools

import numpy as np
import sympy as sp
from hypothesis import given

from dgp import strategies as ds
from dgp.classification import classify
from dgp.engine.target import log_target, log_weights
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.tolerance import DEFAULT_RTOL, Tolerance

THEOREM = Theorem(
    id="cycle-condition",
    statement="A symmetric target log w_ij + c_i exists iff every cycle has prod w_ij = prod "
    "w_ji (triangles suffice); it is then unique up to a global constant, and equals log S for "
    "W = diag(a) S with S symmetric.",
    method="both",
)


def _symmetrizable(n: int):
    a = sp.symbols(f"a0:{n}", positive=True)
    s = {}
    for i, j in itertools.combinations(range(n), 2):
        s[i, j] = s[j, i] = sp.Symbol(f"s{i}{j}", positive=True)
    w = {(i, j): a[i] * s[i, j] for i in range(n) for j in range(n) if i != j}
    return a, s, w


def test_symbolic_row_rescaling_cancels_on_cycles():
    """For W = diag(a) S every cycle of length 3 and 4 has product ratio exactly 1."""
    n = 4
    _, _, w = _symmetrizable(n)
    for k in (3, 4):
        for cyc in itertools.permutations(range(n), k):
            fwd = sp.Mul(*(w[cyc[t], cyc[(t + 1) % k]] for t in range(k)))
            rev = sp.Mul(*(w[cyc[(t + 1) % k], cyc[t]] for t in range(k)))
            assert sp.simplify(fwd / rev) == 1


def test_symbolic_potentials_symmetrise():
    """c_i = -log a_i gives log w_ij + c_i = log s_ij, symmetric; and the triangle residual of
    the root-0 potentials c_j = log w_0j - log w_j0 is the log product ratio of 0 -> i -> j."""
    n = 3
    a, s, w = _symmetrizable(n)
    for i, j in itertools.permutations(range(n), 2):
        ell = sp.expand_log(sp.log(w[i, j]) - sp.log(a[i]), force=True)
        assert sp.simplify(ell - sp.log(s[i, j])) == 0
    # general positive weights: residual of the rooted potentials equals a triangle log-ratio
    W = {
        (i, j): sp.Symbol(f"w{i}{j}", positive=True) for i, j in itertools.permutations(range(3), 2)
    }
    L = {k: sp.log(v) for k, v in W.items()}
    c = {0: 0, 1: L[0, 1] - L[1, 0], 2: L[0, 2] - L[2, 0]}
    resid = L[1, 2] - L[2, 1] - (c[2] - c[1])
    ratio = sp.log(W[0, 1] * W[1, 2] * W[2, 0] / (W[1, 0] * W[2, 1] * W[0, 2]))
    assert sp.simplify(sp.expand_log(resid - ratio, force=True)) == 0


@property_settings()
@given(W=ds.symmetrizable_weights())
def test_property_symmetrizable_accepted(W):
    """Row-rescaled symmetric weights pass; ell is symmetric, ell - log W is constant along each
    row, and ell agrees with the least-squares potentials over all pairs."""
    lw = log_weights(W)
    tgt = log_target(lw, Tolerance.make(DEFAULT_RTOL, n=W.shape[0]))
    assert tgt.consistent and tgt.cycle is None
    n = W.shape[0]
    ell = tgt.ell + lw.shift  # the canonical target, back in the convention of W
    assert np.allclose(ell, ell.T, atol=0, rtol=0)
    off = ~np.eye(n, dtype=bool)
    logW = np.log(np.where(off, W, 1.0))
    row_const = np.where(off, ell - logW, np.nan)
    spread = np.nanmax(row_const, axis=1) - np.nanmin(row_const, axis=1)
    assert spread.max() <= 1e-9 * max(1.0, float(np.abs(logW).max()))
    ell_ref = ref.log_target(W)
    assert np.allclose(ell[off], ell_ref[off], atol=1e-9 * max(1.0, float(np.abs(logW).max())))


@property_settings()
@given(W=ds.cycle_breaking_weights())
def test_property_broken_cycle_rejected(W):
    """A broken triangle is detected; the reported cycle's log-ratio is the one of W, and it is
    the largest triangle log-ratio through vertex 0 (all triangles recomputed from W)."""
    tgt = log_target(log_weights(W), Tolerance.make(DEFAULT_RTOL, n=W.shape[0]))
    assert not tgt.consistent
    i0, i, j = tgt.cycle
    assert i0 == 0
    recomputed = ref.triangle_log_ratio(W, 0, i, j)
    assert abs(recomputed - tgt.cycle_log_ratio) <= 1e-9 * max(1.0, abs(recomputed))
    n = W.shape[0]
    through_0 = [
        abs(ref.triangle_log_ratio(W, 0, a, b)) for a in range(1, n) for b in range(1, n) if a != b
    ]
    assert abs(abs(recomputed) - max(through_0)) <= 1e-9 * max(1.0, max(through_0))
    assert max(through_0) >= 0.1 - 1e-12  # the strategy breaks a triangle by >= 0.1
    _, resid = ref.potentials(W)
    assert resid > 1e-3  # no potentials fit: independent confirmation
    res = classify(W, tau=0.5, dim=W.shape[0])
    assert res.verdict == "inconsistent" and res.certificate.kind == "cycle"
