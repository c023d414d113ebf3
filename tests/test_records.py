"""The one result protocol (dgp.records): every result and certificate turns into JSON the same
way, states itself, and its certificate's claims are re-derived from its own numbers."""

from __future__ import annotations

import ast
import dataclasses
import json
import pathlib

import numpy as np
import pytest

import dgp
from dgp.errors import ParameterError
from dgp.records import CertificateProtocol, Convergence, Record, gram_included, plain

ROOT = pathlib.Path(dgp.__file__).parent


def _definitions(name: str) -> list[str]:
    out = []
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name == name:
                out.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return out


def test_to_dict_is_defined_in_at_most_three_places():
    where = _definitions("to_dict")
    assert len(where) <= 3, where


def _weightings():
    rng = np.random.default_rng(0)
    A = rng.random((5, 5))
    B = np.exp(4 * rng.standard_normal((6, 6)))
    return [
        ("cosine", np.array([[2, 2, 1], [2, 2, 1], [1, 1, 2.0]])),  # spectrum
        ("euclidean", np.array([[2, 2, 1], [2, 2, 1], [1, 1, 2.0]])),  # schoenberg
        ("cosine", A),  # a cycle
        ("cosine", 0.5 * (B + B.T)),  # Farkas
        ("cosine", np.array([[1, 1, 0], [1, 1, 1], [0, 1, 1.0]])),  # a zero weight
    ]


@pytest.mark.parametrize("case", range(5))
def test_every_engine_certificate_checks_and_serialises(case):
    sim, W = _weightings()[case]
    res = dgp.classify(W, similarity=sim, tau=0.5, dim=3)
    cert = res.certificate
    assert isinstance(cert, CertificateProtocol)
    assert cert.check() == ()
    d = res.to_dict(embedding=True)
    json.dumps(d, allow_nan=False)  # plain Python values only, non-finite floats as None
    assert d["certificate"]["kind"] == cert.kind
    assert d["certificate"]["statement"] == cert.statement
    assert list(d)[:3] == ["verdict", "attainable", "similarity"]


def test_kinds_of_the_battery_are_the_ones_meant():
    kinds = [dgp.classify(W, similarity=s, tau=0.5, dim=3).certificate.kind
             for s, W in _weightings()]
    assert kinds == ["spectrum", "schoenberg", "cycle", "farkas", "zero_weight"]


def test_a_tampered_certificate_fails_its_check():
    sim, W = _weightings()[0]
    cert = dgp.classify(W, similarity=sim, tau=0.5, dim=3).certificate
    wrong_rank = dataclasses.replace(cert, ranks={**cert.ranks, "lo": cert.ranks["lo"] + 1})
    assert any("rank at c_lo" in c for c in wrong_rank.check())
    ev = list(cert.eigenvalues_lo)
    ev[0] = 10 * cert.atol_lo + 1e-3  # the "zero" eigenvalue is not zero
    assert any("zero within atol" in c for c in
               dataclasses.replace(cert, eigenvalues_lo=tuple(ev)).check())
    far = dataclasses.replace(cert, c_at_max=cert.c_interval[1] + 1.0)
    assert "c_at_max lies in c_interval" in far.check()

    sim, W = _weightings()[3]
    farkas = dgp.classify(W, similarity=sim, tau=0.5, dim=3).certificate
    assert "<Y, A> < 0" in dataclasses.replace(farkas, inner_A=-farkas.inner_A).check()
    negative = dataclasses.replace(farkas, weights=(-1.0, *farkas.weights[1:]))
    assert "every weight of Y is non-negative" in negative.check()

    sim, W = _weightings()[2]
    cycle = dgp.classify(W, similarity=sim, tau=0.5, dim=3).certificate
    flat = dataclasses.replace(cycle, log_ratio=0.5 * cycle.tolerance)
    assert "|log_ratio| exceeds the tolerance" in flat.check()


def test_margin_marked_near_must_be_near():
    sim, W = _weightings()[0]
    cert = dgp.classify(W, similarity=sim, tau=0.5, dim=3).certificate
    m = cert.margins[0]
    lying = dataclasses.replace(cert, margins=(dataclasses.replace(m, near=True),))
    assert abs(m.value) > 100 * m.atol
    assert any("marked near" in c for c in lying.check())


def test_solver_certificates_check_and_fail_when_tampered():
    p = dgp.supcon_prototypes([30, 10, 5, 3], tau=0.5, method="numeric")
    assert p.certificate.check() == () and p.collapse.check() == ()
    bad_rank = dataclasses.replace(p.certificate, rank=p.certificate.rank + 1)
    assert "strict complementarity is rank + dual_rank = K" in bad_rank.check()
    bad_max = dataclasses.replace(p.certificate, kkt_residual=0.0,
                                  primal_residual=1e-3)
    assert "kkt_residual is the largest of the three residuals" in bad_max.check()
    flipped = dataclasses.replace(p.collapse, collapsed=not p.collapse.collapsed)
    assert flipped.check()
    d = p.to_dict()
    assert d["certificate"]["kind"] == "kkt" and d["collapse"]["kind"] == "lift"


def test_unknown_option_names_itself():
    res = dgp.classify(np.array([[2.0, 1.0], [1.0, 2.0]]), tau=0.5, dim=2)
    with pytest.raises(ParameterError, match="gram"):
        res.to_dict(gram=True)
    with pytest.raises(ParameterError, match="options: embedding"):
        res.to_dict(gram=True)


def test_one_embedding_accessor_on_every_result():
    rng = np.random.default_rng(1)
    X = rng.standard_normal((6, 2))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    cls = dgp.classify(np.exp((X @ X.T) / 0.5), tau=0.5, dim=3)
    assert cls.verdict == "realizable"
    W = np.array([[3, 2, 1], [2, 3, 1], [1, 1, 3.0]])
    opt = dgp.optimum(W, tau=0.5)
    pro = dgp.supcon_prototypes([5, 3, 2], tau=0.5)
    for Z, G in ((cls.embedding, X @ X.T), (opt.embedding, opt.gram), (pro.embedding, pro.gram)):
        assert isinstance(Z, np.ndarray)
        assert np.allclose(np.linalg.norm(Z, axis=1), 1.0)
        assert np.allclose(Z @ Z.T, G, atol=1e-8)


def test_convergence_block_has_the_same_fields_everywhere():
    W = np.array([[3, 2, 1], [2, 3, 1], [1, 1, 3.0]])
    names = [f.name for f in dataclasses.fields(Convergence)]
    for res in (dgp.optimum(W, tau=0.5), dgp.supcon_prototypes([5, 3, 2], tau=0.5),
                dgp.supcon_prototypes([30, 10, 5], tau=0.5, method="numeric")):
        conv = res.convergence
        assert conv.success and conv.certified and "optimum" in conv.certifies
        assert list(res.to_dict()["convergence"]) == names
    first = dgp.supcon_prototypes([30, 10, 5], tau=0.5, method="first-order")
    assert not first.convergence.success and not first.convergence.certified
    assert first.convergence.certifies.startswith("nothing")
    # a rank-d point is certified critical, and says that this is all (K = 5 > dim + 1)
    low = dgp.supcon_prototypes([30, 10, 5, 3, 2], tau=0.5, dim=2)
    assert low.convergence.certified and not low.rank_d.global_optimal
    assert "critical point" in low.convergence.certifies
    assert "not proven globally optimal" in low.convergence.certifies


def test_options_reach_the_nested_records_that_declare_them():
    @dataclasses.dataclass(frozen=True)
    class Inner(Record):
        JSON_OPTIONS = {"gram": False}  # noqa: RUF012
        x: float

        def json_items(self, options):
            yield "x", self.x
            if options["gram"]:
                yield "gram", np.eye(2)

    @dataclasses.dataclass(frozen=True)
    class Outer(Record):
        JSON_OPTIONS = {"gram": False, "embedding": False}  # noqa: RUF012
        inner: Inner
        y: float = float("inf")

    assert Outer(Inner(1.0)).to_dict() == {"inner": {"x": 1.0}, "y": None}
    assert Outer(Inner(1.0)).to_dict(gram=True)["inner"]["gram"] == [[1.0, 0.0], [0.0, 1.0]]
    assert plain(Inner(2.0), {"gram": True, "embedding": True})["gram"][1] == [0.0, 1.0]


def test_one_class_named_labels():
    import warnings

    import dgp.io

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert dgp.io.Labels is dgp.io.LabelFile
    assert any(issubclass(w.category, DeprecationWarning) for w in caught)
    names = _classes("Labels")
    assert names == ["objectives/_weightings.py"], names


def _classes(name: str) -> list[str]:
    return [str(p.relative_to(ROOT)) for p in sorted(ROOT.rglob("*.py"))
            for node in ast.walk(ast.parse(p.read_text()))
            if isinstance(node, ast.ClassDef) and node.name == name]


@pytest.mark.parametrize("solve", [
    lambda dim: dgp.optimum(dgp.weights.supcon_weights([0, 0, 1, 1, 2, 2]), tau=0.5, dim=dim),
    lambda dim: dgp.supcon_prototypes([3, 2, 2], tau=0.5, dim=dim),
], ids=["optimum", "prototypes"])
@pytest.mark.parametrize("dim", [None, 1])
def test_gram_rule_and_closing_entries_are_one_for_optimum_and_prototypes(solve, dim):
    res = solve(dim)
    size = res.gram.shape[0]
    for option in (None, True, False):
        d = res.to_dict(gram=option, embedding=True)
        # the Gram is in the JSON exactly when the one rule says so, else the note says why
        kept = gram_included(size, 500, option)
        assert (d["gram"] is not None) == kept == ("gram_omitted" not in d)
        if kept:
            np.testing.assert_array_equal(np.array(d["gram"]), res.gram)
        else:
            assert d["gram_omitted"].startswith(f"the {size} x {size} Gram is left out above ")
            assert "--save-gram FILE" in d["gram_omitted"]
        # rank_d only when the rank-d search ran, then convergence, then the embedding
        tail = list(d)[-3:]
        assert tail[1:] == ["convergence", "embedding"]
        assert (tail[0] == "rank_d") == (dim is not None) == (res.rank_d is not None)
        np.testing.assert_allclose(np.array(d["embedding"]), res.embedding)
        assert list(res.to_dict(gram=option))[-1] == "convergence"
