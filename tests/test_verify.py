"""`dgp verify --quick`: the learned geometry confirms the predictions (each run once)."""

from __future__ import annotations

import contextlib
import io
import json
import os

import pytest

pytest.importorskip("torch")

from dgp.cli import main


def _verify(name: str, out_dir) -> dict:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["verify", name, "--quick", "--device", "cpu", "--json", "--out", str(out_dir)])
    assert rc == 0
    return json.loads(buf.getvalue())


@pytest.fixture(scope="module")
def supcon(tmp_path_factory):
    out = tmp_path_factory.mktemp("supcon")
    return _verify("supcon-imbalance", out), out


@pytest.fixture(scope="module")
def continuous(tmp_path_factory):
    out = tmp_path_factory.mktemp("continuous")
    return _verify("continuous-labels", out), out


def _runs(report: dict) -> dict:
    return {r["objective"]: r for r in report["runs"]}


def test_supcon_report_shape(supcon):
    report, out = supcon
    assert report["experiment"] == "supcon-imbalance" and report["device"] == "cpu"
    sizes = report["config"]["sizes"]
    assert sizes == sorted(sizes, reverse=True) and sizes[0] >= 9 * sizes[-1]  # ~tenfold
    for run in report["runs"]:
        for key in ("objective", "procrustes_r2", "similarity_r2", "entropic_gap"):
            assert key in run
        assert "simplex_procrustes_r2" in run
    assert json.loads((out / "supcon-imbalance.json").read_text()) == report


def test_supcon_prototypes_match_prediction(supcon):
    runs = _runs(supcon[0])
    for name in ("supcon", "soft-supcon"):
        assert runs[name]["procrustes_r2"] >= 0.9, runs[name]
        # the learned loss can only approach the predicted optimum from above
        assert runs[name]["loss"] >= runs[name]["predicted_loss"] - 1e-6 * runs[name]["loss"]
        assert runs[name]["entropic_gap"] >= runs[name]["predicted_entropic_gap"] - 1e-6
    sup = runs["supcon"]
    # imbalance moves the optimum away from the simplex, and the learned prototypes follow it
    assert sup["predicted_simplex_procrustes_r2"] < 0.999
    assert sup["procrustes_r2"] > sup["simplex_procrustes_r2"]
    assert sup["similarity_r2"] >= 0.9  # the pattern of prototype cosines, not only the scale
    assert sup["prediction_method"] in ("numeric", "first-order", "closed-form")
    soft = runs["soft-supcon"]
    assert soft["prediction_method"] == "closed-form"  # equiangular, whatever the sizes
    assert soft["gram_max_abs_error"] < 0.1


def test_continuous_labels_match_prediction(continuous):
    runs = _runs(continuous[0])
    ee, ya, xclr = runs["euclid-euclid"], runs["y-aware"], runs["x-clr"]
    assert ee["verdict"] == "realizable"
    assert ee["closed_form_vs_classify_r2"] == pytest.approx(1.0, abs=1e-6)
    assert ee["procrustes_r2"] >= 0.9
    assert ee["procrustes_r2"] > ya["procrustes_r2"]
    assert ee["entropic_gap"] < 0.05  # the bound is attained at its optimum
    # rigid comparison: the learned scale is sqrt(tau)/sigma, not 1 (raw labels score lower)
    assert ee["label_procrustes_r2"] < ee["procrustes_r2"]
    # y-Aware cannot attain its bound; its optimum needs more dimensions than the encoder has
    assert ya["verdict"] == "inconsistent"
    assert ya["optimum_rank"] > ya["dim"]
    for run in (ee, ya, xclr):
        assert run["entropic_gap"] >= run["predicted_entropic_gap"] - 1e-6
    assert xclr["procrustes_r2"] >= 0.9


def test_figures_written_with_matplotlib(supcon, continuous):
    pytest.importorskip("matplotlib")
    for _, out in (supcon, continuous):
        pngs = [f for f in os.listdir(out) if f.endswith(".png")]
        assert len(pngs) == 2


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["verify", "nonsense"], "invalid choice"),
        (["verify", "supcon-imbalance", "--seed", "-1"], "--seed"),
    ],
)
def test_verify_bad_input(argv, match, capsys):
    with contextlib.suppress(SystemExit):
        rc = main(argv)
        assert rc == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and match in err


def test_verify_cuda_unavailable(capsys):
    import torch

    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    assert main(["verify", "continuous-labels", "--quick", "--device", "cuda"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and "cuda" in err
