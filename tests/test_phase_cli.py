"""``dgp phase``, ``dgp recommend``, ``dgp floors``: JSON contract, CSV, figure, human output,
and bad input as one ``error:`` line with exit status 2."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

import dgp
from dgp.cli.phase import parse_axis


def test_phase_json_contract(cli):
    r = cli("phase", "--objective", "soft-supcon", "--sizes", "3,5,4", "--dim", "3", "--grid",
            "tau=0.2:1.4:7", "eps=0.05,0.2", "--json")
    assert r.code == 0 and r.err == ""
    d = r.json
    assert d["objective"] == "soft-supcon" and d["params"] == ["tau", "eps"]
    assert len(d["cells"]) == 14
    for c in d["cells"]:
        assert {"tau", "eps", "verdict", "rank", "c_interval", "excess_loss"} <= set(c)
        tau_star = 3 / (2 * -math.log(c["eps"]))
        assert (c["verdict"] == "realizable") == (c["tau"] < tau_star)
    # the same cells as the library
    pm = dgp.phase("soft-supcon", sizes=[3, 5, 4], dim=3,
                   grid={"tau": np.linspace(0.2, 1.4, 7), "eps": [0.05, 0.2]})
    assert d == json.loads(json.dumps(pm.to_dict()))


@pytest.mark.slow  # more than about 10 s of CPU on a loaded machine
def test_phase_labels_csv_plot_and_text(tmp_path, cli):
    pytest.importorskip("matplotlib")
    # eight labels on a circle of radius 1.5 (the boundary tau R^2 = sigma^2 holds for any
    # number; each inconsistent cell's excess is a rank-d search whose cost grows with it)
    t = np.linspace(0, 2 * np.pi, 9)[:-1]
    labels = tmp_path / "y.csv"
    np.savetxt(labels, np.c_[np.cos(t), np.sin(t)] * 1.5, delimiter=",")
    table, fig = tmp_path / "map.csv", tmp_path / "map.png"
    r = cli("phase", "--objective", "y-aware", "--labels", labels, "--dim", "3", "--grid",
            "tau=0.1:2:6:log", "sigma=0.5:2:4:log", "--csv", table, "--plot", fig)
    assert r.code == 0 and r.err == ""
    out = r.out
    assert "tau R^2 = sigma^2" in out and "0 disagree" in out
    shown = [line for line in out.splitlines() if not line.startswith(("table", "figure"))]
    assert max(len(line) for line in shown) <= 80  # all but the file names
    rows = list(csv.DictReader(table.open()))
    assert len(rows) == 24 and {"tau", "sigma", "verdict", "c_lo", "c_hi"} <= set(rows[0])
    assert fig.stat().st_size > 10_000


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_phase_weights_over_tau_and_dim(tmp_path, cli):
    W = dgp.weights.soft_supcon_weights([0, 0, 1, 1, 2, 2], eps=0.1)
    path = tmp_path / "W.npy"
    np.save(path, W)
    r = cli("phase", path, "--grid", "tau=0.2,0.5,1.0", "dim=1:4:4", "--json")
    assert r.code == 0
    d = r.json
    assert d["objective"] == "weights" and d["params"] == ["tau", "dim"]
    for c in d["cells"]:
        ref = dgp.classify(W, tau=c["tau"], dim=c["dim"])
        assert (c["verdict"], c["rank"]) == (ref.verdict, ref.rank)


def test_phase_imbalance_sweep(cli):
    r = cli("phase", "--objective", "supcon", "--classes", "4", "--majority", "20", "--dim", "3",
            "--grid", "tau=0.1,0.5", "imbalance=1:10:3", "--json")
    assert r.code == 0
    cells = r.json["cells"]
    assert all(c["verdict"] == "inconsistent" and c["excess_loss"] > 0 for c in cells)
    by_tau = {}
    for c in cells:
        by_tau.setdefault(c["tau"], []).append(c["max_cosine"])
    for values in by_tau.values():  # more imbalance, closer minority prototypes
        assert values[0] == pytest.approx(-1 / 3) and values[-1] > values[0]


def test_recommend_json(cli):
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "4,6,8", "--eps", "0.1",
            "--want", "simplex", "--json")
    assert r.code == 0 and r.err == ""
    d = r.json
    assert set(d) >= {"objective", "want", "tau", "certificate"}
    tau_star = 3 / (2 * -math.log(0.1))
    assert abs(d["tau"] - tau_star) <= 1e-10 * tau_star
    r = cli("recommend", "--objective", "supcon", "--sizes", "40,10,5,5", "--want",
            "minority-cosine<=0", "--search", "0.01:5", "--json")
    assert r.code == 0 and r.json["tau"] > 0
    r = cli("recommend", "--objective", "soft-supcon", "--sizes", "4,6,8", "--eps", "0.1",
            "--tau", "0.3", "--want", "min-dim")
    assert r.code == 0 and "dim" in r.out and "3" in r.out


def test_floors_json_and_text(cli):
    r = cli("floors", "--objective", "supcon", "--sizes", "8,8,8", "--tau", "0.1", "--dim", "32",
            "--json")
    assert r.code == 0 and r.err == ""
    d = r.json
    pml = d["conventions"]["pml"]
    assert pml["collapsed"] == pytest.approx(math.log(23))
    assert pml["optimal"] < pml["collapsed"] < pml["random"]
    r = cli("floors", "--objective", "supcon", "--sizes", "8,8,8", "--tau", "0.1",
            "--base-temperature", "0.1")
    assert r.code == 0 and "SupContrast (base 0.1)" in r.out and "needs dim" in r.out


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["phase", "--objective", "soft-supcon", "--sizes", "3,3", "--dim", "2", "--grid",
          "tau=1:2"], "--grid"),
        (["phase", "--objective", "soft-supcon", "--sizes", "3,3", "--dim", "2", "--grid",
          "temp=1:2:3", "--eps", "0.1"], "unknown parameter"),
        (["phase", "--objective", "soft-supcon", "--sizes", "3,3", "--grid", "tau=1:2:3",
          "dim=1:4:3", "--eps", "0.1"], "dim takes integers"),
        (["phase", "--objective", "soft-supcon", "--sizes", "3,3", "--grid", "tau=1:2:3",
          "--dim", "2"], "--eps"),
        (["phase", "--objective", "soft-supcon", "--sizes", "3,3", "--grid", "tau=1:2:3",
          "--dim", "2", "--eps", "0.1", "--jobs", "0"], "--jobs"),
        (["phase", "--objective", "soft-supcon", "--sizes", "3,3", "--grid", "tau=1:2:3",
          "--dim", "2", "--eps", "0.1", "--scheduler", "tcp://127.0.0.1:9"], "--scheduler"),
        (["phase", "--grid", "tau=1:2:3", "--dim", "2"], "WEIGHTS"),
        (["recommend", "--objective", "supcon", "--sizes", "3,3", "--want", "simplex",
          "--eps", "0.1"], "--want"),
        (["recommend", "--objective", "supcon", "--sizes", "3,4,5", "--want",
          "minority-cosine<=0", "--search", "1"], "--search"),
        (["floors", "--objective", "supcon", "--sizes", "3,x", "--tau", "0.1"], "--sizes"),
    ],
)
def test_bad_input_is_one_error_line(argv, needle, cli):
    r = cli(*argv)
    assert r.code == 2 and r.out == ""
    assert r.err.startswith("error:") and r.err.count("\n") == 1 and needle in r.err, r.err


def test_parse_axis():
    name, v = parse_axis("label-tau=0.1:1:3:log")
    assert name == "label_tau" and np.allclose(v, [0.1, 10**-0.5, 1.0])
    assert parse_axis("dim=2,4,8")[1].dtype == np.int64
    assert parse_axis("eps=0.1:0.3:3")[1].tolist() == pytest.approx([0.1, 0.2, 0.3])
    for bad in ("tau", "tau=", "tau=1:2:x", "tau=1:2:3:lin", "tau=-1:2:3:log", "tau=1:2:0"):
        with pytest.raises(ValueError, match="--grid"):
            parse_axis(bad)
