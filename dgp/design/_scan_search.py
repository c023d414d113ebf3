"""The search along one parameter: a scan of the engine's verdicts in a monotone coordinate, then
bisection on the verdict and on the continuous margin where the certificate reports one."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp._linalg import bracketed_root
from dgp.constants import (
    ROOT_XTOL,
    ROUNDOFF_RTOL,
)
from dgp.design._parameters import check_value
from dgp.errors import (
    ParameterError,
    describe,
)
from dgp.result import Classification


@dataclass(frozen=True)
class _Axis:
    """A searched parameter and the monotone coordinate the bisection works in."""

    name: str
    to_t: Callable[[float], float]
    from_t: Callable[[float], float]


TAU_AXIS = _Axis("tau", math.log, math.exp)
# eps in (0, 1) through u = -log eps: t = log u keeps tiny eps (1e-50) and eps near 1 resolved
EPS_AXIS = _Axis("eps", lambda e: math.log(-math.log(e)), lambda t: math.exp(-math.exp(t)))


def scan_and_bisect(holds: Callable[[float], tuple[bool, dict]], axis: _Axis, lo: float,
                    hi: float, *, num: int, t_tol: float,
                    margin: Callable[[float], float | None] | None = None,
                    candidates: Sequence[float] = ()) -> dict[str, Any]:
    """Scan ``t`` on ``[t(lo), t(hi)]``, take the first stretch where ``holds`` (from the low
    end of ``t``), bisect its upper end to ``t_tol``.

    ``candidates`` (parameter values, e.g. the objective's closed-form critical temperatures)
    join the scan points: a request that holds at one isolated value (a stretch of one point,
    which no scan step resolves) is found there, its upper end bisected like any other.

    Returns the last point that holds (``below``), the first that does not (``above``), the
    stretches seen on the scan and the number of evaluations. With ``margin`` (a continuous
    function, positive where ``holds``), the boundary is then located as the root of the
    margin (:func:`_refine`): the bisection on verdicts stops at the edge of the engine's
    tolerance band, the root does not."""
    holds, margin = _in_search(holds, axis), None if margin is None else _in_search(margin, axis)
    t0, t1 = sorted((axis.to_t(lo), axis.to_t(hi)))
    extra = sorted({axis.to_t(v) for v in candidates if lo <= v <= hi})
    ts = np.union1d(np.linspace(t0, t1, num), extra) if extra else np.linspace(t0, t1, num)
    num = int(ts.size)
    flags, infos = [], []
    for t in ts:
        ok, info = holds(axis.from_t(float(t)))
        flags.append(ok)
        infos.append(info)
    stretches = []
    k = 0
    while k < num:
        if flags[k]:
            j = k
            while j + 1 < num and flags[j + 1]:
                j += 1
            stretches.append([axis.from_t(float(ts[k])), axis.from_t(float(ts[j]))])
            k = j + 1
        else:
            k += 1
    out: dict[str, Any] = {"scan": {"range": [lo, hi], "points": num,
                                    "stretches_holding": stretches},
                           "evaluations": num}
    if extra:
        out["scan"]["candidates"] = [axis.from_t(t) for t in extra]
    if not stretches:
        out["status"] = "never"
        return out
    first = next(i for i, f in enumerate(flags) if f)
    last = first
    while last + 1 < num and flags[last + 1]:
        last += 1
    if last == num - 1:
        out["status"] = "up-to-range-end"
        out["below"] = infos[last]
        return out
    a, b = float(ts[last]), float(ts[last + 1])
    info_a, info_b = infos[last], infos[last + 1]
    steps = 0
    while b - a > t_tol * max(1.0, abs(a)) and steps < 200:
        mid = 0.5 * (a + b)
        if mid in (a, b):
            break
        ok, info = holds(axis.from_t(mid))
        steps += 1
        if ok:
            a, info_a = mid, info
        else:
            b, info_b = mid, info
    out.update(status="found", below=info_a, above=info_b, bisection_steps=steps,
               evaluations=num + steps, value=axis.from_t(a),
               relative_width=abs(axis.from_t(b) - axis.from_t(a)) / abs(axis.from_t(a)))
    if margin is not None:
        root = _refine(margin, axis, a, b, float(ts[last]), float(ts[last + 1]))
        if root is not None:
            out["boundary"] = root
            out["value"] = root["root"]
            out["evaluations"] += root.pop("evaluations")
    return out


def _in_search(f: Callable[[float], Any], axis: _Axis) -> Callable[[float], Any]:
    """``f`` of a searched value, a refusal of that value (a temperature beyond floating
    point) reported as one of the search range, the flag the user gave."""

    def call(v: float) -> Any:
        try:
            return f(v)
        except ParameterError as exc:
            if exc.param != axis.name:
                raise
            raise ParameterError("search", f"reaches {axis.name} = {v:.3g}: {exc}; narrow "
                                 "the search range") from None

    return call


def _refine(margin: Callable[[float], float | None], axis: _Axis, a: float, b: float,
            t_lo: float, t_hi: float) -> dict[str, Any] | None:
    """The root of a continuous margin near the verdict flip ``[a, b]`` (in ``t``), searched
    no further than the scan step ``[t_lo, t_hi]``; ``None`` when it does not change sign."""
    calls = 0

    def m(t: float) -> float:
        nonlocal calls
        calls += 1
        v = margin(axis.from_t(t))
        return float("nan") if v is None else v

    width = max(b - a, ROUNDOFF_RTOL * max(1.0, abs(a)))
    lo, hi = a, b
    m_lo, m_hi = m(lo), m(hi)
    while not m_lo > 0 and lo > t_lo:  # the tolerance band may reach past the root
        lo, width = max(t_lo, lo - width), 4.0 * width
        m_lo = m(lo)
    width = max(b - a, ROUNDOFF_RTOL * max(1.0, abs(b)))
    while not m_hi < 0 and hi < t_hi:
        hi, width = min(t_hi, hi + width), 4.0 * width
        m_hi = m(hi)
    if not (m_lo > 0 > m_hi):
        return None
    t = bracketed_root(m, lo, hi, xtol=ROOT_XTOL * max(1.0, abs(lo)),
                       rtol=4 * np.finfo(float).eps, maxiter=200)
    return {"quantity": "max over c of the smallest eigenvalue of G(c) (continuous, zero at "
            "the boundary)", "root": axis.from_t(t), "margin_below": m_lo,
            "margin_above": m_hi, "evaluations": calls,
            "at": [axis.from_t(lo), axis.from_t(hi)]}


def psd_margin(res: Classification) -> float | None:
    """The continuous margin of a cosine verdict: the largest smallest eigenvalue of the target
    family, when the certificate reports it."""
    value = res.to_dict()["certificate"].get("max_min_eigenvalue")
    return None if value is None else float(value)


def verdict_point(res: Classification, **params: Any) -> dict[str, Any]:
    return {**params, "verdict": res.verdict, "rank": res.rank,
            "near_threshold": res.near_threshold, "min_dim": res.min_dim}


def check_range(search: object, default: tuple[float, float], name: str) -> tuple[float, float]:
    if search is None:
        return default
    if not isinstance(search, Sequence) or len(search) != 2:
        raise ParameterError("search", f"must be a pair (lo, hi) of {name} values, got "
                             f"{describe(search)}")
    lo, hi = (check_value(name, v, "search") for v in search)
    if not lo < hi:
        raise ParameterError("search", f"must have lo < hi, got {describe(search)}")
    return float(lo), float(hi)
