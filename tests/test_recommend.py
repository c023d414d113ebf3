"""Inverse questions (:func:`dgp.recommend`): answers against the closed forms computed here,
certificates re-checked by independent classifications and prototype solves, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp
from dgp.design import parse_want, recommend
from dgp.errors import ParameterError
from dgp.prototypes import supcon_prototypes


@settings(max_examples=6)
@given(
    sizes=st.lists(st.integers(2, 40), min_size=2, max_size=6),
    log_eps=st.floats(-12.0, -0.01),
)
def test_simplex_tau_is_tau_star(sizes, log_eps):
    eps = math.exp(log_eps)
    K = len(sizes)
    tau_star = K / ((K - 1) * -math.log(eps))
    r = recommend("soft-supcon", sizes=sizes, eps=eps, want="simplex")
    assert r.parameter == "tau"
    assert abs(r.value - tau_star) <= 1e-10 * tau_star
    br = r.certificate["bracket"]
    assert br["below"]["tau"] <= br["above"]["tau"]
    assert br["above"]["verdict"] == "inconsistent"
    # independent checks away from the tolerance band: K dimensions below, none above
    assert dgp.classify_objective("soft-supcon", np.repeat(np.arange(K), sizes), eps=eps,
                                  tau=r.value * (1 - 1e-7), dim=K).verdict == "realizable"
    assert dgp.classify_objective("soft-supcon", np.repeat(np.arange(K), sizes), eps=eps,
                                  tau=r.value * (1 + 1e-7), dim=K + 5).verdict == "inconsistent"


@pytest.mark.parametrize(("sizes", "tau"), [([3, 3, 3], 0.5), ([2, 9, 4, 30], 0.05),
                                            ([5, 8], 20.0)])
def test_simplex_eps_for_a_given_tau(sizes, tau):
    K = len(sizes)
    eps_star = math.exp(-K / ((K - 1) * tau))
    r = recommend("soft-supcon", sizes=sizes, tau=tau, want="simplex")
    assert r.parameter == "eps"
    assert abs(r.value - eps_star) <= 1e-10 * eps_star
    assert r.certificate["closed_form"]["relative_difference"] <= 1e-10
    # at the answer the prototypes are the simplex: rho = 1 + tau log eps = -1/(K-1)
    assert 1 + tau * math.log(r.value) == pytest.approx(-1 / (K - 1), abs=1e-12)
    assert r.to_dict()["eps"] == r.value


def test_realizable_y_aware_on_a_sphere_is_sigma2_over_r2():
    R, sigma = 2.0, 1.3
    t = np.linspace(0, 2 * np.pi, 31)[:-1]
    y = np.c_[np.cos(t), np.sin(t)] * R + [1.0, -0.5]
    r = recommend("y-aware", y, sigma=sigma, dim=3, want="realizable")
    expected = sigma**2 / R**2
    assert abs(r.value - expected) <= 1e-10 * expected
    for f, verdict in ((1 - 1e-6, "realizable"), (1 + 1e-6, "inconsistent")):
        assert dgp.classify_objective("y-aware", y, sigma=sigma, tau=r.value * f,
                                      dim=3).verdict == verdict


def test_realizable_of_a_weight_matrix():
    labels = np.repeat([0, 1, 2], [2, 3, 4])
    W = dgp.weights.soft_supcon_weights(labels, eps=0.2)
    r = recommend(W=W, dim=3, want="realizable")
    tau_star = 3 / (2 * -math.log(0.2))
    assert abs(r.value - tau_star) <= 1e-10 * tau_star
    # no closed form is claimed for a bare matrix
    assert "closed_form" not in r.certificate
    # in 2 dimensions Soft SupCon is realizable only at tau* itself: no stretch on the scan
    r2 = recommend(W=W, dim=2, want="realizable")
    assert r2.value is None and "not realizable" in r2.reason


def test_realizable_euclidean_does_not_depend_on_tau():
    t = np.linspace(0, 2 * np.pi, 21)[:-1]
    y = np.c_[np.cos(t), np.sin(t)]
    r = recommend("euclid-euclid", y, sigma=0.7, dim=3, want="realizable", search=(0.01, 10))
    assert r.value is None and r.certificate["status"] == "up-to-range-end"
    ((lo, hi),) = r.certificate["scan"]["stretches_holding"]
    assert lo == pytest.approx(0.01, rel=1e-12) and hi == pytest.approx(10.0, rel=1e-12)


@pytest.mark.parametrize(("R", "tau", "expected"), [(1.0, 0.2, 3), (1.0, 1.0, 2)])
def test_min_dim_matches_the_y_aware_theorem(R, tau, expected):
    """Labels on a circle: the bound is attained in d >= m + [tau R^2 < sigma^2]."""
    t = np.linspace(0, 2 * np.pi, 31)[:-1]
    y = np.c_[np.cos(t), np.sin(t)] * R
    r = recommend("y-aware", y, sigma=1.0, tau=tau, want="min-dim")
    assert r.value == expected
    below = r.certificate["bracket"]["below"]
    assert below["dim"] == expected - 1 and below["verdict"] == "inconsistent"


def test_min_dim_none_when_the_bound_is_never_attained():
    r = recommend("supcon", sizes=[3, 3, 3], tau=0.3, want="min-dim")
    assert r.value is None and "not attained" in r.reason


def test_minority_cosine_brackets_the_threshold():
    sizes = [60, 30, 10, 5, 4]
    x = 0.0
    r = recommend("supcon", sizes=sizes, want=f"minority-cosine<={x}")
    assert r.parameter == "tau" and r.value is not None
    minority = r.certificate["minority"]
    assert minority == [1, 2, 3, 4]  # every class smaller than the largest
    sub = np.ix_(minority, minority)
    off = ~np.eye(len(minority), dtype=bool)

    def largest(tau):
        p = supcon_prototypes(sizes, tau=tau)
        assert p.kkt_residual < 1e-8
        return p.gram[sub][off].max()

    assert largest(r.value * (1 - 1e-6)) < x < largest(r.value * (1 + 1e-6))
    assert largest(r.value) == pytest.approx(x, abs=1e-8)
    # the cosines grow with tau from the simplex on: the first stretch is [search lo, value]
    grid = np.geomspace(0.02, r.value, 5)
    vals = [largest(t) for t in grid]
    assert all(np.diff(vals) > 0) and vals[0] > -1 / (len(sizes) - 1)
    # the first-order small-tau estimate is in the right range
    fo = r.certificate["first_order"]["tau"]
    assert 0.5 * r.value < fo < 2.0 * r.value


def test_minority_cosine_with_explicit_minority_and_soft_supcon():
    r = recommend("soft-supcon", sizes=[40, 20, 3, 3], eps=1e-4, want="minority-cosine<=-0.2",
                  minority=[2, 3])
    assert r.certificate["minority"] == [2, 3] and r.value is not None
    p = supcon_prototypes([40, 20, 3, 3], tau=r.value * (1 + 1e-6), eps=1e-4)
    assert p.gram[2, 3] > -0.2


def test_minority_cosine_below_the_simplex_is_never_met():
    r = recommend("supcon", sizes=[20, 5, 5], want="minority-cosine<=-0.9")
    assert r.value is None and r.certificate["status"] == "never"


def test_str_and_json():
    r = recommend("soft-supcon", sizes=[5, 5, 5], eps=0.1, want="simplex")
    text = str(r)
    assert "closed form" in text and max(len(s) for s in text.splitlines()) <= 80
    d = r.to_dict()
    assert set(d) >= {"objective", "want", "tau", "certificate"}
    assert d["objective"] == "soft-supcon" and d["want"] == "simplex"


def test_parse_want():
    assert parse_want("min-dim") == ("min-dim", None)
    assert parse_want(" minority-cosine<=-0.1 ") == ("minority-cosine", -0.1)
    for bad in ("minority-cosine<=2", "minority-cosine<=x", "simplexes", 3):
        with pytest.raises(ParameterError, match="want"):
            parse_want(bad)


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"objective": "supcon", "sizes": [3, 3], "want": "simplex", "eps": 0.1}, "want"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "simplex"}, "eps"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "simplex", "eps": 0.1,
          "tau": 1.0}, "eps"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "simplex", "eps": 0.1,
          "dim": 2}, "dim"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "realizable", "eps": 0.1,
          "tau": 1.0, "dim": 2}, "tau"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "realizable", "eps": 0.1},
         "dim"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "min-dim", "eps": 0.1,
          "dim": 2, "tau": 1.0}, "dim"),
        ({"objective": "supcon", "sizes": [3, 3, 3], "want": "minority-cosine<=0"},
         "minority"),
        ({"objective": "supcon", "sizes": [3, 4, 5], "want": "minority-cosine<=0",
          "minority": [1]}, "minority"),
        ({"objective": "y-aware", "labels": np.eye(5), "sigma": 1.0,
          "want": "minority-cosine<=0"}, "want"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "realizable", "eps": 0.1,
          "dim": 2, "search": (1.0, 0.5)}, "search"),
        ({"objective": "soft-supcon", "sizes": [3, 3], "want": "realizable", "eps": 0.1,
          "dim": 2, "points": 2}, "points"),
    ],
)
def test_bad_questions_name_the_parameter(kwargs, param):
    with pytest.raises((ValueError, TypeError)) as info:
        recommend(**kwargs)
    assert getattr(info.value, "param", None) == param, str(info.value)


# --- realizable at one temperature only (issue 27): the closed-form critical points -----------


def _circle(n, radius, centre=(0.0, 0.0)):
    t = 2 * np.pi * np.arange(n) / n
    return np.c_[np.cos(t), np.sin(t)] * radius + np.asarray(centre)


def _single_point_cases():
    """(objective, classify arguments, dim, critical tau computed here from the construction):
    in that dim the target has the needed rank at the critical temperature only (rank m at
    tau R^2 = sigma^2 and m + 1 below; the simplex, rank K - 1, at tau* and rank K below)."""
    sigma, R = 0.7, 2.0
    eps, K = 0.05, 4
    return [
        ("y-aware", {"labels": _circle(16, R, (3.0, -1.0)), "sigma": sigma}, 2, sigma**2 / R**2),
        ("x-clr", {"labels": _circle(16, 1.0) * np.linspace(0.5, 4.0, 16)[:, None],
                   "label_tau": 0.35}, 2, 0.35),
        ("soft-supcon", {"labels": np.repeat(np.arange(K), [3, 5, 4, 6]), "eps": eps}, K - 1,
         K / ((K - 1) * -math.log(eps))),
    ]


@pytest.mark.parametrize("case", _single_point_cases(), ids=lambda c: c[0])
def test_realizable_at_a_single_critical_temperature(case):
    name, kw, dim, tau_c = case
    kw = dict(kw)
    labels = kw.pop("labels")
    # the weighting is realizable in this dim at tau_c and at no nearby temperature
    at = dgp.classify_objective(name, labels, tau=tau_c, dim=dim, **kw)
    assert (at.verdict, at.rank) == ("realizable", dim)
    for f in (1 - 1e-6, 1 + 1e-6, 0.5, 2.0):
        assert dgp.classify_objective(name, labels, tau=tau_c * f, dim=dim,
                                      **kw).verdict != "realizable"
    r = recommend(name, labels, dim=dim, want="realizable", **kw)
    assert r.value == pytest.approx(tau_c, rel=1e-9), r.reason
    assert tau_c in [pytest.approx(t, rel=1e-12) for t in r.certificate["scan"]["candidates"]]
    again = dgp.classify_objective(name, labels, tau=r.value, dim=dim, **kw)
    assert (again.verdict, again.rank) == ("realizable", dim)
    assert r.certificate["bracket"]["above"]["verdict"] != "realizable"


def test_recommend_and_classify_agree_on_the_command_line(cli, tmp_path):
    """`dgp recommend --want realizable` finds y-Aware's single realizable temperature, and
    `dgp classify` at the tau it prints says realizable."""
    y = _circle(16, 2.0, (3.0, -1.0))
    np.savetxt(tmp_path / "y.csv", y, delimiter=",")
    common = ("--objective", "y-aware", "--labels", tmp_path / "y.csv", "--sigma", "0.7",
              "--dim", "2")
    r = cli("recommend", *common, "--want", "realizable", "--json")
    assert r.code == 0, r.err
    tau = r.json["tau"]
    assert tau == pytest.approx(0.7**2 / 2.0**2, rel=1e-9)  # sigma^2 / R^2
    c = cli("classify", *common, "--tau", repr(tau), "--json")
    assert c.code == 0, c.err
    assert (c.json["verdict"], c.json["rank"]) == ("realizable", 2)


def test_critical_temperatures_come_from_the_registry():
    """Every objective's record answers critical_temperatures (empty without a closed form):
    Soft SupCon's tau* for any class sizes, the sphere condition for the label kernels."""
    from dgp.objectives import registry

    for name, rec in registry.OBJECTIVES.items():
        if rec.labels == "class":
            lab = rec.check_labels(np.repeat(np.arange(3), [2, 3, 4]))
        else:
            lab = rec.check_labels(_circle(8, 1.5, (0.5, 0.0)))
        params = {p: 0.3 for p in rec.params}
        ts = rec.critical_temperatures(lab, params)
        assert isinstance(ts, tuple) and all(t > 0 for t in ts), name
        assert bool(ts) == (rec.boundary is not None), name
    rec = registry.get("y-aware")
    rng = np.random.default_rng(3)
    off = rec.check_labels(rng.standard_normal((9, 2)))  # on no circle
    assert rec.critical_temperatures(off, {"sigma": 1.0}) == ()


@settings(max_examples=8, deadline=None)
@given(case=st.data())
def test_single_point_y_aware_found_for_random_spheres(case):
    """Labels on a random sphere (any centre, radius, affine dimension 1..2), sigma such that
    tau R^2 = sigma^2 at a random tau_c: in dim = m the weighting is realizable at tau_c only,
    and recommend finds it (the scan alone has measure zero of hitting it)."""
    from dgp.strategies import y_aware_near_critical

    c = case.draw(y_aware_near_critical(n=(8, 12), dim=(1, 2), rel=0.0, min_rel=0.0)
                  .filter(lambda k: k.delta == 0.0))
    y, sigma = c.params["labels"], c.params["sigma"]
    m = y.shape[1]
    at = dgp.classify_objective("y-aware", y, sigma=sigma, tau=c.tau_critical, dim=m)
    assert (at.verdict, at.rank) == ("realizable", m)
    r = recommend("y-aware", y, sigma=sigma, dim=m, want="realizable")
    assert r.value == pytest.approx(c.tau_critical, rel=1e-9), r.reason
    again = dgp.classify_objective("y-aware", y, sigma=sigma, tau=r.value, dim=m)
    assert (again.verdict, again.rank) == ("realizable", m)


@pytest.mark.slow  # a rank-2 search at every scanned and bisected tau
def test_minority_cosine_in_a_dimension_uses_the_prototypes_there():
    """With ``dim`` the minority cosines are those of the best prototypes in R^dim (their
    search's starts and seed are keywords), not the free optimum's: 4 classes in R^2 are never
    the simplex, so their largest minority cosine exceeds -1/3 at every scanned tau (where the
    free answer finds a stretch); the recommended tau's prototypes in R^2 keep the threshold."""
    sizes = [12, 4, 3, 3]
    free = recommend("supcon", sizes=sizes, want="minority-cosine<=-0.3")
    assert free.value is not None
    in2 = recommend("supcon", sizes=sizes, want="minority-cosine<=-0.3", dim=2, starts=1, seed=0,
                    points=5)
    assert in2.value is None and "cannot form the simplex" in in2.reason
    loose = recommend("supcon", sizes=sizes, want="minority-cosine<=0.2", dim=2, starts=1,
                      seed=0, points=5)
    assert loose.value is not None
    p = supcon_prototypes(sizes, tau=loose.value, dim=2, starts=1, seed=0)
    M = p.gram[np.ix_([1, 2, 3], [1, 2, 3])][~np.eye(3, dtype=bool)]
    assert M.max() <= 0.2 + 1e-9
    with pytest.raises(dgp.InvalidParameterError, match="starts"):
        recommend("supcon", sizes=sizes, want="min-dim", tau=0.5, starts=2)
