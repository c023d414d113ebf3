"""Objective behaviour comes from the registry: no code outside ``dgp/objectives`` compares an
objective's name, and each record's data (its weighting, boundary, slip) gives the behaviour
the callers used to decide by name, for every registered objective."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from dgp._linalg import squared_distances
from dgp.design._common import closed_form_boundary, make_problem
from dgp.errors import ParameterError
from dgp.objectives import registry
from dgp.objectives.backend import NumpyBackend, namespace
from dgp.objectives.classify import classify_labels
from dgp.objectives.conditions import gaussian_explanation

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "dgp"
RECORDS = list(registry.OBJECTIVES.values())
IDS = [o.name for o in RECORDS]
KERNELS = [o for o in RECORDS if o.labels == "continuous"]
CLASSES = [o for o in RECORDS if o.labels == "class"]
VALUES = {"eps": 0.2, "sigma": 0.7, "label_tau": 0.5}

#: name comparisons left to another change (file, source of the comparison); an entry that no
#: longer matches fails the test, so that it is removed once the comparison is gone
LEFT_TO_OTHERS: set[tuple[str, str]] = set()  # none: every decision asks the record


def _names() -> set[str]:
    return set(registry.OBJECTIVE_NAMES)


def _strings(node: ast.AST):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for e in node.elts:
            yield from _strings(e)


def name_comparisons(source: str, names: set[str]) -> list[str]:
    """The comparisons (``==``, ``!=``, ``in``, ``match`` cases) of a source with a string that
    is one of ``names``, as their source text."""
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            if any(s in names for c in (node.left, *node.comparators) for s in _strings(c)):
                out.append(ast.unparse(node))
        elif isinstance(node, ast.MatchValue) and any(s in names for s in _strings(node.value)):
            out.append(f"case {ast.unparse(node.value)}")
    return out


def test_the_scanner_finds_name_comparisons():
    src = (
        "if rec.name == 'supcon': pass\n"
        "ok = name not in ('y-aware', 'x-clr')\n"
        "match objective:\n    case 'soft-supcon': pass\n"
        "f('supcon')\nx = 'uniform' == s\n"
    )
    found = name_comparisons(src, _names())
    assert found == [
        "rec.name == 'supcon'",
        "name not in ('y-aware', 'x-clr')",
        "case 'soft-supcon'",
    ]


def test_no_objective_name_comparisons_outside_the_registry():
    names = _names()
    found = set()
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith("dgp/objectives/"):
            continue
        found |= {(rel, c) for c in name_comparisons(path.read_text(encoding="utf-8"), names)}
    assert found - LEFT_TO_OTHERS == set(), "decide by a registry field or method instead"


def test_no_name_comparisons_inside_the_records():
    src = (PACKAGE / "objectives" / "registry.py").read_text(encoding="utf-8")
    assert name_comparisons(src, _names()) == []


# -- the records give the behaviour ----------------------------------------------------------


def _labels(rec, n=9, seed=0):
    rng = np.random.default_rng(seed)
    if rec.labels == "class":
        raw = np.repeat([0, 1, 2], [3, 4, n - 7])
    else:
        raw = rng.normal(size=(n, 2))
    return raw, rec.check_labels(raw), rec.check_params(**{p: VALUES[p] for p in rec.params})


def _off(W):
    return W[~np.eye(W.shape[0], dtype=bool)]


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_dense_weights_are_the_exponentiated_log_weights(rec):
    _, lab, params = _labels(rec)
    W = rec.weights(lab, params)
    assert np.all(np.diag(W) == 0.0)
    np.testing.assert_allclose(_off(W), _off(np.exp(rec.log_weights(lab, params))), rtol=1e-13)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_batch_weights_are_the_engine_weighting(rec):
    """One construction of a batch's weights (the losses') agrees with the engine's log-space
    weighting off the diagonal, for NumPy input."""
    raw, lab, params = _labels(rec)
    y = lab.values if rec.labels == "class" else np.asarray(raw, dtype=float)
    B = rec.batch_weights(y, params)
    assert B.dtype == np.float64 and B.shape == (lab.n, lab.n)
    np.testing.assert_allclose(_off(B), _off(rec.weights(lab, params)), rtol=1e-12)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_batch_weights_are_the_same_for_torch_tensors(rec):
    torch = pytest.importorskip("torch")
    from dgp.torch import losses

    raw, lab, params = _labels(rec)
    y = lab.values if rec.labels == "class" else np.asarray(raw, dtype=float)
    T = rec.batch_weights(torch.as_tensor(y), params)
    assert T.dtype == torch.float64
    np.testing.assert_allclose(T.numpy(), rec.batch_weights(y, params), rtol=1e-13, atol=0)
    # the generic loss of the objective and its named class weight a batch alike (the
    # column-normalised slip included, which the generic loss once left out)
    named = losses.make_loss(rec.name, tau=0.3, **params)
    generic = losses.ObjectiveLoss(rec.name, tau=0.3, **params)
    lab_t = torch.as_tensor(raw)
    np.testing.assert_array_equal(
        generic.weights_from_labels(lab_t).numpy(), named.weights_from_labels(lab_t).numpy()
    )
    np.testing.assert_allclose(
        _off(named.weights_from_labels(lab_t).numpy()),
        _off(rec.weights(lab, params)),
        rtol=1e-6,  # torch labels may be float32 only in a user's batch; here float64
    )


@pytest.mark.parametrize("rec", CLASSES, ids=[o.name for o in CLASSES])
def test_class_records_cross_weight(rec):
    _, lab, params = _labels(rec)
    cross = rec.cross_weight(params)
    W = rec.weights(lab, params)
    same = lab.values[:, None] == lab.values[None, :]
    off = ~np.eye(lab.n, dtype=bool)
    assert set(W[same & off]) == {1.0} and set(W[~same]) == {cross}
    within, log_cross = rec.block_log_weights(params, lab.classes.size)
    assert np.all(within == 0.0)
    assert log_cross == (math.log(cross) if cross > 0 else -math.inf)
    # the prototypes' eps: None exactly when nothing weighs across classes (SupCon)
    eps = rec.prototype_eps(params)
    assert (eps is None) == (cross == 0.0)
    assert eps is None or eps == cross


@pytest.mark.parametrize("rec", KERNELS, ids=[o.name for o in KERNELS])
def test_kernel_records_width_and_points(rec):
    """The kernel is the Gaussian of the labels (or of their directions) at the record's
    width, normalised as the record says."""
    raw, lab, params = _labels(rec)
    w = rec.weighting
    width2 = w.width2(params)
    assert width2 == (params[w.width] ** 2 if w.squared else params[w.width])
    points = raw / np.linalg.norm(raw, axis=1)[:, None] if w.directions else raw
    np.testing.assert_allclose(rec.kernel(lab, params).points, points, rtol=1e-15)
    L = w.normalise_log(-squared_distances(points) / (2.0 * width2))
    np.testing.assert_allclose(_off(rec.log_weights(lab, params)), _off(L), rtol=1e-10, atol=1e-12)
    W = rec.weights(lab, params)
    K = np.exp(-squared_distances(points) / (2.0 * width2))  # diagonal 1 included
    if w.row_normalised:
        np.testing.assert_allclose(W.sum(axis=1), 1.0, rtol=1e-13)
    elif w.column_normalised:
        np.testing.assert_allclose(_off(W * K.sum(axis=1)[None, :]), _off(K), rtol=1e-12)
    else:
        np.testing.assert_allclose(_off(W), _off(K), rtol=1e-12)
    if w.directions:
        bad = np.array(raw)
        bad[2] = 0.0
        with pytest.raises(ParameterError, match="zero label embedding"):
            rec.check_labels(bad)
    else:
        rec.check_labels(np.zeros_like(raw) + np.arange(lab.n)[:, None])


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_slips_name_their_intended_objective(rec):
    if rec.intended is None:
        assert not getattr(rec.weighting, "column_normalised", False)
        return
    intended = registry.get(rec.intended)
    assert rec.weighting.column_normalised and intended.intended is None
    assert (rec.labels, rec.params, rec.similarity) == (
        intended.labels,
        intended.params,
        intended.similarity,
    )
    _, lab, params = _labels(rec)
    K = intended.weights(lab, params) + np.eye(lab.n)  # the kernel, diagonal 1 included
    np.testing.assert_allclose(_off(rec.weights(lab, params)), _off(K / K.sum(1)), rtol=1e-12)
    c = classify_labels(rec, lab, params, similarity="cosine", tau=0.3, dim=3, rtol=1e-9)
    assert (
        c.certificate.notes["colnorm"]["intended"]["verdict"]
        == classify_labels(
            intended, lab, params, similarity="cosine", tau=0.3, dim=3, rtol=1e-9
        ).verdict
    )


def test_audit_candidates_take_a_slip_in_rows_form_only():
    from dgp.torch.audit.model import FORMS, candidates

    y = np.random.default_rng(3).normal(size=(8, 2))
    forms = {}
    for c in candidates(y, "continuous"):
        forms.setdefault(c.objective, []).append(c.form)
    for rec in KERNELS:
        assert forms[rec.name] == (["rows"] if rec.intended is not None else list(FORMS))


@pytest.mark.parametrize("rec", KERNELS, ids=[o.name for o in KERNELS])
def test_explanations_write_the_record_width(rec):
    _, lab, params = _labels(rec)
    ex = gaussian_explanation(
        rec.kernel(lab, params).points,
        width2=1.0,
        tau=0.5,
        dim=3,
        similarity="cosine",
        rtol=1e-9,
        objective=rec.name,
    )
    assert f"tau R^2 <= {rec.weighting.symbol}" in ex.details["statement"]
    assert ("note" in ex.details) == rec.weighting.directions


def _circle(n=12):
    t = 2.0 * np.pi * np.arange(n) / n
    return np.c_[np.cos(t), np.sin(t)]


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_closed_form_boundaries_separate_the_verdicts(rec):
    """A record's boundary is the closed form the design tools draw: below it the bound is
    attained, above it not (and a record without one gets none)."""
    params = {p: VALUES[p] for p in rec.params}
    if rec.labels == "class":
        problem = make_problem(rec.name, None, W=None, sizes=[4, 4, 4], similarity=None, rtol=1e-9)
    else:
        problem = make_problem(rec.name, _circle(), W=None, sizes=None, similarity=None, rtol=1e-9)
    b = closed_form_boundary(problem, params, params)
    if rec.boundary is None or rec.similarity != "cosine":
        assert b is None
        return
    assert b is not None
    if rec.boundary == "sphere":
        assert b.name == f"tau R^2 = {rec.weighting.symbol}"
    tau_c = b.tau_c(params)
    dim = b.dim_needed
    for factor, attained in ((0.9, True), (1.1, False)):
        c = problem.classify({**params, "tau": factor * tau_c, "dim": dim})
        assert (c.verdict != "inconsistent") == attained, (factor, c.verdict)


@pytest.mark.parametrize("rec", RECORDS, ids=IDS)
def test_own_params_picks_and_validates(rec):
    given = {"eps": 0.2, "sigma": 0.7, "label_tau": 0.5, "tau": 3.0}
    assert rec.own_params(given) == {p: given[p] for p in rec.params}
    for p in rec.params:
        with pytest.raises(ParameterError, match=p):
            rec.own_params({**given, p: -1.0})


def test_numpy_arrays_need_no_torch():
    assert isinstance(namespace(np.zeros(3)), NumpyBackend)
    code = (
        "import sys, numpy as np\n"
        "from dgp.objectives import registry\n"
        "for rec in registry.OBJECTIVES.values():\n"
        "    y = np.linspace(1, 2, 12).reshape(6, 2)\n"
        "    y = np.arange(6) % 2 if rec.labels == 'class' else y\n"
        "    rec.batch_weights(y, {'eps': 0.2, 'sigma': 0.7, 'label_tau': 0.5})\n"
        "assert 'torch' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=ROOT)
