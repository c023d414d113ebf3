r"""Theorem (class collapse, SupCon). For SupCon (:math:`w_{ij} = 1[y_i = y_j]`, cosine latent)
every minimiser collapses each class to one point, whatever the class sizes and the temperature.

Proof, as checked here. The loss is convex in the Gram matrix :math:`G` and invariant under
permutations within classes, so averaging :math:`G` over those permutations (block means, a PSD
unit-diagonal matrix) never increases it. For a block-constant :math:`G` with within-class cosine
:math:`a_c`, only the anchors of class ``c`` see :math:`a_c`, each through
:math:`\ell(a) = -a/\tau + \log((n_c - 1)e^{a/\tau} + C)`, whose derivative
:math:`-C/(\tau((n_c - 1)e^{a/\tau} + C))` is negative: raising :math:`a_c` to 1 (which keeps
:math:`G` PSD: the within-class part :math:`(1 - a_c)` of the spectrum shrinks to 0 and the
class-quotient part grows) strictly lowers the loss unless the class is already collapsed.

Checked symbolically (the derivative and its sign) and by properties on random embeddings and
class sizes (balanced, long-tailed, size-2 classes): block averaging keeps :math:`G` PSD and does
not raise the loss; collapsing keeps it PSD and lowers the loss, strictly when some class is not
collapsed (losses evaluated from the definition). The ``K x K`` objective of
:mod:`dgp.prototypes` equals the ``N x N`` loss of the collapsed configuration, and its optimum is
no worse than random collapsed configurations.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.infonce import winfonce_loss
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.prototypes import prototype_loss, supcon_prototypes

THEOREM = Theorem(
    id="supcon-collapse",
    statement="SupCon (cosine): every minimiser collapses each class to one point, for any "
    "class sizes and temperature (symmetrisation + strict monotonicity in the within-class "
    "cosine).",
    method="both",
)


def test_symbolic_within_class_derivative_negative():
    """d/da [-a/tau + log((n-1) e^{a/tau} + C)] = -C / (tau ((n-1) e^{a/tau} + C)) < 0."""
    a = sp.symbols("a", real=True)
    tau, C = sp.symbols("tau C", positive=True)
    n = sp.symbols("n", integer=True, positive=True)
    ell = -a / tau + sp.log((n - 1) * sp.exp(a / tau) + C)
    der = sp.simplify(sp.diff(ell, a))
    target = -C / (tau * ((n - 1) * sp.exp(a / tau) + C))
    assert sp.simplify(der - target) == 0
    # the sign: with n >= 2 every factor of -target is positive
    m = sp.symbols("m", positive=True)  # m = n - 1 >= 1
    assert sp.simplify(target.subs(n, m + 1)).is_negative


@property_settings()
@given(
    labelled=ds.class_labels(ds.class_sizes(max_classes=3, max_size=4)),
    seed=ds.seeds(),
    d=st.integers(1, 4),
    tau=ds.temperatures(0.1, 2.0),
)
def test_property_symmetrise_then_collapse(labelled, seed, d, tau):
    """loss(G) >= loss(block average) >= loss(collapsed), all PSD; strict if not collapsed."""
    labels, _ = labelled
    n = labels.size
    W = ref.class_weights(labels)
    Z = np.random.default_rng(seed).standard_normal((n, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    G = Z @ Z.T
    G_bar = ref.block_average(G, labels)
    G_hat = ref.collapse(G_bar, labels)
    for M in (G_bar, G_hat):
        assert ref.lam_min(M) >= -1e-10
    L, L_bar, L_hat = (ref.loss_from_gram(M, W, tau) for M in (G, G_bar, G_hat))
    assert abs(L - winfonce_loss(Z, W, tau=tau)) <= 1e-9 * max(1.0, L)
    assert L_bar <= L + 1e-9 * max(1.0, L)
    assert L_hat <= L_bar + 1e-12 * max(1.0, L)
    same = (labels[:, None] == labels[None, :]) & ~np.eye(n, dtype=bool)
    if G_bar[same].min() < 1.0 - 1e-6:
        assert L_hat < L_bar
    classes = np.unique(labels)
    first = [int(np.flatnonzero(labels == c)[0]) for c in classes]
    M = G_hat[np.ix_(first, first)]
    sizes = [int((labels == c).sum()) for c in classes]
    assert abs(prototype_loss(M, sizes, tau=tau) - L_hat) <= 1e-9 * max(1.0, L_hat)


@property_settings()
@given(
    sizes=ds.class_sizes(max_classes=4, max_size=6),
    seed=ds.seeds(),
    tau=ds.temperatures(0.1, 1.0),
)
def test_property_prototype_optimum_beats_collapsed(sizes, seed, tau):
    """The certified prototype optimum is no worse than random collapsed configurations."""
    labels = np.repeat(np.arange(len(sizes)), sizes)
    W = ref.class_weights(labels)
    best = supcon_prototypes(sizes, tau=tau)
    K = len(sizes)
    G_best = best.gram[np.ix_(labels, labels)]
    assert ref.lam_min(G_best) >= -1e-8
    L_best = ref.loss_from_gram(G_best, W, tau)
    assert abs(L_best - best.loss) <= 1e-8 * max(1.0, L_best)
    rng = np.random.default_rng(seed)
    for _ in range(5):
        X = rng.standard_normal((K, K))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        M = X @ X.T
        assert ref.loss_from_gram(M[np.ix_(labels, labels)], W, tau) >= L_best - 1e-9 * L_best
