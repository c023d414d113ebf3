"""The spectral engine and the SDP formulation (cvxpy) agree on random small cases."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.engine.sdp import SDP_ACCURACY as SDP_RTOL
from dgp.weights import gaussian_kernel_weights, soft_supcon_weights


def _case(kind: str, seed: int):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(3, 8))
    tau = float(rng.uniform(0.1, 1.5))
    if kind == "lowrank":  # a realizable target of rank r, seen through row rescaling
        r = int(rng.integers(1, n))
        X = rng.standard_normal((n, r))
        X /= np.linalg.norm(X, axis=1, keepdims=True)
        W = np.exp(X @ X.T / tau) * rng.uniform(0.5, 2.0, n)[:, None]
        return W, "cosine", tau
    if kind == "soft":
        K = int(rng.integers(2, 4))
        sizes = rng.integers(2, 4, K)
        eps = float(rng.uniform(0.05, 0.6))
        tau = float(rng.uniform(0.3, 1.6)) * K / ((K - 1) * -np.log(eps))
        return soft_supcon_weights(np.repeat(np.arange(K), sizes), eps=eps), "cosine", tau
    if kind == "random":
        S = rng.uniform(0.2, 3.0, (n, n))
        return S + S.T, str(rng.choice(["cosine", "euclidean"])), tau
    # Gaussian kernel of p-dimensional labels, Euclidean latent
    y = rng.standard_normal((n, int(rng.integers(1, 4))))
    return gaussian_kernel_weights(y, sigma=float(rng.uniform(0.5, 2))), "euclidean", tau


# twice the profile's count (200 by default): each example is one more independent random case
# on which two unrelated methods must agree
@settings(max_examples=2 * settings.default.max_examples)
@given(st.sampled_from(["lowrank", "soft", "random", "kernel"]), st.integers(0, 2**31 - 1),
       st.integers(1, 8))
@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_spectral_and_sdp_agree(kind, seed, dim):
    W, sim, tau = _case(kind, seed)
    a = dgp.classify(W, similarity=sim, tau=tau, dim=dim)
    b = dgp.classify(W, similarity=sim, tau=tau, dim=dim, method="sdp")
    assert (a.verdict, a.rank) == (b.verdict, b.rank)
    assert (a.c_interval is None) == (b.c_interval is None)
    if a.c_interval is not None:
        for x, y in zip(a.c_interval, b.c_interval, strict=True):
            assert (x is None) == (y is None)
            if x is not None:
                assert y == pytest.approx(x, abs=100 * SDP_RTOL * (1 + abs(x)) / tau)


def test_sdp_reports_distance_to_the_elliptope_when_empty():
    W = soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    res = dgp.classify(W, tau=1.5, dim=3, method="sdp")  # tau* = 0.65
    assert res.verdict == "inconsistent"
    cert = res.certificate
    assert cert.distance > 1e-3
    # re-check the nearest target: unit diagonal, PSD, at the stated distance from G(c)
    G = np.array(cert.nearest_target)
    assert np.allclose(np.diag(G), 1.0, atol=1e-6) and np.linalg.eigvalsh(G)[0] > -1e-6
    Gc = 1.5 * (np.log(W + np.eye(6)) + cert.c_nearest)
    np.fill_diagonal(Gc, 1.0)
    assert np.linalg.norm(G - Gc) == pytest.approx(cert.distance, rel=1e-4)
    ok = dgp.classify(W, tau=0.5, dim=3, method="sdp")
    assert ok.verdict == "realizable" and ok.rank == 3
