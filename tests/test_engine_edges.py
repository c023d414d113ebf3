"""The engine at its edges: rescaling of W, critical temperatures, underflowing kernels, labels
far from the origin, extreme magnitudes, float32 input, log-weight input, singleton classes.

Every expected verdict comes from a closed form or an independent dense computation, never from
the engine itself; where the engine says a verdict is decided within tolerance of a critical value
(``near_threshold``), only the flag is checked.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp import strategies as ds
from dgp.errors import DgpWarning
from dgp.infonce import entropic_bound, winfonce_loss
from dgp.objectives import classify_objective
from dgp.weights import gaussian_kernel_weights, soft_supcon_weights

SCALES = [1e-300, 1e-200, 1e-100, 1e-10, 1.0, 1e10, 1e100, 1e200, 1e300]


def same_decision(a, b):
    assert (a.verdict, a.rank, a.near_threshold) == (b.verdict, b.rank, b.near_threshold), (
        a.reason, b.reason)
    ca, cb = a.to_dict()["certificate"], b.to_dict()["certificate"]
    assert ca["kind"] == cb["kind"]
    for key in ("ranks", "zeros", "rank_at_c_max", "zeros_at_c_max", "cycle"):
        assert ca.get(key) == cb.get(key), key


def shifted(a, b, shift, tol=1e-12):
    """``b``'s c interval is ``a``'s moved by ``shift``."""
    assert (a.c_interval is None) == (b.c_interval is None)
    if a.c_interval is None:
        return
    for x, y in zip(a.c_interval, b.c_interval, strict=True):
        assert (x is None) == (y is None)
        if x is not None:
            assert y == pytest.approx(x + shift, abs=tol * max(1.0, abs(x), abs(shift)))


# ------------------------------------------------------------------------------------------
# scale: W and alpha W are the same problem
# ------------------------------------------------------------------------------------------


def rank_plus_tiny(rng, n, r, tiny):
    """Euclidean weights from an embedding of rank r plus one coordinate of size ``tiny``."""
    Z = np.c_[rng.standard_normal((n, r)), tiny * rng.standard_normal((n, 1))]
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    return np.exp(-D / 2.0)


def broken_cycle(rng, n, delta):
    """A positive symmetric W with one triangle broken by a log-ratio ``delta``."""
    W = np.exp(rng.uniform(-2, 0, (n, n)))
    W = 0.5 * (W + W.T)
    W[1, 2] *= math.exp(delta)
    return W


@pytest.mark.parametrize("alpha", SCALES)
def test_rescaling_never_changes_the_verdict(alpha):
    rng = np.random.default_rng(0)
    cases = [
        (broken_cycle(rng, 6, 1e-6), "cosine", 0.5, 3),  # a broken cycle stays broken
        (rank_plus_tiny(rng, 8, 2, 1e-5), "euclidean", 1.0, 2),  # an extra tiny eigenvalue
        (rank_plus_tiny(rng, 8, 2, 0.0), "euclidean", 1.0, 2),
        (soft_supcon_weights(np.repeat(np.arange(3), [3, 2, 4]), eps=0.2), "cosine", 0.5, 3),
        (gaussian_kernel_weights(rng.standard_normal((7, 2)), sigma=1.0) * np.exp(
            rng.uniform(-1, 1, (7, 1))), "cosine", 0.3, 3),  # rows rescaled: asymmetric
    ]
    for W, sim, tau, dim in cases:
        ref = dgp.classify(W, similarity=sim, tau=tau, dim=dim)
        res = dgp.classify(alpha * W, similarity=sim, tau=tau, dim=dim)
        same_decision(ref, res)
        shifted(ref, res, -math.log(alpha))
        if ref.c is not None:
            assert res.c == pytest.approx(ref.c - math.log(alpha), abs=1e-12 * 700)


def test_rescaling_expected_verdicts():
    rng = np.random.default_rng(1)
    W = broken_cycle(rng, 6, 1e-6)
    for alpha in (1e-300, 1.0, 1e300):
        res = dgp.classify(alpha * W, tau=0.5, dim=3)
        assert res.verdict == "inconsistent" and res.certificate.kind == "cycle"
        assert abs(res.certificate.log_ratio) == pytest.approx(1e-6, rel=1e-6)
    W = rank_plus_tiny(rng, 8, 2, 1e-5)
    for alpha in (1e-300, 1e-100, 1.0, 1e100):
        res = dgp.classify(alpha * W, similarity="euclidean", tau=1.0, dim=2)
        assert (res.verdict, res.certificate.rank_at_c_max) == ("inconsistent", 3)


@settings(max_examples=60)
@given(
    W=st.one_of(ds.symmetric_weights(), ds.symmetrizable_weights(), ds.cycle_breaking_weights()),
    log_alpha=st.floats(-690.0, 690.0),
    tau=ds.temperatures(0.05, 2.0),
    dim=st.integers(1, 7),
    similarity=st.sampled_from(["cosine", "euclidean"]),
)
def test_property_scale_invariance(W, log_alpha, tau, dim, similarity):
    ref = dgp.classify(W, similarity=similarity, tau=tau, dim=dim)
    res = dgp.classify(math.exp(log_alpha) * W, similarity=similarity, tau=tau, dim=dim)
    same_decision(ref, res)
    shifted(ref, res, -log_alpha)


# ------------------------------------------------------------------------------------------
# thresholds: tau* (1 +- 10^-k), k = 4..12, dense and structured alike
# ------------------------------------------------------------------------------------------

KS = range(4, 13)


def check_expected(res, expected, k):
    if res.near_threshold:
        return
    assert (res.verdict, res.rank) == expected, (k, res.reason)


@pytest.mark.parametrize("sizes", [[4, 3, 2], [3, 3], [5, 2, 2, 3]])
@pytest.mark.parametrize("eps", [0.05, 0.3])
def test_soft_supcon_at_tau_star(sizes, eps):
    K = len(sizes)
    labels = np.repeat(np.arange(K), sizes)
    tau_star = K / ((K - 1) * -math.log(eps))
    for k in KS:
        for sign in (-1, 1):
            tau = tau_star * (1 + sign * 10.0**-k)
            for dim, expected in ((K, ("realizable", K) if sign < 0 else ("inconsistent", None)),
                                  (K - 1, ("inconsistent", None))):
                d = classify_objective("soft-supcon", labels, eps=eps, tau=tau, dim=dim,
                                       engine="dense")
                s = classify_objective("soft-supcon", labels, eps=eps, tau=tau, dim=dim)
                same_decision(d, s)
                check_expected(d, expected, k)
                if k <= 9:  # well above float64 noise: decided exactly, no flag
                    assert not d.near_threshold
    at = classify_objective("soft-supcon", labels, eps=eps, tau=tau_star, dim=K - 1)
    assert (at.verdict, at.rank, at.near_threshold) == ("realizable", K - 1, True)


def circle(n, radius, centre, seed=0):
    t = np.sort(np.random.default_rng(seed).uniform(0, 2 * np.pi, n))
    return np.c_[np.cos(t), np.sin(t)] * radius + np.asarray(centre)


@pytest.mark.parametrize("centre", [(0.0, 0.0), (2.0, -1.0)])
def test_y_aware_at_tau_r2_equal_sigma2(centre):
    R, sigma = 1.5, 0.8
    y = circle(14, R, centre)
    tau_c = sigma**2 / R**2
    for k in KS:
        for sign in (-1, 1):
            tau = tau_c * (1 + sign * 10.0**-k)
            for dim, expected in ((3, ("realizable", 3) if sign < 0 else ("inconsistent", None)),
                                  (2, ("inconsistent", None))):
                d = classify_objective("y-aware", y, sigma=sigma, tau=tau, dim=dim,
                                       engine="dense")
                s = classify_objective("y-aware", y, sigma=sigma, tau=tau, dim=dim)
                same_decision(d, s)
                check_expected(d, expected, k)
                if k <= 8:
                    assert not d.near_threshold
    at = classify_objective("y-aware", y, sigma=sigma, tau=tau_c, dim=2)
    assert (at.verdict, at.rank) == ("realizable", 2) and at.near_threshold


def test_x_clr_at_tau_y():
    rng = np.random.default_rng(3)
    emb = rng.standard_normal((16, 3))
    tau_y = 0.4
    for k in KS:
        for sign in (-1, 1):
            tau = tau_y * (1 + sign * 10.0**-k)
            expected = ("realizable", 4) if sign < 0 else ("inconsistent", None)
            d = classify_objective("x-clr", emb, label_tau=tau_y, tau=tau, dim=4, engine="dense")
            s = classify_objective("x-clr", emb, label_tau=tau_y, tau=tau, dim=4)
            same_decision(d, s)
            check_expected(d, expected, k)


@settings(max_examples=40)
@given(case=ds.soft_supcon_near_critical(rel=1e-4, min_rel=1e-12), dim=st.integers(1, 5))
def test_property_interior_rank_is_full_and_points_are_end_points(case, dim):
    """Inside an admissible interval every member has rank N; a family that is one point is
    reported at an end point (c = 1/tau for Soft SupCon, where classes collapse)."""
    labels = np.repeat(np.arange(len(case.params["sizes"])), case.params["sizes"])
    res = classify_objective("soft-supcon", labels, eps=case.params["eps"], tau=case.tau,
                             dim=dim, engine="dense")
    cert = res.to_dict()["certificate"]
    if cert["kind"] == "spectrum":
        n = labels.size
        r = cert["ranks"]
        assert r["lo"] <= n and r["hi"] <= n
        if r["interior"] is not None and cert["c_interval"][0] != cert["c_interval"][1]:
            assert r["interior"] == n
        if res.c_interval[0] == res.c_interval[1]:
            assert res.c_interval[1] == pytest.approx(1.0 / case.tau, rel=1e-9)


# ------------------------------------------------------------------------------------------
# log space: underflowing kernels, labels far from the origin, log-weight input
# ------------------------------------------------------------------------------------------


def test_underflowing_kernel_is_not_read_as_zero_weights():
    y = circle(12, 1.0, (0.0, 0.0))
    sigma = 0.05  # exp(-|y_i - y_j|^2 / 2 sigma^2) underflows to 0 for far pairs
    assert (gaussian_kernel_weights(y, sigma=sigma) == 0).sum() > 12
    for tau in (1e-5, 4e-4, 1e-3):
        s = classify_objective("y-aware", y, sigma=sigma, tau=tau, dim=3)
        d = classify_objective("y-aware", y, sigma=sigma, tau=tau, dim=3, engine="dense")
        same_decision(s, d)
        assert d.certificate.kind != "zero_weight"
    L = dgp.weights.objective_log_weights("y-aware", y, sigma=sigma)
    res = dgp.classify(log_weights=L, tau=4e-4, dim=3)
    same_decision(res, classify_objective("y-aware", y, sigma=sigma, tau=4e-4, dim=3))
    # handing the underflowed weights themselves: zero weights, and a warning that says why
    with pytest.warns(DgpWarning, match="underflowed"):
        res = dgp.classify(gaussian_kernel_weights(y, sigma=sigma), tau=4e-4, dim=3)
    assert res.certificate.kind == "zero_weight" and res.warnings


@pytest.mark.parametrize("offset", [1e5, 1e6, 1e7])
def test_labels_far_from_the_origin(offset):
    rng = np.random.default_rng(4)
    y = circle(10, 1.2, (0.3, -0.2)) + rng.standard_normal((10, 2)) * 1e-3
    for obj, kw in (("y-aware", {"sigma": 0.9}), ("euclid-euclid", {"sigma": 0.9})):
        for engine in ("auto", "dense"):
            a = classify_objective(obj, y, tau=0.4, dim=3, engine=engine, **kw)
            b = classify_objective(obj, y + offset, tau=0.4, dim=3, engine=engine, **kw)
            # labels at 1e7 are known to ~1e-9 of their spread: the tolerance widens by that
            # (registry.Kernel.roundoff_factor), so a margin may read as near the threshold at
            # the far offset where it does not at the origin, never the other way
            if b.near_threshold and not a.near_threshold:
                a = replace(a, near_threshold=True)
            same_decision(a, b)
            shifted(a, b, 0.0, tol=1e-9)
    W0 = gaussian_kernel_weights(y, sigma=0.9)
    W1 = gaussian_kernel_weights(y + offset, sigma=0.9)
    assert np.allclose(W0, W1, rtol=1e-9 * offset / 1e5, atol=0)


@settings(max_examples=40)
@given(
    W=st.one_of(ds.symmetric_weights(), ds.symmetrizable_weights()),
    tau=ds.temperatures(0.05, 2.0),
    dim=st.integers(1, 7),
    similarity=st.sampled_from(["cosine", "euclidean"]),
)
def test_property_log_weights_equal_weights(W, tau, dim, similarity):
    """The same weighting as weights or as log-weights: one verdict, rank and certificate.
    Log-weights carry an absolute error of one rounding of their largest magnitude, so their
    tolerance is that much wider (``LogWeights.magnitude``): a case flagged near a threshold
    as weights is flagged as log-weights too, and only log-weights may flag one more."""
    a = dgp.classify(W, similarity=similarity, tau=tau, dim=dim)
    with np.errstate(divide="ignore"):
        b = dgp.classify(log_weights=np.log(W), similarity=similarity, tau=tau, dim=dim)
    assert (a.verdict, a.rank) == (b.verdict, b.rank), (a.reason, b.reason)
    assert b.near_threshold or not a.near_threshold, (a.reason, b.reason)
    if a.near_threshold == b.near_threshold:
        same_decision(a, b)
    shifted(a, b, 0.0, tol=1e-12)


@settings(max_examples=30)
@given(W=ds.symmetric_weights(log_range=2.0), tau=ds.temperatures(0.1, 2.0),
       dim=st.integers(1, 7), similarity=st.sampled_from(["cosine", "euclidean"]))
def test_property_float32_input(W, tau, dim, similarity):
    """float32 input: decided with float32 tolerances, so it agrees with the float64 verdict
    of the same (rounded) matrix, and says so."""
    W32 = W.astype(np.float32)
    with pytest.warns(DgpWarning, match="float32"):
        a = dgp.classify(W32, similarity=similarity, tau=tau, dim=dim)
    assert a.tolerance["unit_roundoff"] == pytest.approx(float(np.finfo(np.float32).eps))
    b = dgp.classify(W32.astype(float), similarity=similarity, tau=tau, dim=dim,
                     rtol=4 * float(np.finfo(np.float32).eps))
    same_decision(a, b)


# ------------------------------------------------------------------------------------------
# overflow and subnormals
# ------------------------------------------------------------------------------------------


def exact_bound(W):
    """The entropic bound in exact rational arithmetic on the float values of W."""
    from fractions import Fraction

    import mpmath

    mpmath.mp.dps = 40
    total = mpmath.mpf(0)
    n = W.shape[0]
    for i in range(n):
        w = [Fraction(float(W[i, j])) for j in range(n) if j != i]
        m = sum(w)
        for x in w:
            if x > 0:
                p = mpmath.mpf(x.numerator) / x.denominator / (mpmath.mpf(m.numerator)
                                                                / m.denominator)
                total -= p * mpmath.log(p)
    return float(total)


@pytest.mark.parametrize("top", [1e308, 1.7e308, 1e-310, 5e-320])
def test_bound_at_extreme_magnitudes(top):
    rng = np.random.default_rng(5)
    W = np.exp(rng.uniform(-3, 0, (6, 6)))
    W = W / W.max() * top
    b = entropic_bound(W)
    assert math.isfinite(b)
    assert b == pytest.approx(exact_bound(W), rel=1e-12, abs=1e-12)
    res = dgp.classify(W, tau=0.5, dim=3)
    assert res.entropic_bound == pytest.approx(b, rel=1e-14)


def test_loss_at_extreme_weights():
    y = np.repeat(np.arange(3), [2, 3, 2])
    W = soft_supcon_weights(y, eps=0.3)
    res = dgp.classify(W, tau=0.5, dim=3)
    for top in (1e300, 1e-300):
        assert winfonce_loss(res.embedding, W * top, tau=0.5) == pytest.approx(
            res.entropic_bound, rel=1e-10)


# ------------------------------------------------------------------------------------------
# Soft SupCon with singleton classes; reasons state the computed numbers
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("sizes", [[1, 3, 2], [1, 1, 4], [1, 1, 1]])
@pytest.mark.parametrize("tau", [0.2, 0.6, 1.5])
def test_soft_supcon_with_singletons(sizes, tau):
    labels = np.repeat(np.arange(len(sizes)), sizes)
    eps = 0.2
    W = soft_supcon_weights(labels, eps=eps)
    for dim in (2, 3, 6):
        s = classify_objective("soft-supcon", labels, eps=eps, tau=tau, dim=dim)
        d = dgp.classify(W, tau=tau, dim=dim)
        same_decision(s, d)
        shifted(d, s, 0.0, tol=1e-9)
        if d.verdict == "realizable":
            assert winfonce_loss(d.embedding, W, tau=tau) == pytest.approx(d.entropic_bound,
                                                                            rel=1e-9)
    with pytest.raises(ValueError, match="at least 2"):
        classify_objective("supcon", labels, tau=tau, dim=2)


def test_reasons_state_the_computed_end_point():
    n = 6
    W = np.full((n, n), math.exp(-1.0))  # uniform: c_max = -log w = 1
    np.fill_diagonal(W, 0.0)
    res = dgp.classify(W, similarity="euclidean", tau=0.5, dim=2)
    assert res.c_interval == (None, pytest.approx(1.0))
    assert "c_max = 1" in res.reason and "c_max = 0" not in res.reason
    W = soft_supcon_weights(np.repeat(np.arange(3), 3), eps=0.2)
    res = dgp.classify(W * math.e**2, tau=0.5, dim=3)
    assert res.verdict == "realizable"
    from dgp.result import format_c

    assert f"c = {format_c(res.c, res.c_resolution)}" in res.reason


# ------------------------------------------------------------------------------------------
# three engines, one answer (small N)
# ------------------------------------------------------------------------------------------


@settings(max_examples=12)
@given(
    K=st.integers(2, 4),
    seed=ds.seeds(),
    f=st.sampled_from([0.5, 0.9, 1.2]),
    dim=st.integers(1, 4),
    similarity=st.sampled_from(["cosine", "euclidean"]),
)
def test_property_dense_structured_sdp_agree(K, seed, f, dim, similarity):
    rng = np.random.default_rng(seed)
    labels = np.repeat(np.arange(K), rng.integers(1, 4, K))
    eps = float(rng.uniform(0.05, 0.6))
    tau = f * K / ((K - 1) * -math.log(eps))
    kw = {"eps": eps, "tau": tau, "dim": dim, "similarity": similarity}
    s = classify_objective("soft-supcon", labels, **kw)
    d = classify_objective("soft-supcon", labels, engine="dense", **kw)
    p = classify_objective("soft-supcon", labels, method="sdp", **kw)
    same_decision(s, d)
    assert (p.verdict, p.rank) == (d.verdict, d.rank), (p.reason, d.reason)
    if d.c_interval is not None:
        for x, y in zip(d.c_interval, p.c_interval, strict=True):
            if x is not None:
                assert y == pytest.approx(x, abs=1e-5 * max(1.0, abs(x)) / tau)


def test_sdp_uniform_weights_rank_zero():
    W = np.ones((8, 8))
    np.fill_diagonal(W, 0.0)
    for method in ("spectral", "sdp"):
        res = dgp.classify(W, similarity="euclidean", tau=0.5, dim=2, method=method)
        assert (res.verdict, res.rank) == ("realizable", 0), (method, res.reason)


def test_bad_weight_inputs_are_refused():
    W = np.ones((3, 3))
    for bad, exc in ((W + 1000j, TypeError), (W.astype("datetime64[s]"), TypeError),
                     (np.array([["1", "2"], ["3", "4"]], dtype=object), TypeError)):
        with pytest.raises(exc, match="W"):
            dgp.classify(bad, tau=0.5, dim=2)
    with pytest.raises(ValueError, match="exactly one"):
        dgp.classify(W, log_weights=W, tau=0.5, dim=2)
    with pytest.raises(ValueError, match="NaN"):
        dgp.classify(log_weights=np.full((3, 3), np.nan), tau=0.5, dim=2)


def test_c_and_fortran_order_give_identical_output():
    rng = np.random.default_rng(6)
    W = np.exp(rng.uniform(-2, 0, (9, 9)))
    W = 0.5 * (W + W.T)
    a = dgp.classify(np.ascontiguousarray(W), tau=0.4, dim=9).to_dict(embedding=True)
    b = dgp.classify(np.asfortranarray(W), tau=0.4, dim=9).to_dict(embedding=True)
    assert a == b


def test_no_warning_for_ordinary_input():
    W = soft_supcon_weights([0, 0, 1, 1], eps=0.3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = dgp.classify(W, tau=0.5, dim=2)
    assert res.warnings == ()


def test_output_does_not_depend_on_the_blas_thread_count():
    from threadpoolctl import threadpool_limits

    for seed in range(3):
        rng = np.random.default_rng(seed)
        n = 120
        Z = rng.standard_normal((n, 3))
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
        W = np.exp(Z @ Z.T / 0.5)
        outs = []
        for threads in (1, 2):
            with threadpool_limits(limits=threads, user_api="blas"):
                outs.append(dgp.classify(W, tau=0.5, dim=3).to_dict(embedding=True))
        assert outs[0] == outs[1]


# ------------------------------------------------------------------------------------------
# the loss floor of an inconsistent cosine verdict, against brute force
# ------------------------------------------------------------------------------------------


def brute_force_excess(W, tau, dim, starts=30, seed=0):
    """min over unit embeddings in R^dim of the loss, minus the bound (scipy L-BFGS, restarts)."""
    from scipy.optimize import minimize

    n = W.shape[0]
    P = W / W.sum(axis=1, keepdims=True)
    off = ~np.eye(n, dtype=bool)

    def f(v):
        Z = v.reshape(n, dim)
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        G = Zn @ Zn.T / tau
        S = np.where(off, G, -np.inf)  # the anchor is not its own candidate
        top = S.max(axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.exp(S - top).sum(axis=1))
        return float((lse - (P * np.where(off, G, 0.0)).sum(axis=1)).sum())

    rng = np.random.default_rng(seed)
    best = min(minimize(f, rng.standard_normal(n * dim), method="L-BFGS-B",
                        options={"maxiter": 3000, "gtol": 1e-10}).fun for _ in range(starts))
    return best - entropic_bound(W)


@pytest.mark.slow
@pytest.mark.parametrize(("case", "tau", "dim"), [("supcon", 0.5, 2), ("soft", 2.0, 2),
                                                  ("supcon", 0.3, 3)])
def test_loss_floor_matches_brute_force(case, tau, dim):
    y = np.repeat(np.arange(3), [3, 2, 2])
    W = (dgp.weights.supcon_weights(y) if case == "supcon"
         else soft_supcon_weights(y, eps=0.2))
    res = dgp.classify(W, tau=tau, dim=dim, floor=True)
    assert res.verdict == "inconsistent"
    ref = brute_force_excess(W, tau, dim)
    note = res.certificate.notes["loss_floor"]
    assert note["lower"] <= ref + 1e-7  # a lower bound of the true minimum
    if res.loss_floor is not None:  # certified: the minimum itself
        assert res.loss_floor == pytest.approx(ref, rel=1e-5, abs=1e-8)
    assert res.loss_floor is not None  # these small cases are certified
    s = classify_objective("supcon" if case == "supcon" else "soft-supcon", y, tau=tau, dim=dim,
                           floor=True, **({} if case == "supcon" else {"eps": 0.2}))
    assert dgp.classify(W, tau=tau, dim=dim).loss_floor is None  # not asked for
    assert s.loss_floor == pytest.approx(res.loss_floor, rel=1e-6)
