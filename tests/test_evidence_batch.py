"""Evidence against a prediction found on sampled batches (issue 40, point 6): the verdict of
the expected-batch prediction against the full-batch one can come out for either side, the
runs beat the prediction only beyond its interval, and the loss gap decides identifiability.

Synthetic run records (the numbers a trained run would carry), so each side's outcome is
forced by the data and the rule alone."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

pytest.importorskip("torch")
pytest.importorskip("sklearn")

from dgp.torch.experiments import continuous as C
from dgp.torch.experiments import statistics as S
from dgp.torch.experiments.sample_batch import (
    FULL_BATCH_CONTROL,
    SAMPLE_BATCH,
    sample_batch_verdict,
)


def _run(seed, *, advantage, delta=0.02, delta_se=2e-4, excess=1e-4, excess_se=1e-4,
         half_width=0.0015, same=False, identifiable=True, condition="images"):
    """A run record as :func:`dgp.torch.experiments.sample_batch.sample_batch_run` writes it:
    ``advantage`` is the held-out Procrustes advantage of the expected-batch prediction over
    the full-batch one (null-corrected), ``delta`` the full-batch prediction's loss excess over
    the batch prediction, ``excess`` the run's own over the batch prediction."""
    return {
        "condition": condition, "seed": seed, "converged": True,
        "final_loss": 3.0 + excess, "loss_excess": excess, "loss_excess_se": excess_se,
        "prediction_half_width": half_width, "prediction_identifiable": identifiable,
        "batch_prediction": {"identifiability": {"identifiable": identifiable, "pinned": {
            "pairwise cosines": identifiable, "spectrum": True, "mean_norm": True}}},
        "heldout_noise": None,
        "comparisons": {"full-batch": {
            "delta": delta, "delta_se": delta_se, "same_point": same,
            "train": {"advantage": advantage},
            "heldout": {"advantage": advantage, "p_value": 0.01,
                        "distance": "Procrustes r^2 (no scaling)"},
        }},
    }


def _runs(advantages, **kw):
    rng = np.random.default_rng(0)
    return [_run(s, advantage=a, excess=float(1e-4 + 2e-4 * rng.standard_normal()), **kw)
            for s, a in enumerate(advantages)]


def test_runs_side_with_the_prediction():
    v = C.batch_vs_full(_runs([0.10, 0.12, 0.11, 0.09, 0.105]))
    assert v["supports"] == "expected-batch"
    assert v["identifiability"]["informative"]
    assert not v["identifiability"]["runs_beat_prediction"]
    sup = sample_batch_verdict(_runs([0.10, 0.12, 0.11, 0.09, 0.105]))
    assert sup["supports"] == "expected-batch"


def test_runs_side_with_the_full_batch_alternative():
    runs = _runs([-0.10, -0.12, -0.11, -0.09, -0.105])
    v = C.batch_vs_full(runs)
    assert v["supports"] == "full-batch"
    assert sample_batch_verdict(runs)["supports"] == "against"


def test_the_loss_preferring_the_full_batch_prediction_is_against():
    # the full-batch prediction has the lower expected batch loss beyond the resolution: the
    # batch prediction is not the optimum of what training minimises, whatever the geometry
    v = C.batch_vs_full(_runs([0.1, 0.12, 0.11], delta=-0.02))
    assert v["supports"] == "against" and v["identifiability"]["loss_prefers"] == "alternative"


def test_a_gap_within_the_resolution_is_uninformative():
    # the two predictions' losses differ by less than the run-to-run spread of the excess
    v = C.batch_vs_full(_runs([0.1, 0.12, 0.11], delta=1e-5, delta_se=1e-5))
    assert v["supports"] == "uninformative"


def test_runs_beat_the_prediction_only_beyond_its_interval():
    hw = 0.0015
    inside = [_run(s, advantage=0.1 + 0.01 * s, excess=-0.001, excess_se=1e-4, half_width=hw)
              for s in range(3)]
    ident = C.batch_vs_full(inside)["identifiability"]
    # below the prediction by 0.001, within its 95% half-width: not beaten (the old rule, three
    # standard errors of the run's excess, would have called this against)
    assert not ident["runs_beat_prediction"]
    assert ident["beat_threshold"] == pytest.approx(hw + S.Z95 * 1e-4)
    old = S.identifiability([0.02] * 3, [2e-4] * 3, [3.0] * 3, [-0.001] * 3, [1e-4] * 3)
    assert old["runs_beat_prediction"]
    beyond = [_run(s, advantage=0.1, excess=-0.004 - 1e-4 * s, excess_se=1e-4, half_width=hw)
              for s in range(3)]
    v = C.batch_vs_full(beyond)
    assert v["identifiability"]["runs_beat_prediction"] and v["supports"] == "against"
    assert "half-width" in v["why"]


def test_one_point_coincides_and_an_unpinned_arrangement_is_uninformative():
    same = C.batch_vs_full(_runs([0.0, 0.0, 0.0], delta=0.0, delta_se=0.0, same=True))
    assert same["supports"] == "coincide"
    free = C.batch_vs_full(_runs([0.10, 0.12, 0.11, 0.09], identifiable=False))
    assert free["supports"] == "uninformative" and "does not pin" in free["why"]


def test_the_noise_control_is_reported_and_cannot_confirm_silently():
    runs = _runs([0.10, 0.12, 0.11]) + [
        dict(r, condition="noise") for r in _runs([0.01, -0.02, 0.005])]
    sup = sample_batch_verdict(runs)
    assert sup["control"]["supports"] != "expected-batch" and sup["control"]["falsifiable"]
    confirmed = _runs([0.10, 0.12, 0.11]) + [
        dict(r, condition="noise") for r in _runs([0.10, 0.12, 0.11])]
    assert not sample_batch_verdict(confirmed)["control"]["falsifiable"]


def test_a_full_batch_control_that_sides_with_the_batch_prediction_undoes_the_headline():
    # runs trained on the whole set at every step cannot owe a preference to batching: if the
    # statistic still prefers the expected-batch prediction there, the images' verdict for it
    # is no evidence that batching shaped the embedding
    images = _runs([0.10, 0.12, 0.11, 0.09, 0.105])
    confirms = [dict(r, condition=FULL_BATCH_CONTROL)
                for r in _runs([0.10, 0.12, 0.11, 0.09, 0.105])]
    sup = sample_batch_verdict(images + confirms)
    assert sup["supports"] == "undecided" and "full-batch control" in sup["why"]
    assert not sup["full_batch_control"]["falsifiable"]
    # the control siding with the full-batch prediction (what full-batch training should do)
    # leaves the headline to the images
    sides = [dict(r, condition=FULL_BATCH_CONTROL)
             for r in _runs([-0.10, -0.12, -0.11, -0.09, -0.105])]
    sup = sample_batch_verdict(images + sides)
    assert sup["supports"] == "expected-batch" and sup["full_batch_control"]["falsifiable"]
    assert sup["full_batch_control"]["supports"] == "full-batch"
    # and it cannot rescue images that side with the full-batch prediction
    against = _runs([-0.10, -0.12, -0.11, -0.09, -0.105])
    assert sample_batch_verdict(against + confirms)["supports"] == "against"


@pytest.mark.slow
def test_sample_batch_quick_mode_runs(monkeypatch):
    from dgp.torch import experiments as E

    # 40 samples in batches of 16: the prediction on fresh batches with its held-out interval,
    # as at 150 in 64, at a third of the cost (the optimiser's work grows with the batch)
    tiny = dataclasses.replace(SAMPLE_BATCH["quick"], n_train=40, n_test=60, batch_size=16,
                               steps=40, seeds=2)
    monkeypatch.setitem(SAMPLE_BATCH, "quick", tiny)
    exp = E.run_experiment("sample-batch", quick=True, device="cpu", progress=False)
    rep = exp.report
    assert tiny.full_batch_control
    assert rep["experiment"] == "sample-batch" and len(rep["runs"]) == 6
    for r in rep["runs"]:
        bp = r["batch_prediction"]
        lo, hi = bp["interval"]
        assert lo <= bp["expected_loss"] <= hi and bp["half_width"] > 0
        assert r["prediction_half_width"] == pytest.approx(bp["half_width"])
        assert r["batch_size"] == tiny.batch_size and r["n_train"] == tiny.n_train
        assert r["train_batch_size"] == (
            tiny.n_train if r["condition"] == FULL_BATCH_CONTROL else tiny.batch_size)
        assert "full-batch" in r["comparisons"]
    sup = rep["supports"]
    assert {d["condition"] for d in sup["per_condition"]} == {"images", "noise",
                                                              FULL_BATCH_CONTROL}
    assert "falsifiable" in sup["full_batch_control"]
    for d in sup["per_condition"]:
        assert "identifiability" in d
    assert sup["supports"] in ("expected-batch", "against", "undecided", "uninformative",
                               "coincide", "neither")


def test_a_lower_full_batch_loss_within_the_resolution_is_said():
    # the full-batch point lower on the batch loss beyond the gap's SE, but within what
    # training resolves: uninformative, and the page says which way the loss leans
    runs = [_run(s, advantage=0.0, delta=-8e-4, delta_se=1e-6, excess=0.01 + 0.05 * s)
            for s in range(3)]
    v = C.batch_vs_full(runs)
    assert v["supports"] == "uninformative" and "not the optimum" in v["why"]


def test_only_the_pairwise_cosines_decide_whether_the_arrangement_is_pinned():
    # a spectrum that moves between near-optimal solutions does not demote a Procrustes
    # verdict; pairwise cosines that move do
    runs = _runs([0.10, 0.12, 0.11, 0.09])
    for r in runs:
        r["batch_prediction"]["identifiability"]["pinned"]["spectrum"] = False
        r["batch_prediction"]["identifiability"]["identifiable"] = False
    assert C.batch_vs_full(runs)["supports"] == "expected-batch"
    runs[0]["batch_prediction"]["identifiability"]["pinned"]["pairwise cosines"] = False
    assert C.batch_vs_full(runs)["supports"] == "uninformative"

