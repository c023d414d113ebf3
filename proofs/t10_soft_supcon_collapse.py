r"""Theorem (class collapse, Soft SupCon). For Soft SupCon (weight 1 within a class,
:math:`\varepsilon` across, cosine latent) the collapsed equiangular configuration — each class on
one point, prototypes at cosine :math:`\rho = 1 + \tau\log\varepsilon` — attains the entropic
bound whenever :math:`\rho \ge -1/(K-1)`, whatever the class sizes: it is the upper end
:math:`c = 1/\tau` of the admissible interval. When :math:`\rho < -1/(K-1)` no collapsed
configuration attains the bound (:math:`G(1/\tau)` is not PSD). In either case averaging over
within-class permutations never raises the loss, so an optimum may be taken block-constant.

Checked symbolically (the collapsed target :math:`G(1/\tau)`: within-class 1, across
:math:`\rho`) and by properties: the upper end of :func:`dgp.classify`'s interval is
:math:`1/\tau` exactly when :math:`\rho \ge -1/(K-1)` (dense ``eigvalsh`` of the explicit
:math:`G(1/\tau)` decides independently), the collapsed configuration built from a ``K x K``
equiangular Gram attains the bound (loss from the definition), and block averaging of random
embeddings does not raise the loss.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.classification import classify
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.weights import soft_supcon_weights

THEOREM = Theorem(
    id="soft-supcon-collapse",
    statement="Soft SupCon: the collapsed configuration with prototype cosine rho = 1 + tau log "
    "eps attains the bound iff rho >= -1/(K-1), for any class sizes (it is the end c = 1/tau of "
    "the admissible interval); block averaging never raises the loss.",
    method="both",
)


def test_symbolic_collapsed_target():
    """G(c)_ij = tau(log w_ij + c) at c = 1/tau: 1 within a class, 1 + tau log eps across."""
    tau, eps = sp.symbols("tau epsilon", positive=True)
    c = 1 / tau
    assert sp.simplify(tau * (sp.log(1) + c)) == 1
    assert sp.simplify(tau * (sp.log(eps) + c) - (1 + tau * sp.log(eps))) == 0


@property_settings()
@given(
    sizes=ds.class_sizes(max_classes=4, max_size=4),
    eps=st.floats(0.01, 0.9),
    tau=ds.temperatures(0.05, 2.0),
)
def test_property_collapsed_end_point(sizes, eps, tau):
    """hi = 1/tau iff G(1/tau) is PSD iff rho >= -1/(K-1); the collapsed Gram attains the bound."""
    K = len(sizes)
    labels = np.repeat(np.arange(K), sizes)
    W = ref.class_weights(labels, eps)
    assert np.array_equal(W, soft_supcon_weights(labels, eps=eps))
    rho = 1.0 + tau * math.log(eps)
    margin = rho + 1.0 / (K - 1)
    ell = np.log(np.where(np.eye(labels.size, dtype=bool), 1.0, W))
    G_top = ref.gram(ell, tau, 1.0 / tau)
    lam = ref.lam_min(G_top)
    res = classify(W, similarity="cosine", tau=tau, dim=labels.size)
    if abs(margin) < 1e-6:
        return  # the simplex itself: theorem soft-supcon-simplex
    if margin > 0:
        assert lam >= -1e-10
        assert res.c_interval is not None
        assert abs(res.c_interval[1] - 1.0 / tau) <= 1e-9 * max(1.0, 1.0 / tau)
        M = np.full((K, K), rho)
        np.fill_diagonal(M, 1.0)
        X = ref.embedding_from_psd(M)[labels]  # collapsed: class k on prototype k
        B = ref.bound(W)
        assert abs(ref.loss(X, W, tau) - B) <= 1e-8 * max(1.0, B)
    else:
        assert lam < 0
        assert res.c_interval is None or res.c_interval[1] < 1.0 / tau - 1e-9


@property_settings()
@given(
    labelled=ds.class_labels(ds.class_sizes(max_classes=3, max_size=4)),
    eps=st.floats(0.01, 0.9),
    seed=ds.seeds(),
    d=st.integers(1, 4),
    tau=ds.temperatures(0.1, 2.0),
)
def test_property_block_average_no_worse(labelled, eps, seed, d, tau):
    """Averaging a Gram over within-class permutations keeps it PSD and never raises the loss."""
    labels, _ = labelled
    W = ref.class_weights(labels, eps)
    Z = np.random.default_rng(seed).standard_normal((labels.size, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    G = Z @ Z.T
    G_bar = ref.block_average(G, labels)
    assert ref.lam_min(G_bar) >= -1e-10
    L, L_bar = ref.loss_from_gram(G, W, tau), ref.loss_from_gram(G_bar, W, tau)
    assert L_bar <= L + 1e-9 * max(1.0, L)
