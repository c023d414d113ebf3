"""The jobs every command shares have one home in ``dgp.cli`` (issue 39), and what the commands
print through them is what the library computes: the text is the result's ``summary()`` (the
counterpart of ``--json`` being its ``to_dict()``), the saved arrays are the result's arrays,
and the input of ``--objective`` is checked alike by every command that takes it."""

from __future__ import annotations

import argparse
import importlib

import numpy as np
import pytest

import dgp
from dgp.cli import build_parser
from dgp.cli._output import add_json_flag

_W = np.array([[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 3], [1, 1, 3, 0]], dtype=float)
_LABELS = np.array([0, 0, 0, 1, 1, 2, 2])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("one_home")
    np.save(d / "w.npy", _W)
    np.save(d / "labels.npy", _LABELS)
    return d


def test_every_command_is_made_from_what_its_module_declares():
    parser = build_parser()
    commands = parser.get_default("subcommands")
    reference = argparse.ArgumentParser()
    add_json_flag(reference)
    json_help = reference._option_string_actions["--json"].help
    for name, p in commands.items():
        module = importlib.import_module(f"dgp.cli.{name}")
        assert p.description == module.DESCRIPTION, name
        assert p.epilog == getattr(module, "EPILOG", None), name
        assert p.get_default("func") is module.run, name
        listed = next(a for a in parser._subparsers._group_actions[0]._choices_actions
                      if a.dest == name)
        assert listed.help == module.HELP, name
        assert p._option_string_actions["--json"].help == json_help, name


def test_text_is_the_results_summary(cli, files):
    r = cli("floors", "--objective", "supcon", "--sizes", "3,2,2", "--tau", "0.5")
    assert r.code == 0, r.err
    assert r.out == dgp.loss_floors("supcon", sizes=[3, 2, 2], tau=0.5).summary() + "\n"
    r = cli("phase", "--objective", "supcon", "--labels", files / "labels.npy", "--grid",
            "tau=0.1:1:3", "--dim", "2")
    assert r.code == 0, r.err
    pm = dgp.phase("supcon", _LABELS, grid={"tau": np.linspace(0.1, 1.0, 3)}, dim=2)
    assert r.out == pm.summary() + "\n"
    r = cli("classify", files / "w.npy", "--tau", "0.5", "--dim", "4")
    assert r.code == 0, r.err
    assert r.out == dgp.classify(_W, tau=0.5, dim=4, floor=True).summary() + "\n"


def test_saved_arrays_are_the_results(cli, tmp_path):
    g, e, p = tmp_path / "g.npy", tmp_path / "e.csv", tmp_path / "p.npy"
    r = cli("supcon", "--sizes", "3,2,2", "--tau", "0.5", "--save-gram", g,
            "--save-prototypes", p)
    assert r.code == 0, r.err
    assert not e.exists()  # only what was asked for is written
    res = dgp.supcon_prototypes([3, 2, 2], tau=0.5)
    G, P = np.load(g), np.load(p)
    np.testing.assert_allclose(G, res.gram, rtol=0, atol=1e-12)
    # unit prototype rows whose Gram is the saved Gram (a rotation of the optimum's factor)
    np.testing.assert_allclose(np.linalg.norm(P, axis=1), 1.0, atol=1e-9)
    np.testing.assert_allclose(P @ P.T, G, atol=1e-9)
    assert f"wrote gram to {g}" in r.out and f"wrote prototypes to {p}" in r.out
    assert "wrote embedding" not in r.out
    w = tmp_path / "w.npy"
    np.save(w, _W)
    r = cli("optimum", w, "--tau", "0.5", "--save-gram", g, "--save-embedding", e)
    assert r.code == 0, r.err
    G, E = np.load(g), np.loadtxt(e, delimiter=",", ndmin=2)
    np.testing.assert_allclose(G, dgp.optimum(_W, tau=0.5).gram, atol=1e-12)
    np.testing.assert_allclose(E @ E.T, G, atol=1e-9)


@pytest.mark.parametrize("extra, message", [
    ((), "error: --objective supcon needs --labels LABELS\n"),
    (("--labels", "LABELS", "--directed"),
     "error: --directed applies to an edge list (--edges FILE)\n"),
    (("--labels", "LABELS", "--eps", "0.2"), None),  # supcon takes no eps: the registry says so
])
def test_objective_input_is_checked_alike_by_classify_and_optimum(cli, files, extra, message):
    argv = [files / "labels.npy" if a == "LABELS" else a for a in extra]
    runs = [cli("classify", "--objective", "supcon", *argv, "--tau", "0.5", "--dim", "2"),
            cli("optimum", "--objective", "supcon", *argv, "--tau", "0.5")]
    for r in runs:
        assert r.code == 2 and r.out == "" and r.err.count("\n") == 1, r.err
        assert r.err.startswith("error: ")
    assert runs[0].err == runs[1].err
    if message is not None:
        assert runs[0].err == message
    else:
        assert "--eps" in runs[0].err


@pytest.mark.parametrize("argv, work", [
    (("classify", "W", "--tau", "0.5", "--dim", "4"), "classify"),
    (("phase", "W", "--grid", "tau=0.1:1:3", "--dim", "2"), "phase"),
    (("supcon", "--sizes", "3,2,2", "--tau", "0.5"), "supcon_prototypes"),
])
def test_a_figure_without_the_plot_extra_is_refused_before_any_work(cli, files, tmp_path,
                                                                   monkeypatch, argv, work):
    import sys

    done = []
    monkeypatch.setattr(f"dgp.cli.{argv[0]}.{work}", lambda *a, **k: done.append(work))
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if the plot extra were missing
    figure = tmp_path / "f.png"
    r = cli(*(files / "w.npy" if a == "W" else a for a in argv), "--plot", figure)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1, r.err
    assert r.err.startswith("error: ") and "plot" in r.err
    assert not figure.exists() and done == []


def test_batch_flags_of_optimum_and_supcon_are_one_set():
    commands = build_parser().get_default("subcommands")
    shared = ("--batch-size", "--reduction", "--anchors-without-positives")
    seen = {}
    for name in ("optimum", "supcon"):
        p = commands[name]
        actions = {flag: p._option_string_actions[flag] for flag in shared}
        groups = {g.title for g in p._action_groups for a in g._group_actions
                  if a in actions.values()}
        assert groups == {"mini-batches"}, name
        seen[name] = {flag: (a.dest, a.type, a.choices, a.default, a.help)
                      for flag, a in actions.items()}
        args, _ = p.parse_known_args(["--tau", "1", "--batch-size", "4", "--reduction", "sum",
                                      "--anchors-without-positives", "zero"])
        assert (args.batch_size, args.reduction, args.anchors_without_positives) == (
            4, "sum", "zero")
    assert seen["optimum"] == seen["supcon"]
