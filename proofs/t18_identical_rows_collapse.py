r"""Theorem (twins: the quotient problem and its collapse condition). Call samples ``i, j`` twins
when swapping them maps ``W`` to itself off the diagonal. Then (a) some minimiser of the cosine
w-InfoNCE is constant on the twin blocks (averaging over within-class permutations, which are
automorphisms, keeps ``G`` feasible and never raises the convex loss); (b) the collapsed point
:math:`G = E M E^\top` is optimal for the ``N x N`` problem iff ``M`` is optimal for the
``K x K`` quotient with multiplicities and every within-class eigenvalue of the lifted dual,
:math:`\lambda_{w,c} = -h_c/(n_c - 1) - y_c/n_c`, is non-negative (:math:`h_c` the derivative of
the quotient loss with respect to the within-class cosine of class ``c``, :math:`y_c` the
quotient multiplier); (c) a class whose anchors put all their weight on their own class (SupCon)
has :math:`\lambda_{w,c} > 0`, so it always collapses. Twins need not collapse in general: two
twins joined by a small weight and pushed apart by their cross weights do not.

Derivation (checked with sympy): for a block-constant symmetric matrix the within-class
zero-sum vectors are eigenvectors with eigenvalue *diagonal minus off-diagonal*, and on the
class indicators the ``N x N`` dual is congruent to the quotient's,
:math:`n_c\lambda_{w,c} + n_c^2 g^N_{cc} = -y_c`. Checked by properties: on random twin
weightings, block averaging of random embeddings keeps ``G`` PSD and does not raise the loss
(losses from the definition); the spectrum of the explicitly built ``N x N`` dual matrix at the
lifted quotient optimum equals the within-class eigenvalues (multiplicity :math:`n_c - 1`) and
the eigenvalues of :math:`\mathrm{diag}(n)^{-1/2} S_K\,\mathrm{diag}(n)^{-1/2}`, and the package
reports collapse exactly when that explicit matrix is PSD.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.solver import block_problem, lift_certificate, row_certificate, solve_rows

THEOREM = Theorem(
    id="identical-rows-collapse",
    statement="Twins (samples whose swap is an automorphism of W) can be averaged: some minimiser "
    "is block-constant; the collapsed quotient optimum is optimal for the N x N problem iff "
    "every within-class eigenvalue -h_c/(n_c-1) - y_c/n_c of the lifted dual is >= 0, which "
    "always holds when a class's anchors weigh only their own class (SupCon).",
    method="both",
)


def test_symbolic_within_class_eigenvalue():
    """A block a I + b (J - I) has eigenvalue a - b on zero-sum vectors (n = 4 here)."""
    a, b = sp.symbols("a b", real=True)
    n = 4
    B = a * sp.eye(n) + b * (sp.ones(n, n) - sp.eye(n))
    v = sp.Matrix([1, -1, 0, 0])
    assert sp.simplify(B * v - (a - b) * v) == sp.zeros(n, 1)
    w = sp.Matrix([1, 1, -2, 0])
    assert sp.simplify(B * w - (a - b) * w) == sp.zeros(n, 1)


def test_symbolic_congruence_with_the_quotient_dual():
    """With y^N_c = (n_c - 1) g_cc + y_c / n_c, the indicator block of S_N matches S_K:
    n_c lambda_w + n_c^2 g_cc = -y_c where lambda_w = -y^N_c - g_cc."""
    n, g, y = sp.symbols("n g y", real=True)
    yN = (n - 1) * g + y / n
    lam_w = -yN - g
    assert sp.simplify(n * lam_w + n**2 * g + y) == 0
    assert sp.simplify(lam_w - (-(n * (n - 1) * g) / (n - 1) - y / n)) == 0


@st.composite
def twin_weightings(draw):
    """Random class-block weightings: within weights per class, cross weights per class pair
    (not symmetric), every anchor with positive mass."""
    sizes = draw(ds.class_sizes(max_classes=3, max_size=4))
    K = len(sizes)
    seed = draw(ds.seeds())
    rng = np.random.default_rng(seed)
    Wq = rng.uniform(0.05, 1.0, (K, K))
    np.fill_diagonal(Wq, rng.uniform(0.2, 2.0, K))
    if draw(st.booleans()):
        Wq = np.where(np.eye(K, dtype=bool), Wq, 0.0)  # SupCon-like: no cross weight
    labels = np.repeat(np.arange(K), sizes)
    W = Wq[np.ix_(labels, labels)].copy()
    np.fill_diagonal(W, 0.0)
    return np.asarray(sizes), Wq, labels, W


@property_settings()
@given(data=twin_weightings(), seed=ds.seeds(), d=st.integers(1, 4), tau=ds.temperatures(0.1, 2))
def test_property_block_average_no_worse(data, seed, d, tau):
    """Averaging over within-class permutations keeps G PSD and never raises the loss."""
    _, _, labels, W = data
    Z = np.random.default_rng(seed).standard_normal((labels.size, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    G = Z @ Z.T
    G_bar = ref.block_average(G, labels)
    assert ref.lam_min(G_bar) >= -1e-10
    L, L_bar = ref.loss_from_gram(G, W, tau), ref.loss_from_gram(G_bar, W, tau)
    assert L_bar <= L + 1e-9 * max(1.0, abs(L))


def _dense_dual(G: np.ndarray, W: np.ndarray, tau: float) -> np.ndarray:
    """S = sym((Q - P) / tau) - Diag(diag(G g)) of the N x N loss, from the definition."""
    N = G.shape[0]
    S = G / tau
    np.fill_diagonal(S, -np.inf)
    Q = np.exp(S - S.max(axis=1, keepdims=True))
    Q /= Q.sum(axis=1, keepdims=True)
    P = W / W.sum(axis=1, keepdims=True)
    R = (Q - P) / tau
    g = 0.5 * (R + R.T)
    np.fill_diagonal(g, 0.0)
    y = np.array([G[i] @ g[i] for i in range(N)])
    return g - np.diag(y)


@property_settings()
@given(data=twin_weightings(), tau=ds.temperatures(0.2, 2))
def test_property_lifted_dual_spectrum_and_collapse(data, tau):
    """The explicit N x N dual at the lifted optimum has the spectrum the quotient predicts, and
    the package says 'collapsed' exactly when that matrix is PSD."""
    sizes, Wq, labels, W = data
    K = sizes.size
    prob = block_problem(sizes, Wq, tau=tau)
    start = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(start, 1.0)
    M = solve_rows(prob, starts=[start]).gram
    prob.set_scale(M)
    cert = row_certificate(prob, M)
    lift = lift_certificate(prob, M, sizes, cert)
    G = M[np.ix_(labels, labels)]
    S = _dense_dual(G, W, tau)
    lam = np.linalg.eigvalsh(S)
    scale = np.abs(lam).max() + 1e-300
    # predicted spectrum, in the package's scaling: margins times nu, and D^-1/2 S_K D^-1/2
    y = np.asarray(cert.multipliers)
    SK = prob.gradient(prob.state(M)) - np.diag(y)
    h = prob.within_gradient(prob.state(M))
    pred = []
    for c in range(K):
        pred += [-h[c] / (sizes[c] - 1) - y[c] / sizes[c]] * (int(sizes[c]) - 1)
    d = 1.0 / np.sqrt(sizes)
    pred += list(np.linalg.eigvalsh(d[:, None] * SK * d[None, :]))
    pred = np.sort(np.asarray(pred))
    factor = float(np.dot(lam, pred) / np.dot(pred, pred))  # the package's positive scaling
    assert factor > 0
    assert np.abs(lam - factor * pred).max() <= 1e-6 * scale
    psd = lam[0] >= -1e-7 * scale
    if abs(lam[0]) > 1e-5 * scale:  # away from the collapse threshold the verdicts agree
        assert lift.collapsed == psd
    if (Wq - np.diag(np.diag(Wq)) == 0).all():  # SupCon-like: every class collapses
        assert all(v > 0 for v in lift.within_margins)


def test_property_twins_need_not_collapse():
    """Two twins joined by a tiny weight, with unit cross weights, stay apart."""
    W = np.ones((4, 4))
    W[0, 1] = W[1, 0] = 1e-3
    np.fill_diagonal(W, 0.0)
    sizes = np.array([2, 2])
    Wq = np.array([[1e-3, 1.0], [1.0, 1.0]])
    prob = block_problem(sizes, Wq, tau=0.5)
    M = solve_rows(prob, starts=[np.array([[1.0, -1.0], [-1.0, 1.0]])]).gram
    prob.set_scale(M)
    lift = lift_certificate(prob, M, sizes, row_certificate(prob, M))
    assert not lift.collapsed and lift.within_margins[0] < 0
    S = _dense_dual(M[np.ix_([0, 0, 1, 1], [0, 0, 1, 1])], W, 0.5)
    assert np.linalg.eigvalsh(S)[0] < 0
