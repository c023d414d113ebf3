"""Every public result type, built from small real calls, has the same outer shape: a frozen
record whose ``to_dict()`` is plain JSON, with one certificate block (``kind``, ``statement``,
``certified``) and, wherever a solver ran, one convergence block with the same fields.

Beside the shape, the blocks must say true things: a gap is the loss minus the lower bound, a
certified bracket really brackets the answer, a certificate whose numbers are spoiled stops
being certified."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

import dgp
from dgp.records import CertificateProtocol, Convergence

#: a 4-point weighting with two twin pairs (quotient K = 2 ... with cross weights)
_W = np.array([[0, 2, 1, 1], [2, 0, 1, 1], [1, 1, 0, 3], [1, 1, 3, 0]], dtype=float)
#: a 5-point weighting without twins: its free optimum has rank above 1
_W5 = np.array([[0, 3, 1, 1, 2], [3, 0, 2, 1, 1], [1, 2, 0, 3, 1], [1, 1, 3, 0, 2],
                [2, 1, 1, 2, 0]], dtype=float)
_LABELS = np.array([0, 0, 0, 1, 1, 2, 2])
_SIZES = [3, 2, 2]


def _build(name: str):
    from dgp.design import loss_floors, phase, recommend
    from dgp.optima import loss_floor

    if name == "classify":
        return dgp.classify(_W, tau=0.5, dim=2)
    if name == "classify_objective":
        return dgp.classify_objective("supcon", _LABELS, tau=0.5, dim=1)
    if name == "optimum":
        return dgp.optimum(_W, tau=0.5)
    if name == "optimum_dim":
        return dgp.optimum(_W5, tau=0.5, dim=1)
    if name == "loss_floor":
        return loss_floor(_W5, tau=0.5, dim=1)
    if name == "supcon":
        return dgp.supcon_prototypes(_SIZES, tau=0.5)
    if name == "supcon_dim":
        return dgp.supcon_prototypes(_SIZES, tau=0.5, dim=1)
    if name == "phase":
        return phase("supcon", _LABELS, grid={"tau": (0.1, 1.0, 2)}, dim=2)
    if name == "recommend_found":
        return recommend("soft-supcon", sizes=[3, 3, 3], eps=0.2, want="realizable", dim=3)
    if name == "recommend_none":
        return recommend("soft-supcon", sizes=[3, 3, 3], eps=0.2, want="realizable", dim=1)
    if name == "loss_floors":
        return loss_floors("supcon", _LABELS, tau=0.5, dim=2, samples=200)
    raise AssertionError(name)


#: results whose JSON carries no certificate (and why)
_NO_CERTIFICATE = {"phase": "a map of verdicts: each cell is one classify call, re-run it"}
#: results where an iterative solver ran
_SOLVED = ("optimum", "optimum_dim", "supcon", "supcon_dim", "recommend_found", "recommend_none")
NAMES = ("classify", "classify_objective", "optimum", "optimum_dim", "loss_floor", "supcon",
         "supcon_dim", "phase", "recommend_found", "recommend_none", "loss_floors")

_CACHE: dict[str, object] = {}


def result(name: str):
    if name not in _CACHE:
        _CACHE[name] = _build(name)
    return _CACHE[name]


def _blocks(value, path=()):
    """Every certificate block in a JSON value: a dict with ``kind`` and ``statement``."""
    if isinstance(value, dict):
        if "kind" in value and "statement" in value:
            yield path, value
        for k, v in value.items():
            yield from _blocks(v, (*path, k))
    elif isinstance(value, list):
        for k, v in enumerate(value):
            yield from _blocks(v, (*path, k))


@pytest.mark.parametrize("name", NAMES)
def test_to_dict_is_plain_json_and_the_record_is_frozen(name):
    res = result(name)
    d = res.to_dict()
    text = json.dumps(d, allow_nan=False)  # no NaN / inf, no numpy values
    assert json.loads(text) == d
    first = dataclasses.fields(res)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(res, first, getattr(res, first))


@pytest.mark.parametrize("name", NAMES)
def test_summary_is_the_short_form_with_no_arguments(name):
    res = result(name)
    text = res.summary()  # one name, no required argument, on every result
    assert isinstance(text, str) and text.strip()
    assert str(res).startswith(text.splitlines()[0])  # the head of the long form


@pytest.mark.parametrize("name", NAMES)
def test_one_certificate_block(name):
    d = result(name).to_dict()
    if name in _NO_CERTIFICATE:
        assert "certificate" not in d
        return
    cert = d["certificate"]
    assert isinstance(cert["kind"], str) and cert["kind"]
    assert isinstance(cert["statement"], str) and len(cert["statement"]) > 20
    assert isinstance(cert["certified"], bool)
    found = list(_blocks(d))
    assert found, "no certificate block found"
    for path, block in found:  # nested certificates (collapse, rank_d, ...) say the same
        assert isinstance(block.get("certified"), bool), (path, sorted(block))
        assert isinstance(block["kind"], str) and isinstance(block["statement"], str)


@pytest.mark.parametrize("name", _SOLVED)
def test_one_convergence_block(name):
    d = result(name).to_dict()
    names = [f.name for f in dataclasses.fields(Convergence)]
    assert list(d["convergence"]) == names
    c = d["convergence"]
    assert isinstance(c["success"], bool) and isinstance(c["certified"], bool)
    assert isinstance(c["status"], str) and isinstance(c["certifies"], str)
    assert c["nit"] is None or (isinstance(c["nit"], int) and c["nit"] >= 0)


@pytest.mark.parametrize("name", ["optimum", "optimum_dim"])
def test_optimum_gap_is_loss_minus_lower_bound(name):
    d = result(name).to_dict()
    assert d["gap"] == pytest.approx(d["loss"] - d["lower_bound"], abs=1e-12)
    assert d["lower_bound"] <= d["loss"] + 1e-9
    # convergence says the certificate: certified means globally optimal
    assert d["convergence"]["certified"] == (d["certified_global"]
                                             and d["certificate"]["certified"])


def test_loss_floor_interval_block_agrees_with_the_optimum_in_dim():
    floor = result("loss_floor")
    cert = floor.to_dict()["certificate"]
    assert cert["lower_bound"] == floor.lower and cert["certified"] == floor.certified
    assert cert["gap"] == pytest.approx(floor.upper - floor.lower, abs=1e-12)
    assert floor.lower <= floor.upper + 1e-9
    # the upper end is the excess of the best point in R^1: another path to it
    opt = result("optimum_dim")
    assert floor.upper == pytest.approx(opt.excess_loss, rel=1e-6, abs=1e-9)


def test_supcon_dim_gap_is_loss_minus_lower_bound():
    d = result("supcon_dim").to_dict()  # CONTRACT: lower_bound beside loss with --dim
    assert d["gap"] == pytest.approx(d["loss"] - d["lower_bound"], abs=1e-12)
    assert d["lower_bound"] <= d["loss"] + 1e-9


def test_recommendation_certified_iff_bracketed_and_the_bracket_holds():
    found, none = result("recommend_found"), result("recommend_none")
    assert found.value is not None and found.certificate["certified"]
    assert none.value is None and not none.certificate["certified"]
    assert found.convergence.certified and not none.convergence.certified
    assert found.convergence.nit == found.certificate["evaluations"]
    # the block is said from the value, also for a copy with another one
    assert not dataclasses.replace(found, value=None).certificate["certified"]
    # re-evaluate both ends of the bracket: realizable below, not above
    labels = np.repeat(np.arange(3), 3)
    br = found.certificate["bracket"]
    below = dgp.classify_objective("soft-supcon", labels, eps=0.2, tau=br["below"]["tau"], dim=3)
    above = dgp.classify_objective("soft-supcon", labels, eps=0.2, tau=br["above"]["tau"], dim=3)
    assert below.verdict == "realizable" and above.verdict != "realizable"
    assert br["below"]["tau"] <= found.value <= br["above"]["tau"]
    # tau* = K / ((K - 1)(-log eps)), the closed-form boundary, lies in the bracket
    tau_star = 3 / (2 * -math.log(0.2))
    assert br["below"]["tau"] * (1 - 1e-9) <= tau_star <= br["above"]["tau"] * (1 + 1e-9)


def test_loss_floors_certificate_is_the_optimal_loss_by_another_path():
    floors = result("loss_floors")
    cert = floors.to_dict()["certificate"]
    # sizes 3, 2, 2 at tau 0.5 in dim 2: the bound is not attained; the floor is the loss of
    # the optimal prototypes (rank 2, so they fit in R^2), certified by their KKT certificate
    assert cert["certified"] and floors.optimal_certified
    assert floors.lower_bound == floors.optimal_sum
    # the certificate is the prototypes' own, as dgp.supcon_prototypes reports it
    assert cert == dgp.supcon_prototypes(_SIZES, tau=0.5, dim=2).to_dict()["certificate"]
    # another path: the loss of those prototypes, one per sample, evaluated directly
    protos = dgp.supcon_prototypes(_SIZES, tau=0.5)
    lam, vec = np.linalg.eigh(protos.gram)
    keep = lam > 1e-9
    assert keep.sum() <= 2
    Z = (vec[:, keep] * np.sqrt(lam[keep]))[_LABELS]
    W = dgp.objective_weights("supcon", _LABELS)
    assert floors.optimal_sum == pytest.approx(dgp.winfonce_loss(Z, W, tau=0.5), rel=1e-7)
    assert floors.optimal_sum >= floors.entropic_bound - 1e-9


def test_a_spoiled_certificate_is_not_certified():
    """The default ``certified`` re-derives the claims: spoil one number and it goes false."""
    cert = result("optimum").certificate
    assert cert.to_dict()["certified"] == (not cert.check())
    assert cert.to_dict()["certified"]
    spoiled = dataclasses.replace(cert, gap_bound=-1.0)  # a negative gap bound is impossible
    assert spoiled.check() and spoiled.to_dict()["certified"] is False
    collapse = result("optimum").collapse
    wrong = dataclasses.replace(collapse, collapsed=not collapse.collapsed)
    assert collapse.to_dict()["certified"] and not wrong.to_dict()["certified"]


def test_kkt_certified_is_optimality_not_consistency():
    """``certified`` of the KKT block is its statement's conclusion (M optimal within the one
    acceptance rule), never just "its numbers are consistent": a point of a fixed dimension
    below the free optimum's rank (the issue's sizes [6,5,4,3,2,2], tau 0.2, d = 2: KKT
    residual 0.88) is not certified, in the library and the JSON, as its rank-d block says;
    the free optimum of the same problem is."""
    from dgp.tolerance import DEFAULT_POLICY
    from dgp.weights import supcon_weights

    W = supcon_weights(np.repeat(np.arange(6), [6, 5, 4, 3, 2, 2]))
    fixed = dgp.optimum(W, tau=0.2, dim=2, progress=False)
    free = dgp.optimum(W, tau=0.2, progress=False)
    for res, expected in ((fixed, False), (free, True)):
        cert = res.certificate
        assert cert.certified is expected
        assert cert.certified == DEFAULT_POLICY.accepts(cert.kkt_residual, cert.target)
        assert res.to_dict()["certificate"]["certified"] is expected
    assert fixed.certificate.kkt_residual > 0.1 and not fixed.certified_global
    assert fixed.to_dict()["rank_d"]["certified"] is False
    loose = dgp.optimum(W, tau=0.2, tol=1e-6, progress=False).certificate
    assert loose.target == 1e-6 and loose.certified  # held to the target it was solved to
    sup = dgp.supcon_prototypes([6, 5, 4, 3, 2, 2], tau=0.2, tol=1e-6).certificate
    assert sup.target == 1e-6 and sup.certified


def test_rank_d_certificate_declares_what_it_certifies():
    cert = result("optimum_dim").rank_d
    assert cert is not None
    assert isinstance(cert, CertificateProtocol)
    own = getattr(type(cert), "certified", None)
    assert own is not None or "certified" in {f.name for f in dataclasses.fields(cert)}
    assert cert.to_dict()["certified"] == cert.global_optimal


def _batch_optimum():
    if "batch" not in _CACHE:  # beyond exact enumeration: the stochastic expected-batch optimum
        _CACHE["batch"] = dgp.optimum(_W5, tau=0.5, dim=2, batch_size=3, exact_max=1,
                                      samples=40, replicates=1, seed=0)
    return _CACHE["batch"]


@pytest.mark.slow
def test_batch_optimum_blocks():
    res = _batch_optimum()
    assert isinstance(res, dgp.BatchOptimum)
    d = res.to_dict()
    json.dumps(d, allow_nan=False)
    names = [f.name for f in dataclasses.fields(Convergence)]
    assert list(d["convergence"]) == names
    # CONTRACT: batch.gap is the expected loss over its lower bound
    assert d["batch"]["gap"] == pytest.approx(d["batch"]["expected_loss"]
                                              - d["batch"]["lower_bound"], rel=1e-9, abs=1e-9)
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.n = 3


@pytest.mark.slow
def test_batch_optimum_certificate_block():
    cert = _batch_optimum().to_dict()["certificate"]
    assert isinstance(cert["certified"], bool) and cert["kind"] and cert["statement"]


@pytest.mark.slow  # three fixed-dimension solves: about 7 s
def test_loss_floors_carry_the_bound_and_certificate_of_their_solve():
    """Uncertified in R^2 (a referee's case): the floors keep the solve's convex lower bound
    and its certificate, the ones dgp.optimum and dgp.supcon_prototypes report."""
    p = dgp.Problem(objective="supcon", sizes=[6, 5, 4, 3, 2, 2], tau=0.2)
    floors, opt = dgp.loss_floors(p, dim=2), dgp.optimum(p, dim=2)
    protos = dgp.supcon_prototypes(p, dim=2)
    assert not floors.optimal_certified
    assert floors.optimal_sum == pytest.approx(opt.loss, rel=1e-9)
    assert floors.lower_bound == pytest.approx(opt.lower_bound, rel=1e-9)
    assert floors.lower_bound == pytest.approx(protos.lower_bound, rel=1e-9)
    assert floors.lower_bound < floors.optimal_sum
    d = floors.to_dict()
    assert d["gap"] == pytest.approx(opt.gap, rel=1e-9)
    for other in (opt, protos):
        c = other.to_dict()["certificate"]
        assert (d["certificate"]["kind"], d["certificate"]["statement"],
                d["certificate"]["certified"]) == (c["kind"], c["statement"], c["certified"])


def test_stochastic_prototypes_carry_the_expected_batch_certificate():
    """Beyond exact enumeration a prototype prediction proves nothing but a lower bound at its
    confidence: its certificate says so, with the numbers of its batch record (as dgp.optimum's
    batch path does); it was null."""
    p = dgp.supcon_prototypes([40, 30, 20], tau=0.3, batch_size=16, exact_max=10, samples=100,
                              progress=False)
    assert p.method == "stochastic"
    c = p.to_dict()["certificate"]
    assert (c["kind"], c["certified"]) == ("expected-batch", False) and c["statement"]
    assert c["expected_loss"] == pytest.approx(p.loss, rel=1e-12)
    assert c["lower_bound"] == pytest.approx(p.lower_bound, rel=1e-12)
    assert c["gap"] == pytest.approx(p.loss - p.lower_bound, rel=1e-9, abs=1e-12)
    assert c["lower_bound"] <= c["expected_loss"]
