"""Exact at the extremes (issue 27): the verdict and the rank of a weighting do not depend on
the scale of ``W`` (``W -> alpha W``, ``alpha`` anywhere in 1e-300..1e300, every entry a normal
float) nor on where continuous labels sit (a translation by up to 1e7), and the ``c`` interval
moves exactly as the mathematics says (``c -> c - log alpha``; unchanged by a translation).

The reference is the same problem at unit scale and centred labels: both sides are computed by
dgp, but the invariance is a theorem (the row distributions ``p_ij`` of ``alpha W`` are those of
``W``; the kernels see only label differences), so any difference is a numerical defect.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dgp
from dgp.objectives import registry
from dgp.strategies import (
    seeds,
    sphere_labels,
    symmetric_weights,
    symmetrizable_weights,
    temperatures,
    y_aware_near_critical,
)

TINY = float(np.finfo(float).tiny)
HUGE = float(np.finfo(float).max)
#: relative error allowed on an end point of the c interval (the log of alpha is exact to
#: float64; the end points of the reference carry the rounding of its eigenvalues)
C_RTOL = 1e-9


def _log_alphas(W: np.ndarray) -> st.SearchStrategy[float]:
    """log10 of the scalings alpha in 1e-300..1e300 that keep every positive entry normal."""
    pos = W[W > 0]
    lo = max(-300.0, math.log10(TINY) - math.log10(float(pos.min())) + 1.0)
    hi = min(300.0, math.log10(HUGE) - math.log10(float(pos.max())) - 1.0)
    return st.one_of(st.sampled_from([lo, hi]), st.floats(lo, hi))


def _same_c(ref, res, shift: float) -> None:
    """``res.c_interval`` is ``ref.c_interval + shift`` within relative error C_RTOL."""
    assert (ref.c_interval is None) == (res.c_interval is None)
    if ref.c_interval is None:
        return
    for a, b in zip(ref.c_interval, res.c_interval, strict=True):
        assert (a is None) == (b is None)
        if a is not None:
            assert b == pytest.approx(a + shift, rel=C_RTOL, abs=C_RTOL * (1 + abs(shift)))


def _check_scaled(W, alpha_log10, *, similarity, tau, dim):
    ref = dgp.classify(W, similarity=similarity, tau=tau, dim=dim)
    alpha = 10.0 ** alpha_log10
    Wa = W * alpha
    pos = Wa[Wa > 0]
    assume(pos.min() >= TINY and np.isfinite(pos).all())
    res = dgp.classify(Wa, similarity=similarity, tau=tau, dim=dim)
    assert (res.verdict, res.rank) == (ref.verdict, ref.rank)
    _same_c(ref, res, -math.log(alpha))
    return ref, res


@st.composite
def _dense_problem(draw):
    kind = draw(st.sampled_from(["symmetric", "symmetrizable"]))
    n = draw(st.sampled_from([3, 5, 8, 12]))
    if kind == "symmetric":
        W = draw(symmetric_weights(n, log_range=3.0))
    else:
        W = draw(symmetrizable_weights(n, log_range=3.0, scale_range=2.0))
    similarity = draw(st.sampled_from(["cosine", "euclidean"]))
    tau = draw(temperatures(0.05, 2.0))
    dim = draw(st.integers(1, n))
    return W, similarity, tau, dim


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_random_weights_scale_free(data):
    W, similarity, tau, dim = data.draw(_dense_problem())
    a = data.draw(_log_alphas(W))
    _check_scaled(W, a, similarity=similarity, tau=tau, dim=dim)


@st.composite
def _embedded(draw):
    """Weights that attain the bound by construction: a Gaussian kernel of points, whose
    Euclidean target is the points themselves (rank p) and whose cosine target at the sphere's
    critical temperature is a single c (the interval collapsed to a point)."""
    n = draw(st.integers(6, 12))
    p = draw(st.integers(1, 3))
    rng = np.random.default_rng(draw(seeds()))
    Y = rng.standard_normal((n, p))
    return Y


@settings(max_examples=30, deadline=None)
@given(Y=_embedded(), data=st.data())
def test_euclidean_kernel_scale_and_row_scalings(Y, data):
    """The Euclidean target of exp(-|y_i - y_j|^2 / 2 sigma^2) is y itself (rank = affine
    dimension of the points): unchanged by W -> alpha W and by any row scaling (the rows'
    distributions are unchanged), up to 1e100 per row."""
    n, p = Y.shape
    sq = ((Y[:, None, :] - Y[None, :, :]) ** 2).sum(-1)
    W = np.exp(-sq / (2 * sq.max()))  # entries in [e^-1/2, 1]
    np.fill_diagonal(W, 0.0)
    tau = data.draw(temperatures(0.05, 2.0))
    dim = data.draw(st.integers(p, n - 2))
    ref, _ = _check_scaled(W, data.draw(_log_alphas(W)), similarity="euclidean", tau=tau, dim=dim)
    assert (ref.verdict, ref.rank) == ("realizable", np.linalg.matrix_rank(Y - Y.mean(0)))
    log_rows = np.asarray(data.draw(st.lists(st.floats(-100.0, 100.0), min_size=n, max_size=n)))
    Wr = W * (10.0 ** log_rows)[:, None]
    res = dgp.classify(Wr, similarity="euclidean", tau=tau, dim=dim)
    assert (res.verdict, res.rank) == (ref.verdict, ref.rank)


@settings(max_examples=25, deadline=None)
@given(case=y_aware_near_critical(n=(8, 12), dim=(2, 3)), data=st.data())
def test_collapsed_c_interval_is_scale_free(case, data):
    """At tau R^2 = sigma^2 (delta = 0) the cosine family of the y-Aware kernel is one point,
    c = 1/tau: W and alpha W read it as one minimiser, whatever alpha (|c| up to ~700)."""
    rec = registry.get("y-aware")
    lab = rec.check_labels(case.params["labels"])
    W = rec.weights(lab, {"sigma": case.params["sigma"]})
    p = case.params["labels"].shape[1]
    dim = data.draw(st.integers(p, p + 1))
    a = data.draw(_log_alphas(W))
    ref, res = _check_scaled(W, a, similarity="cosine", tau=case.tau, dim=dim)
    if case.delta == 0.0:
        assert ref.verdict == "realizable" and ref.rank == p
        lo, hi = res.c_interval
        assert lo == pytest.approx(hi, rel=1e-12)


# --- translation of continuous labels ------------------------------------------------------

_TRANSLATED = [name for name, rec in registry.OBJECTIVES.items()
               if rec.labels == "continuous" and not rec.weighting.directions]


def _params(rec, sigma):
    return {p: sigma for p in rec.params}


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(_TRANSLATED), case=y_aware_near_critical(n=(8, 11), dim=(1, 3)),
       log_t=st.floats(3.0, 7.0), seed=seeds(), data=st.data())
def test_label_translation_is_exact(name, case, log_t, seed, data):
    """Labels y and y + t (|t| up to 1e7) give the same verdict and rank, on both engines,
    at and around the critical temperature tau R^2 = sigma^2 (delta = 0 exactly)."""
    rec = registry.get(name)
    y = case.params["labels"]
    p = y.shape[1]
    direction = np.random.default_rng(seed).standard_normal(p)
    t = 10.0 ** log_t * direction / np.linalg.norm(direction)
    dim = data.draw(st.integers(p, p + 2))
    engines = ("dense",) if rec.structured is None else ("auto", "dense")
    for engine in engines:
        kw = dict(tau=case.tau, dim=dim, engine=engine, **_params(rec, case.params["sigma"]))
        ref = dgp.classify_objective(name, y, **kw)
        res = dgp.classify_objective(name, y + t, **kw)
        assert (res.verdict, res.rank) == (ref.verdict, ref.rank), (engine, ref.reason,
                                                                     res.reason)
        if ref.c_interval is not None and res.c_interval is not None:
            _same_c(ref, res, 0.0) if rec.similarity == "cosine" else None


@settings(max_examples=25, deadline=None)
@given(sph=sphere_labels(n=(6, 10), dim=(2, 3), centre_range=0.0), seed=seeds(),
       log_s=st.floats(-300.0, 300.0), tau=temperatures(0.05, 2.0), data=st.data())
def test_xclr_label_scaling_is_exact(sph, seed, log_s, tau, data):
    """X-CLR normalises its label embeddings: rescaling every label by any positive factor
    (1e-300..1e300 overall, within a factor 10 per label) changes nothing."""
    rng = np.random.default_rng(seed)
    y = sph.directions * rng.uniform(0.2, 5.0, size=(sph.directions.shape[0], 1))
    per = 10.0 ** rng.uniform(-1, 1, size=(y.shape[0], 1))
    ys = y * per * 10.0 ** log_s
    assume(np.isfinite(ys).all() and (np.abs(ys[ys != 0]) >= TINY).all())
    label_tau = data.draw(st.sampled_from([tau, tau * 1.5, tau / 1.5]))
    dim = data.draw(st.integers(2, 4))
    ref = dgp.classify_objective("x-clr", y, tau=tau, dim=dim, label_tau=label_tau)
    res = dgp.classify_objective("x-clr", ys, tau=tau, dim=dim, label_tau=label_tau)
    assert (res.verdict, res.rank) == (ref.verdict, ref.rank)


@pytest.mark.parametrize("name", [n for n, r in registry.OBJECTIVES.items()
                                  if r.labels == "class"])
@pytest.mark.parametrize("offset", [10**3, 10**7, -(10**12)])
def test_class_label_translation(name, offset):
    """Class objectives see only which labels are equal: integer labels translated by any
    offset give the same classification."""
    y = np.repeat(np.arange(4), [3, 4, 2, 5])
    rec = registry.get(name)
    kw = {p: 0.2 for p in rec.params}
    for tau in (0.3, 1.0):
        ref = dgp.classify_objective(name, y, tau=tau, dim=3, **kw)
        res = dgp.classify_objective(name, y + offset, tau=tau, dim=3, **kw)
        assert (res.verdict, res.rank, res.c_interval) == (ref.verdict, ref.rank, ref.c_interval)


def test_known_failures_of_issue_27():
    """The reproductions of the issue: y-Aware and its column-normalised variant at
    tau R^2 = sigma^2 with labels translated by 1e3..1e7; W and 1e-300 W at |c| ~ 692."""
    t = np.linspace(0, 2 * np.pi, 21)[:-1]
    y = np.c_[np.cos(t), np.sin(t)] * 2.0
    for name in ("y-aware", "y-aware-colnorm"):
        ref = dgp.classify_objective(name, y, sigma=1.0, tau=0.25, dim=3)
        for shift in (1e3, 1e5, 1e7):
            res = dgp.classify_objective(name, y + shift, sigma=1.0, tau=0.25, dim=3)
            assert (res.verdict, res.rank) == (ref.verdict, ref.rank) == ("realizable", 2)
    rec = registry.get("y-aware")
    W = rec.weights(rec.check_labels(y), {"sigma": 1.0})
    a = dgp.classify(W, tau=0.25, dim=2)
    b = dgp.classify(1e-300 * W, tau=0.25, dim=2)
    assert (a.verdict, a.rank) == (b.verdict, b.rank) == ("realizable", 2)
    assert b.c_interval[0] == pytest.approx(4.0 + 300 * math.log(10), rel=1e-12)


@pytest.mark.parametrize("scale", [1e-300, 1e-160, 1e160, 1e300])
def test_xclr_labels_near_the_float_limits(scale):
    """X-CLR label embeddings of any size are the same directions: their norms are taken
    after an exact power-of-two rescaling, so 1e-300 and 1e300 neither underflow nor overflow."""
    t = np.linspace(0, 2 * np.pi, 9)[:-1]
    y = np.c_[np.cos(t), np.sin(t)] * np.linspace(1.0, 3.0, 8)[:, None]
    for tau in (0.5, 1.0, 2.0):
        ref = dgp.classify_objective("x-clr", y, tau=tau, dim=2, label_tau=1.0)
        res = dgp.classify_objective("x-clr", y * scale, tau=tau, dim=2, label_tau=1.0)
        assert (res.verdict, res.rank) == (ref.verdict, ref.rank)
    assert dgp.classify_objective("x-clr", y * scale, tau=1.0, dim=2,
                                  label_tau=1.0).verdict == "realizable"


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_random_row_scalings_up_to_1e100(data):
    """diag(a) W has the row distributions of W: verdict and rank exactly those of W, the c
    interval moved by the mean of -log a (offsets of mean zero), for rows scaled by up to
    1e100 either way, both similarities."""
    W, similarity, tau, dim = data.draw(_dense_problem())
    n = W.shape[0]
    log_a = np.asarray(data.draw(st.lists(st.floats(-100.0, 100.0), min_size=n, max_size=n)))
    ref = dgp.classify(W, similarity=similarity, tau=tau, dim=dim)
    res = dgp.classify(W * (10.0 ** log_a)[:, None], similarity=similarity, tau=tau, dim=dim)
    assert (res.verdict, res.rank) == (ref.verdict, ref.rank)
    if ref.c_interval is not None and res.c_interval is not None and ref.verdict != "inconsistent":
        # the offsets absorb log a up to their mean; the target's constant moves by -mean
        shift = -float(np.mean(log_a)) * math.log(10.0)
        for a, b in zip(ref.c_interval, res.c_interval, strict=True):
            if a is not None and b is not None:
                assert b == pytest.approx(a + shift, abs=1e-9 * (1 + abs(a) + abs(shift)))


@settings(max_examples=40, deadline=None)
@given(case=y_aware_near_critical(n=(6, 15), dim=(1, 3), centred=False),
       log_noise=st.floats(-7.0, -3.0), log_t=st.floats(3.0, 7.0), seed=seeds(),
       data=st.data())
def test_a_translation_never_flips_a_verdict_silently(case, log_noise, log_t, seed, data):
    """Labels slightly off their sphere (relative noise 1e-7..1e-3): the decisive eigenvalue may
    be below what labels at 1e7 resolve (the translated labels carry an error of u |t|). Then
    the translated verdict may differ from the centred one, but never silently: it is flagged
    near the threshold (the margin of the eigenvalue the widened tolerance reads as zero)."""
    rng = np.random.default_rng(seed)
    y = case.params["labels"]
    y = y + rng.standard_normal(y.shape) * case.params["sphere"].radius * 10.0 ** log_noise
    p = y.shape[1]
    t = rng.standard_normal(p)
    t *= 10.0 ** log_t / np.linalg.norm(t)
    dim = data.draw(st.integers(p, p + 2))
    for name in ("y-aware", "euclid-euclid"):
        kw = dict(tau=case.tau, dim=dim, sigma=case.params["sigma"])
        ref = dgp.classify_objective(name, y, **kw)
        res = dgp.classify_objective(name, y + t, **kw)
        if (res.verdict, res.rank) != (ref.verdict, ref.rank):
            assert res.near_threshold, (ref.reason, res.reason)


def test_a_signal_below_the_translated_accuracy_is_flagged():
    """Two clusters of 1-D labels (a sphere in their hull, jittered by 1e-5 of the radius):
    centred, the decisive eigenvalue (~5e-9) is resolved and the verdict is inconsistent in
    dim 2; translated by 3.2e6 the labels carry an error of ~1e-9 of their spread, the widened
    tolerance reads that eigenvalue as zero, and the verdict says it is near the threshold."""
    y = np.array([0.19184923351498467, 0.6878168116884755, 0.6878132476922184,
                  0.6878132022257235, 0.19185138217738112, 0.19184930536418435,
                  0.19185273924191001, 0.19185203390121972, 0.6878149918943303,
                  0.19185022095596765, 0.687817156980586, 0.6878144786140403,
                  0.6878132780125117, 0.6878122120958821, 0.6878120324485691])[:, None]
    kw = dict(sigma=0.1346247172186334, tau=0.2652518396632746, dim=2)
    ref = dgp.classify_objective("y-aware", y, **kw)
    assert (ref.verdict, ref.near_threshold) == ("inconsistent", False)
    res = dgp.classify_objective("y-aware", y - 3228573.164434992, **kw)
    assert res.near_threshold
    assert res.tolerance["widening"] > 1e6
    assert any("counted as zero" in m["quantity"] and m["near"]
               for m in res.to_dict()["certificate"]["margins"])
