"""Phase maps (:func:`dgp.phase`): boundaries against closed forms computed here, excess losses
against brute-force minimisation over free embeddings, invariances, agreement with
:func:`dgp.classify` cell by cell, identical results serial / joblib / Dask, tables and
errors."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from scipy.optimize import minimize

import dgp
from dgp.design import (
    EXCESS_SOURCES,
    balanced_soft_supcon_simplex,
    imbalanced_sizes,
    phase,
)
from dgp.errors import ParameterError
from dgp.infonce import entropic_bound
from dgp.prototypes import supcon_prototypes
from dgp.weights import objective_weights

# ----------------------------------------------------------------------------------------------
# an independent reference: brute-force minimisation of the loss over free unit embeddings
# ----------------------------------------------------------------------------------------------


def loss_grad(x: np.ndarray, P: np.ndarray, tau: float, n: int, d: int):
    """The loss of free embeddings x (n x d, normalised to unit rows) and its gradient."""
    X = x.reshape(n, d)
    norms = np.linalg.norm(X, axis=1, keepdims=True)
    Zn = X / norms
    S = Zn @ Zn.T / tau
    np.fill_diagonal(S, -np.inf)
    top = S.max(axis=1, keepdims=True)
    E = np.exp(S - top)
    lse = top[:, 0] + np.log(E.sum(axis=1))
    Q = E / E.sum(axis=1, keepdims=True)
    Sz = np.where(np.isfinite(S), S, 0.0)
    loss = float(lse.sum() - (P * Sz).sum())
    R = Q - P
    gZ = (R + R.T) @ Zn / tau
    gX = (gZ - Zn * np.sum(gZ * Zn, axis=1, keepdims=True)) / norms
    return loss, gX.ravel()


def brute_force_min(W: np.ndarray, *, tau: float, dim: int, starts: int = 6) -> float:
    """The smallest loss over ``starts`` seeded L-BFGS runs on free embeddings (an upper bound
    on the true minimum, tight when a start finds the global optimum)."""
    P = W / W.sum(axis=1, keepdims=True)
    n = W.shape[0]
    rng = np.random.default_rng(0)
    best = math.inf
    for _ in range(starts):
        x0 = rng.standard_normal(n * dim)
        res = minimize(loss_grad, x0, args=(P, tau, n, dim), jac=True, method="L-BFGS-B",
                       options={"maxiter": 5000, "gtol": 1e-12, "ftol": 1e-15})
        best = min(best, float(res.fun))
    return best


# ----------------------------------------------------------------------------------------------
# boundaries
# ----------------------------------------------------------------------------------------------


def test_soft_supcon_boundary_is_tau_star_to_the_grid_resolution():
    sizes = [3, 5, 8, 4]
    K = len(sizes)
    taus = np.geomspace(0.1, 3.0, 25)
    epss = np.geomspace(1e-3, 0.6, 10)
    pm = phase("soft-supcon", sizes=sizes, grid={"tau": taus, "eps": epss}, dim=K,
               excess=False)
    verdicts = np.array([c["verdict"] for c in pm.cells]).reshape(taus.size, epss.size)
    for j, eps in enumerate(epss):
        tau_star = K / ((K - 1) * -math.log(eps))  # computed here, from the closed form
        attained = verdicts[:, j] != "inconsistent"
        np.testing.assert_array_equal(attained, taus < tau_star)
        # the flip sits in the grid step that contains tau*
        i = int(np.argmin(attained)) if not attained.all() else taus.size
        assert (i == 0 or taus[i - 1] < tau_star) and (i == taus.size or tau_star < taus[i])
    realizable = verdicts == "realizable"
    ranks = np.array([c["rank"] for c in pm.cells], dtype=object).reshape(verdicts.shape)
    assert all(r == K for r in ranks[realizable])  # equiangular below tau*: rank K
    (b,) = pm.boundaries
    assert b.name == "tau*" and b.agree == taus.size * epss.size and b.disagree == 0


@pytest.mark.slow  # a phase map in a fixed dimension: about 7 s
def test_soft_supcon_boundary_needs_dim_k():
    """In dim K - 1 only tau* itself attains the bound: every grid cell is inconsistent, as the
    boundary predicts."""
    pm = phase("soft-supcon", sizes=[4, 4, 4], grid={"tau": np.geomspace(0.1, 2, 9)}, eps=0.1,
               dim=2, excess=False)
    assert {c["verdict"] for c in pm.cells} == {"inconsistent"}
    assert pm.boundaries[0].disagree == 0


def _circle(n: int, R: float, centre=(0.3, -2.0), phase0: float = 0.1) -> np.ndarray:
    t = phase0 + np.linspace(0, 2 * np.pi, n + 1)[:-1]
    return np.c_[np.cos(t), np.sin(t)] * R + np.asarray(centre)


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_y_aware_boundary_on_a_sphere_is_tau_r2_equal_sigma2():
    R = 1.7
    y = _circle(24, R)
    taus = np.geomspace(0.05, 2.0, 14)
    sigmas = np.geomspace(0.3, 2.5, 8)
    pm = phase("y-aware", y, grid={"tau": taus, "sigma": sigmas}, dim=3, excess=False)
    for c in pm.cells:
        below = c["tau"] * R * R < c["sigma"] ** 2
        assert (c["verdict"] == "realizable") == below, c
        if below:  # labels lifted onto a cap: rank m + 1 = 3
            assert c["rank"] == 3
    (b,) = pm.boundaries
    assert b.name == "tau R^2 = sigma^2" and b.disagree == 0 and b.agree == len(pm.cells)
    assert b.constants["R"] == pytest.approx(R, rel=1e-12) and b.constants["m"] == 2
    # the excess loss on both sides of the boundary (the optimum in R^3 where it is not attained;
    # computed on a few cells, each an optimisation): zero below, positive above; on 8 labels of
    # the same circle (the boundary does not depend on their number, the rank-d search does)
    ex = phase("y-aware", _circle(8, R), dim=3,
               grid={"tau": [taus[2], taus[-1]], "sigma": [sigmas[0], sigmas[-1]]})
    for c in ex.cells:
        if c["tau"] * R * R < c["sigma"] ** 2:
            assert c["excess_loss"] == 0.0 and c["excess_source"] == "attained", c
        else:
            assert c["excess_source"] == "optimum" and c["excess_loss"] > 0.0, c
    assert {c["verdict"] for c in ex.cells} == {"realizable", "inconsistent"}


def test_x_clr_boundary_is_tau_equal_tau_y():
    y = np.random.default_rng(3).standard_normal((20, 2)) * [3.0, 0.5] + [0.5, 0.0]
    taus = np.geomspace(0.05, 1.0, 9)
    tys = np.geomspace(0.1, 0.8, 5)
    pm = phase("x-clr", y, grid={"tau": taus, "label_tau": tys}, dim=3, excess=False)
    for c in pm.cells:  # normalised embeddings span R^2 on the unit circle: R = 1
        assert (c["verdict"] == "realizable") == (c["tau"] < c["label_tau"]), c
    assert pm.boundaries[0].disagree == 0


def test_y_aware_off_a_sphere_has_no_boundary():
    y = np.random.default_rng(0).standard_normal((15, 2))
    pm = phase("y-aware", y, grid={"tau": [0.1, 0.5]}, sigma=1.0, dim=3, excess=False)
    assert pm.boundaries == ()
    assert {c["verdict"] for c in pm.cells} == {"inconsistent"}


# ----------------------------------------------------------------------------------------------
# excess losses
# ----------------------------------------------------------------------------------------------


def test_excess_loss_of_soft_supcon_against_brute_force():
    sizes, eps = [2, 3, 4], 0.2
    K = len(sizes)
    tau_star = K / ((K - 1) * -math.log(eps))
    pm = phase("soft-supcon", sizes=sizes, grid={"tau": [0.5 * tau_star, 2.0 * tau_star]},
               eps=eps, dim=K)
    attained, beyond = pm.cells
    assert attained["excess_loss"] == 0.0 and attained["excess_source"] == "attained"
    assert beyond["excess_source"] == "prototypes"
    W = objective_weights("soft-supcon", np.repeat(np.arange(K), sizes), eps=eps)
    brute = brute_force_min(W, tau=2.0 * tau_star, dim=K) - entropic_bound(W)
    # the certified optimum is at most the brute-force value, and brute force reaches it
    assert beyond["excess_loss"] <= brute + 1e-9
    assert beyond["excess_loss"] == pytest.approx(brute, rel=1e-6)


def test_excess_loss_of_supcon_imbalance_against_brute_force():
    pm = phase("supcon", grid={"tau": [0.5], "imbalance": [1.0, 3.0]}, classes=3, majority=6,
               dim=3)
    balanced, skewed = pm.cells
    assert balanced["max_cosine"] == pytest.approx(-0.5, abs=1e-12)  # the simplex
    assert skewed["max_cosine"] > -0.5  # minority prototypes move closer
    sizes = imbalanced_sizes(classes=3, majority=6, ratio=3.0)
    W = objective_weights("supcon", np.repeat(np.arange(3), sizes))
    brute = brute_force_min(W, tau=0.5, dim=3, starts=3) - entropic_bound(W)
    assert skewed["verdict"] == "inconsistent" and skewed["excess_source"] == "prototypes"
    assert skewed["excess_loss"] <= brute + 1e-9
    assert skewed["excess_loss"] == pytest.approx(brute, rel=1e-6)


def test_excess_in_a_dimension_below_the_prototypes_rank():
    """Where the free prototypes do not fit in dim the map reports the prototypes in R^dim, the
    number optimum gives on the samples' weights at that dim (one rank-d solver), not "not
    computed"."""
    pm = phase("supcon", sizes=[3, 3, 3, 3], grid={"dim": [2, 3]}, tau=0.5)
    low, high = pm.cells  # the simplex of 4 classes has rank 3
    assert low["excess_source"] == "prototypes-dim"
    W = objective_weights("supcon", np.repeat(np.arange(4), 3))
    opt = dgp.optimum(W, tau=0.5, dim=2, progress=False)
    assert low["excess_loss"] == pytest.approx(opt.loss - opt.entropic_bound, rel=1e-9)
    assert low["max_cosine"] == pytest.approx(np.max(opt.quotient_gram[~np.eye(4, dtype=bool)]),
                                              abs=1e-7)
    assert high["excess_source"] == "prototypes" and 0 < high["excess_loss"] < low["excess_loss"]


@pytest.mark.parametrize(("K", "n", "eps", "f"), [(3, 4, 0.1, 1.5), (5, 7, 0.01, 3.0),
                                                  (4, 2, 0.5, 1.01)])
def test_balanced_soft_supcon_simplex_agrees_with_the_certified_solver(K, n, eps, f):
    tau = f * K / ((K - 1) * -math.log(eps))
    closed = balanced_soft_supcon_simplex([n] * K, tau=tau, eps=eps)
    numeric = supcon_prototypes([n] * K, tau=tau, eps=eps, method="numeric")
    assert numeric.kkt_residual < 1e-8
    np.testing.assert_allclose(closed.gram, numeric.gram, atol=1e-7)
    assert closed.loss <= numeric.loss + 1e-10 * abs(numeric.loss)


def test_balanced_soft_supcon_simplex_refuses_where_it_does_not_apply():
    with pytest.raises(ParameterError, match="tau"):
        balanced_soft_supcon_simplex([3, 3], tau=0.1, eps=0.5)
    with pytest.raises(ParameterError, match="sizes"):
        balanced_soft_supcon_simplex([3, 4], tau=10.0, eps=0.5)


def test_general_weighting_excess_is_not_reported_without_a_certified_optimum():
    W = objective_weights("y-aware", _circle(10, 1.0), sigma=0.5)
    pm = phase(W=W, grid={"tau": [0.1, 1.0]}, dim=3)
    low, high = pm.cells
    assert low["excess_source"] == "attained"
    assert high["verdict"] == "inconsistent"
    if high["excess_source"] == "optimum":  # dgp.optimum accepts dim
        brute = brute_force_min(W, tau=1.0, dim=3) - entropic_bound(W)
        assert high["excess_loss"] == pytest.approx(brute, rel=1e-5)
    else:
        assert high["excess_loss"] is None and high["excess_source"] in EXCESS_SOURCES
        assert "excess_sources" in pm.to_dict()


# ----------------------------------------------------------------------------------------------
# agreement and invariances
# ----------------------------------------------------------------------------------------------


def test_weights_map_agrees_with_classify_cell_by_cell():
    W = objective_weights("soft-supcon", np.repeat([0, 1, 2], [2, 3, 4]), eps=0.15)
    taus, dims = [0.2, 0.5, 0.9, 1.5], [1, 2, 3, 8, 9]
    pm = phase(W=W, grid={"tau": taus, "dim": dims}, excess=False)
    assert len(pm.cells) == len(taus) * len(dims)
    for c in pm.cells:
        ref = dgp.classify(W, tau=c["tau"], dim=c["dim"])
        assert (c["verdict"], c["rank"], c["min_dim"]) == (ref.verdict, ref.rank, ref.min_dim)
        ci = None if ref.c_interval is None else list(ref.c_interval)
        assert c["c_interval"] == ci


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_scaling_w_shifts_c_and_nothing_else():
    W = objective_weights("soft-supcon", np.repeat([0, 1, 2], [2, 3, 4]), eps=0.15)
    grid = {"tau": [0.3, 0.6, 1.2], "dim": [2, 3, 9]}
    a = phase(W=W, grid=grid)
    b = phase(W=1e-200 * W, grid=grid)
    for x, y in zip(a.cells, b.cells, strict=True):
        assert (x["verdict"], x["rank"], x["excess_loss"]) == (y["verdict"], y["rank"],
                                                                y["excess_loss"])
        if x["c_interval"] is not None:  # s* = log w + c: c moves by -log(1e-200)
            for u, v in zip(x["c_interval"], y["c_interval"], strict=True):
                if u is not None:
                    assert v - u == pytest.approx(200 * math.log(10), rel=1e-12)


def test_relabelling_and_reordering_classes_changes_nothing():
    labels = np.repeat([0, 1, 2], [2, 5, 3])
    perm = np.random.default_rng(1).permutation(labels.size)
    renamed = np.array(["c", "a", "b"])[labels][perm]
    grid = {"tau": [0.2, 0.7, 1.4], "eps": [0.05, 0.3]}
    a = phase("soft-supcon", labels, grid=grid, dim=3)
    b = phase("soft-supcon", renamed, grid=grid, dim=3)
    for x, y in zip(a.cells, b.cells, strict=True):
        assert (x["verdict"], x["rank"]) == (y["verdict"], y["rank"])
        assert x["excess_loss"] == pytest.approx(y["excess_loss"], rel=1e-12)
        assert (x["c_interval"] is None) == (y["c_interval"] is None)
        if x["c_interval"] is not None:
            np.testing.assert_allclose(x["c_interval"], y["c_interval"], rtol=1e-12)


def test_y_aware_map_invariant_under_rigid_motions_of_the_labels():
    y = _circle(16, 1.3)
    Q = np.array([[np.cos(0.7), -np.sin(0.7)], [np.sin(0.7), np.cos(0.7)]])
    grid = {"tau": [0.2, 0.5, 0.8], "sigma": [0.8, 1.2]}
    a = phase("y-aware", y, grid=grid, dim=3, excess=False)
    b = phase("y-aware", y @ Q.T + [1e3, -7.0], grid=grid, dim=3, excess=False)
    assert [c["verdict"] for c in a.cells] == [c["verdict"] for c in b.cells]
    assert [c["rank"] for c in a.cells] == [c["rank"] for c in b.cells]


# ----------------------------------------------------------------------------------------------
# running: serial, joblib, Dask
# ----------------------------------------------------------------------------------------------

_GRID = {"tau": np.geomspace(0.1, 2.0, 8), "eps": np.geomspace(0.01, 0.5, 5)}


def test_joblib_workers_give_identical_json():
    pytest.importorskip("joblib")
    serial = phase("soft-supcon", sizes=[2, 5, 3], grid=_GRID, dim=3)
    parallel = phase("soft-supcon", sizes=[2, 5, 3], grid=_GRID, dim=3, jobs=2)
    assert json.dumps(serial.to_dict()) == json.dumps(parallel.to_dict())


# slow: about 5 s or more of CPU on 2 cores; it runs in the slow step of CI (-m slow)
@pytest.mark.slow
def test_dask_cluster_gives_identical_json(cli):
    """The LocalCluster of ``scheduler="local"`` (loopback, two workers, stopped on exit),
    reached through its address from Python and from the command line."""
    pytest.importorskip("distributed")
    pytest.importorskip("joblib")
    from dgp.design import dask_local_cluster

    serial = json.dumps(phase("soft-supcon", sizes=[2, 5, 3], grid=_GRID, dim=3).to_dict())
    with dask_local_cluster(2) as address:
        assert address.startswith("tcp://127.0.0.1:")
        on_dask = phase("soft-supcon", sizes=[2, 5, 3], grid=_GRID, dim=3, scheduler=address)
        assert json.dumps(on_dask.to_dict()) == serial
        r = cli("phase", "--objective", "soft-supcon", "--sizes", "2,5,3", "--dim", "3",
                "--grid", "tau=0.1:2:8:log", "eps=0.01:0.5:5:log", "--scheduler", address,
                "--json")
        assert r.code == 0
        assert json.dumps(r.json) == serial
    with pytest.raises(ParameterError, match="scheduler"):  # stopped: nothing listens there
        phase("soft-supcon", sizes=[2, 2], grid={"tau": [0.5]}, eps=0.1, dim=2,
              scheduler=address)


# ----------------------------------------------------------------------------------------------
# tables, display, figure
# ----------------------------------------------------------------------------------------------


def _small_map():
    return phase("soft-supcon", sizes=[3, 4, 5], grid={"tau": [0.3, 0.6, 0.9, 1.2],
                                                        "eps": [0.05, 0.1, 0.3]}, dim=3)


def test_json_fields():
    d = _small_map().to_dict()
    assert d["objective"] == "soft-supcon" and d["params"] == ["tau", "eps"]
    assert len(d["cells"]) == 12
    for c in d["cells"]:
        assert {"tau", "eps", "verdict", "rank", "c_interval", "excess_loss"} <= set(c)
        assert "dim" not in c  # fixed parameters are in "fixed"
    assert d["fixed"] == {"dim": 3}
    json.dumps(d)


def test_tables_arrays_frame_and_csv(tmp_path):
    pm = _small_map()
    arr = pm.to_arrays()
    assert set(arr) >= {"tau", "eps", "verdict", "rank", "c_lo", "c_hi", "excess_loss"}
    assert all(v.shape == (12,) for v in arr.values())
    real = arr["verdict"] == "realizable"
    assert np.isnan(arr["c_lo"][~real]).all() and np.isfinite(arr["rank"][real]).all()
    path = tmp_path / "map.csv"
    pm.to_csv(str(path))
    rows = list(csv.DictReader(path.open()))
    assert len(rows) == 12 and rows[0]["verdict"] == pm.cells[0]["verdict"]
    assert float(rows[5]["tau"]) == pm.cells[5]["tau"]
    pd = pytest.importorskip("pandas")
    frame = pm.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 12
    assert str(frame["rank"].dtype) == "Int64"
    assert frame["rank"].isna().sum() == int((~real).sum())


def test_str_fits_80_columns_and_shows_the_map():
    text = str(_small_map())
    assert "verdicts" in text and "boundary" in text
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "o realizable" in text
    assert "<table>" in _small_map()._repr_html_()


def test_html_sets_the_ascii_map_in_a_monospace_font():
    import html
    import re

    pm = _small_map()
    (style, body) = re.findall(r'<pre style="([^"]*)">(.*?)</pre>', pm._repr_html_(), re.S)[0]
    font = next(p for p in style.split(";") if p.strip().startswith("font-family"))
    assert font.strip().endswith("monospace") and "white-space: pre" in style
    assert html.unescape(body) == pm.ascii_map()  # every line, every column kept


def test_figure_saves(tmp_path):
    pytest.importorskip("matplotlib")
    fig = _small_map().figure()
    fig.savefig(tmp_path / "map.png")
    assert (tmp_path / "map.png").stat().st_size > 10_000
    assert len(fig.axes) >= 3


# ----------------------------------------------------------------------------------------------
# sizes and errors
# ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("ratio", [1.0, 2.5, 10.0, 50.0])
def test_imbalanced_sizes(ratio):
    s = imbalanced_sizes(classes=6, majority=200, ratio=ratio)
    assert s[0] == 200 and (np.diff(s) <= 0).all()
    assert s[-1] == math.floor(200 / ratio + 1e-9)
    step = imbalanced_sizes(classes=5, majority=120, ratio=ratio, profile="step")
    assert step.tolist() == [120] * 3 + [math.floor(120 / ratio + 1e-9)] * 2


@pytest.mark.parametrize(
    ("kwargs", "param"),
    [
        ({"grid": {"tau": [0.5]}, "eps": 0.1}, "dim"),
        ({"grid": {"tau": [0.5]}, "dim": 2}, "eps"),
        ({"grid": {"tau": [0.5]}, "eps": 0.1, "dim": 2, "tau": 0.3}, "tau"),
        ({"grid": {"sigma": [0.5]}, "eps": 0.1, "dim": 2, "tau": 0.3}, "grid"),
        ({"grid": {"tau": [0.5], "dim": [1.5]}, "eps": 0.1}, "grid['dim']"),
        ({"grid": {"tau": [-1.0]}, "eps": 0.1, "dim": 2}, "grid['tau']"),
        ({"grid": {"tau": [0.1, 0.1]}, "eps": 0.1, "dim": 2}, "grid['tau']"),
        ({"grid": {"eps": [1.5]}, "tau": 0.1, "dim": 2}, "grid['eps']"),
        ({"grid": {"tau": [1], "eps": [0.1], "dim": [2]}}, "grid"),
        ({"grid": {"temperature": [1]}, "eps": 0.1, "dim": 2}, "grid"),
        ({"grid": {}, "eps": 0.1, "dim": 2}, "grid"),
        ({"grid": {"tau": [0.5]}, "eps": 0.1, "dim": 2, "sigma": 1.0}, "sigma"),
        ({"grid": {"tau": [0.5]}, "eps": 0.1, "dim": 2, "jobs": 0}, "jobs"),
        ({"grid": {"tau": [0.5]}, "eps": 0.1, "dim": 2, "scheduler": "nowhere"}, "scheduler"),
        ({"grid": {"tau": [0.5], "imbalance": [2.0]}, "eps": 0.1, "dim": 2}, "sizes"),
    ],
)
def test_bad_arguments_name_the_parameter(kwargs, param):
    with pytest.raises((ValueError, TypeError)) as info:
        phase("soft-supcon", sizes=[3, 3], **kwargs)
    assert getattr(info.value, "param", None) == param, str(info.value)


def test_bad_input_modes():
    with pytest.raises(ParameterError, match="objective"):
        phase(grid={"tau": [1.0]}, dim=2)
    with pytest.raises(ParameterError, match="W"):
        phase("supcon", W=np.ones((3, 3)), grid={"tau": [1.0]}, dim=2)
    with pytest.raises(ParameterError, match="sizes"):
        phase("y-aware", sizes=[3, 3], grid={"tau": [1.0]}, sigma=1.0, dim=2)
    with pytest.raises(ParameterError, match="classes"):
        phase("supcon", grid={"tau": [1.0], "imbalance": [2.0]}, majority=10, dim=2)
    with pytest.raises(ParameterError, match="grid"):
        phase("supcon", grid={"tau": [1.0], "imbalance": [20.0]}, classes=3, majority=10, dim=2)
    with pytest.raises(ParameterError, match="grid"):
        phase(W=np.ones((3, 3)), grid={"eps": [0.1]}, tau=1.0, dim=2)
