r"""Theorem (the mini-batch prediction). For a sampler of batches of size ``B`` and a reduction
that weighs each batch's anchors by a factor depending on the batch composition only, the
expected batch loss :math:`\mathbb E_b L_b(G)` is convex in the Gram matrix and invariant under
permutations within a class, so it has a block-constant minimiser; for SupCon every batch term is
decreasing in each within-class cosine, so that minimiser collapses each class, and under
collapse the expected loss depends on the batch's class counts ``m`` only:

.. math::

    \mathbb E_m\Big[\rho(m)\sum_c m_c\,[m_c \ge 2]\,
        \log\Big((m_c - 1) + \sum_{d \ne c} m_d\, e^{(G_{cd} - 1)/\tau}\Big)\Big]
        + \text{const}.

Consequences: (a) with uniform batches of size ``N`` it is the full-batch problem; (b) when the
law of ``m`` is invariant under permutations of the classes (balanced classes and uniform
batches, the class-balanced sampler, the m-per-class sampler) the minimiser is the regular
simplex at every ``B`` (it is unique by strict convexity, hence permutation invariant, hence
equiangular, and every term increases with the common cosine); (c) two classes are antipodal at
every ``B``: with one cosine ``b`` every term increases with ``b`` — batching does not make two
imbalanced classes collapse.

Checked symbolically (the monotonicity in ``b`` and in the common cosine) and by properties: the
expected loss the package computes from compositions equals the average of the loss evaluated
from the definition over every index subset of size ``B`` (uniform sampler) or every sequence of
class draws (class-balanced sampler), for random collapsed Grams; ``B = N`` gives the full-batch
loss; balanced sizes give the simplex and two classes stay antipodal.
"""

from __future__ import annotations

from itertools import combinations, product

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.prototypes import block_weights, prototype_loss, supcon_prototypes
from dgp.solver import batch_rows, check_batch, compositions

THEOREM = Theorem(
    id="batch-expectation",
    statement="The expected mini-batch SupCon loss is convex in G, collapses each class and "
    "depends on batch compositions only; B = N is the full batch; samplers whose composition "
    "law is class-symmetric give the regular simplex at every B; two classes stay antipodal at "
    "every B.",
    method="both",
)


def test_symbolic_batch_term_increases_with_the_cross_cosine():
    """d/db of log((m1 - 1) + m2 e^{(b-1)/tau}) > 0: two classes end antipodal."""
    b = sp.symbols("b", real=True)
    tau, m2 = sp.symbols("tau m2", positive=True)
    k = sp.symbols("k", nonnegative=True)  # k = m1 - 1
    term = sp.log(k + m2 * sp.exp((b - 1) / tau))
    der = sp.simplify(sp.diff(term, b))
    e = m2 * sp.exp((b - 1) / tau)
    assert sp.simplify(der - e / (tau * (k + e))) == 0
    assert sp.simplify(der).is_positive


def test_symbolic_equiangular_term_increases_with_the_common_cosine():
    """With every cross cosine equal to rho, each anchor's term increases with rho."""
    rho = sp.symbols("rho", real=True)
    tau, s = sp.symbols("tau s", positive=True)  # s = sum of the other classes' counts
    k = sp.symbols("k", nonnegative=True)
    term = sp.log(k + s * sp.exp((rho - 1) / tau))
    assert sp.simplify(sp.diff(term, rho)).is_positive


def _supcon_batch_loss(G, labels_b, tau, reduction):
    """One batch's SupCon loss from the definition on the collapsed embedding of G."""
    W = ref.class_weights(labels_b)
    mass = W.sum(axis=1)
    if not (mass > 0).any():
        return 0.0
    keep = np.flatnonzero(mass > 0)
    S = G[np.ix_(labels_b, labels_b)] / tau
    per = []
    for i in keep:
        others = [j for j in range(labels_b.size) if j != i]
        s = np.array([S[i, j] for j in others])
        p = np.array([W[i, j] for j in others]) / mass[i]
        top = s.max()
        per.append(top + np.log(np.exp(s - top).sum()) - float(p @ s))
    per = np.asarray(per)
    return per.sum() if reduction == "sum" else per.mean()


@st.composite
def small_problems(draw):
    sizes = draw(ds.class_sizes(max_classes=3, max_size=3))
    N = sum(sizes)
    B = draw(st.integers(3, N))
    K = len(sizes)
    X = np.random.default_rng(draw(ds.seeds())).standard_normal((K, K))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return np.asarray(sizes), B, X @ X.T


@property_settings()
@given(problem=small_problems(), tau=ds.temperatures(0.2, 2.0),
       reduction=st.sampled_from(["sum", "mean"]))
def test_property_uniform_expectation_over_every_subset(problem, tau, reduction):
    """The package's expected loss = the mean over all C(N, B) index subsets, from the
    definition (anchors without positives dropped)."""
    sizes, B, M = problem
    labels = np.repeat(np.arange(sizes.size), sizes)
    spec = check_batch(sizes, batch_size=B, sampler="uniform", samples_per_class=None,
                       reduction=reduction, anchors_without_positives="drop")
    prob, _ = batch_rows(compositions(sizes, spec), block_weights(sizes.size, None), spec,
                         tau=tau)
    prob.set_scale(M)
    ours = prob.loss(M)[0]
    subsets = list(combinations(range(labels.size), B))
    brute = np.mean([_supcon_batch_loss(M, labels[list(s)], tau, reduction) for s in subsets])
    assert abs(ours - brute) <= 1e-9 * max(1.0, abs(brute))
    if B == labels.size and reduction == "sum":  # the whole set: the full-batch loss
        assert abs(ours - prototype_loss(M, sizes, tau=tau)) <= 1e-9 * max(1.0, abs(ours))


@property_settings()
@given(sizes=ds.class_sizes(max_classes=3, max_size=5), B=st.integers(3, 5),
       tau=ds.temperatures(0.2, 2.0), seed=ds.seeds())
def test_property_class_balanced_expectation_over_every_draw(sizes, B, tau, seed):
    """Class-balanced batches: the mean over all K^B equally likely class sequences."""
    sizes = np.asarray(sizes)
    K = sizes.size
    X = np.random.default_rng(seed).standard_normal((K, K))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    M = X @ X.T
    spec = check_batch(sizes, batch_size=B, sampler="class-balanced", samples_per_class=None,
                       reduction="mean", anchors_without_positives="drop")
    prob, _ = batch_rows(compositions(sizes, spec), block_weights(K, None), spec, tau=tau)
    prob.set_scale(M)
    brute = np.mean([_supcon_batch_loss(M, np.array(seq), tau, "mean")
                     for seq in product(range(K), repeat=B)])
    assert abs(prob.loss(M)[0] - brute) <= 1e-9 * max(1.0, abs(brute))


@property_settings()
@given(K=st.integers(2, 4), n=st.integers(2, 4), data=st.data(), tau=ds.temperatures(0.1, 1.0))
def test_property_class_symmetric_samplers_give_the_simplex(K, n, data, tau):
    """Balanced uniform batches at any B, and two classes of any sizes at any B."""
    B = data.draw(st.integers(3, n * K))
    res = supcon_prototypes([n] * K, tau=tau, batch_size=B, method="numeric")
    S = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(S, 1.0)
    assert np.abs(res.gram - S).max() <= 1e-7
    sizes = [n, data.draw(st.integers(2, 9))]
    B2 = data.draw(st.integers(3, sum(sizes)))
    two = supcon_prototypes(sizes, tau=tau, batch_size=B2, method="numeric")
    assert two.gram[0, 1] <= -1 + 1e-9
