"""Named objectives: structured == dense, the exact conditions, their explanations, the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.classification import classify
from dgp.cli._output import jsonable
from dgp.objectives import classify_objective, colnorm_distortion
from dgp.weights import column_normalised_y_aware_weights


def sphere_points(rng, n, p, centre, radius, m=None):
    m = p if m is None else m
    u = rng.standard_normal((n, m))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    basis = np.linalg.qr(rng.standard_normal((p, p)))[0][:, :m]
    return centre + radius * u @ basis.T


def both(objective, labels, **kw):
    s = classify_objective(objective, labels, engine="structured", **kw)
    d = classify_objective(objective, labels, engine="dense", **kw)
    assert s.method == "structured" and d.method == "spectral"
    assert (s.verdict, s.rank) == (d.verdict, d.rank), (s.reason, d.reason)
    assert (s.c_interval is None) == (d.c_interval is None)
    if s.c_interval is not None:
        for a, b in zip(s.c_interval, d.c_interval, strict=True):
            assert (a is None) == (b is None)
            if a is not None:
                assert a == pytest.approx(b, rel=1e-6, abs=1e-9)
    if s.entropic_bound is not None:
        assert s.entropic_bound == pytest.approx(d.entropic_bound, rel=1e-10)
    cond = s.certificate.conditions
    if cond is not None and cond["agrees_with_engine"]:
        assert s.reason == d.reason  # the explanation comes from the conditions
    return s


# ------------------------------------------------------------------------------------------
# y-Aware
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 3])
def test_y_aware_on_off_centre_sphere(p):
    rng = np.random.default_rng(p)
    centre, R, sigma = rng.uniform(-4, 4, p), 1.7, 1.1
    y = sphere_points(rng, 30, p, centre, R)
    tau_c = sigma**2 / R**2
    # at tau R^2 = sigma^2: the labels themselves, rank p
    s = both("y-aware", y, sigma=sigma, tau=tau_c, dim=p)
    assert (s.verdict, s.rank) == ("realizable", p)
    assert s.c == pytest.approx(1 / tau_c, rel=1e-9)
    assert "tau R^2 = sigma^2" in s.reason
    cond = s.certificate.conditions
    assert cond["sphere"]["radius"] == pytest.approx(R, rel=1e-9)
    assert np.allclose(cond["sphere"]["centre"], centre, atol=1e-8)
    assert cond["agrees_with_engine"]
    # just below: a cap of rank p + 1
    for f in (1 - 1e-3, 0.5):
        s = both("y-aware", y, sigma=sigma, tau=f * tau_c, dim=p)
        assert s.verdict == "inconsistent"
        assert f"cap of rank {p + 1} > dim = {p}" in s.reason
        s = both("y-aware", y, sigma=sigma, tau=f * tau_c, dim=p + 1)
        assert (s.verdict, s.rank) == ("realizable", p + 1)
        assert s.c == pytest.approx(1 / (f * tau_c), rel=1e-9)
    # just above: nothing
    for f in (1 + 1e-3, 2.0):
        s = both("y-aware", y, sigma=sigma, tau=f * tau_c, dim=p + 1)
        assert s.verdict == "inconsistent"
        assert "tau R^2 > sigma^2" in s.reason
        assert f"tau R^2 = {f * tau_c * R**2:.6g}" in s.reason


def test_y_aware_circle_in_3d_uses_its_own_hull():
    rng = np.random.default_rng(11)
    y = sphere_points(rng, 25, 3, np.array([1.0, -2.0, 0.5]), 2.0, m=2)
    s = both("y-aware", y, sigma=1.0, tau=0.25, dim=2)
    assert (s.verdict, s.rank) == ("realizable", 2)
    assert s.certificate.conditions["affine_dim"] == 2


def test_y_aware_near_but_not_on_a_sphere():
    rng = np.random.default_rng(4)
    y = sphere_points(rng, 40, 2, np.array([0.5, 0.5]), 2.0)
    y[:, 0] *= 1.05  # a slightly squashed circle
    for tau in (0.2, 0.25, 0.3):
        s = both("y-aware", y, sigma=1.0, tau=tau, dim=3)
        assert s.verdict == "inconsistent"
        assert s.reason.startswith("labels are not on a sphere: best-fit radius")
        fit = s.certificate.conditions["sphere"]
        assert f"relative residual {fit['relative_residual']:.3g}" in s.reason
        assert 1e-3 < fit["relative_residual"] < 0.1


@settings(max_examples=40)
@given(
    st.integers(0, 2**32 - 1),
    st.integers(1, 3),
    st.sampled_from([1.0, 1 - 1e-3, 1 + 1e-3, 0.5]),
    st.sampled_from([0.0, 1e-2]),
)
def test_y_aware_property(seed, p, f, noise):
    """On random spheres (random centre and radius), slightly off them, around tau*."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(p + 6, 30))
    R, sigma = rng.uniform(0.5, 2.0), rng.uniform(0.7, 2.0)
    centre = rng.uniform(-3, 3, p)
    y = sphere_points(rng, n, p, centre, R)
    if noise:
        y = centre + (y - centre) * (1 + noise * rng.standard_normal((n, 1)))
    dim = p + int(rng.integers(0, 2))
    s = both("y-aware", y, sigma=sigma, tau=f * sigma**2 / R**2, dim=dim)
    cond = s.certificate.conditions
    if p > 1 and cond["applies"]:  # closed form == engine (p = 1: two points, always a sphere)
        assert cond["agrees_with_engine"], (s.reason, cond["prediction"])


# ------------------------------------------------------------------------------------------
# X-CLR, Euclidean-Euclidean, class objectives
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [2, 3, 4])
def test_x_clr_around_label_tau(p):
    rng = np.random.default_rng(p)
    emb = rng.standard_normal((30, p)) * rng.uniform(0.5, 3, (30, 1))
    ty = 0.4
    s = both("x-clr", emb, label_tau=ty, tau=ty, dim=p)
    assert (s.verdict, s.rank) == ("realizable", p)
    s = both("x-clr", emb, label_tau=ty, tau=ty * (1 - 1e-3), dim=p)
    assert s.verdict == "inconsistent"
    s = both("x-clr", emb, label_tau=ty, tau=ty * (1 - 1e-3), dim=p + 1)
    assert (s.verdict, s.rank) == ("realizable", p + 1)
    s = both("x-clr", emb, label_tau=ty, tau=ty * (1 + 1e-3), dim=p + 1)
    assert s.verdict == "inconsistent" and "tau R^2 > tau_y" in s.reason
    assert s.certificate.conditions["sphere"]["radius"] == pytest.approx(1.0)


def test_x_clr_without_exact_sums_shifts_c_by_mean_log_z():
    rng = np.random.default_rng(0)
    emb = rng.standard_normal((25, 3))
    kw = {"label_tau": 0.5, "tau": 0.5, "dim": 3}
    a = classify_objective("x-clr", emb, **kw)
    b = classify_objective("x-clr", emb, exact_sums_max_n=10, **kw)
    yh = emb / np.linalg.norm(emb, axis=1, keepdims=True)
    S = yh @ yh.T / 0.5
    np.fill_diagonal(S, -np.inf)
    mlz = float(np.log(np.exp(S).sum(axis=1)).mean())
    assert b.c == pytest.approx(a.c - mlz, rel=1e-9)
    assert b.entropic_bound is None and "not computed" in b.certificate.notes["entropic_bound"]
    assert "log Z_i" in b.certificate.notes["offset_convention"]


def test_euclid_euclid_embedding_is_scaled_labels():
    rng = np.random.default_rng(1)
    y = rng.standard_normal((15, 3)) + 2.0
    sigma, tau = 1.3, 0.6
    assert both("euclid-euclid", y, sigma=sigma, tau=tau, dim=2).verdict == "inconsistent"
    assert both("euclid-euclid", y, sigma=sigma, tau=tau, dim=14).verdict == "degenerate"
    s = classify_objective("euclid-euclid", y, sigma=sigma, tau=tau, dim=3, embed=True)
    assert (s.verdict, s.rank) == ("realizable", 3)
    Z = s.embedding
    D = ((Z[:, None] - Z[None]) ** 2).sum(-1)
    Dy = ((y[:, None] - y[None]) ** 2).sum(-1) * tau / sigma**2
    assert np.allclose(D, Dy, atol=1e-9)


@pytest.mark.parametrize("sim", ["cosine", "euclidean"])
def test_class_objectives_both_engines(sim):
    y = np.repeat([4, 1, 7], [6, 3, 2])
    for obj, kw in (("supcon", {}), ("soft-supcon", {"eps": 0.2})):
        for tau in (0.1, 0.5, 2.0):
            s = both(obj, y, tau=tau, dim=2, similarity=sim, **kw)
            assert s.objective == obj


def test_colnorm_is_classified_and_its_distortion_reported():
    rng = np.random.default_rng(1)
    y = sphere_points(rng, 12, 2, np.array([1.0, -0.5]), 2.0)
    res = classify_objective("y-aware-colnorm", y, sigma=1.0, tau=0.25, dim=2)
    W = column_normalised_y_aware_weights(y, sigma=1.0)
    d = classify(W, tau=0.25, dim=2)
    assert (res.verdict, res.rank, res.c_interval) == (d.verdict, d.rank, d.c_interval)
    info = res.certificate.notes["colnorm"]
    assert info["intended"]["verdict"] == "realizable"
    assert info["max_similarity_shift"] > 0 and 0 < info["relative_size"] < 1
    assert "rank-2 distortion" in res.reason
    # the distortion is exactly the difference of the two targets
    from dgp.engine.target import log_target, log_weights
    from dgp.tolerance import Tolerance

    lw = log_weights(W)
    Lc = log_target(lw, Tolerance.make(1e-15, n=12)).ell + lw.shift
    Li = -((y[:, None] - y[None]) ** 2).sum(-1) / 2
    np.fill_diagonal(Li, 0.0)
    off = ~np.eye(12, dtype=bool)
    shift = Lc - Li + info["mean_log_row_sum"]  # minus the constant absorbed by c
    assert np.abs(shift)[off].max() == pytest.approx(info["max_similarity_shift"], rel=1e-9)
    again = colnorm_distortion(y, sigma=1.0)
    assert again["max_similarity_shift"] == info["max_similarity_shift"]
    with pytest.raises(ValueError, match="structured"):
        classify_objective("y-aware-colnorm", y, sigma=1.0, tau=0.25, dim=2, engine="structured")


def test_argument_errors():
    y = np.zeros((4, 2)) + np.arange(4)[:, None]
    with pytest.raises(ValueError, match="engine"):
        classify_objective("y-aware", y, sigma=1.0, tau=1.0, dim=2, engine="fast")
    with pytest.raises(ValueError, match="sigma is missing"):
        classify_objective("y-aware", y, tau=1.0, dim=2)
    with pytest.raises(ValueError, match="sigma"):
        classify_objective("y-aware", y, sigma=0.0, tau=1.0, dim=2)
    with pytest.raises(ValueError, match="objective"):
        classify_objective("simclr", y, tau=1.0, dim=2)
    with pytest.raises(ValueError, match="zero"):
        classify_objective("x-clr", np.r_[y, [[0.0, 0.0]]], label_tau=1.0, tau=1.0, dim=2)


def test_large_n_is_fast_and_exact():
    rng = np.random.default_rng(0)
    y = sphere_points(rng, 200_000, 2, np.array([3.0, -1.0]), 2.0)
    s = classify_objective("y-aware", y, sigma=1.0, tau=0.25, dim=2)
    assert (s.verdict, s.rank, s.method) == ("realizable", 2, "structured")
    assert s.c == pytest.approx(4.0, rel=1e-9)
    assert len(json.dumps(jsonable(s.to_dict()))) < 20_000  # no N-sized fields


# ------------------------------------------------------------------------------------------
# CLI
# ------------------------------------------------------------------------------------------


def test_cli_y_aware_json(tmp_path, cli):
    rng = np.random.default_rng(2)
    f = tmp_path / "y.npy"
    np.save(f, sphere_points(rng, 500, 2, np.array([1.0, 1.0]), 2.0))
    r = cli("classify", "--objective", "y-aware", "--labels", f, "--sigma", "1", "--tau", "0.25",
            "--dim", "2", "--json")
    assert r.code == 0 and r.err == ""
    res = r.json
    assert (res["verdict"], res["rank"], res["method"]) == ("realizable", 2, "structured")
    assert res["certificate"]["conditions"]["sphere"]["radius"] == pytest.approx(2.0)


@pytest.mark.parametrize(
    ("content", "args"),
    [
        ("nan", ["--objective", "y-aware", "--sigma", "1"]),
        ("3d", ["--objective", "y-aware", "--sigma", "1"]),
        ("strings", ["--objective", "y-aware", "--sigma", "1"]),
        ("strings", ["--objective", "x-clr", "--label-tau", "1"]),
        ("ok", ["--objective", "y-aware", "--sigma", "0"]),
        ("ok", ["--objective", "y-aware", "--sigma", "-1"]),
        ("ok", ["--objective", "euclid-euclid"]),
        ("ok", ["--objective", "supcon"]),
        ("zero", ["--objective", "x-clr", "--label-tau", "0.5"]),
        ("single", ["--objective", "supcon"]),
    ],
)
def test_cli_bad_labels(tmp_path, cli, content, args):
    y = np.random.default_rng(0).standard_normal((6, 2))
    if content == "nan":
        y[3, 1] = np.nan
        f = tmp_path / "y.npy"
        np.save(f, y)
    elif content == "3d":
        f = tmp_path / "y.npy"
        np.save(f, np.zeros((4, 2, 2)))
    elif content == "strings":
        f = tmp_path / "y.csv"
        f.write_text("cat,1.0\ndog,2.0\nbird,3.0\n")
    elif content == "zero":
        y[2] = 0.0
        f = tmp_path / "y.npy"
        np.save(f, y)
    elif content == "single":
        f = tmp_path / "y.csv"
        f.write_text("0\n0\n1\n")
    else:
        f = tmp_path / "y.npy"
        np.save(f, y)
    r = cli("classify", "--labels", f, "--tau", "0.5", "--dim", "2", *args)
    assert r.code == 2
    assert r.out == ""
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:"), r.err
    assert "Traceback" not in r.err
