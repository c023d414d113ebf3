r"""Theorem (structured spectra). (a) Class blocks: a symmetric matrix with unit diagonal,
constant :math:`a_c` inside block ``c`` and :math:`b_{cc'}` between blocks has the eigenvalue
:math:`1 - a_c` with multiplicity :math:`n_c - 1` for each class, and the ``K`` eigenvalues of the
quotient :math:`Q_{cc} = 1 + (n_c - 1)a_c`, :math:`Q_{cc'} = b_{cc'}\sqrt{n_c n_{c'}}`.
(b) Label kernels: the Gaussian target is :math:`G(\mu) = (1 - \mu)I + UMU^\top` with
:math:`U = [1, q, Y]` (:math:`q_i = |y_i|^2`), so its spectrum is :math:`1 - \mu` with
multiplicity :math:`N - \operatorname{rank} U` plus :math:`1 - \mu + \operatorname{eig}(MU^\top U)`.
Hence the structured engine (``K x K`` quotient, ``(p+2) x (p+2)`` capacitance) decides exactly
what the dense engine decides.

Checked symbolically (the quotient for two blocks of sizes 2 and 3) and by properties: both
spectral formulas against dense ``eigvalsh`` of the explicitly built matrices, and verdicts,
ranks and ``c`` intervals of :func:`dgp.classify_objective` with ``engine="structured"`` against
``engine="dense"`` and the dense re-implementation of the rules, for Soft SupCon, y-Aware,
Euclidean–Euclidean and X-CLR near and away from their thresholds.
"""

from __future__ import annotations

import math

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

import dgp
from dgp import strategies as ds
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings

THEOREM = Theorem(
    id="structured-spectra",
    statement="Block-constant matrices: eigenvalues 1 - a_c (multiplicity n_c - 1) plus the K x K "
    "quotient; Gaussian targets: (1 - mu) (multiplicity N - rank U) plus 1 - mu + eig(M U^T U); "
    "so the structured engine equals the dense one.",
    method="both",
)


def test_symbolic_block_quotient():
    """Sizes (2, 3): det(xI - G) = (x - 1 + a0)(x - 1 + a1)^2 det(xI - Q)."""
    a0, a1, b = sp.symbols("a0 a1 b", real=True)
    x = sp.symbols("x")
    sizes = (2, 3)
    labels = [0, 0, 1, 1, 1]
    a = (a0, a1)
    G = sp.Matrix(
        5, 5, lambda i, j: 1 if i == j else (a[labels[i]] if labels[i] == labels[j] else b)
    )
    Q = sp.Matrix(
        2, 2, lambda c, d: 1 + (sizes[c] - 1) * a[c] if c == d else b * sp.sqrt(sizes[c] * sizes[d])
    )
    lhs = (x * sp.eye(5) - G).det()
    rhs = (x - 1 + a0) * (x - 1 + a1) ** 2 * (x * sp.eye(2) - Q).det()
    assert sp.expand(lhs - rhs) == 0


@property_settings()
@given(sizes=ds.class_sizes(max_classes=4, max_size=5), seed=ds.seeds())
def test_property_block_spectrum(sizes, seed):
    """Dense eigvalsh of a random block-constant matrix == quotient + within-class eigenvalues."""
    rng = np.random.default_rng(seed)
    K = len(sizes)
    labels = np.repeat(np.arange(K), sizes)
    a = rng.uniform(-1, 1, K)
    Bm = rng.uniform(-1, 1, (K, K))
    Bm = 0.5 * (Bm + Bm.T)
    G = np.where(labels[:, None] == labels[None, :], a[labels][:, None], Bm[np.ix_(labels, labels)])
    np.fill_diagonal(G, 1.0)
    n = np.asarray(sizes, float)
    Q = Bm * np.sqrt(np.outer(n, n))
    Q[np.diag_indices(K)] = 1.0 + (n - 1.0) * a
    predicted = np.sort(
        np.concatenate([np.linalg.eigvalsh(Q), np.repeat(1.0 - a, n.astype(int) - 1)])
    )
    assert np.allclose(
        np.linalg.eigvalsh(G), predicted, atol=1e-10 * max(1.0, np.abs(G).sum(1).max())
    )


@property_settings()
@given(
    Y=ds.embeddings(n=st.integers(4, 9), dim=st.integers(1, 3)),
    sigma=st.floats(0.3, 3.0),
    tau=ds.temperatures(0.05, 2.0),
    mu=st.floats(-1.0, 1.0),
)
def test_property_lowrank_spectrum(Y, sigma, tau, mu):
    """Dense eigvalsh of G(mu) for a Gaussian kernel == (1 - mu) plus the capacitance spectrum."""
    n, p = Y.shape
    kappa = tau / (2 * sigma**2)
    q = (Y**2).sum(axis=1)
    # mu - kappa|y_i - y_j|^2 = mu - kappa q_i - kappa q_j + 2 kappa y_i.y_j = (U M U^T)_ij
    U = np.column_stack([np.ones(n), q, Y])
    M = np.zeros((p + 2, p + 2))
    M[0, 0] = mu
    M[0, 1] = M[1, 0] = -kappa
    M[2:, 2:] = 2 * kappa * np.eye(p)
    G = mu - kappa * ((Y[:, None] - Y[None]) ** 2).sum(-1)
    G += (1.0 - mu) * np.eye(n)
    k = np.linalg.matrix_rank(U)
    small = np.linalg.eigvals(M @ U.T @ U)
    small = np.sort(small.real)
    # M U^T U has p + 2 eigenvalues; rank U of them are the nonzero part of U M U^T
    nonzero = small[np.argsort(np.abs(small))][p + 2 - k :]
    predicted = np.sort(np.concatenate([np.full(n - k, 1.0 - mu), 1.0 - mu + nonzero]))
    scale = max(1.0, float(np.abs(G).sum(1).max()))
    assert np.allclose(np.linalg.eigvalsh(G), predicted, atol=1e-8 * scale)


_case = st.one_of(
    st.tuples(st.just("soft-supcon"), ds.soft_supcon_near_critical(rel=0.5)),
    st.tuples(st.just("y-aware"), ds.y_aware_near_critical(centred=False, rel=0.5)),
    st.tuples(st.just("x-clr"), ds.xclr_near_critical(centred=False, rel=0.5)),
    st.tuples(st.just("euclid-euclid"), ds.y_aware_near_critical(centred=False, rel=0.5)),
)


@property_settings()
@given(case=_case, dim=st.integers(1, 5))
def test_property_structured_equals_dense(case, dim):
    """classify_objective: structured == dense == dense rules (verdict, rank, c interval)."""
    objective, cc = case
    if objective == "soft-supcon":
        labels = np.repeat(np.arange(len(cc.params["sizes"])), cc.params["sizes"])
        kw = {"eps": cc.params["eps"]}
        W = ref.class_weights(labels, cc.params["eps"])
    elif objective == "x-clr":
        labels = cc.params["labels"]
        kw = {"label_tau": cc.params["label_tau"]}
        W = ref.xclr_weights(labels, cc.params["label_tau"])
    else:
        labels = cc.params["labels"]
        kw = {"sigma": cc.params["sigma"]}
        W = ref.gaussian_weights(labels, cc.params["sigma"])
    tau = cc.tau
    s = dgp.classify_objective(objective, labels, tau=tau, dim=dim, engine="structured", **kw)
    d = dgp.classify_objective(objective, labels, tau=tau, dim=dim, engine="dense", **kw)
    assert s.verdict == d.verdict, (s.reason, d.reason)
    assert s.rank == d.rank
    if d.c_interval is None:
        assert s.c_interval is None
    else:
        for x, y in zip(s.c_interval, d.c_interval, strict=True):
            assert (x is None) == (y is None)
            if x is not None:
                assert abs(x - y) <= 1e-6 * max(1.0, abs(y), 1.0 / tau)
    sim = "euclidean" if objective == "euclid-euclid" else "cosine"
    rv = ref.verdict(W, sim, tau, dim)
    if not rv.ambiguous:
        assert d.verdict == rv.verdict, (d.reason, rv)
    assert math.isfinite(s.entropic_bound)
    assert abs(s.entropic_bound - ref.bound(W)) <= 1e-8 * max(1.0, ref.bound(W))
