"""``--json`` of every command is the result's ``to_dict()``, exactly as the same call from
Python gives it (CONTRACT v4): no key added, dropped or rewritten by the command line."""

from __future__ import annotations

import json

import numpy as np
import pytest

import dgp

_W = np.array([[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 3], [1, 1, 3, 0]], dtype=float)
_LABELS = np.array([0, 0, 0, 1, 1, 2, 2])


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("json_is_to_dict")
    np.save(d / "w.npy", _W)
    np.save(d / "labels.npy", _LABELS)
    (d / "names.csv").write_text("\n".join(_NAMES) + "\n")
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(4, 3))
    np.save(d / "z.npy", Z)
    np.save(d / "zref.npy", Z @ np.linalg.qr(rng.normal(size=(3, 3)))[0] + 0.01)
    return d


def _same(run, res, **options):
    assert run.code == 0, run.err
    printed = json.loads(run.out)  # one JSON object, nothing else on stdout
    assert printed == json.loads(json.dumps(res.to_dict(**options)))


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_classify_json_is_to_dict(cli, files):
    _same(cli("classify", files / "w.npy", "--tau", "0.5", "--dim", "2", "--json"),
          dgp.classify(_W, tau=0.5, dim=2, floor=True))  # the command's floor is on


def test_classify_objective_json_is_to_dict(cli, files):
    _same(cli("classify", "--objective", "supcon", "--labels", files / "labels.npy", "--tau",
              "0.5", "--dim", "1", "--json"),
          dgp.classify_objective("supcon", _LABELS, tau=0.5, dim=1, floor=True))


def test_optimum_json_is_to_dict(cli, files):
    _same(cli("optimum", files / "w.npy", "--tau", "0.5", "--json"),
          dgp.optimum(_W, tau=0.5))
    _same(cli("optimum", files / "w.npy", "--tau", "0.5", "--dim", "1", "--json"),
          dgp.optimum(_W, tau=0.5, dim=1, seed=0))


@pytest.mark.slow  # every subset of 5 of 14 points in R^2, twice (about 10-20 s)
def test_batched_optimum_json_keeps_the_gram_when_asked(cli, files):
    """--gram keeps the Gram in --json also for an expected-batch optimum (a referee found it
    dropped there: the option was declared and never read)."""
    W = np.abs(np.random.default_rng(3).normal(size=(14, 14)))
    W = W + W.T
    np.fill_diagonal(W, 0.0)
    np.save(files / "w14.npy", W)
    res = dgp.optimum(W, tau=0.5, dim=2, batch_size=5, seed=0)
    assert isinstance(res, dgp.BatchOptimum)  # sample level: every subset of 5 of 14 points
    run = cli("optimum", files / "w14.npy", "--tau", "0.5", "--dim", "2", "--batch-size", "5",
              "--gram", "--json")
    assert run.code == 0, run.err
    printed, expected = json.loads(run.out), json.loads(json.dumps(res.to_dict(gram=True)))
    assert printed.pop("seconds") >= 0 and expected.pop("seconds") >= 0  # the two runs' time
    assert printed == expected
    gram = np.array(printed["gram"])
    assert np.allclose(gram, res.embedding @ res.embedding.T, atol=1e-12)
    assert "gram" not in res.to_dict()  # one near-optimal solution: only when asked for


def test_phase_json_is_to_dict(cli, files):
    _same(cli("phase", "--objective", "supcon", "--labels", files / "labels.npy", "--grid",
              "tau=0.1:1:3", "--dim", "2", "--json"),
          dgp.phase("supcon", _LABELS, grid={"tau": np.linspace(0.1, 1.0, 3)}, dim=2))


@pytest.mark.parametrize("dim", ["3", "1"])  # an answer, and none (then "next" is not rewritten)
def test_recommend_json_is_to_dict(cli, dim):
    res = dgp.recommend("soft-supcon", sizes=[3, 3, 3], eps=0.2, want="realizable",
                        dim=int(dim))
    _same(cli("recommend", "--objective", "soft-supcon", "--sizes", "3,3,3", "--eps", "0.2",
              "--want", "realizable", "--dim", dim, "--json"), res)
    assert ("next" in res.to_dict()) == (dim == "1")


def test_floors_json_is_to_dict(cli, files):
    _same(cli("floors", "--objective", "supcon", "--labels", files / "labels.npy", "--tau",
              "0.5", "--dim", "2", "--samples", "200", "--json"),
          dgp.loss_floors("supcon", _LABELS, tau=0.5, dim=2, samples=200, seed=0))


#: class names of a labels file (sorted: ant, cat, dog), the classes of sizes 2, 3 and 2
_NAMES = ["cat", "dog", "cat", "ant", "dog", "cat", "ant"]
_LABELLED = dgp.Problem(objective="supcon", labels=_NAMES)
_SOFT = dgp.Problem(objective="soft-supcon", labels=_NAMES, eps=0.3)

#: ``dgp supcon`` flags and the same call from Python (``{y}``: the labels file of _NAMES)
_SUPCON = {
    "sizes": (["--sizes", "3,2,2"], ([3, 2, 2], {}), {}),
    "dim": (["--sizes", "3,2,2", "--dim", "1"], ([3, 2, 2], {"dim": 1, "seed": 0}), {}),
    "labels": (["--labels", "{y}"], (_LABELLED, {}), {}),
    "labels-eps": (["--labels", "{y}", "--eps", "0.3"], (_SOFT, {}), {}),
    "labels-dim": (["--labels", "{y}", "--dim", "1"], (_LABELLED, {"dim": 1, "seed": 0}), {}),
    "labels-batch": (["--labels", "{y}", "--batch-size", "4"],
                     (_LABELLED, {"batch_size": 4, "seed": 0}), {}),
    "labels-batch-dim": (["--labels", "{y}", "--batch-size", "4", "--dim", "1", "--sampler",
                          "class-balanced"],
                         (_LABELLED, {"batch_size": 4, "dim": 1, "sampler": "class-balanced",
                                      "seed": 0}), {}),
    "labels-nonnegative": (["--labels", "{y}", "--dim", "3", "--nonnegative"],
                           (_LABELLED, {"dim": 3, "nonnegative": True, "seed": 0}), {}),
    "sizes-nonnegative-batch": (["--sizes", "3,2,2", "--nonnegative", "--batch-size", "4"],
                                ([3, 2, 2], {"nonnegative": True, "batch_size": 4, "seed": 0}),
                                {}),
    "gram-embedding": (["--labels", "{y}", "--gram", "--embedding"], (_LABELLED, {}),
                       {"gram": True, "embedding": True}),
}


@pytest.mark.parametrize("case", list(_SUPCON))
def test_supcon_json_is_to_dict(cli, files, case):
    """Every combination of the flags that shape the result (labels, eps, dim, batches, a
    ReLU head, the Gram and embedding options): the JSON is the Python result's
    ``to_dict()``; from labels it names the classes (``classes``, built with the result; no
    file name, which the result was not given)."""
    argv, (first, kwargs), options = _SUPCON[case]
    argv = [a.format(y=files / "names.csv") for a in argv]
    res = dgp.supcon_prototypes(first, tau=0.5, **kwargs)
    _same(cli("supcon", *argv, "--tau", "0.5", "--json", "--quiet"), res, **options)
    d = res.to_dict()
    assert "labels" not in d
    assert d["classes"] == (["ant", "cat", "dog"] if "{y}" in _SUPCON[case][0] else None)
    assert d["sizes"] == ([2, 3, 2] if "{y}" in _SUPCON[case][0] else [3, 2, 2])


@pytest.mark.parametrize("flags", [["--latex"], ["--tolerance", "0.1"],
                                   ["--latex", "--tolerance", "0.1", "--dim", "1"]])
def test_supcon_json_of_another_question_is_refused(cli, files, flags):
    """``--latex`` prints formulas and ``--tolerance`` answers another question (a batch
    size): neither is a field of the result, so with ``--json`` they are refused (exit 2, one
    line naming the flag and --json) rather than added to its dict."""
    r = cli("supcon", "--labels", files / "names.csv", "--tau", "0.5", "--json", *flags)
    assert r.code == 2 and r.out == "" and r.err.count("\n") == 1
    assert r.err.startswith(f"error: {flags[0]} and --json")


def test_every_json_command_is_held_to_its_result():
    """Each command with ``--json`` has its test here (or says why its JSON is a collection):
    a command added later cannot print a reshaped dict unnoticed."""
    from dgp.cli import build_parser
    from dgp.cli._words import flags_of

    sub = build_parser().get_default("subcommands")
    with_json = {name for name, p in sub.items() if "--json" in flags_of(p)}
    assert with_json == set(_HELD) | set(_NO_RECORD), with_json ^ (set(_HELD) | set(_NO_RECORD))
    assert not set(_HELD) & set(_NO_RECORD)
    module = globals()
    for name, test in _HELD.items():
        assert test in module and callable(module[test]), (name, test)


def test_metrics_json_is_the_metrics_from_python(cli, files):
    """``metrics`` has no result record (dgp.metrics returns floats): its JSON holds exactly
    the three functions' values, computed from Python here."""
    from dgp import metrics

    Z, Zref = np.load(files / "z.npy"), np.load(files / "zref.npy")
    run = cli("metrics", "--embeddings", files / "z.npy", "--reference", files / "zref.npy",
              "--weights", files / "w.npy", "--tau", "0.5", "--json")
    assert run.code == 0, run.err
    out = json.loads(run.out)
    assert out == {
        "n": 4, "similarity": "cosine", "procrustes_r2": metrics.procrustes_r2(Z, Zref),
        "similarity_r2": metrics.similarity_r2(Z, Zref, similarity="cosine"),
        "entropic_gap": metrics.entropic_gap(Z, _W, tau=0.5), "tau": 0.5,
    }


@pytest.mark.slow
def test_audit_json_is_to_dict(cli):
    """The audit runs the user's module in a worker process; what it prints is the report's
    ``to_dict()`` as ``audit_loss`` gives it here (no key added on the way)."""
    pytest.importorskip("torch")
    from dgp.torch.audit import audit_loss
    from dgp.torch.audit_examples import y_aware_loss

    target = "dgp.torch.audit_examples:y_aware_loss"
    _same(cli("audit", target, "--json"), audit_loss(y_aware_loss, name=target))


@pytest.mark.slow  # one theorem run twice (hypothesis, about 3 s of CPU)
def test_prove_json_is_each_theorem_result_to_dict(cli):
    """``prove`` runs several theorems: its JSON is ``{"theorems": [...]}``, each entry the
    ``to_dict()`` of the theorem's result as ``dgp.proofs.run_theorems`` gives it."""
    from dgp.proofs import run_theorems

    run = cli("prove", "--only", "uniqueness-face", "--json")
    assert run.code == 0, run.err
    printed = json.loads(run.out)
    assert list(printed) == ["theorems"]
    ours = run_theorems(only=["uniqueness-face"])
    assert printed["theorems"] == [json.loads(json.dumps(r.to_dict())) for r in ours]


def test_tour_json_is_each_case_to_dict(cli):
    """``tour`` classifies its cases: each entry of its JSON is the case's ``section`` and
    ``name`` followed by the ``to_dict()`` of ``dgp.classify`` on it (the collection names its
    members; no key of a result is added or rewritten)."""
    from dgp.cli.tour import tour_cases

    run = cli("tour", "--json")
    assert run.code == 0, run.err
    printed = json.loads(run.out)["cases"]
    cases = tour_cases()
    assert len(printed) == len(cases)
    for entry, case in zip(printed, cases, strict=True):
        res = dgp.classify(case.W, similarity=case.similarity, tau=case.tau, dim=case.dim)
        assert entry == {"section": case.section, "name": case.name,
                         **json.loads(json.dumps(res.to_dict()))}


#: every command with --json and the test of this module that compares it with Python's
_HELD = {
    "classify": "test_classify_json_is_to_dict", "optimum": "test_optimum_json_is_to_dict",
    "phase": "test_phase_json_is_to_dict", "recommend": "test_recommend_json_is_to_dict",
    "floors": "test_floors_json_is_to_dict", "supcon": "test_supcon_json_is_to_dict",
    "metrics": "test_metrics_json_is_the_metrics_from_python",
    "audit": "test_audit_json_is_to_dict",
    "prove": "test_prove_json_is_each_theorem_result_to_dict",
    "tour": "test_tour_json_is_each_case_to_dict",
}
#: commands whose --json has no result record to compare with, and why
_NO_RECORD = {
    "verify": "trains small models (torch): its JSON is the experiments' report dicts, as "
              "dgp.torch builds them (tests/test_verify.py reads them)",
}
