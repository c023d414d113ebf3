r"""Theorem (ReLU heads: the orthogonal frame). Take SupCon (:math:`w_{ij} = 1[y_i = y_j]`,
cosine latent) with every class collapsed to one prototype, class sizes :math:`n_c \ge 2` (each
anchor has a positive) and any :math:`\tau > 0`; the objective is either the full-batch loss
over all ``N`` anchors or the expected loss of mini-batches under any sampler and any reduction
(sum, or mean over the anchors that have a positive, or over the batch). Among prototype Grams
with **non-negative entries** and unit diagonal — a set containing the doubly non-negative and
the completely positive Grams of a ReLU head — the identity :math:`G = I` is a minimiser, and
the unique one for the full batch. Non-negative unit vectors with :math:`G = I` exist in
:math:`\mathbb R^d` iff :math:`d \ge K` (an orthogonal frame), whatever the class sizes.

The same holds before collapse, for the ``N x N`` problem over samples: the collapsed
orthogonal frame (every sample of class ``c`` at :math:`e_c`) minimises the full-batch loss and
the expected batch loss over all embeddings with non-negative coordinates. Averaging a Gram over
the permutations within classes keeps it PSD and non-negative and, the loss being convex and
invariant under them, does not raise it; collapsing the block-constant result (theorem
``supcon-collapse``; for batches, raising a within-class cosine to 1 lowers every batch term
that sees it) keeps it non-negative and lowers it; what is left is the class-level problem
below. With batches other minimisers may exist (Kini et al.: batching can break the collapse).

Proof of the class-level step, as checked here. Each anchor term of class ``c`` in a batch
with class counts ``m`` (the full batch: ``m = n``) is

.. math::

    \ell_c(G) = -\frac1\tau + \log\Big((m_c - 1)e^{1/\tau}
        + \sum_{d \ne c} m_d\, e^{G_{cd}/\tau}\Big),

whose derivative in :math:`G_{cd}` is :math:`m_d e^{G_{cd}/\tau} / (\tau\,D) \ge 0`
(``> 0`` when :math:`m_d > 0`; the weights of the reduction are positive constants that do not
depend on ``G``). So the loss is non-decreasing in every off-diagonal cosine, strictly
increasing in the full batch, and on :math:`\{G \ge 0\}` it is smallest where every cross
cosine is 0. For :math:`d < K`: ``K`` non-negative unit vectors in :math:`\mathbb R^d` have two
whose largest coordinates sit in the same place, so some cross cosine is :math:`\ge 1/d`; more
generally every such Gram satisfies :math:`w^\top G w \ge (\mathbf 1^\top w)^2/d` for
:math:`w \ge 0` (Cauchy–Schwarz, :math:`\|x\|_1^2 \le d\|x\|_2^2`, and
:math:`\|z_c\|_1 \ge \|z_c\|_2 = 1`), the cuts of :func:`dgp.solver.dnn_lower_bound`.

The hypothesis is SupCon's zero cross-class weight. Soft SupCon (cross weight
:math:`\varepsilon`) adds :math:`-\varepsilon/(\tau Z_c)` per unit of :math:`G_{cd}`, and at
:math:`G = I` the sign of each cross derivative is that of :math:`e^{-1/\tau} - \varepsilon`
(both terms are :math:`x/(a + bx)` at :math:`x = e^{-1/\tau}` and :math:`x = \varepsilon`, with
:math:`a = n_c - 1`, :math:`b = N - n_c`). As ``F`` is convex in ``G`` (on all symmetric
matrices), :math:`F(H) \ge F(I) + \langle\nabla F(I), H - I\rangle \ge F(I)` for every
:math:`H \ge 0` with unit diagonal when that sign is non-negative; when it is negative, the
completely positive :math:`(1 - t)I + tJ` lowers the loss for small ``t``. So with ``d >= K``
the frame is optimal iff :math:`\varepsilon \le e^{-1/\tau}`, i.e.
:math:`\rho = 1 + \tau\log\varepsilon \le 0` (above it the equiangular target with
:math:`\rho > 0` attains the entropic bound).

Checked symbolically (the derivatives, their signs, the Soft SupCon identity) and by properties:
random non-negative collapsed configurations, and random non-negative embeddings of the samples
that are not collapsed, never beat the frame (losses from the ``N x N`` definition);
:func:`dgp.prototypes.nonnegative_prototypes` returns it; the expected batch loss,
enumerated over every batch of samples, is lowest at the frame; random non-negative Grams of
rank ``d < K`` satisfy both rank-``d`` inequalities; Soft SupCon with
:math:`\varepsilon > e^{-1/\tau}` is improved by a small common positive cosine.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.prototypes import nonnegative_prototypes

THEOREM = Theorem(
    id="relu-orthogonal-frame",
    statement="SupCon, full batch or the expected loss of any batch sampler and reduction, any "
    "class sizes >= 2 and tau: over prototype Grams with non-negative entries and unit diagonal "
    "(ReLU heads) G = I is a minimiser (unique for the full batch), realised by an orthogonal "
    "frame iff d >= K, and the collapsed frame minimises the loss over all non-negative sample "
    "embeddings; for d < K, w^T G w >= (1^T w)^2 / d for w >= 0. Soft SupCon: the frame is "
    "optimal iff eps <= exp(-1/tau).",
    method="both",
)


def _random_nonnegative(rng: np.random.Generator, K: int, d: int) -> np.ndarray:
    Z = np.abs(rng.standard_normal((K, d)))
    Z[rng.random((K, d)) < 0.3] = 0.0  # sparse rows too (ReLU outputs have exact zeros)
    Z[np.arange(K), rng.integers(0, d, size=K)] += 1e-3
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def test_symbolic_cross_derivative_positive():
    """d/dg log((m_c - 1) e^{1/tau} + m_d e^{g/tau} + C) = m_d e^{g/tau} / (tau D) > 0."""
    g = sp.symbols("g", real=True)
    tau, m_d, C = sp.symbols("tau m_d C", positive=True)
    k = sp.symbols("k", nonnegative=True)  # k = m_c - 1 >= 0 (>= 1 when the anchor has a positive)
    D = k * sp.exp(1 / tau) + m_d * sp.exp(g / tau) + C
    der = sp.diff(-1 / tau + sp.log(D), g)
    assert sp.simplify(der - m_d * sp.exp(g / tau) / (tau * D)) == 0
    assert der.is_positive


def test_symbolic_soft_supcon_sign_at_identity():
    """x / (a + b x) - y / (a + b y) = a (x - y) / ((a + b x)(a + b y)): at G = I the Soft SupCon
    cross derivative n_c n_d [e^{-1/tau} / (tau D_c) - eps / (tau Z_c)] has the sign of
    e^{-1/tau} - eps (D_c, Z_c: the same affine form at x = e^{-1/tau}, x = eps)."""
    x, y, a, b = sp.symbols("x y a b", positive=True)
    lhs = x / (a + b * x) - y / (a + b * y)
    assert sp.simplify(lhs - a * (x - y) / ((a + b * x) * (a + b * y))) == 0
    # the derivative of the Soft SupCon row at G = I, from its definition
    n_c, n_d, N, tau, eps, G = sp.symbols("n_c n_d N tau epsilon G", positive=True)
    rest = sp.symbols("R", positive=True)  # the other classes' exponentials
    Zc = (n_c - 1) + eps * (N - n_c)
    row = n_c * (eps / (tau * Zc) * n_d * (1 - G)
                 + sp.log((n_c - 1) + n_d * sp.exp((G - 1) / tau) + rest))
    at_I = sp.diff(row, G).subs(G, 0).subs(rest, (N - n_c - n_d) * sp.exp(-1 / tau))
    Dc = (n_c - 1) + (N - n_c) * sp.exp(-1 / tau)
    assert sp.simplify(at_I - n_c * n_d / tau * (sp.exp(-1 / tau) / Dc - eps / Zc)) == 0


def test_symbolic_l1_l2_inequality():
    """(x_1 + ... + x_d)^2 <= d (x_1^2 + ... + x_d^2): d ||x||^2 - ||x||_1^2 is a sum of squares."""
    for d in range(1, 6):
        xs = sp.symbols(f"x0:{d}", real=True)
        gap = d * sum(v**2 for v in xs) - sum(xs) ** 2
        sos = sum((xs[i] - xs[j]) ** 2 for i in range(d) for j in range(i + 1, d))
        assert sp.expand(gap - sos) == 0


@property_settings()
@given(
    sizes=ds.class_sizes(max_classes=4, max_size=6),
    seed=ds.seeds(),
    extra=st.integers(0, 2),
    tau=ds.temperatures(0.05, 2.0),
)
def test_property_frame_beats_nonnegative_configurations(sizes, seed, extra, tau):
    """Collapsed non-negative configurations in R^d, d >= K, never beat the orthogonal frame
    (N x N losses from the definition), strictly unless they are the frame; dgp returns it."""
    K = len(sizes)
    d = K + extra
    labels = np.repeat(np.arange(K), sizes)
    W = ref.class_weights(labels)
    p = nonnegative_prototypes(sizes, tau, dim=d)
    assert p.certified and np.array_equal(p.gram, np.eye(K))
    Z = p.embedding
    assert Z.shape == (K, d) and Z.min() >= 0
    L_frame = ref.loss_from_gram(np.eye(K)[np.ix_(labels, labels)], W, tau)
    assert abs(p.loss - L_frame) <= 1e-9 * max(1.0, L_frame)
    rng = np.random.default_rng(seed)
    for _ in range(3):
        X = _random_nonnegative(rng, K, d)
        G = X @ X.T
        L = ref.loss_from_gram(G[np.ix_(labels, labels)], W, tau)
        assert L >= L_frame - 1e-12 * L_frame
        if (G - np.eye(K)).max() > 1e-6:
            assert L > L_frame


@property_settings()
@given(
    sizes=ds.class_sizes(max_classes=4, max_size=5),
    seed=ds.seeds(),
    d=st.integers(1, 6),
    tau=ds.temperatures(0.05, 2.0),
)
def test_property_frame_beats_uncollapsed_samples(sizes, seed, d, tau):
    """Non-negative embeddings of the samples in any R^d, collapsed or not, never beat the
    collapsed orthogonal frame (N x N losses from the definition)."""
    K = len(sizes)
    labels = np.repeat(np.arange(K), sizes)
    W = ref.class_weights(labels)
    frame = ref.loss_from_gram(np.eye(K)[np.ix_(labels, labels)], W, tau)
    rng = np.random.default_rng(seed)
    for spread in (0.0, 0.1, 1.0):  # around class directions, or anywhere
        centres = _random_nonnegative(rng, K, d)[labels]
        Z = np.abs(centres + spread * rng.standard_normal((labels.size, d)))
        Z[np.linalg.norm(Z, axis=1) == 0, 0] = 1.0
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        L = ref.loss_from_gram(Z @ Z.T, W, tau)
        assert L >= frame - 1e-12 * frame


def _batch_loss(G: np.ndarray, labels: np.ndarray, tau: float, B: int, reduction: str) -> float:
    """E over every batch of B samples (uniform, without replacement) of the SupCon batch loss
    of the collapsed embedding: per-anchor losses summed, or averaged over the anchors that
    have a positive."""
    total, count = 0.0, 0
    for batch in itertools.combinations(range(labels.size), B):
        y = labels[list(batch)]
        S = G[np.ix_(y, y)] / tau
        losses = []
        for i in range(B):
            others = [j for j in range(B) if j != i]
            pos = [j for j in others if y[j] == y[i]]
            if pos:
                lse = math.log(sum(math.exp(S[i, j]) for j in others))
                losses.append(sum(lse - S[i, j] for j in pos) / len(pos))
        if losses:
            total += sum(losses) if reduction == "sum" else sum(losses) / len(losses)
        count += 1
    return total / count


@property_settings(max_examples=100)
@given(
    sizes=st.lists(st.integers(2, 3), min_size=2, max_size=3),
    B=st.integers(3, 4),
    seed=ds.seeds(),
    tau=ds.temperatures(0.1, 1.0),
    reduction=st.sampled_from(["sum", "mean"]),
)
def test_property_batches_keep_the_frame(sizes, B, seed, tau, reduction):
    """The expected batch loss, enumerated over every batch of samples, is lowest at G = I
    among non-negative Grams, and dgp's batch prediction is the frame with that loss."""
    K = len(sizes)
    labels = np.repeat(np.arange(K), sizes)
    p = nonnegative_prototypes(sizes, tau, batch_size=B, reduction=reduction)
    assert p.certified and np.array_equal(p.gram, np.eye(K))
    L_frame = _batch_loss(np.eye(K), labels, tau, B, reduction)
    assert abs(p.loss - L_frame) <= 1e-9 * max(1.0, L_frame)
    rng = np.random.default_rng(seed)
    X = _random_nonnegative(rng, K, K)
    assert _batch_loss(X @ X.T, labels, tau, B, reduction) >= L_frame - 1e-12


@property_settings()
@given(K=st.integers(2, 8), d=st.integers(1, 7), seed=ds.seeds())
def test_property_rank_d_inequalities(K, d, seed):
    """Non-negative unit vectors z_1..z_K in R^d, d < K: some cross cosine is >= 1/d, and
    w^T G w >= (1^T w)^2 / d for every w >= 0 (random and subset-indicator w)."""
    if d >= K:
        d = K - 1
    rng = np.random.default_rng(seed)
    Z = _random_nonnegative(rng, K, d)
    G = Z @ Z.T
    off = G[~np.eye(K, dtype=bool)]
    assert off.max() >= 1.0 / d - 1e-12
    ws = [np.abs(rng.standard_normal(K)) for _ in range(5)] + [np.ones(K)]
    ws += [(rng.random(K) < 0.5).astype(float) for _ in range(5)]
    for w in ws:
        assert w @ G @ w >= w.sum() ** 2 / d - 1e-12 * max(1.0, w.sum() ** 2)


@property_settings()
@given(
    sizes=ds.class_sizes(max_classes=4, max_size=6),
    tau=ds.temperatures(0.2, 2.0),
    factor=st.floats(1.05, 3.0),
)
def test_property_soft_supcon_needs_small_eps(sizes, tau, factor):
    """Soft SupCon: below eps = exp(-1/tau) dgp returns the frame; above it a small common
    positive cosine (1 - t) I + t J lowers the N x N loss, so the frame is not optimal."""
    K = len(sizes)
    labels = np.repeat(np.arange(K), sizes)
    edge = math.exp(-1.0 / tau)
    low = nonnegative_prototypes(sizes, tau, eps=edge / factor)
    assert low.certified and np.array_equal(low.gram, np.eye(K))
    eps = edge * factor
    if eps >= 1.0:
        return
    W = ref.class_weights(labels, eps)
    frame = ref.loss_from_gram(np.eye(K)[np.ix_(labels, labels)], W, tau)
    t = 1e-3
    G = (1 - t) * np.eye(K) + t * np.ones((K, K))
    moved = ref.loss_from_gram(G[np.ix_(labels, labels)], W, tau)
    assert moved < frame
