"""A boundary case keeps its verdict at every scale: a weighting realizable at a single value
of ``c`` (flagged ``near_threshold``) is decided the same for ``alpha W`` and for its
log-weights ``log W + log alpha``, for every ``|log alpha| <= 700``, and for every translation
of its labels. The tolerance counts the precision of the numbers as given: a log-weight of size
``|log alpha|`` carries ``|log alpha| u`` of absolute error, a subnormal weight fewer digits
than a float64."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.engine.target import log_weights
from dgp.objectives import registry


def _boundary(seed: int):
    """y-Aware labels on a sphere of radius R at tau R^2 = sigma^2: the cosine family is the
    single point c = 1/tau (rank p), a flagged boundary case."""
    rng = np.random.default_rng(seed)
    n, p = int(rng.integers(5, 10)), int(rng.integers(1, 4))
    Y = rng.standard_normal((n, p))
    Y -= Y.mean(0)
    R = float(rng.uniform(0.3, 3.0))
    Y *= R / np.linalg.norm(Y, axis=1, keepdims=True)
    tau = float(rng.uniform(0.05, 2.0))
    sigma = R * math.sqrt(tau)
    W = registry.get("y-aware").weights(registry.get("y-aware").check_labels(Y), {"sigma": sigma})
    return Y, W, tau, sigma, p


def _same(ref, res):
    assert (res.verdict, res.rank) == (ref.verdict, ref.rank), (ref.reason, res.reason)
    assert res.near_threshold == ref.near_threshold


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), log_alpha=st.one_of(
    st.sampled_from([-700.0, -690.0, -230.0, 230.0, 690.0, 700.0]), st.floats(-700.0, 700.0)))
def test_log_weights_at_any_offset_keep_a_boundary_verdict(seed, log_alpha):
    _, W, tau, _, p = _boundary(seed)
    ref = dgp.classify(W, tau=tau, dim=p)
    assert ref.verdict == "realizable" and ref.near_threshold
    with np.errstate(divide="ignore"):
        L = np.log(W) + log_alpha
    _same(ref, dgp.classify(log_weights=L, tau=tau, dim=p))


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), log_alpha=st.one_of(
    st.sampled_from([-700.0, -690.0, -230.0, 230.0, 690.0]), st.floats(-700.0, 700.0)))
def test_scaled_weights_keep_a_boundary_verdict(seed, log_alpha):
    """alpha W, subnormal entries included (every positive weight stays positive)."""
    _, W, tau, _, p = _boundary(seed)
    Wa = W * math.exp(log_alpha)
    if not np.isfinite(Wa).all() or (Wa[W > 0] == 0).any():
        return  # overflowed or underflowed to zero: another weighting
    ref = dgp.classify(W, tau=tau, dim=p)
    _same(ref, dgp.classify(Wa, tau=tau, dim=p))


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16), log_t=st.floats(0.0, 7.0))
def test_translated_labels_keep_a_boundary_verdict(seed, log_t):
    Y, _, tau, sigma, p = _boundary(seed)
    t = np.random.default_rng(seed + 1).standard_normal(p)
    t *= 10.0 ** log_t / np.linalg.norm(t)
    for name in ("y-aware", "euclid-euclid"):
        ref = dgp.classify_objective(name, Y, tau=tau, dim=p, sigma=sigma)
        res = dgp.classify_objective(name, Y + t, tau=tau, dim=p, sigma=sigma)
        assert (res.verdict, res.rank) == (ref.verdict, ref.rank), (ref.reason, res.reason)


def test_the_precision_of_the_input_is_counted():
    """Log-weights near 690 carry ~690 u of error; subnormal weights fewer digits; weights of
    normal floats at any scale carry nothing more than their ratios' rounding."""
    W = np.array([[0.0, 1.0, 0.5], [1.0, 0.0, 0.25], [0.5, 0.25, 0.0]])
    assert log_weights(W * 1e300).magnitude == 0.0
    assert log_weights(log_weights=np.log(W + np.eye(3)) + 690.0).magnitude >= 690.0
    assert log_weights(W * 1e-320).magnitude > 1e10
    res = dgp.classify(log_weights=np.log(W + np.eye(3)) + 690.0, tau=0.5, dim=3)
    assert res.tolerance["widening"] > 1.0
