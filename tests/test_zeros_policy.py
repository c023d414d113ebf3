"""The zero-pattern part of the tolerance policy (dgp.tolerance, dgp.engine.zeros).

The thresholds of the zero-pattern decisions are relative: to the log-ratio terms of the data
(the rigidity residual and the planar wheel rule share one tolerance, which follows ``rtol``), to
the size of a family (its gap), or to the unit scale of the leading-order problem. So rescaling
``W -> alpha W`` or permuting the samples never changes a verdict, even on patterns that sit
right next to a threshold.
"""

from __future__ import annotations

import numpy as np
import pytest

import dgp
from dgp.constants import (
    ZERO_EDGE_RTOL,
    ZERO_EVIDENCE,
    ZERO_GAP,
    ZERO_RESIDUAL_RTOL,
    ZERO_SLACK,
)
from dgp.tolerance import Tolerance

EUC = {"similarity": "euclidean", "tau": 1.0}
ALPHAS = (1e-30, 3.7, 1e30)
#: the planar wheel rule allows a 12-term defect of 2 tau 12 log_atol = 2 tau 12 16 relative
#: (log-weight spread below 1 nat); one rim weight exp(eps) makes the defect 2 tau |eps|
WHEEL_EPS = 12 * 16


def wheel(eps: float) -> np.ndarray:
    """A hexagon wheel (hub 0, rim 1..6) with unit weights but the rim pair 1-2 at exp(eps)."""
    W = np.zeros((7, 7))
    for k in range(6):
        a, b = k + 1, (k + 1) % 6 + 1
        W[0, a] = W[a, 0] = W[a, b] = W[b, a] = 1.0
    W[1, 2] = W[2, 1] = np.exp(eps)
    return W


def variants(W: np.ndarray, seed: int = 0):
    """``W`` rescaled by each alpha and under two seeded permutations of its samples."""
    yield "identity", W
    for a in ALPHAS:
        yield f"alpha={a:g}", a * W
    rng = np.random.default_rng(seed)
    for k in range(2):
        p = rng.permutation(W.shape[0])
        yield f"permutation {k}", W[np.ix_(p, p)]


def summary(res) -> tuple:
    cert = res.to_dict()["certificate"]
    return res.verdict, cert["kind"], cert.get("obstruction"), cert.get("decided")


def margin(res, starts: str) -> dict:
    found = [m for m in res.to_dict()["certificate"]["margins"]
             if m["quantity"].startswith(starts)]
    assert len(found) == 1, [m["quantity"] for m in res.to_dict()["certificate"]["margins"]]
    return found[0]


@pytest.mark.parametrize("rtol", [1e-15, 1e-6])
@pytest.mark.parametrize(("f", "kind"), [(0.5, "diverging_family"), (2.0, "zero_obstruction")])
def test_a_wheel_next_to_its_threshold_keeps_its_verdict_under_scaling_and_permutation(
    rtol, f, kind
):
    """Half the allowed defect: approached (the rigidity residual is accepted); twice: the wheel
    obstruction. Neither flips under W -> alpha W or a permutation of the samples."""
    eps = -f * WHEEL_EPS * max(rtol, 4 * np.finfo(float).eps)
    ref = dgp.classify(wheel(eps), dim=2, rtol=rtol, **EUC)
    assert summary(ref)[1] == kind
    if kind == "zero_obstruction":
        assert summary(ref)[2] == "wheel_stress"
        det = ref.to_dict()["certificate"]["detail"]
        assert det["defect"] / det["atol"] == pytest.approx(f, rel=1e-3)
    for name, W in variants(wheel(eps)):
        assert summary(dgp.classify(W, dim=2, rtol=rtol, **EUC)) == summary(ref), name


@pytest.mark.parametrize("f", [0.5, 0.9])
def test_the_rigidity_residual_accepts_what_the_wheel_rule_accepts(f):
    """With a wide rtol the wheel rule lets a defect through; the least-squares residual of the
    rigidity system is then defect / 12 (a self-stress of unit coefficients on 12 pairs), and
    its tolerance follows rtol through the same log-ratio tolerance: the family is built, with
    the residual at the fraction f of its tolerance (an absolute 1e-9 would leave it
    undecided)."""
    rtol = 1e-6
    res = dgp.classify(wheel(-f * WHEEL_EPS * rtol), dim=2, rtol=rtol, **EUC)
    assert summary(res)[:2] == ("degenerate", "diverging_family")
    m = margin(res, "residual of the rigidity system")
    assert m["value"] / m["atol"] == pytest.approx(f, rel=1e-3)
    assert m["atol"] > 1e3 * ZERO_RESIDUAL_RTOL
    for name, W in variants(wheel(-f * WHEEL_EPS * rtol)):
        other = dgp.classify(W, dim=2, rtol=rtol, **EUC)
        assert summary(other) == summary(res), name
        assert margin(other, "residual of the rigidity system")["atol"] == pytest.approx(
            m["atol"], rel=1e-9)
    beyond = dgp.classify(wheel(-1.1 * WHEEL_EPS * rtol), dim=2, rtol=rtol, **EUC)
    assert summary(beyond)[:3] == ("inconsistent", "zero_obstruction", "wheel_stress")


def test_a_placed_family_reports_its_gap_margin_and_keeps_it_under_scaling_and_permutation():
    """A pure source (2 -> 0) beyond a mutual pair on a line: the family's gap is checked against
    a zero level relative to its rows and similarities, reported as a margin, the same for
    every rescaling and permutation of W."""
    W = np.array([[0, 1, 0], [1, 0, 0], [1, 0, 0.0]])
    ref = dgp.classify(W, dim=1, **EUC)
    assert summary(ref)[:2] == ("degenerate", "diverging_family")
    m = margin(ref, "entropic gap of the family")
    gaps = ref.to_dict()["certificate"]["gaps"]
    assert m["value"] == gaps[-1] <= m["atol"]
    assert m["atol"] >= ZERO_GAP / 1e-3
    for name, Wv in variants(W):
        other = dgp.classify(Wv, dim=1, **EUC)
        assert summary(other) == summary(ref), name
        mo = margin(other, "entropic gap of the family")
        assert mo["atol"] == pytest.approx(m["atol"], rel=1e-9), name
        assert other.to_dict()["certificate"]["gaps"] == pytest.approx(gaps, rel=1e-6,
                                                                       abs=1e-12), name


def test_an_undecided_pattern_keeps_its_verdict_under_scaling_and_permutation():
    """0 <-> 1 with a pure source weighting both: not decided exactly; the numerical evidence is
    compared with the policy's threshold, reported in the certificate, and the verdict does
    not move under W -> alpha W or a permutation."""
    W = np.array([[0, 1, 0], [1, 0, 0], [1, 2, 0.0]])
    ref = dgp.classify(W, dim=1, **EUC)
    cert = ref.to_dict()["certificate"]
    assert cert["kind"] == "zero_undecided" and cert["decided"] is False
    assert cert["evidence_threshold"] == Tolerance.make(1e-15).evidence_threshold == ZERO_EVIDENCE
    for name, Wv in variants(W):
        assert summary(dgp.classify(Wv, dim=1, **EUC)) == summary(ref), name


def test_the_zero_pattern_policy_is_reported_with_the_other_tolerances():
    res = dgp.classify(wheel(0.0), dim=2, **EUC)
    zp = res.tolerance["zero_patterns"]
    assert zp["edge_atol"] == ZERO_EDGE_RTOL and zp["slack_atol"] == ZERO_SLACK
    assert zp["evidence_threshold"] == ZERO_EVIDENCE and zp["gap_zero"] == ZERO_GAP
    assert margin(res, "smallest squared distance minus 1")["atol"] == zp["slack_atol"]
    assert res.to_dict()["tolerance"]["zero_patterns"] == zp


def test_the_gap_level_is_float64_arithmetic_relative_to_the_size_of_the_family():
    """The family's gap is computed in float64 whatever the input: its zero level grows with
    rows times similarity size past the floor, and neither rtol nor a float32 input moves it;
    the rigidity residual, which compares data, follows both."""
    tol = Tolerance.make(1e-15, n=10)
    assert tol.gap_atol(3, 1.0) == ZERO_GAP
    big = tol.gap_atol(1000, 1e7)
    assert big > ZERO_GAP and tol.gap_atol(2000, 1e7) == pytest.approx(2 * big)
    wide = Tolerance.make(1e-6, n=10)
    f32 = Tolerance.make(1e-15, n=10, unit_roundoff=float(np.finfo(np.float32).eps))
    assert wide.gap_atol(1000, 1e7) == f32.gap_atol(1000, 1e7) == big
    delta = np.array([-0.5, -0.1, 0.0, -2.0])
    rng = np.random.default_rng(1)
    assert tol.residual_atol(rng.permutation(delta), 1.0) == tol.residual_atol(delta, 1.0)
    assert wide.residual_atol(delta, 1.0) > 1e3 * tol.residual_atol(delta, 1.0)
    assert f32.residual_atol(delta, 1.0) > 1e3 * tol.residual_atol(delta, 1.0)
    # the wheel rule's 12-term tolerance is twelve of the residual's one-term tolerance
    assert wide.delta_atol(delta, 1.0, terms=12) == pytest.approx(
        12 * wide.delta_atol(delta, 1.0))
