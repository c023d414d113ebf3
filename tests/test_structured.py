"""The structured engine agrees with the dense one, near every threshold, without N x N."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp._linalg import centre_points, tall_r
from dgp.classification import classify
from dgp.engine import blocks, lowrank
from dgp.engine.lowrank import gaussian_target
from dgp.engine.lowrank import row_statistics as kernel_row_statistics
from dgp.engine.target import log_weights, row_entropies
from dgp.tolerance import DEFAULT_RTOL, Tolerance
from dgp.weights import gaussian_kernel_weights


def target_gram(W, *, tau, c):
    """G(c) = tau (log w_ij + c) off the diagonal, 1 on it (symmetric positive W)."""
    G = tau * (np.log(W + np.eye(W.shape[0])) + c)
    np.fill_diagonal(G, 1.0)
    return G


def target_edm(W, *, tau, c):
    """D(c) = -2 tau (log w_ij + c), zero diagonal."""
    D = -2.0 * tau * (np.log(W + np.eye(W.shape[0])) + c)
    np.fill_diagonal(D, 0.0)
    return D


def classify_blocks(labels, *, within, cross, similarity="cosine", tau, dim, embed=False):
    bw = blocks.block_weights(labels, within=within, cross=cross)
    tol = Tolerance.make(DEFAULT_RTOL, n=bw.n)
    return blocks.classify_blocks(bw, similarity=similarity, tau=tau, dim=dim, tol=tol,
                                  embed=embed)


def classify_lowrank(t, *, similarity, tau, dim, entropic_bound, embed=False):
    tol = Tolerance.make(DEFAULT_RTOL, n=t.U.shape[0])
    return lowrank.classify_lowrank(t, similarity=similarity, tau=tau, dim=dim, tol=tol,
                                    entropic_bound=entropic_bound, embed=embed)


def assert_same(a, b, *, ctol=1e-6):
    """Same verdict, rank and c interval (relative tolerance ``ctol``)."""
    assert a.verdict == b.verdict, (a.reason, b.reason)
    assert a.rank == b.rank
    assert (a.c_interval is None) == (b.c_interval is None)
    if a.c_interval is not None:
        for x, y in zip(a.c_interval, b.c_interval, strict=True):
            assert (x is None) == (y is None)
            if x is not None:
                assert abs(x - y) <= ctol * max(1.0, abs(x), abs(y)), (a.c_interval, b.c_interval)
    if getattr(a.certificate, "ranks", None) is not None:
        assert a.certificate.ranks == b.certificate.ranks


def block_dense(labels, within, cross):
    _, inv = np.unique(labels, return_inverse=True)
    B = np.array(cross, dtype=float)
    np.fill_diagonal(B, within)
    W = B[np.ix_(inv, inv)]
    np.fill_diagonal(W, 0.0)
    return W


# ------------------------------------------------------------------------------------------
# class blocks
# ------------------------------------------------------------------------------------------


@st.composite
def block_cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    K = draw(st.integers(2, 4))
    sizes = rng.integers(2, 6, size=K)
    labels = rng.permutation(np.repeat(rng.choice(50, K, replace=False), sizes))
    within = np.exp(rng.uniform(-1, 1, K))
    S = np.exp(rng.uniform(-3, 0, (K, K)))
    S = np.triu(S, 1) + np.triu(S, 1).T
    if draw(st.booleans()):  # row-rescaled per class: asymmetric, cycle condition holds
        r = np.exp(rng.uniform(-1, 1, K))
        within, S = within * r, S * r[:, None]
    tau = float(np.exp(rng.uniform(np.log(0.05), np.log(3.0))))
    dim = int(rng.integers(1, K + 2))
    sim = draw(st.sampled_from(["cosine", "euclidean"]))
    return labels, within, S, tau, dim, sim


@settings(max_examples=60)
@given(block_cases())
def test_blocks_match_dense(case):
    labels, within, cross, tau, dim, sim = case
    s = classify_blocks(labels, within=within, cross=cross, similarity=sim, tau=tau, dim=dim)
    d = classify(block_dense(labels, within, cross), similarity=sim, tau=tau, dim=dim)
    assert_same(s, d)
    assert s.entropic_bound == pytest.approx(d.entropic_bound, rel=1e-10)
    assert s.method == "structured"


@settings(max_examples=40)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(2, 5),
    st.sampled_from([1 - 1e-3, 1.0, 1 + 1e-3, 0.5]),
    st.floats(0.02, 0.8),
)
def test_soft_supcon_near_tau_star(seed, K, f, eps):
    """tau* = K / ((K-1)(-log eps)) whatever the sizes: realizable (rank K) below, the simplex
    (rank K-1) at, inconsistent above; structured == dense at tau*(1 +- 1e-3) and at tau*."""
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(K), rng.integers(2, 7, size=K))
    tau = f * K / ((K - 1) * -np.log(eps))
    kw = {"within": np.ones(K), "cross": np.full((K, K), eps), "tau": tau, "dim": K}
    s = classify_blocks(labels, **kw)
    W = block_dense(labels, kw["within"], kw["cross"])
    assert_same(s, classify(W, tau=tau, dim=K))
    expected = {1.0: ("realizable", K - 1), 1 + 1e-3: ("inconsistent", None)}
    assert (s.verdict, s.rank) == expected.get(f, ("realizable", K))
    if s.verdict == "realizable":  # classes collapse: K prototypes of the right Gram
        protos = s.certificate.prototypes
        P = np.array(protos["point"] if "point" in protos else protos["hi"])
        G = P @ P.T
        assert np.allclose(np.diag(G), 1.0, atol=1e-9)
        off = G[~np.eye(K, dtype=bool)]
        assert np.allclose(off, tau * (np.log(eps) + s.c), atol=1e-8)


def test_block_embedding_reproduces_target():
    labels = np.array([3, 1, 1, 3, 2, 2, 2, 3, 1])
    within, cross = np.ones(3), np.full((3, 3), 0.2)
    tau = 0.3
    s = classify_blocks(labels, within=within, cross=cross, tau=tau, dim=3, embed=True)
    d = classify(block_dense(labels, within, cross), tau=tau, dim=3)
    assert_same(s, d)
    Z = s.embedding
    G = target_gram(block_dense(labels, within, cross), tau=tau, c=s.c)
    assert np.allclose(Z @ Z.T, G, atol=1e-9)


def test_block_embedding_with_spread_classes():
    """Within-class eigenvalues > 0: the embedding spreads classes as simplices."""
    labels = np.repeat([0, 1], [3, 4])
    within, cross = np.full(2, 0.5), np.full((2, 2), 1.0)
    for sim in ("cosine", "euclidean"):
        s = classify_blocks(
            labels, within=within, cross=cross, similarity=sim, tau=0.4, dim=10, embed=True
        )
        d = classify(block_dense(labels, within, cross), similarity=sim, tau=0.4, dim=10)
        assert_same(s, d)


@pytest.mark.parametrize("sim", ["cosine", "euclidean"])
def test_hard_supcon_zero_weights(sim):
    labels = np.array([2, 0, 0, 1, 2, 1, 0, 2])
    K = 3
    kw = {"within": np.ones(K), "cross": np.zeros((K, K)), "similarity": sim, "tau": 0.1}
    for dim in (1, 2):
        s = classify_blocks(labels, dim=dim, **kw)
        W = block_dense(labels, kw["within"], kw["cross"])
        d = classify(W, similarity=sim, tau=0.1, dim=dim)
        assert s.verdict == d.verdict and s.reason == d.reason
        assert s.certificate.kind == d.certificate.kind
        assert s.certificate.zero_weights == d.certificate.zero_weights
        assert s.entropic_bound == pytest.approx(d.entropic_bound, rel=1e-12)


def test_block_cycle_broken():
    labels = np.repeat([0, 1, 2], 3)
    cross = np.array([[0, 1.0, 1.0], [1.0, 0, 3.0], [1.0, 1.0, 0]])
    s = classify_blocks(labels, within=np.ones(3), cross=cross, tau=0.5, dim=3)
    d = classify(block_dense(labels, np.ones(3), cross), tau=0.5, dim=3)
    assert s.verdict == d.verdict == "inconsistent"
    assert s.certificate.kind == d.certificate.kind == "cycle"
    assert abs(s.certificate.log_ratio) == pytest.approx(abs(d.certificate.log_ratio))


def test_block_argument_errors():
    with pytest.raises(ValueError, match="shapes"):
        classify_blocks([0, 0, 1, 1], within=[1.0], cross=np.ones((2, 2)), tau=1.0, dim=1)
    with pytest.raises(ValueError, match="non-negative"):
        classify_blocks([0, 0, 1, 1], within=[1, -1], cross=np.ones((2, 2)), tau=1.0, dim=1)
    with pytest.raises(TypeError):
        classify_blocks([0.5, 0, 1, 1], within=[1, 1], cross=np.ones((2, 2)), tau=1.0, dim=1)


# ------------------------------------------------------------------------------------------
# low-rank label kernels
# ------------------------------------------------------------------------------------------


def sphere_points(rng, n, p, centre, radius, m=None):
    """n points on a sphere of radius ``radius`` in an ``m``-flat through ``centre``."""
    m = p if m is None else m
    u = rng.standard_normal((n, m))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    basis = np.linalg.qr(rng.standard_normal((p, p)))[0][:, :m]
    return centre + radius * u @ basis.T


@st.composite
def kernel_cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    p = draw(st.integers(1, 3))
    n = draw(st.integers(p + 3, 24))
    centre = rng.uniform(-3, 3, p)
    R = rng.uniform(0.5, 2.0)
    sigma = rng.uniform(0.7, 2.0)
    y = sphere_points(rng, n, p, centre, R)
    kind = draw(st.sampled_from(["on", "off", "generic"]))
    if kind == "off":  # slightly off the sphere
        y = centre + (y - centre) * (1 + 1e-2 * rng.standard_normal((n, 1)))
    elif kind == "generic":
        y = centre + R * rng.uniform(-1, 1, (n, p))
    f = draw(st.sampled_from([1.0, 1 - 1e-3, 1 + 1e-3, 0.5, 2.0]))
    tau = f * sigma**2 / R**2
    dim = int(draw(st.integers(1, p + 2)))
    sim = draw(st.sampled_from(["cosine", "euclidean"]))
    return y, sigma, tau, dim, sim


@settings(max_examples=80)
@given(kernel_cases())
def test_gaussian_kernel_matches_dense(case):
    """On, slightly off and far off spheres, at tau* = sigma^2/R^2, tau*(1 +- 1e-3), tau*/2,
    2 tau*: the low-rank path gives the dense verdict, rank, c interval and bound."""
    y, sigma, tau, dim, sim = case
    W = gaussian_kernel_weights(y, sigma=sigma)
    d = classify(W, similarity=sim, tau=tau, dim=dim)
    t = gaussian_target(centre_points(y), 0.5 / sigma**2)
    _, H = kernel_row_statistics(t.U, t.C)
    s = classify_lowrank(
        t, similarity=sim, tau=tau, dim=dim, entropic_bound=float(H.sum())
    )
    assert_same(s, d)
    assert s.entropic_bound == pytest.approx(d.entropic_bound, rel=1e-10)


def test_lowrank_target_is_the_log_kernel():
    rng = np.random.default_rng(3)
    y = rng.standard_normal((9, 2)) + 5.0
    t = gaussian_target(y - y.mean(axis=0), 0.5 / 0.7**2)
    L = np.log(gaussian_kernel_weights(y, sigma=0.7) + np.eye(9))
    assert np.allclose(t.dense_ell(), L, atol=1e-12)
    lo, hi = t.ell_bounds
    off = L[~np.eye(9, dtype=bool)]
    assert lo <= off.min() and off.max() <= hi


@pytest.mark.parametrize("sim", ["cosine", "euclidean"])
def test_lowrank_embedding_reproduces_target(sim):
    rng = np.random.default_rng(5)
    y = sphere_points(rng, 15, 3, np.array([1.0, 2.0, -1.0]), 1.5)
    sigma, tau = 1.0, 0.3  # tau R^2 < sigma^2: rank 4 at the upper end
    t = gaussian_target(y - y.mean(axis=0), 0.5 / sigma**2)
    s = classify_lowrank(
        t, similarity=sim, tau=tau, dim=4, entropic_bound=0.0, embed=True
    )
    assert s.verdict == "realizable"
    Z = s.embedding
    W = gaussian_kernel_weights(y, sigma=sigma)
    if sim == "cosine":
        assert np.allclose(Z @ Z.T, target_gram(W, tau=tau, c=s.c), atol=1e-9)
    else:
        D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
        assert np.allclose(D, target_edm(W, tau=tau, c=s.c), atol=1e-9)
        # Euclidean-Euclidean: z = (sqrt(tau)/sigma) y up to rigid motion
        Dy = ((y[:, None] - y[None]) ** 2).sum(-1) * tau / sigma**2
        assert np.allclose(D, Dy, atol=1e-9)


def test_lowrank_embedding_with_complement():
    """A degenerate-looking small case whose embedding needs directions outside span(U)."""
    rng = np.random.default_rng(8)
    y = rng.standard_normal((7, 1))
    t = gaussian_target(y - y.mean(axis=0), 0.5)
    s = classify_lowrank(
        t, similarity="cosine", tau=0.05, dim=6, entropic_bound=0.0, embed=True
    )
    d = classify(gaussian_kernel_weights(y, sigma=1.0), tau=0.05, dim=6)
    assert_same(s, d)
    if s.verdict == "realizable":
        W = gaussian_kernel_weights(y, sigma=1.0)
        assert np.allclose(s.embedding @ s.embedding.T, target_gram(W, tau=0.05, c=s.c), atol=1e-9)


def test_row_statistics_match_dense_entropies():
    rng = np.random.default_rng(2)
    y = rng.standard_normal((40, 3))
    t = gaussian_target(y, 0.5 / 1.3**2)
    lse, H = kernel_row_statistics(t.U, t.C, block_bytes=4096)  # several blocks
    W = gaussian_kernel_weights(y, sigma=1.3)
    assert np.allclose(H, row_entropies(log_weights(W).L), atol=1e-12)
    assert np.allclose(lse, np.log(W.sum(axis=1)), atol=1e-12)


def test_tall_r_is_an_r_factor():
    rng = np.random.default_rng(0)
    M = rng.standard_normal((1000, 4))
    M[:, 3] = M[:, 0] - 2 * M[:, 1]  # rank deficient
    R = tall_r(M, block=128)
    assert np.allclose(R.T @ R, M.T @ M, atol=1e-9)


def test_no_n_by_n_memory():
    """200 000 labels: peak traced memory far below one N x N row block of the dense path."""
    rng = np.random.default_rng(0)
    n = 200_000
    y = sphere_points(rng, n, 2, np.array([0.3, -1.0]), 2.0)
    t = gaussian_target(y - y.mean(axis=0), 0.5)
    tracemalloc.start()
    s = classify_lowrank(
        t, similarity="cosine", tau=0.25, dim=2, entropic_bound=float("nan")
    )
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert (s.verdict, s.rank) == ("realizable", 2)
    assert peak < 40 * n * 8  # O(N): a few columns of N floats


# ------------------------------------------------------------------------------------------
# one cross value at many classes: the grouped quotient
# ------------------------------------------------------------------------------------------


@settings(max_examples=25)
@given(
    seed=st.integers(0, 2**32 - 1),
    f=st.sampled_from([0.5, 0.999, 1.0, 1.001, 2.0]),
    sim=st.sampled_from(["cosine", "euclidean"]),
)
def test_grouped_quotient_matches_dense(seed, f, sim):
    """K >= 64 classes with one cross weight (Soft SupCon) go through the grouped quotient;
    verdict, rank, c interval and bound are those of the dense engine."""
    from dgp.objectives import classify_objective

    rng = np.random.default_rng(seed)
    K = int(rng.integers(64, 80))
    labels = rng.permutation(np.repeat(np.arange(K), rng.integers(1, 4, K)))
    eps = float(rng.uniform(0.05, 0.6))
    tau = f * K / ((K - 1) * -np.log(eps))
    dim = int(rng.choice([3, K - 1, K, labels.size]))
    kw = {"eps": eps, "tau": tau, "dim": dim, "similarity": sim}
    s = classify_objective("soft-supcon", labels, **kw)
    d = classify_objective("soft-supcon", labels, engine="dense", **kw)
    assert_same(s, d, ctol=1e-9)
    assert s.entropic_bound == pytest.approx(d.entropic_bound, rel=1e-12)
    assert s.certificate.structure["groups"] <= 3 * 2  # (size, within) pairs


def test_fifty_thousand_pairs_never_build_k_by_k():
    """50 000 two-sample classes: decided in O(K) memory (the K x K quotient would be 20 GB)."""
    from dgp.objectives import classify_objective

    labels = np.repeat(np.arange(50_000), 2)
    tracemalloc.start()
    cos = classify_objective("supcon", labels, tau=0.1, dim=100_000)
    euc = classify_objective("supcon", labels, tau=0.1, dim=3, similarity="euclidean")
    soft = classify_objective("soft-supcon", labels, eps=0.1, tau=0.1, dim=50_000)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert cos.verdict == "inconsistent" and cos.certificate.kind == "zero_weight"
    assert cos.certificate.entry == (0, 2)
    assert euc.verdict == "degenerate" and euc.certificate.kind == "blocks"
    # below tau*: classes collapse onto 50 000 prototypes, rank K
    assert (soft.verdict, soft.rank) == ("realizable", 50_000)
    assert soft.c == pytest.approx(10.0)  # tau (log 1 + c) = 1 within classes
    assert peak < 200 * labels.size * 8
