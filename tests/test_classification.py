"""Verdicts of the realizability engine on the paper's cases, boundaries and invariances.

Reference values are derived independently of the engine: closed forms for Soft SupCon,
y-Aware on a circle, X-CLR and Euclidean–Euclidean, and explicit ``numpy.linalg.eigvalsh`` of
the target matrices built entry by entry.
"""

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.infonce import winfonce_loss
from dgp.weights import (
    gaussian_kernel_weights,
    soft_supcon_weights,
    supcon_weights,
    xclr_weights,
)


def eig_gram(W, tau, c):
    """Eigenvalues of G(c) built entry by entry from log W (symmetric W)."""
    G = tau * (np.log(np.where(W > 0, W, 1.0)) + c)
    np.fill_diagonal(G, 1.0)
    return np.linalg.eigvalsh(G)


def circle(n, radius, centre=(0.0, 0.0), seed=0):
    t = np.sort(np.random.default_rng(seed).uniform(0, 2 * np.pi, n))
    return np.c_[np.cos(t), np.sin(t)] * radius + np.asarray(centre)


# --- Soft SupCon: equiangular rho = 1 + tau log eps, tau* = K / ((K-1)(-log eps)) ----------


@pytest.mark.parametrize("sizes", [[3, 3, 3], [2, 5, 9], [2, 2, 3, 7]])
def test_soft_supcon_boundary(sizes):
    K, eps = len(sizes), 0.2
    y = np.repeat(np.arange(K), sizes)
    W = soft_supcon_weights(y, eps=eps)
    tau_star = K / ((K - 1) * -np.log(eps))
    below = dgp.classify(W, tau=0.7 * tau_star, dim=K)
    at = dgp.classify(W, tau=tau_star, dim=K - 1)
    above = dgp.classify(W, tau=tau_star * (1 + 1e-4), dim=K)
    assert (below.verdict, below.rank) == ("realizable", K)
    assert (at.verdict, at.rank) == ("realizable", K - 1)
    assert above.verdict == "inconsistent" and above.c_interval is None
    assert dgp.classify(W, tau=tau_star * (1 - 1e-4), dim=K - 1).verdict == "inconsistent"
    # the realised geometry: cosine 1 within classes, rho = 1 + tau log eps across
    for res in (below, at):
        Z = res.embedding
        G = Z @ Z.T
        same = np.equal.outer(y, y)
        assert np.allclose(G[same], 1.0, atol=1e-9)
        assert np.allclose(G[~same], 1 + res.tau * np.log(eps), atol=1e-9)
        assert res.c == pytest.approx(1 / res.tau)  # tau * (log 1 + c) = 1 within classes
    # the centred simplex at tau*: prototypes sum to zero
    protos = np.array([at.embedding[y == k][0] for k in range(K)])
    assert np.allclose(protos.sum(0), 0.0, atol=1e-8)


def test_soft_supcon_bound_attained_by_embedding():
    y = np.repeat(np.arange(3), [2, 3, 5])
    W = soft_supcon_weights(y, eps=0.1)
    res = dgp.classify(W, tau=0.3, dim=3)
    assert res.verdict == "realizable"
    loss = winfonce_loss(res.embedding, W, tau=0.3)
    assert loss == pytest.approx(res.entropic_bound, rel=1e-10)


def test_dimension_rules_on_an_interval():
    y = np.repeat(np.arange(3), [2, 3, 4])
    W = soft_supcon_weights(y, eps=0.2)
    res = {d: dgp.classify(W, tau=0.5, dim=d) for d in (2, 3, 7, 8, 9)}
    assert res[2].verdict == "inconsistent"  # both end points need more dimensions
    assert res[3].verdict == res[7].verdict == "realizable"
    assert res[8].verdict == "degenerate"  # both end points (ranks 3 and N-1) admissible
    assert res[9].verdict == "degenerate"  # every c in the interval
    lo, hi = res[3].c_interval
    assert lo < hi and res[3].c == pytest.approx(hi)


# --- y-Aware on a circle of radius R: the label circle itself at tau R^2 = sigma^2 ----------


@pytest.mark.parametrize("centre", [(0.0, 0.0), (3.0, -1.0)])
def test_y_aware_circle(centre):
    R, sigma = 1.5, 0.9
    y = circle(10, R, centre)
    W = gaussian_kernel_weights(y, sigma=sigma)
    tau_c = sigma**2 / R**2
    at = dgp.classify(W, tau=tau_c, dim=2)
    assert (at.verdict, at.rank) == ("realizable", 2)
    # the optimum is the label circle rescaled to the unit circle, up to rotation
    Z = at.embedding
    u = (y - np.asarray(centre)) / R
    assert np.allclose(Z @ Z.T, u @ u.T, atol=1e-8)
    # below: a smaller circle on the sphere, one more dimension (the end point of rank p + 1)
    below = dgp.classify(W, tau=0.5 * tau_c, dim=3)
    assert (below.verdict, below.rank) == ("realizable", 3)
    assert dgp.classify(W, tau=0.5 * tau_c, dim=2).verdict == "inconsistent"
    assert dgp.classify(W, tau=1.5 * tau_c, dim=9).verdict == "inconsistent"


def test_y_aware_off_sphere_is_inconsistent_in_low_dimension():
    y = np.r_[circle(5, 2.0), circle(5, 1.0, seed=1)]
    W = gaussian_kernel_weights(y, sigma=1.0)
    for tau in (0.1, 0.25, 0.4):
        assert dgp.classify(W, tau=tau, dim=2).verdict == "inconsistent"


# --- X-CLR: the label embeddings themselves at tau = tau_y --------------------------------


def test_xclr_at_and_around_label_temperature():
    rng = np.random.default_rng(0)
    y = rng.standard_normal((9, 3))
    W = xclr_weights(y, label_tau=0.4)
    at = dgp.classify(W, tau=0.4, dim=3)
    assert (at.verdict, at.rank) == ("realizable", 3)
    yh = y / np.linalg.norm(y, axis=1, keepdims=True)
    assert np.allclose(at.embedding @ at.embedding.T, yh @ yh.T, atol=1e-8)
    assert dgp.classify(W, tau=0.4 * (1 + 1e-3), dim=8).verdict == "inconsistent"
    below = dgp.classify(W, tau=0.3, dim=4)
    assert (below.verdict, below.rank) == ("realizable", 4)
    assert dgp.classify(W, tau=0.3, dim=3).verdict == "inconsistent"


# --- Euclidean-Euclidean: z = (sqrt(tau)/sigma) y up to rigid motion -------------------------


def test_euclid_euclid_dimensions_and_embedding():
    rng = np.random.default_rng(1)
    y = rng.standard_normal((8, 3))
    tau, sigma = 0.5, 1.3
    W = gaussian_kernel_weights(y, sigma=sigma)
    assert dgp.classify(W, similarity="euclidean", tau=tau, dim=2).verdict == "inconsistent"
    res = dgp.classify(W, similarity="euclidean", tau=tau, dim=3)
    assert (res.verdict, res.rank) == ("realizable", 3)
    assert res.c_interval[0] is None and res.c_interval[1] == pytest.approx(0.0, abs=1e-9)
    Z, Zs = res.embedding, np.sqrt(tau) / sigma * y
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    Ds = ((Zs[:, None] - Zs[None]) ** 2).sum(-1)
    assert np.allclose(D, Ds, atol=1e-9)
    assert winfonce_loss(Z, W, tau=tau, similarity="euclidean") == pytest.approx(
        res.entropic_bound, rel=1e-10
    )
    deg = dgp.classify(W, similarity="euclidean", tau=tau, dim=7)  # d >= N - 1
    assert deg.verdict == "degenerate" and deg.attainable


# --- cycle condition, zero weights ---------------------------------------------------------


def test_cycle_condition_certificate():
    W = np.ones((5, 5))
    W[1, 3], W[3, 4], W[4, 1] = 3.0, 2.0, 5.0
    res = dgp.classify(W, tau=0.5, dim=4)
    assert res.verdict == "inconsistent" and not res.attainable
    cyc = res.certificate.cycle
    assert cyc[0] == cyc[-1]
    # re-check: the log-ratio around the reported cycle is far from zero
    ratio = sum(np.log(W[a, b]) - np.log(W[b, a]) for a, b in itertools.pairwise(cyc))
    assert abs(ratio) > 0.1
    assert ratio == pytest.approx(res.certificate.log_ratio)


def test_symmetrizable_weights_pass_the_cycle_condition():
    rng = np.random.default_rng(2)
    S = rng.random((6, 6)) + 0.5
    S = S + S.T
    r = rng.uniform(0.1, 10, 6)
    W = r[:, None] * S  # row rescaling keeps every p_i, hence the whole problem
    a, b = dgp.classify(S, tau=0.2, dim=5), dgp.classify(W, tau=0.2, dim=5)
    assert a.verdict == b.verdict
    # the row offsets have mean zero, so c moves by the mean log row scale
    assert np.allclose(np.array(a.c_interval) - np.mean(np.log(r)), b.c_interval, atol=1e-9)


def test_hard_supcon_zero_weights():
    y = np.repeat(np.arange(3), [4, 3, 2])
    W = supcon_weights(y)
    cos = dgp.classify(W, tau=0.1, dim=8)
    assert cos.verdict == "inconsistent" and cos.certificate.kind == "zero_weight"
    i, j = cos.certificate.entry
    assert W[i, j] == 0 and y[i] != y[j]
    euc = dgp.classify(W, similarity="euclidean", tau=0.1, dim=1)
    assert euc.verdict == "degenerate" and not euc.attainable
    assert len(euc.certificate.blocks) == 3


def test_euclidean_zero_weights_outside_blocks_are_decided():
    W = np.ones((3, 3))
    W[0, 1] = W[1, 0] = 0.0  # 0 - 2 - 1 chain: not a union of complete blocks
    res = dgp.classify(W, similarity="euclidean", tau=1.0, dim=1)
    assert res.verdict == "degenerate" and not res.attainable
    cert = res.to_dict()["certificate"]
    assert cert["kind"] == "diverging_family" and cert["decided"]
    gaps = cert["gaps"]
    assert gaps[0] > 0 and gaps[-1] < 1e-12
    assert all(b <= a + 1e-13 for a, b in itertools.pairwise(gaps))  # rounding


# --- the interval against a brute-force eigenvalue scan ------------------------------------


@settings(max_examples=40)
@given(st.integers(0, 10_000), st.integers(3, 7), st.floats(0.05, 2.0))
def test_cosine_interval_matches_bruteforce_scan(seed, n, tau):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, rng.integers(1, n + 1)))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    W = np.exp(X @ X.T / tau + 0.3 * rng.standard_normal((n, n)) ** 2 * (seed % 2))
    W = 0.5 * (W + W.T)
    res = dgp.classify(W, tau=tau, dim=n)
    grid = np.linspace(-3 / tau - 10, 3 / tau + 10, 4001)
    ok = np.array([eig_gram(W, tau, c)[0] >= -1e-9 for c in grid])
    if res.c_interval is None:
        assert not ok.any()
        return
    lo, hi = res.c_interval
    inside = (grid > lo + 1e-6) & (grid < hi - 1e-6)
    outside = (grid < lo - 1e-6) | (grid > hi + 1e-6)
    assert ok[inside].all() and not ok[outside].any()
    assert eig_gram(W, tau, lo)[0] >= -1e-7 and eig_gram(W, tau, hi)[0] >= -1e-7


# --- invariances: permutation and rescaling never change the verdict ------------------------


CASES = {
    "soft": (soft_supcon_weights(np.repeat(np.arange(3), [2, 3, 4]), eps=0.2), "cosine", 0.5, 3),
    "ya": (gaussian_kernel_weights(circle(8, 1.5), sigma=0.9), "cosine", 0.36, 2),
    "ee": (
        gaussian_kernel_weights(np.random.default_rng(5).standard_normal((7, 2)), sigma=1.0),
        "euclidean",
        0.5,
        2,
    ),
    "xclr": (xclr_weights(np.random.default_rng(6).standard_normal((7, 3)), label_tau=0.5),
             "cosine", 0.5, 3),
}


@settings(max_examples=30)
@given(
    st.sampled_from(sorted(CASES)),
    st.permutations(range(7)),
    st.floats(1e-3, 1e3),
    st.lists(st.floats(0.1, 10), min_size=9, max_size=9),
)
def test_verdict_invariant_under_permutation_and_rescaling(name, perm, scale, rows):
    W, sim, tau, d = CASES[name]
    n = W.shape[0]
    p = np.array([*perm[:n], *range(7, n)]) if n > 7 else np.array([k for k in perm if k < n])
    ref = dgp.classify(W, similarity=sim, tau=tau, dim=d)
    Wp = W[np.ix_(p, p)] * scale * np.asarray(rows[:n])[:, None]
    res = dgp.classify(Wp, similarity=sim, tau=tau, dim=d)
    assert (res.verdict, res.rank) == (ref.verdict, ref.rank)
    if ref.c_interval is not None:
        # log(scale) and the row offsets (mean zero) move c; the width is invariant
        shift = -np.log(scale) - np.mean(np.log(rows[:n]))
        for a, b in zip(ref.c_interval, res.c_interval, strict=True):
            assert (a is None) == (b is None)
            if a is not None:
                assert b == pytest.approx(a + shift, abs=1e-7 * (1 + abs(a)))
    if ref.embedding is not None:
        G, Gp = ref.embedding @ ref.embedding.T, res.embedding @ res.embedding.T
        assert np.allclose(Gp, G[np.ix_(p, p)], atol=1e-8)


# --- certificates re-checked independently ---------------------------------------------------


def test_farkas_certificate_rechecks():
    y = np.repeat(np.arange(3), [2, 3, 4])
    W = soft_supcon_weights(y, eps=0.2)
    tau = 2.0  # above tau* = 1.86: no PSD member
    res = dgp.classify(W, tau=tau, dim=3)
    cert = res.certificate
    assert cert.kind == "farkas"
    Y = sum(w * np.outer(v, v) for w, v in zip(cert.weights, cert.vectors, strict=True))
    n = W.shape[0]
    E = np.ones((n, n)) - np.eye(n)
    A = tau * np.log(W + np.eye(n))
    np.fill_diagonal(A, 1.0)
    assert np.linalg.eigvalsh(Y)[0] >= -1e-12
    assert abs(np.sum(Y * E)) < 1e-6
    assert np.sum(Y * A) < -1e-3
    # hence <Y, G(c)> < 0 for every c in a wide range: no member is PSD
    for c in np.linspace(-20, 20, 41):
        assert np.sum(Y * (A + tau * c * E)) < 0


def test_result_reports_tolerance_and_serialises():
    W = soft_supcon_weights([0, 0, 1, 1], eps=0.3)
    res = dgp.classify(W, tau=0.4, dim=2, rtol=1e-7)
    d = res.to_dict()
    assert d["rtol"] == 1e-7 and "margins" in d["certificate"]
    for key in ("verdict", "attainable", "similarity", "n", "dim", "tau", "rank", "c_interval",
                "entropic_bound", "reason", "certificate"):
        assert key in d
    p = np.array([1.0, 0.3, 0.3]) / 1.6  # each row: one positive, two negatives at eps
    assert d["entropic_bound"] == pytest.approx(-4 * np.sum(p * np.log(p)))


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"tau": 0.0, "dim": 2}, ValueError, "tau must be a finite number > 0"),
        ({"tau": -1.0, "dim": 2}, ValueError, "tau"),
        ({"tau": 1.0, "dim": 0}, ValueError, "dim must be an integer >= 1"),
        ({"tau": 1.0, "dim": 2.5}, TypeError, "dim must be an integer"),
        ({"tau": 1.0, "dim": 2, "similarity": "dot"}, ValueError, "similarity must be one of"),
        ({"tau": 1.0, "dim": 2, "method": "magic"}, ValueError, "method must be one of"),
    ],
)
def test_bad_arguments(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        dgp.classify(np.ones((3, 3)), **kwargs)
