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


def test_supcon_json_is_to_dict(cli):
    _same(cli("supcon", "--sizes", "3,2,2", "--tau", "0.5", "--json"),
          dgp.supcon_prototypes([3, 2, 2], tau=0.5))
    _same(cli("supcon", "--sizes", "3,2,2", "--tau", "0.5", "--dim", "1", "--json"),
          dgp.supcon_prototypes([3, 2, 2], tau=0.5, dim=1, seed=0))


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
