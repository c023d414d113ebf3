r"""Theorem (equality case of the entropic bound). :math:`L(Z) = \sum_i H(p_i)` iff
:math:`q_i = p_i` for every anchor, i.e. iff :math:`s_{ij} = \log w_{ij} + c_i` for all
:math:`j \ne i` with some row constants :math:`c_i`. In particular a zero weight makes equality
impossible (:math:`s_{ij} = -\infty`), and the entropic gap of ``dgp.metrics`` is zero there.

Checked symbolically (logits :math:`\log w_j + c` give the softmax :math:`w_j / \sum_k w_k`;
the KL divergence vanishes only at :math:`q = p`) and by properties: weights built as
:math:`w_{ij} = e^{s_{ij}(Z) + c_i}` from an arbitrary embedding give a loss equal to the bound
(evaluated from the definitions) and ``entropic_gap == 0``; raising one weight makes the gap
equal to the independently computed, strictly positive, KL divergence of that row.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.infonce import entropic_bound, winfonce_loss
from dgp.metrics import entropic_gap
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="entropic-equality",
    statement="L(Z) = sum_i H(p_i) iff q_i = p_i for all i, i.e. s_ij = log w_ij + c_i for all "
    "j != i; a zero weight or any other deviation leaves a positive gap sum_i KL(p_i || q_i).",
    method="both",
)


def test_symbolic_log_weight_logits_give_p():
    """softmax_j(log w_j + c) = w_j / sum_k w_k for positive weights and any constant c."""
    w = sp.symbols("w0:4", positive=True)
    c = sp.symbols("c", real=True)
    denom = sum(sp.exp(sp.log(x) + c) for x in w)
    for x in w:
        assert sp.simplify(sp.exp(sp.log(x) + c) / denom - x / sum(w)) == 0


def test_symbolic_kl_zero_only_at_p():
    """For two outcomes KL(p || q) has derivative zero only at q = p, where it is 0 and convex."""
    p, q = sp.symbols("p q", positive=True)
    kl = p * sp.log(p / q) + (1 - p) * sp.log((1 - p) / (1 - q))
    crit = sp.solve(sp.diff(kl, q), q)
    assert crit == [p]
    assert sp.simplify(kl.subs(q, p)) == 0
    second = sp.simplify(sp.diff(kl, q, 2).subs(q, p))
    assert sp.simplify(second - 1 / (p * (1 - p))) == 0  # > 0 on (0, 1)


@property_settings()
@given(
    seed=ds.seeds(),
    n=st.integers(3, 7),
    d=st.integers(1, 4),
    tau=ds.temperatures(0.1, 2.0),
    similarity=st.sampled_from(["cosine", "euclidean"]),
    offsets=st.lists(st.floats(-3, 3), min_size=7, max_size=7),
)
def test_property_equality_iff_q_equals_p(seed, n, d, tau, similarity, offsets):
    """Weights exp(s_ij + c_i) attain the bound; raising one weight opens a gap = KL of its row."""
    rng = np.random.default_rng(seed)
    Z = rng.standard_normal((n, d))
    S = ref.similarities(Z, tau, similarity)
    W = np.exp(S + np.asarray(offsets[:n])[:, None])
    np.fill_diagonal(W, 0.0)
    B_ref = ref.bound(W)
    L = winfonce_loss(Z, W, tau=tau, similarity=similarity)
    scale = max(1.0, abs(B_ref))
    assert abs(L - B_ref) <= 1e-9 * scale
    assert abs(entropic_gap(Z, W, tau=tau, similarity=similarity)) <= 1e-9 * scale
    # break q_0 = p_0: move a substantial share of row 0's mass onto its smallest weight
    j = 1 + int(np.argmin(W[0, 1:]))
    W2 = W.copy()
    W2[0, j] += float(rng.uniform(0.2, 2.0)) * W[0].sum()
    kl = ref.kl_rows(S, W2)
    assert kl[0] > 0 and np.allclose(kl[1:], 0.0, atol=1e-10)
    gap = winfonce_loss(Z, W2, tau=tau, similarity=similarity) - entropic_bound(W2)
    assert gap > 0
    assert abs(gap - kl[0]) <= 1e-8 * scale + 1e-6 * kl[0]


@property_settings()
@given(W=ds.weights_with_zeros(), seed=ds.seeds(), d=st.integers(1, 4), tau=ds.temperatures())
def test_property_zero_weight_no_equality(W, seed, d, tau):
    """Under the cosine similarity a zero weight leaves a gap of at least the mass q_i gives to
    zero-weight entries, bounded below in closed form: q_ij >= e^{-2/tau} / (N-1)."""
    Z = np.random.default_rng(seed).standard_normal((W.shape[0], d))
    n = W.shape[0]
    gap = winfonce_loss(Z, W, tau=tau) - entropic_bound(W)
    zeros = [(i, j) for i in range(n) for j in range(n) if i != j and W[i, j] == 0]
    assert zeros
    i = zeros[0][0]
    m_i = sum(1 for (a, _) in zeros if a == i)  # zero-weight entries of row i
    # KL(p||q) >= -log(1 - q(zero set)) >= q(zero set) >= m_i e^{-2/tau} / (N - 1)
    lower = m_i * math.exp(-2.0 / tau) / (n - 1)
    assert gap >= lower * (1 - 1e-9) - 1e-12
