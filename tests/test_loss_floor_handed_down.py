"""The loss floor of an inconsistent cosine verdict is computed by the classification floor
and handed to the engine as a value (:func:`dgp.classification.with_loss_floor`): the engine
never calls up for it, the floor is the one ``dgp.optima`` gives, and a verdict says why there
is none (not asked for, or too large) in words that are true."""

from __future__ import annotations

import sys

import numpy as np
import pytest

import dgp
from dgp.engine._verdict_build import FLOOR_NOT_ASKED


def _small_w() -> np.ndarray:
    A = np.random.default_rng(0).random((6, 6))
    return (A + A.T) / 2


def _calls_up_from_the_engine(fn) -> list[tuple[str, str]]:
    """(caller, callee) modules of every call made from a frame of ``dgp.engine`` into a
    function defined on a floor above it (classification, objectives, problem, optima)."""
    above = ("dgp.classification", "dgp.objectives", "dgp.problem", "dgp.optima",
             "dgp.prototypes", "dgp.design")
    seen: set[tuple[str, str]] = set()

    def prof(frame, event, arg):
        if event != "call" or frame.f_back is None:
            return
        callee = frame.f_globals.get("__name__", "")
        caller = frame.f_back.f_globals.get("__name__", "")
        if caller.startswith("dgp.engine") and callee.startswith(above):
            seen.add((caller, callee))

    sys.setprofile(prof)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return sorted(seen)


@pytest.mark.parametrize("call", [
    lambda: dgp.classify(_small_w(), tau=0.3, dim=2, floor=True),
    lambda: dgp.classify(dgp.Problem(W=_small_w(), tau=0.3), dim=2, floor=True),
    lambda: dgp.classify_objective("supcon", [0, 0, 1, 1, 2, 2, 3, 3], tau=0.3, dim=2,
                                   floor=True),
    lambda: dgp.classify(dgp.Problem(objective="soft-supcon", labels=[0, 0, 1, 1, 2, 2],
                                     eps=0.2, tau=2.0), dim=1, floor=True),
])
def test_the_engine_never_calls_up_for_the_floor(call):
    res = None

    def run():
        nonlocal res
        res = call()

    assert _calls_up_from_the_engine(run) == []
    assert res.verdict == "inconsistent"
    note = res.certificate.notes["loss_floor"]
    assert isinstance(note, dict) and note["upper"] >= note["lower"] >= 0.0


def test_the_floor_is_the_one_optima_gives():
    W = _small_w()
    res = dgp.classify(W, tau=0.3, dim=2, floor=True)
    ref = dgp.optima.loss_floor(W, tau=0.3, dim=2)
    note = res.certificate.notes["loss_floor"]
    assert (note["lower"], note["upper"]) == pytest.approx((ref.lower, ref.upper), rel=1e-9)
    # the verdict itself is the one decided without the floor
    plain = dgp.classify(W, tau=0.3, dim=2)
    assert (res.verdict, res.rank, res.min_dim, res.reason) == (
        plain.verdict, plain.rank, plain.min_dim, plain.reason)


def test_why_there_is_no_floor_is_said_truly():
    W = _small_w()
    assert dgp.classify(W, tau=0.3, dim=2).certificate.notes["loss_floor"] == FLOOR_NOT_ASKED
    # too many samples for the floor: said with the size, not "not asked for"
    rng = np.random.default_rng(1)
    n = dgp.classification.FLOOR_MAX_N + 1
    B = rng.random((n, n))
    big = dgp.classify((B + B.T) / 2, tau=0.3, dim=2, floor=True)
    assert big.verdict == "inconsistent"
    said = big.certificate.notes["loss_floor"]
    assert said.startswith(f"not computed: N = {n} > ")
    # a realizable verdict carries no floor note at all, asked or not
    y = np.repeat(np.arange(3), 3)
    ok = dgp.classify(dgp.weights.soft_supcon_weights(y, eps=0.2), tau=0.3, dim=3, floor=True)
    assert ok.verdict != "inconsistent" and "loss_floor" not in (ok.certificate.notes or {})
