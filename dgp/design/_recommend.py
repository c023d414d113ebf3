"""Inverse design questions by scan and bisection on the engine's verdicts, with certificates."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from dgp.constants import (
    EPS_SEARCH,
    EPS_T_TOL,
    MINORITY_TAU_SEARCH,
    PROTOTYPE_T_TOL,
    TAU_SEARCH,
    TAU_T_TOL,
)
from dgp.design._common import (
    DesignInput,
    closed_form_boundary,
    describe_input,
    design_input,
    fixed_parameters,
    needed_parameters,
    prototype_rank,
    search_settings,
    tolerance,
)
from dgp.design._parameters import OBJECTIVE_PARAMETERS, check_value
from dgp.design._recommendation import Recommendation, parse_want
from dgp.design._scan_search import (
    EPS_AXIS,
    TAU_AXIS,
    check_range,
    psd_margin,
    scan_and_bisect,
    verdict_point,
)
from dgp.display import distinct_digits
from dgp.errors import (
    ParameterError,
    ParameterTypeError,
    check_dim,
    check_int,
    describe,
)
from dgp.objectives.registry import OBJECTIVES
from dgp.problem import Problem
from dgp.result import Classification
from dgp.spec import not_given

__all__ = [
    "Recommendation",
    "parse_want",
    "recommend",
]

# ----------------------------------------------------------------------------------------------
# recommend: inverse questions by scan and bisection, with certificates
# ----------------------------------------------------------------------------------------------


def recommend(
    objective: str | Problem | None = None,
    labels: object = None,
    *,
    want: str,
    W: object = None,
    sizes: object = None,
    tau: float | None = None,
    dim: int | None = None,
    eps: float | None = None,
    sigma: float | None = None,
    label_tau: float | None = None,
    similarity: str | None = None,
    minority: Sequence[int] | None = None,
    search: tuple[float, float] | None = None,
    points: int = 61,
    starts: int | None = None,
    seed: int | None = None,
    tol: float | None = None,
    rtol: object = not_given,
) -> Recommendation:
    r"""Answer an inverse design question, with a certificate.

    ``want`` is one of:

    * ``"realizable"`` — the largest :math:`\tau` at which the weighting stays realizable in
      :math:`\mathbb R^{d}` (``dim`` given): the upper end of the first stretch of realizable
      temperatures found by a geometric scan of ``search`` (default ``1e-4 .. 1e4``) joined by
      the objective's closed-form critical temperatures
      (:meth:`~dgp.objectives.registry.Objective.critical_temperatures`: y-Aware's
      :math:`\tau R^2 = \sigma^2`, X-CLR's :math:`\tau R^2 = \tau_y`, Soft SupCon's
      :math:`\tau^*`, where the weighting may be realizable at that one temperature only),
      bisected on the engine's verdict to a relative width of :math:`10^{-13}`;
    * ``"simplex"`` — Soft SupCon: the :math:`\tau` (``eps`` given) or the :math:`\varepsilon`
      (``tau`` given) at which the target is the centred regular simplex, i.e. the largest
      :math:`\tau` (smallest :math:`\varepsilon`) at which the bound is attained in :math:`K`
      dimensions; the closed form :math:`\tau^* = K/((K-1)(-\log\varepsilon))` is reported
      beside it;
    * ``"minority-cosine<=X"`` — SupCon / Soft SupCon: the largest :math:`\tau` such that every
      pair of minority classes keeps its optimal prototype cosine :math:`\le X` (the upper end
      of the first stretch from small :math:`\tau`; default ``search`` ``0.01 .. 10``);
      ``minority`` lists the minority classes (codes ``0..K-1`` in sorted label order;
      default: every class smaller than the largest); with ``dim``, the prototypes are the
      best in :math:`\mathbb R^{dim}` (:func:`dgp.supcon_prototypes` with ``dim``, ``starts``
      and ``seed``), else the free-dimension optimum;
    * ``"min-dim"`` — the smallest :math:`d` in which the bound is attained (``tau`` given).

    Parameters
    ----------
    objective, labels, W, sizes, tau, dim, eps, sigma, label_tau, similarity
        As :func:`phase` (a :class:`dgp.Problem` first, or the older forms; the parameter
        searched for is not given, in the problem either).
    want : str
        The question (above).
    minority : sequence of int, optional
        ``minority-cosine``: the minority classes.
    search : (float, float), optional
        The range scanned for the parameter.
    points : int
        Number of scan points (geometric in :math:`\tau`; in :math:`\log(-\log\varepsilon)`).
        A stretch narrower than one scan step can be missed.
    starts, seed : int, optional
        ``minority-cosine`` with ``dim``: the rank-``dim`` search's random starts and seed, as
        :func:`dgp.supcon_prototypes` (the other questions run no search: refused there).
    tol : float
        Relative tolerance of every classification (``rtol``: its deprecated name).

    Returns
    -------
    Recommendation
        ``value`` is the last scanned/bisected value that satisfies the request; the
        certificate's ``bracket`` holds the verdicts (or cosines) at it (``below``) and at the
        first value past it that does not (``above``).

    Raises
    ------
    ValueError
        If ``want`` is unknown, the objective does not fit the question (``simplex`` needs
        soft-supcon, ``minority-cosine`` a class objective with at least two minority
        classes), the parameter searched for is also given, a needed one is missing, or an
        argument is invalid.
    TypeError
        If an argument has the wrong type.

    Examples
    --------
    >>> r = recommend("soft-supcon", sizes=[5, 5, 5], eps=0.1, want="simplex")
    >>> r.parameter, round(r.value, 10), r.certificate["bracket"]["above"]["verdict"]
    ('tau', 0.6514417229, 'inconsistent')
    """
    question, threshold = parse_want(want)
    rtol = tolerance(tol, rtol)
    problem, given = design_input(
        objective, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol,
        entry="recommend", given={"tau": tau, "eps": eps, "sigma": sigma, "label_tau": label_tau},
        search=search_settings(starts, seed))
    if problem.search and not (question == "minority-cosine" and dim is not None):
        name = next(iter(problem.search))
        raise ParameterError(name, "applies to want='minority-cosine<=X' with dim (the rank-dim "
                             "search of its prototypes); this question runs no search")
    tau, eps = given["tau"], given["eps"]
    pts = check_int(points, "points", minimum=5, maximum=10_000)
    given = {"tau": tau, "dim": dim, "eps": eps, "sigma": given["sigma"],
             "label_tau": given["label_tau"]}
    if question == "simplex":
        if (problem.rec is None or problem.rec.boundary != "simplex"
                or problem.similarity != "cosine"):
            takes = ", ".join(repr(o.name) for o in OBJECTIVES.values() if o.boundary == "simplex")
            raise ParameterError("want", f"'simplex' asks when Soft SupCon's target is the centred "
                                 f"regular simplex; it applies to objective {takes} with "
                                 f"the cosine similarity, not {describe_input(problem)}")
        if (tau is None) == (eps is None):
            raise ParameterError("eps", "or tau: give exactly one for want='simplex' (the other is "
                                 "found)")
        if dim is not None:
            raise ParameterError("dim", "does not apply to want='simplex' (the simplex lives in "
                                 "K - 1 dimensions; it is searched for in K)")
        return _recommend_simplex(problem, tau, eps, search, pts)
    if question == "min-dim":
        if dim is not None:
            raise ParameterError("dim", "is what want='min-dim' finds; do not give it")
        fixed = fixed_parameters(problem, given, ("dim",), needed_parameters(problem))
        return _recommend_min_dim(problem, fixed)
    if question == "realizable":
        if tau is not None:
            raise ParameterError("tau", "is what want='realizable' finds; do not give it")
        fixed = fixed_parameters(problem, given, ("tau",), needed_parameters(problem))
        return _recommend_realizable(problem, fixed, check_range(search, TAU_SEARCH, "tau"),
                                     pts, want)
    if not problem.is_class:
        raise ParameterError("want", f"'minority-cosine' compares class prototypes; it applies to "
                             f"supcon and soft-supcon, not {describe_input(problem)}")
    if tau is not None:
        raise ParameterError("tau", "is what want='minority-cosine<=X' finds; do not give it")
    fixed = fixed_parameters(problem, {k: v for k, v in given.items() if k != "dim"},
                             ("tau", "dim"), needed_parameters(problem))
    if dim is not None:
        fixed["dim"] = check_dim(dim)
    assert threshold is not None
    return _recommend_minority(problem, fixed, threshold, minority,
                               check_range(search, MINORITY_TAU_SEARCH, "tau"), pts, want)


def _recommend_realizable(problem: DesignInput, fixed: dict, rng: tuple[float, float], pts: int,
                          want: str) -> Recommendation:
    def holds(t: float) -> tuple[bool, dict]:
        res = problem.classify({**fixed, "tau": t})
        return res.verdict == "realizable", verdict_point(res, tau=t, dim=fixed["dim"])

    def margin(t: float) -> float | None:
        return psd_margin(problem.classify({**fixed, "tau": t}))

    out = scan_and_bisect(holds, TAU_AXIS, *rng, num=pts, t_tol=TAU_T_TOL,
                  margin=margin if problem.similarity == "cosine" else None,
                  candidates=_critical_temperatures(problem, fixed))
    value = out.pop("value", None)
    d = fixed["dim"]
    status = out["status"]
    if status == "found":
        k = distinct_digits(value, out["above"]["tau"], minimum=12)
        reason = (f"realizable in dim = {d} up to tau = {value:.{k}g}; at tau = "
                  f"{out['above']['tau']:.{k}g} (relative distance {out['relative_width']:.1e}) "
                  f"it is {out['above']['verdict']}")
    elif status == "up-to-range-end":
        first = out["scan"]["stretches_holding"][0][0]
        reason = (f"realizable in dim = {d} from tau = {first:.6g} up to the end of the search "
                  f"range, tau = {rng[1]:g}: no largest tau inside it"
                  + (" (the Euclidean verdict does not depend on tau)"
                     if problem.similarity == "euclidean" else " (widen search)"))
    else:
        reason = (f"not realizable in dim = {d} at any of the {pts} scanned temperatures in "
                  f"[{rng[0]:g}, {rng[1]:g}]")
    cert = {"method": "geometric scan of tau, then bisection on the engine's verdict",
            "bracket": {"below": out.pop("below", None), "above": out.pop("above", None)},
            **out}
    cf = _closed_form_realizable(problem, fixed)
    if cf is not None and value is not None:
        cf["relative_difference"] = abs(value - cf["value"]) / cf["value"]
        cert["closed_form"] = cf
    return Recommendation(problem.name, want, "tau", value, reason, cert, _given(fixed))


def _critical_temperatures(problem: DesignInput, fixed: dict) -> tuple[float, ...]:
    """The objective's closed-form critical temperatures (its registry record's
    :meth:`~dgp.objectives.registry.Objective.critical_temperatures`; cosine latent only),
    tried beside the scan: the weighting may be realizable at exactly one of them."""
    if problem.rec is None or problem.similarity != "cosine":
        return ()
    params = {k: v for k, v in fixed.items() if k != "dim"}
    return problem.rec.critical_temperatures(problem.labels_for(params),
                                             problem.object_params(params), rtol=problem.rtol)


def _closed_form_realizable(problem: DesignInput, fixed: dict) -> dict | None:
    """The closed-form largest realizable tau, when the boundary's hypotheses hold."""
    first = {k: fixed.get(k, 1.0) for k in OBJECTIVE_PARAMETERS if problem.rec and k in
             problem.rec.params}
    b = closed_form_boundary(problem, fixed, first)
    if b is None or fixed["dim"] < b.dim_needed:
        return None
    if b.name != "tau*" and b.n < fixed["dim"] + b.constants["m"] + 3:
        return None
    formula = {"tau*": "tau* = K / ((K - 1)(-log eps))"}.get(
        b.name, "tau = sigma^2 / R^2" if b.name.endswith("sigma^2") else "tau = tau_y / R^2")
    return {"formula": formula, "value": b.tau_c(fixed), "constants": dict(b.constants)}


def _given(fixed: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fixed.items() if v is not None}


def _recommend_simplex(problem: DesignInput, tau, eps, search, pts) -> Recommendation:
    assert problem.labels is not None
    K = int(problem.labels.sizes.size)
    singletons = bool(problem.labels.sizes.min() < 2)
    if eps is not None:  # the tau of the simplex at this eps
        given = {"eps": check_value("eps", eps)}
        parameter, axis, t_tol = "tau", TAU_AXIS, TAU_T_TOL
        rng = check_range(search, TAU_SEARCH, "tau")
        cf_value = K / ((K - 1.0) * -math.log(given["eps"]))
        formula = "tau* = K / ((K - 1)(-log eps))"
    else:  # the eps at this tau: realizable for eps >= eps*, in t = log(-log eps) the first
        # stretch from small t
        given = {"tau": check_value("tau", tau)}
        parameter, axis, t_tol = "eps", EPS_AXIS, EPS_T_TOL
        rng = check_range(search, EPS_SEARCH, "eps")
        cf_value = math.exp(-K / ((K - 1.0) * given["tau"]))
        formula = "eps* = exp(-K / ((K - 1) tau))"

    def classify_at(v: float) -> Classification:
        return problem.classify({**given, parameter: v, "dim": K})

    def holds(v: float) -> tuple[bool, dict]:
        res = classify_at(v)
        return res.attainable, verdict_point(res, **{parameter: v}, dim=K)

    def margin(v: float) -> float | None:
        return psd_margin(classify_at(v))

    out = scan_and_bisect(holds, axis, *rng, num=pts, t_tol=t_tol, margin=margin)
    value = out.pop("value", None)
    cert: dict[str, Any] = {
        "method": f"scan of {parameter}, then bisection on whether the bound is attained in dim "
        f"K = {K} (up to the simplex it is, past it it is not)",
        "bracket": {"below": out.pop("below", None), "above": out.pop("above", None)}, **out}
    if value is not None:
        at = problem.classify({**given, parameter: value, "dim": K - 1})
        rho = 1.0 + (given.get("tau", value) * math.log(given.get("eps", value)))
        cert["at_value"] = verdict_point(at, **{parameter: value}, dim=K - 1) | {
            "prototype_cosine": rho, "simplex_cosine": -1.0 / (K - 1)}
        if not singletons:
            cert["closed_form"] = {"formula": formula, "value": cf_value,
                                   "relative_difference": abs(value - cf_value) / cf_value}
        reason = (f"at {parameter} = {value:.12g} Soft SupCon's target is the centred regular "
                  f"simplex (prototype cosine {rho:.12g} vs -1/(K-1) = {-1.0 / (K - 1):.12g}; "
                  f"in dim = K - 1 = {K - 1} the verdict is {at.verdict}); past it, in dim = "
                  f"K = {K}, the verdict is {cert['bracket']['above']['verdict']}")
    else:
        reason = (f"Soft SupCon's target is not the simplex anywhere in the searched range "
                  f"({out['status']}); widen search")
    return Recommendation(problem.name, "simplex", parameter, value, reason, cert, given)


def _recommend_min_dim(problem: DesignInput, fixed: dict) -> Recommendation:
    probe = problem.classify({**fixed, "dim": 1})
    d = probe.min_dim
    cert: dict[str, Any] = {"method": "the engine's min_dim, checked by the verdicts at "
                            "min_dim - 1 and min_dim"}
    if d is None:
        reason = ("the bound is not attained in any dimension: " + probe.reason)
        cert["bracket"] = {"below": None, "above": verdict_point(probe, dim=1)}
        return Recommendation(problem.name, "min-dim", "dim", None, reason, cert,
                              _given(fixed))
    at = problem.classify({**fixed, "dim": d})
    below = problem.classify({**fixed, "dim": d - 1}) if d > 1 else None
    cert["bracket"] = {"below": None if below is None else verdict_point(below, dim=d - 1),
                       "at": verdict_point(at, dim=d)}
    ok = at.attainable and (below is None or not below.attainable)
    if not ok:  # the engine's min_dim disagrees with its own verdicts: dgp's failure
        from dgp.errors import SolverError

        raise SolverError(f"min_dim = {d} but the verdicts at dim = {d - 1} and {d} are "
                          f"{None if below is None else below.verdict} and {at.verdict}")
    reason = (f"the bound is attained in dim = {d} ({at.verdict}"
              + (f", rank {at.rank}" if at.rank is not None else "") + ")"
              + ("" if below is None else f" and not in dim = {d - 1} ({below.verdict})"))
    return Recommendation(problem.name, "min-dim", "dim", int(d), reason, cert, _given(fixed))


def _minority_classes(sizes: np.ndarray, minority: Sequence[int] | None) -> np.ndarray:
    K = sizes.size
    if minority is None:
        idx = np.flatnonzero(sizes < sizes.max())
        if idx.size < 2:
            raise ParameterError("minority", f"defaults to the classes smaller than the largest, "
                                 f"and sizes {sizes.tolist()} have {idx.size}; a minority pair "
                                 "needs two: list the classes (codes 0..K-1)")
        return idx
    if isinstance(minority, str) or not isinstance(minority, Sequence):
        raise ParameterTypeError("minority", f"must be a sequence of class codes, got "
                                 f"{describe(minority)}")
    idx = np.array([check_int(c, "minority", minimum=0, maximum=K - 1) for c in minority])
    if np.unique(idx).size < 2:
        raise ParameterError("minority", f"must list at least two distinct classes, got "
                             f"{describe(list(minority))}")
    return np.unique(idx)


def _recommend_minority(problem: DesignInput, fixed: dict, x: float, minority, rng, pts,
                        want: str) -> Recommendation:
    from dgp.prototypes import supcon_prototypes

    assert problem.labels is not None
    sizes = problem.labels.sizes
    if sizes.min() < 2:
        raise ParameterError("labels", "have a singleton class, which has no prototype problem")
    idx = _minority_classes(sizes, minority)
    assert problem.rec is not None
    eps = problem.rec.prototype_eps(fixed)
    dim = fixed.get("dim")
    sub = np.ix_(idx, idx)

    in_dim = {} if dim is None else {"dim": dim, **problem.search, "progress": False}

    def holds(t: float) -> tuple[bool, dict]:
        p = supcon_prototypes(sizes, tau=t, eps=eps, **in_dim)
        M = p.gram[sub].copy()
        np.fill_diagonal(M, -np.inf)
        a, b = np.unravel_index(int(np.argmax(M)), M.shape)
        info = {"tau": t, "max_cosine": float(M[a, b]), "pair": [int(idx[a]), int(idx[b])],
                "method": p.method, "kkt_residual": p.kkt_residual,
                "rank": prototype_rank(p.gram), "certified": p.convergence.certified}
        return float(M[a, b]) <= x, info

    out = scan_and_bisect(holds, TAU_AXIS, *rng, num=pts, t_tol=PROTOTYPE_T_TOL)
    value = out.pop("value", None)
    cert: dict[str, Any] = {
        "method": "geometric scan of tau, then bisection on the largest optimal prototype "
        "cosine among minority pairs (dgp.supcon_prototypes, certified by its KKT residual"
        + ("" if dim is None else f"; in R^{dim}, its rank-{dim} certificate") + ")",
        "minority": idx.tolist(), "threshold": x,
        "bracket": {"below": out.pop("below", None), "above": out.pop("above", None)}, **out}
    if out["status"] == "found":
        b = cert["bracket"]
        k = distinct_digits(value, b["above"]["tau"], minimum=10)
        reason = (f"every minority pair keeps its prototype cosine <= {x:g} up to tau = "
                  f"{value:.{k}g} (largest {b['below']['max_cosine']:.10g}); at tau = "
                  f"{b['above']['tau']:.{k}g} classes {b['above']['pair']} reach "
                  f"{b['above']['max_cosine']:.10g}")
        if dim is not None and not b["below"]["certified"]:
            reason += (f"; the prototypes in R^{dim} at it are the best the rank-{dim} search "
                       "found, not proven globally optimal")
    elif out["status"] == "up-to-range-end":
        reason = (f"the minority cosines stay <= {x:g} up to the end of the search range, tau = "
                  f"{rng[1]:g} (widen search)")
    else:
        limit = (f"in R^{dim} the {sizes.size} prototypes cannot form the simplex, which "
                 f"needs {sizes.size - 1} dimensions" if dim is not None and dim < sizes.size - 1
                 else "SupCon's small-tau limit is the simplex, cosine "
                 f"{-1.0 / (sizes.size - 1):.6g}")
        reason = (f"the largest minority cosine exceeds {x:g} at every scanned tau in "
                  f"[{rng[0]:g}, {rng[1]:g}] ({limit})")
    if eps is None and value is not None:  # SupCon (no weight across classes)
        cert["first_order"] = _first_order_tau(sizes, idx, x)
    return Recommendation(problem.name, want, "tau", value, reason, cert, _given(fixed))


def _first_order_tau(sizes: np.ndarray, idx: np.ndarray, x: float) -> dict[str, Any]:
    r"""The small-:math:`\tau` estimate from :func:`dgp.prototypes.first_order_gram` (linear in
    :math:`\tau`): where its largest minority cosine reaches ``x``."""
    from dgp.prototypes import first_order_gram

    G1 = first_order_gram(sizes, tau=1.0)  # G(tau) = S + tau (G1 - S)
    K = sizes.size
    S = -1.0 / (K - 1)
    slope = (G1 - S)[np.ix_(idx, idx)][~np.eye(idx.size, dtype=bool)].max()
    value = (x - S) / slope if slope > 0 else None
    return {"statement": "first-order small-tau prototypes (error O(tau^2))", "tau": value}


