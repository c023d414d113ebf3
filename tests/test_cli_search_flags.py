"""``--starts`` and ``--seed`` of every command that may run a rank-``dim`` search (issue 39:
the entry points share the keywords ``starts`` and ``seed``; the command line gives them to
``classify``, ``phase``, ``recommend`` and ``floors`` as it does to ``optimum`` and ``supcon``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dgp
import dgp.cli.classify as cli_classify
import dgp.cli.floors as cli_floors
import dgp.cli.phase as cli_phase
import dgp.cli.recommend as cli_recommend

_W = np.array([[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 3], [1, 1, 3, 0]], dtype=float)
_LABELS = np.array([0, 0, 0, 1, 1, 2, 2])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("search_flags")
    np.save(d / "w.npy", _W)
    np.save(d / "labels.npy", _LABELS)
    return d


def _spy(monkeypatch, module, name):
    """Record the keywords the command hands to the library function ``name``."""
    seen: dict = {}
    real = getattr(module, name)

    def spy(*args, **kwargs):
        seen.update(kwargs)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, spy)
    return seen


@pytest.mark.parametrize("command, module, name, argv", [
    ("classify", cli_classify, "classify", ["{w}", "--tau", "0.5", "--dim", "2"]),
    ("classify", cli_classify, "classify_objective",
     ["--objective", "supcon", "--labels", "{labels}", "--tau", "0.5", "--dim", "1"]),
    ("phase", cli_phase, "phase",
     ["--objective", "supcon", "--labels", "{labels}", "--grid", "tau=0.2,1", "--dim", "2"]),
    ("recommend", cli_recommend, "recommend",  # a short scan of rank-2 prototype searches
     ["--objective", "supcon", "--sizes", "6,3,2", "--want", "minority-cosine<=0.5",
      "--minority", "1,2", "--dim", "2", "--search", "0.2:2", "--points", "5"]),
    ("floors", cli_floors, "loss_floors",
     ["--objective", "supcon", "--labels", "{labels}", "--tau", "0.5", "--dim", "2",
      "--samples", "50"]),
])
def test_starts_and_seed_reach_the_library(cli, files, monkeypatch, command, module, name,
                                           argv):
    argv = [a.format(w=files / "w.npy", labels=files / "labels.npy") for a in argv]
    seen = _spy(monkeypatch, module, name)
    run = cli(command, *argv, "--starts", "3", "--seed", "7", "--json")
    assert run.code == 0, run.err
    assert (seen["starts"], seen["seed"]) == (3, 7)
    seen.clear()
    run = cli(command, *argv, "--json")  # not given: the library's defaults decide
    assert run.code == 0, run.err
    assert (seen["starts"], seen["seed"]) == (None, None)


@pytest.mark.parametrize("flag, value", [("--starts", "-1"), ("--seed", "-2")])
def test_a_bad_search_flag_is_one_error_line(cli, files, flag, value):
    run = cli("floors", "--objective", "supcon", "--labels", files / "labels.npy", "--tau",
              "0.5", "--dim", "2", flag, value)
    assert run.code == 2
    assert run.err.strip().splitlines() == [run.err.strip()]
    assert run.err.startswith(f"error: {flag} ") and value in run.err


def test_floors_with_a_seed_is_the_library_call(cli, files):
    """The Monte Carlo draws of the random loss follow ``--seed`` (seed 7 is not seed 0)."""
    run = cli("floors", "--objective", "supcon", "--labels", files / "labels.npy", "--tau",
              "0.5", "--dim", "2", "--samples", "200", "--starts", "2", "--seed", "7",
              "--json")
    assert run.code == 0, run.err
    res = dgp.loss_floors("supcon", _LABELS, tau=0.5, dim=2, samples=200, starts=2, seed=7)
    assert json.loads(run.out) == json.loads(json.dumps(res.to_dict()))
    other = dgp.loss_floors("supcon", _LABELS, tau=0.5, dim=2, samples=200, starts=2, seed=0)
    assert other.random_sum != res.random_sum
