r"""Theorem (the face of minimisers and the uniqueness test). The cosine w-InfoNCE loss (full
batch or any positive combination of batch rows) is constant along :math:`G + c(J - I)` and
strictly convex across it (for :math:`N \ge 3`), so its minimisers form the segment
:math:`\{G^\star + c(J - I)\} \cap \mathcal E_N \ni G^\star`. With :math:`V` an orthonormal basis
of :math:`\ker G^\star` (dimension ``k``) and :math:`s = \|V^\top\mathbb 1\|^2`, the minimiser is
unique iff :math:`k \ge 2` and :math:`s > 1`, and not unique if :math:`k \le 1` or :math:`s < 1`.

Proof: along the shift each row's log-sum-exp and its linear part both move by :math:`c/\tau`
(the target rows sum to 1); the Hessian of a row's log-sum-exp, :math:`\operatorname{Diag}(q) -
qq^\top`, vanishes only on constants, and a symmetric direction constant on every row is a
multiple of :math:`J - I`. The compression :math:`V^\top(J - I)V = (V^\top\mathbb 1)(V^\top\mathbb
1)^\top - I` has eigenvalues :math:`s - 1` and :math:`-1` (``k - 1`` times); a kernel vector with
:math:`v^\top(J-I)v < 0` makes every :math:`c > 0` infeasible, one with :math:`> 0` every
:math:`c < 0`, and a positive definite compression makes small shifts feasible. Checked
symbolically (the invariance for ``N = 3`` with symbolic targets, the kernel of a row's Hessian)
and by properties: the package's verdict agrees with the feasibility of small shifts
:math:`G \pm \delta(J - I)` decided by dense eigenvalues, on Gram matrices built with a chosen
kernel.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.proofs._theorem import Theorem, property_settings
from dgp.solver import face_uniqueness

THEOREM = Theorem(
    id="uniqueness-face",
    statement="The loss is constant along G + c(J - I) and strictly convex across it; the "
    "minimiser is unique iff dim ker G* >= 2 and |P_ker 1|^2 > 1.",
    method="both",
)


def test_symbolic_shift_invariance():
    """L(G + c(J - I)) = L(G) for N = 3, any targets p (rows summing to 1)."""
    c, tau = sp.symbols("c tau", positive=True)
    g = {(0, 1): sp.Symbol("g01"), (0, 2): sp.Symbol("g02"), (1, 2): sp.Symbol("g12")}

    def G(i, j):
        return g[(min(i, j), max(i, j))]

    p = [sp.Symbol(f"p{i}") for i in range(3)]

    def loss(shift):
        total = 0
        for i in range(3):
            j, k = [m for m in range(3) if m != i]
            sj, sk = (G(i, j) + shift) / tau, (G(i, k) + shift) / tau
            total += -(p[i] * sj + (1 - p[i]) * sk) + sp.log(sp.exp(sj) + sp.exp(sk))
        return total

    assert sp.simplify(sp.expand_log(loss(c) - loss(0), force=True)) == 0


def test_symbolic_row_hessian_kernel_is_the_constants():
    """Diag(q) - q q^T (q > 0, sum 1) has kernel spanned by the ones vector (3 entries)."""
    q1, q2 = sp.symbols("q1 q2", positive=True)
    q = sp.Matrix([q1, q2, 1 - q1 - q2])
    H = sp.diag(*q) - q * q.T
    assert sp.simplify(H * sp.ones(3, 1)) == sp.zeros(3, 1)
    assert sp.simplify(H.subs({q1: sp.Rational(1, 5), q2: sp.Rational(1, 3)})).rank() == 2


@st.composite
def grams_with_kernel(draw):
    """A unit-diagonal PSD Gram of N samples and rank r, built from random unit vectors."""
    N = draw(st.integers(3, 7))
    r = draw(st.integers(1, N))
    X = np.random.default_rng(draw(ds.seeds())).standard_normal((N, r))
    if draw(st.booleans()) and r >= 2:
        X -= X.mean(axis=0)  # centred: the ones vector moves into the kernel
        X[np.linalg.norm(X, axis=1) < 1e-9] += 1.0
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    return X @ X.T


def _shift_feasible(G: np.ndarray, c: float) -> bool:
    N = G.shape[0]
    return bool(np.linalg.eigvalsh(G + c * (np.ones((N, N)) - np.eye(N)))[0] >= -1e-12)


@property_settings()
@given(G=grams_with_kernel())
def test_property_face_test_agrees_with_small_shifts(G):
    """unique <=> neither G + delta(J - I) nor G - delta(J - I) is PSD for small delta."""
    N = G.shape[0]
    lam = np.linalg.eigvalsh(G)
    rank = int(np.sum(lam > 1e-9 * lam[-1]))
    unique, k, s, _ = face_uniqueness(G, np.ones(N), rank=rank)
    assert k == N - rank
    if unique is None:
        return  # s within rounding of 1: the first-order test does not decide
    gap = max(abs(s - 1.0), 1e-6)
    deltas = [1e-7 * gap, 1e-5 * gap]
    open_up = all(_shift_feasible(G, d) for d in deltas)
    open_down = all(_shift_feasible(G, -d) for d in deltas)
    if unique:
        assert not open_up and not open_down
    else:
        assert open_up or open_down
