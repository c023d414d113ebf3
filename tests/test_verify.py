"""`dgp verify`: the predictions hold on trained CNNs, where they could have failed.

The experiments run with a smaller budget than ``--quick`` (two seeds, fewer conditions), so that
these tests stay short; each asserts the prediction against its competitor.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from dgp.cli import main
from dgp.torch import experiments as E
from dgp.torch.experiments import base as B
from dgp.torch.experiments import continuous as C

pytestmark = pytest.mark.torch

SMALL = dataclasses.replace(E.QUICK, seeds=2, steps_continuous=700, mc_batches=32)


@pytest.fixture
def small_budget(monkeypatch):
    monkeypatch.setattr(B, "QUICK", SMALL)


def _cli(argv, capsys=None):
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(argv)
    return rc, buf.getvalue()


def _by(report, key="condition"):
    out: dict = {}
    for r in report["runs"]:
        out.setdefault(r[key], []).append(r)
    return out


@pytest.mark.slow
def test_supcon_imbalance_follows_the_prediction_not_the_simplex(small_budget, tmp_path):
    rc, out = _cli(
        ["verify", "supcon-imbalance", "--quick", "--device", "cpu", "--json", "--out",
         str(tmp_path)]
    )
    assert rc == 0
    rep = json.loads(out)
    assert rep["experiment"] == "supcon-imbalance" and rep["device"] == "cpu"
    assert json.loads((tmp_path / "supcon-imbalance.json").read_text()) == rep
    for run in rep["runs"]:  # the CONTRACT fields, per-run seed and the convergence flag
        for key in ("objective", "procrustes_r2", "similarity_r2", "entropic_gap",
                    "simplex_procrustes_r2", "seed", "heldout_gram_rms_error", "converged",
                    "loss_excess"):
            assert key in run
    runs = _by(rep)
    imb = [r for r in runs["imbalanced"] if r["converged"]]
    assert len(imb) == 2
    sup = rep["supports"]
    gap = sup["prediction_vs_simplex_rms"]
    assert gap > 0.1  # tenfold imbalance moves the optimum far from the simplex
    for r in imb:  # learned prototypes: close to the prediction, far from the simplex
        assert r["gram_rms_error"] < 0.2 * gap < r["simplex_gram_rms_error"]
        assert r["heldout_gram_rms_error"] < r["heldout_simplex_gram_rms_error"]
        # minority classes closer: learned and predicted agree in sign and roughly in size
        assert r["predicted_minority_minus_majority"] > 0.1
        assert r["minority_minus_majority"] == pytest.approx(
            r["predicted_minority_minus_majority"], abs=0.05
        )
    assert sup["supports"] == "imbalance prediction"
    assert sup["heldout"]["supports"] == "imbalance prediction"
    assert sup["minority_closer"] == {"predicted": True, "learned_all_converged_seeds": True}
    for r in runs["balanced"]:  # balanced: the simplex
        assert r["converged"] and r["gram_rms_error"] < 0.03
        assert abs(r["minority_minus_majority"]) < 0.05
    # noise inputs: nothing carries over to held-out noise
    for r, n in zip(runs["imbalanced"], runs["imbalanced-noise"], strict=True):
        assert n["heldout_gram_rms_error"] > 3 * r["heldout_gram_rms_error"]
    pytest.importorskip("matplotlib")
    assert (tmp_path / "supcon-imbalance-gram.png").stat().st_size > 10_000


@pytest.mark.slow
def test_soft_supcon_across_tau_star(monkeypatch, small_budget):
    exp = E.soft_supcon_tau(quick=True, device="cpu", progress=False, multiples=(0.5, 1.5))
    per = {d["tau_over_tau_star"]: d for d in exp.report["supports"]["per_tau"]}
    below, above = per[0.5], per[1.5]
    runs = _by(exp.report)
    rho = runs["tau=0.5tau*"][0]["rho"]
    # the expected-batch prediction below tau* is the full-batch closed form: the equiangular
    # configuration attains the bound of every batch
    G = np.asarray(runs["tau=0.5tau*"][0]["predicted_gram"])
    assert np.abs(G[~np.eye(len(G), dtype=bool)] - rho).max() < 1e-6
    # above tau*: a size-dependent geometry, far from equiangular
    assert runs["tau=1.5tau*"][0]["predicted_cosine_spread"] > 0.1
    for r in runs["tau=0.5tau*"]:  # equiangular at rho = 1 + tau log eps, whatever the sizes
        assert r["converged"]
        assert r["mean_cosine"] == pytest.approx(rho, abs=0.02)
        assert r["cosine_spread"] < 0.02
    for r in runs["tau=1.5tau*"]:  # size-dependent: the pattern of cosines, not the simplex
        assert r["converged"] and r["similarity_r2"] > 0.95
        assert r["gram_rms_error"] < 0.5 * r["alternative_rms_error"]
    assert below["supports"] == above["supports"] == "prediction"


@pytest.mark.slow
def test_continuous_labels_prediction_vs_labels_geometry(monkeypatch, small_budget):
    keep = ("euclid-euclid", "x-clr mismatched")
    orig = C.continuous_conditions
    monkeypatch.setattr(
        C, "continuous_conditions", lambda tau: [c for c in orig(tau) if c[0] in keep]
    )
    monkeypatch.setattr(C, "OPTIMUM_SAMPLES", {True: (60, 30), False: (60, 30)})
    exp = E.continuous_labels(quick=True, device="cpu", progress=False)
    runs = _by(exp.report)
    for r in runs["euclid-euclid"]:
        assert r["verdict"] == "realizable" and r["converged"]
        # the predicted scale sqrt(tau)/sigma, not the labels' own (unit) circle
        assert r["prediction_vs_labels_r2"] < 0.9
        assert r["procrustes_r2"] > 0.9 > r["label_procrustes_r2"]
        assert r["probe_r2"] > 0.2 and r["knn_r2"] > 0.2  # held-out angles are predicted
    for r in runs["x-clr mismatched"]:
        # no target is realizable; the prediction is the best embedding in d dimensions
        assert r["verdict"] == "inconsistent" and "dim=16" in r["prediction"]
        assert r["n_train"] == 60 and r["optimum_excess_loss"] > 0
        assert r["converged"] and r["procrustes_r2"] > 0.9 > 0.75 > r["label_procrustes_r2"]
    per = {d["condition"]: d for d in exp.report["supports"]["per_objective"]}
    assert per["euclid-euclid"]["supports"] == per["x-clr mismatched"]["supports"] == "prediction"


@pytest.mark.slow
def test_batch_size_training_follows_the_expected_batch_prediction(small_budget):
    exp = E.batch_size(quick=True, device="cpu", progress=False, batch_sizes=(16,))
    (per,) = exp.report["supports"]["per_batch_size"]
    # at B = 16 the expected-batch prediction is far from the full-batch one ...
    assert per["batch_size"] == 16 and per["predictions_rms"] > 0.03
    for r in exp.report["runs"]:
        assert r["converged"] and r["steps"] == E.steps_for_batch(E.QUICK, 16)
        # ... and the learned prototypes are closer to it, in every seed
        assert r["batch_rms_error"] < r["full_rms_error"]
    assert per["supports"] == "expected-batch", per


def test_out_is_checked_before_training(tmp_path, capsys):
    target = tmp_path / "file"
    target.write_text("x")
    rc = main(["verify", "supcon-imbalance", "--quick", "--out", str(target)])
    err = capsys.readouterr().err
    assert rc == 2 and err.startswith("error: out") and err.count("\n") == 1
    # a folder that cannot be created (its parent is a file): refused at once, nothing trained
    rc = main(["verify", "supcon-imbalance", "--quick", "--out", str(target / "sub")])
    err = capsys.readouterr().err
    assert rc == 2 and "not writable" in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["verify", "nonsense"], "invalid choice"),
        (["verify", "supcon-imbalance", "--seed", "-1"], "seed"),
        (["verify", "supcon-imbalance", "--data", "/nonexistent.npz"], "data: cannot read"),
    ],
)
def test_verify_bad_input(argv, match, capsys):
    with contextlib.suppress(SystemExit):
        rc = main(argv)
        assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and match in err


def test_verify_data_that_do_not_fit(tmp_path, capsys):
    p = tmp_path / "cont.npz"
    np.savez(p, features=np.zeros((20, 3)), y=np.linspace(0, 1, 20))
    assert main(["verify", "supcon-imbalance", "--quick", "--data", str(p)]) == 2
    assert "integer class labels" in capsys.readouterr().err


def test_verify_cuda_unavailable(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert main(["verify", "continuous-labels", "--quick", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "cuda" in err


def test_cli_lists_every_experiment():
    from dgp.cli.verify import EXPERIMENTS

    assert EXPERIMENTS == tuple(E.EXPERIMENTS)


def test_table_fits_80_columns():
    from dgp.cli.verify import format_report

    row = {"condition": "imbalanced-noise", "n_seeds": 3, "n_converged": 3, "trained": True}
    for name, cols in __import__("dgp.cli.verify", fromlist=["_COLUMNS"])._COLUMNS.items():
        summary = [{**row, **{c: [-0.123456, 0.123456] for c in cols}}]
        rep = {"experiment": name, "device": "cpu", "quick": True, "seeds": [0, 1, 2],
               "summary": summary, "supports": {"supports": "imbalance prediction"}}
        assert max(len(line) for line in format_report(rep).splitlines()) <= 80


@pytest.mark.slow
def test_all_json_and_the_results_page(monkeypatch, tmp_path):
    # a budget too small to converge: the report must say so rather than score those runs
    tiny = dataclasses.replace(E.QUICK, seeds=2, steps=5, steps_continuous=5, mc_batches=4)
    monkeypatch.setattr(B, "QUICK", tiny)
    monkeypatch.setattr(C, "OPTIMUM_SAMPLES", {True: (24, 12), False: (24, 12)})
    rc, out = _cli(["verify", "all", "--quick", "--device", "cpu", "--json", "--out",
                    str(tmp_path)])
    assert rc == 0
    rep = json.loads(out)
    names = [r["experiment"] for r in rep["experiments"]]
    assert set(names) | set(rep["skipped"]) == set(E.EXPERIMENTS)
    assert rep["experiment"] == "all" and rep["device"] == "cpu"
    assert all("experiment" in r and "seed" in r and "converged" in r for r in rep["runs"])
    assert set(rep["supports"]) == set(names)
    for r in rep["experiments"]:
        for row in r["summary"]:  # nothing converged in 5 steps: no trained row is scored
            if row["trained"]:
                assert row["n_converged"] == 0
                meta = ("condition", "n_seeds", "trained", "n_converged")
                assert all(row[k] is None for k in row if k not in meta)
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(
        "write_results", os.path.join(os.path.dirname(__file__), "..", "docs", "write_results.py")
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["write_results"] = mod
    spec.loader.exec_module(mod)
    (tmp_path / "all.json").write_text(out)
    mod.main([str(tmp_path / "all.json"), "--out", str(tmp_path / "results.md")])
    page = (tmp_path / "results.md").read_text()
    assert "GPU numbers are pending" in page
    assert "imbalanced: 2 of 2 runs did not converge." in page
