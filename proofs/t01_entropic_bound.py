r"""Theorem (entropic bound). For every weighting ``W`` (non-negative, positive row mass), every
temperature and every embedding ``Z`` (cosine or Euclidean similarity),

.. math::

    L(Z) = \sum_i H(p_i, q_i) \;\ge\; \sum_i H(p_i),

because :math:`H(p_i, q_i) - H(p_i) = \mathrm{KL}(p_i \,\|\, q_i) \ge 0` (Gibbs).

Checked symbolically (the cross-entropy of a softmax row is the per-row loss; the minimiser of
:math:`q \mapsto H(p, q)` on the simplex is :math:`q = p`, with positive definite Hessian) and by
properties: ``dgp.winfonce_loss`` and ``dgp.entropic_bound`` agree with the definitions evaluated
row by row, and the loss never falls below the bound, the difference being the sum of the rows'
KL divergences computed independently.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.infonce import entropic_bound, winfonce_loss
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="entropic-bound",
    statement="L(Z) >= sum_i H(p_i) for every weighting, temperature, embedding and similarity; "
    "L(Z) - sum_i H(p_i) = sum_i KL(p_i || q_i).",
    method="both",
)


def test_symbolic_row_loss_is_cross_entropy():
    """sum_j p_j (-s_j + log sum_k e^{s_k}) = -sum_j p_j log softmax(s)_j, for three logits."""
    s = sp.symbols("s0:3", real=True)
    p0, p1 = sp.symbols("p0 p1", positive=True)
    p = (p0, p1, 1 - p0 - p1)
    Z = sum(sp.exp(x) for x in s)
    row_loss = sum(pj * (-sj + sp.log(Z)) for pj, sj in zip(p, s, strict=True))
    cross_entropy = -sum(pj * sp.log(sp.exp(sj) / Z) for pj, sj in zip(p, s, strict=True))
    assert sp.simplify(sp.expand_log(row_loss - cross_entropy, force=True)) == 0


def test_symbolic_gibbs_minimiser():
    """min_q -sum p_j log q_j s.t. sum q_j = 1 is at q = p (Lagrange), a strict minimum."""
    q = sp.symbols("q0:3", positive=True)
    p = sp.symbols("p0:3", positive=True)
    lam = sp.symbols("lam", real=True)
    lagr = -sum(pj * sp.log(qj) for pj, qj in zip(p, q, strict=True)) + lam * (sum(q) - 1)
    sol = sp.solve([sp.diff(lagr, x) for x in (*q, lam)], [*q, lam], dict=True)
    assert len(sol) == 1
    total = sum(p)
    for qj, pj in zip(q, p, strict=True):
        assert sp.simplify(sol[0][qj] - pj / total) == 0  # q = p once p sums to one
    hess = sp.hessian(-sum(pj * sp.log(qj) for pj, qj in zip(p, q, strict=True)), q)
    assert all(sp.simplify(hess[i, i] - p[i] / q[i] ** 2) == 0 for i in range(3))
    assert all(hess[i, j] == 0 for i in range(3) for j in range(3) if i != j)
    # and the gap is a KL divergence: H(p, q) - H(p) = sum p log(p / q)
    gap = -sum(pj * sp.log(qj) for pj, qj in zip(p, q, strict=True)) + sum(
        pj * sp.log(pj) for pj in p
    )
    kl = sum(pj * sp.log(pj / qj) for pj, qj in zip(p, q, strict=True))
    assert sp.simplify(sp.expand_log(gap - kl, force=True)) == 0


_weights = st.one_of(
    ds.symmetric_weights(),
    ds.symmetrizable_weights(),
    ds.cycle_breaking_weights(),
    ds.weights_with_zeros(),
    ds.weights_with_zeros(symmetric=False),
)


@property_settings()
@given(
    W=_weights,
    seed=ds.seeds(),
    d=st.integers(1, 4),
    tau=ds.temperatures(0.05, 3.0),
    similarity=st.sampled_from(["cosine", "euclidean"]),
)
def test_property_loss_above_bound(W, seed, d, tau, similarity):
    """The package's loss and bound equal the definitions; loss - bound = sum of KLs >= 0."""
    Z = np.random.default_rng(seed).standard_normal((W.shape[0], d))
    L = winfonce_loss(Z, W, tau=tau, similarity=similarity)
    B = entropic_bound(W)
    L_ref, B_ref = ref.loss(Z, W, tau, similarity), ref.bound(W)
    assert abs(B - B_ref) <= 1e-10 * max(1.0, abs(B_ref))
    assert abs(L - L_ref) <= 1e-9 * max(1.0, abs(L_ref))
    kl = ref.kl_rows(ref.similarities(Z, tau, similarity), W)
    assert (kl >= -1e-12).all()
    assert L >= B - 1e-9 * max(1.0, abs(B))
    assert abs((L - B) - kl.sum()) <= 1e-8 * max(1.0, abs(L))
