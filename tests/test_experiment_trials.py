"""The one home of what every experiment of ``dgp verify`` does around its runs
(:mod:`dgp.torch.experiments.base`): the options they all take (``RunOptions``, read by
``Trials.start``), the records, figure panels and progress bar of an experiment under way
(``Trials``), one run on images or on a control's inputs (``input_run``) and the cache that
shares runs between experiments (``cached_run``)."""

from __future__ import annotations

import inspect
from dataclasses import replace

import numpy as np
import pytest

pytest.importorskip("torch")

from dgp.torch import data as datasets
from dgp.torch import experiments as E
from dgp.torch.experiments._class_run import add_class_run, class_trials
from dgp.torch.experiments.base import (
    INPUTS,
    QUICK,
    RunArtifacts,
    RunOptions,
    Trials,
    cached_run,
    class_source,
    class_split,
    input_run,
    report_config,
    seeds_for,
)
from dgp.torch.losses import SupConLoss

#: a budget that trains in a fraction of a second
TINY = replace(QUICK, steps=3, batch_size=16, dim=4, hidden=8, seeds=3)


def _keywords(fn) -> dict[str, inspect.Parameter]:
    return {n: p for n, p in inspect.signature(fn).parameters.items()
            if p.kind is inspect.Parameter.KEYWORD_ONLY}


def test_every_experiment_takes_the_run_options_with_the_same_defaults():
    """``run_experiment`` forwards the options to every experiment of the registry: each takes
    them through ``**run``, read by ``Trials.start`` (one place for their defaults), and names
    none of them itself."""
    start = _keywords(Trials.start)
    assert set(RunOptions.__annotations__) == set(start)
    for name, fn in E.EXPERIMENTS.items():
        params = inspect.signature(fn).parameters
        assert any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()), name
        assert not set(RunOptions.__annotations__) & set(params), name
        with pytest.raises(TypeError):
            fn(sed=1)  # a misspelt option is refused before anything runs


def test_start_resolves_budget_device_and_seeds():
    t = Trials.start("x", quick=False, seed=4, device="cpu")
    assert t.budget is E.FULL and str(t.device) == "cpu"
    assert t.seeds == seeds_for(4, E.FULL) == list(range(4, 4 + E.FULL.seeds))
    t = Trials.start("x", seed=2, device="cpu", budget=TINY)
    assert t.budget is TINY and t.seeds == [2, 3, 4]
    assert t.with_budget(replace(TINY, seeds=1)).seeds == [2]
    with pytest.raises(TypeError):
        Trials.start("x", sed=1)  # a misspelt option is no silent default


class _Bar:
    def __init__(self) -> None:
        self.updates, self.closed = 0, False

    def update(self, n: int) -> None:
        self.updates += n

    def close(self) -> None:
        self.closed = True


def test_trials_keep_every_record_and_the_first_seeds_panels():
    t = Trials.start("toy", seed=7, device="cpu", budget=TINY)
    t.bar = bar = _Bar()
    rng = np.random.default_rng(0)
    values = {}
    for cond in ("a", "b"):
        for s in t.seeds:
            values[cond, s] = float(rng.standard_normal())
            art = RunArtifacts("toy", cond, np.eye(2) * s, np.eye(2), "gram", np.arange(2))
            t.add({"condition": cond, "seed": s, "v": values[cond, s], "converged": True},
                  art if cond == "a" or s != 7 else None, seed=s)
    assert bar.updates == 6 and not bar.closed
    # panels: the first seed's run of each condition that gave one
    assert [(a.condition, a.learned[0, 0]) for a in t.arts] == [("a", 7.0)]
    exp = t.finish(keys=("v",), config={"k": 1}, supports={"supports": "undecided"})
    assert bar.closed and t.bar is None
    rep = exp.report
    assert rep["experiment"] == "toy" and rep["seeds"] == [7, 8, 9] and rep["mode"] == "quick"
    assert [r["seed"] for r in rep["runs"]] == [7, 8, 9, 7, 8, 9]
    for row in rep["summary"]:
        v = [values[row["condition"], s] for s in (7, 8, 9)]
        assert row["v"][0] == pytest.approx(np.mean(v))
        assert row["v"][1] == pytest.approx(np.std(v, ddof=1))


def _images(n: int = 40):
    X, y = datasets.digits()
    return X[:n], y[:n], X[n : n + 10]


@pytest.mark.parametrize("inputs", INPUTS)
def test_input_run_on_each_input(inputs):
    X, y, X_test = _images()
    loss = SupConLoss(tau=0.5, empty_rows="skip")
    kw = dict(cache=None, key=("t",), budget=TINY, seed=3, device="cpu", progress=False,
              desc="t")
    run = input_run(X, y, X_test, loss, inputs=inputs, **kw)
    if inputs == "pixels":
        np.testing.assert_array_equal(run.Z, X.reshape(len(X), -1))
        np.testing.assert_array_equal(run.Z_test, X_test.reshape(len(X_test), -1))
        assert run.encoder is None and run.steps == 0
        return
    assert run.Z.shape == (len(X), TINY.dim) and run.Z_test.shape == (len(X_test), TINY.dim)
    assert run.steps == (0 if inputs == "untrained" else TINY.steps)
    again = input_run(X, y, X_test, loss, inputs=inputs, **kw)  # seeded: the same run
    np.testing.assert_array_equal(run.Z, again.Z)
    if inputs == "noise":  # trained on noise, not on the images
        images = input_run(X, y, X_test, loss, inputs="images", **kw)
        assert not np.allclose(run.Z, images.Z)


def test_cached_runs_are_shared_by_key_and_inputs():
    X, y, X_test = _images()
    loss = SupConLoss(tau=0.5, empty_rows="skip")
    cache: dict = {}
    kw = dict(budget=TINY, seed=3, device="cpu", progress=False, desc="t")
    a = input_run(X, y, X_test, loss, inputs="untrained", cache=cache, key=("k",), **kw)
    assert input_run(X, y, X_test, loss, inputs="untrained", cache=cache, key=("k",), **kw) is a
    b = input_run(X, y, X_test, loss, inputs="images", cache=cache, key=("k",), **kw)
    assert b is not a and len(cache) == 2
    calls = []
    assert cached_run(None, ("k",), lambda: calls.append(1) or len(calls)) == 1
    assert cached_run(None, ("k",), lambda: calls.append(1) or len(calls)) == 2


def test_class_trials_are_the_class_data_and_split():
    t, src, split = class_trials("c", ratio=4.0, seed=1, device="cpu", budget=TINY)
    ref = class_source(TINY, None)
    np.testing.assert_array_equal(src.y, ref.y)
    expected = class_split(ref.y, TINY, 4.0)
    np.testing.assert_array_equal(split.imbalanced, expected.imbalanced)
    assert split.imbalanced.max() / split.imbalanced.min() == pytest.approx(4.0, rel=0.2)
    assert t.name == "c" and t.seeds == [1, 2, 3]


def test_a_class_run_is_recorded_with_the_first_seeds_prototype_panel():
    t = Trials.start("toy", seed=2, device="cpu", budget=TINY)
    pred, sizes = np.diag([1.0, 2.0, 3.0]), np.array([3, 2, 1])
    for s in t.seeds:
        add_class_run(t, {"condition": "c", "seed": s, "learned_gram": np.full((3, 3), s)},
                      pred=type("Pred", (), {"gram": pred})(), sizes=sizes, seed=s)
    assert [r["seed"] for r in t.runs] == t.seeds == [2, 3, 4]
    [art] = t.arts
    assert (art.experiment, art.condition, art.similarity) == ("toy", "c", "gram")
    np.testing.assert_array_equal(art.learned, np.full((3, 3), 2))
    assert art.predicted is pred and art.labels is sizes


def test_report_config_puts_the_data_first_and_encoder_and_budget_last():
    X = np.zeros((5, 1, 8, 8))
    config = report_config("digits", X, TINY, tau=0.5, sizes=[3, 2])
    assert list(config) == ["data", "tau", "sizes", "encoder", "budget"]
    assert config["budget"] == TINY.to_dict() and config["encoder"].startswith("CNN")
