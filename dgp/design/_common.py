"""What the design tools share: their validated input (:class:`DesignInput`, made from a public
:class:`dgp.Problem` or from the older call forms), the parameters and their checks, the
optimal class prototypes of a cell and the closed-form boundary of a problem. The named
parameters live in :mod:`dgp.design._parameters` and the closed forms in
:mod:`dgp.design._closed_form`, where the other modules import them."""

from __future__ import annotations

import inspect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from dgp.classification import refuse_batch
from dgp.constants import SOLVER_TAU_MAX
from dgp.design._closed_form import Boundary, balanced_soft_supcon_simplex
from dgp.design._parameters import PROFILES, PROTOTYPES_TAU_MIN, check_value
from dgp.engine.pipeline import classify_weights
from dgp.engine.target import LogWeights
from dgp.engine.target import log_weights as canonical_log_weights
from dgp.errors import (
    InvalidParameterError,
    ParameterError,
    check_choice,
    check_int,
    describe,
)
from dgp.objectives import registry
from dgp.objectives.classify import classify_labels
from dgp.objectives.registry import Labels, Objective
from dgp.objectives.spheres import label_sphere, on_label_sphere
from dgp.problem import PARAMETER_CONSTRAINTS, Problem
from dgp.resources import check_memory, dense_weighting_bytes, hold
from dgp.result import Classification
from dgp.spec import merged, tol_keyword
from dgp.tolerance import DEFAULT_POLICY, DEFAULT_RTOL, Tolerance, check_rtol

__all__ = [
    "DesignInput",
    "cell_prototypes",
    "cell_prototypes_in_dim",
    "closed_form_boundary",
    "describe_input",
    "design_input",
    "fixed_parameters",
    "imbalanced_sizes",
    "make_problem",
    "needed_parameters",
    "optimum_takes_dim",
    "prototype_rank",
    "search_settings",
    "tolerance",
]


# ----------------------------------------------------------------------------------------------
# sizes and inputs
# ----------------------------------------------------------------------------------------------


def imbalanced_sizes(
    *, classes: int, majority: int, ratio: float, profile: str = "exponential"
) -> np.ndarray:
    r"""Class sizes with a given imbalance ratio :math:`n_{\max}/n_{\min}`.

    ``"exponential"`` (the long-tailed profile of Cui et al. 2019):
    :math:`n_c = \lfloor n_{\max}\, r^{-c/(K-1)} \rfloor`, :math:`c = 0..K-1`.
    ``"step"``: the first :math:`\lceil K/2 \rceil` classes of size :math:`n_{\max}`, the others
    :math:`\lfloor n_{\max}/r \rfloor`.

    Parameters
    ----------
    classes : int
        Number of classes :math:`K \ge 2`.
    majority : int
        Size of the largest class, :math:`\ge 2`.
    ratio : float
        Imbalance ratio :math:`r \ge 1`.
    profile : {"exponential", "step"}

    Returns
    -------
    ndarray of int64, shape (K,)

    Raises
    ------
    ValueError
        If an argument is out of range, or the smallest class would hold fewer than 2 samples.
    TypeError
        If ``classes`` or ``majority`` is not an integer.

    Examples
    --------
    >>> imbalanced_sizes(classes=5, majority=100, ratio=10).tolist()
    [100, 56, 31, 17, 10]
    >>> imbalanced_sizes(classes=4, majority=50, ratio=5, profile="step").tolist()
    [50, 50, 10, 10]
    """
    K = check_int(classes, "classes", minimum=2)
    n_max = check_int(majority, "majority", minimum=2)
    r = check_value("imbalance", ratio, "ratio")
    check_choice(profile, PROFILES, "profile")
    if profile == "exponential":
        x = n_max * r ** (-np.arange(K) / (K - 1))
    else:
        x = np.where(np.arange(K) < (K + 1) // 2, float(n_max), n_max / r)
    # floor, forgiving the last bit of a product that should be an integer (100 / 10 -> 10)
    sizes = np.floor(x * (1.0 + 4.0 * np.finfo(float).eps)).astype(np.int64)
    sizes[0] = n_max
    if sizes.min() < 2:
        raise ParameterError(
            "ratio", f"= {r:g} with majority = {n_max} gives a class of "
            f"{int(sizes.min())} sample(s); every class needs at least 2 (use a smaller ratio or "
            "a larger majority)"
        )
    return sizes


@dataclass(frozen=True, eq=False)
class DesignInput:
    """The validated input of the design tools, cell by cell (picklable: it travels to the
    workers): what a :class:`dgp.Problem` holds, in the form a cell evaluates, plus the
    tolerance, an imbalance sweep's sizes and the ``starts`` and ``seed`` of a cell's search
    in ``R^dim``."""

    rec: Objective | None
    labels: Labels | None
    weights: LogWeights | None
    similarity: str
    rtol: float
    classes: int | None = None
    majority: int | None = None
    profile: str = "exponential"
    search: Mapping[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return "weights" if self.rec is None else self.rec.name

    @property
    def is_class(self) -> bool:
        return self.rec is not None and self.rec.labels == "class"

    def labels_for(self, params: Mapping[str, Any]) -> Labels:
        if "imbalance" not in params:
            assert self.labels is not None
            return self.labels
        assert self.rec is not None and self.classes is not None and self.majority is not None
        sizes = imbalanced_sizes(classes=self.classes, majority=self.majority,
                                 ratio=params["imbalance"], profile=self.profile)
        # the labels are one integer per sample: a guard before np.repeat, not a MemoryError
        check_memory(3 * 8.0 * float(sizes.sum()), what=f"the labels of {int(sizes.sum())} "
                     "samples", hint="use a smaller majority (the geometry depends on ratios)")
        codes = np.repeat(np.arange(sizes.size), sizes)
        return Labels("class", codes, np.arange(sizes.size), sizes)

    def object_params(self, params: Mapping[str, Any]) -> dict[str, float]:
        assert self.rec is not None
        return self.rec.own_params(params)

    @property
    def cell_bytes(self) -> float:
        """The memory one cell of a dense weighting needs beside the problem itself: the
        engine's working copy of the log-weights and its temporaries (0 for a class objective
        or a sparse weighting, whose cells need no ``N x N`` array)."""
        if self.weights is None or self.weights.L is None:
            return 0.0
        return dense_weighting_bytes(self.weights.n)

    def classify(self, params: Mapping[str, Any]) -> Classification:
        tau, dim = params["tau"], params["dim"]
        if self.weights is not None:
            need = self.cell_bytes
            if need:
                n = self.weights.n
                check_memory(need, what=f"the working copy of the {n} x {n} log-weights for "
                             "one cell", hint="use fewer samples")
            w = self.weights.copy()  # the engine consumes its input
            tol = Tolerance.make(self.rtol, n=w.n, unit_roundoff=w.unit_roundoff)
            return classify_weights(w, similarity=self.similarity, tau=tau, dim=dim, tol=tol)
        assert self.rec is not None
        return classify_labels(self.rec, self.labels_for(params), self.object_params(params),
                               similarity=self.similarity, tau=tau, dim=dim, rtol=self.rtol)

    def dense_weights(self, params: Mapping[str, Any]) -> np.ndarray:
        if self.weights is not None:
            W = np.exp(self.weights.L)
            np.fill_diagonal(W, 0.0)
            return W
        assert self.rec is not None
        return self.rec.weights(self.labels_for(params), self.object_params(params))


def _similarity(value: object) -> str:
    return PARAMETER_CONSTRAINTS["similarity"].check(value, "similarity", None)


def make_problem(
    objective: object,
    labels: object,
    *,
    W: object,
    sizes: object,
    similarity: object,
    rtol: object,
    classes: object = None,
    majority: object = None,
    profile: object = "exponential",
    sweeps_imbalance: bool = False,
) -> DesignInput:
    """Validate one of the input modes: a weight matrix ``W``; an objective with labels; a class
    objective with ``sizes``; a class objective whose sizes come from ``classes``, ``majority``
    and a swept imbalance ratio."""
    Tolerance.make(rtol)
    if W is not None:
        for name, value in (("objective", objective), ("labels", labels), ("sizes", sizes)):
            if value is not None:
                raise ParameterError(name, "cannot be combined with a weight matrix W (give an "
                                     "objective with labels, or W)")
        if sweeps_imbalance:
            raise ParameterError("grid", "sweeps imbalance, which needs a class objective, not a "
                                 "weight matrix W")
        sim = "cosine" if similarity is None else _similarity(similarity)
        weights = canonical_log_weights(W)
        if weights.L is not None:  # alive for the whole command, beside every cell's copy
            hold(weights.L.nbytes, "the validated log-weights")
        return DesignInput(None, None, weights, sim, float(rtol))
    if objective is None:
        raise ParameterError("objective", "is missing: give an objective (with labels, or sizes "
                             "for supcon / soft-supcon) or a weight matrix W")
    rec = registry.get(objective)
    sim = rec.similarity if similarity is None else _similarity(similarity)
    if rec.labels != "class":
        for name, value in (("sizes", sizes), ("classes", classes), ("majority", majority)):
            if value is not None:
                raise ParameterError(name, f"applies to the class objectives (supcon, "
                                     f"soft-supcon), not to {rec.name!r}; give labels")
        if sweeps_imbalance:
            raise ParameterError("grid", f"sweeps imbalance, which applies to the class "
                                 f"objectives (supcon, soft-supcon), not to {rec.name!r}")
        if labels is None:
            raise ParameterError("labels", f"are missing: objective {rec.name!r} needs an N x p "
                                 "array of labels")
        return DesignInput(rec, rec.check_labels(labels), None, sim, float(rtol))
    if sweeps_imbalance:
        for name, value in (("labels", labels), ("sizes", sizes)):
            if value is not None:
                raise ParameterError(name, "cannot be combined with an imbalance sweep (its sizes "
                                     "come from classes, majority and the ratio)")
        if classes is None or majority is None:
            missing = "classes" if classes is None else "majority"
            raise ParameterError(missing, "is missing: an imbalance sweep needs the number of "
                                 "classes and the size of the largest class")
        check_int(classes, "classes", minimum=2)
        check_int(majority, "majority", minimum=2)
        check_choice(profile, PROFILES, "profile")
        return DesignInput(rec, None, None, sim, float(rtol), int(classes), int(majority),
                           str(profile))
    for name, value in (("classes", classes), ("majority", majority)):
        if value is not None:
            raise ParameterError(name, "applies only to an imbalance sweep (grid with "
                                 "'imbalance'); give labels or sizes")
    if (labels is None) == (sizes is None):
        raise ParameterError("labels", f"or sizes: give exactly one for objective {rec.name!r} "
                             "(class labels, or the class sizes n_1..n_K)")
    if sizes is not None:
        n = PARAMETER_CONSTRAINTS["sizes"].check(sizes, "sizes", rec)
        check_memory(3 * 8.0 * float(n.sum()), what=f"the labels of {int(n.sum())} samples",
                     hint="give smaller class sizes (the geometry depends on their ratios)")
        lab = Labels("class", np.repeat(np.arange(n.size), n), np.arange(n.size), n)
    else:
        lab = rec.check_labels(labels)
    return DesignInput(rec, lab, None, sim, float(rtol))


def design_input(
    first: object,
    labels: object,
    *,
    W: object,
    sizes: object,
    similarity: object,
    rtol: float,
    entry: str,
    given: Mapping[str, object],
    search: Mapping[str, int] | None = None,
    **sweep: Any,
) -> tuple[DesignInput, dict[str, object]]:
    """The input of a design tool and its parameters ``given`` (``tau`` and the objective's):
    from a :class:`dgp.Problem` given first (its fields merged with the keywords, the other
    inputs refused), or from the older call forms (:func:`make_problem`; ``sweep`` holds its
    imbalance-sweep arguments).

    Raises
    ------
    InvalidParameterError
        As :func:`make_problem`; for an input given beside a Problem, a keyword that
        contradicts it, a Problem with a mini-batch spec, or an imbalance sweep of a Problem.
    """
    if not isinstance(first, Problem):
        inp = make_problem(first, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol,
                           **sweep)
        return replace(inp, search=dict(search or {})), dict(given)
    for name, value in (("labels", labels), ("W", W), ("sizes", sizes),
                        ("classes", sweep.get("classes")), ("majority", sweep.get("majority"))):
        if value is not None:
            raise InvalidParameterError(name, "cannot be combined with a Problem (it holds its "
                                        "weighting, labels or sizes)")
    if sweep.get("sweeps_imbalance"):
        raise InvalidParameterError("grid", "sweeps imbalance, whose sizes come from classes, "
                                    "majority and the ratio: give objective=... with classes= "
                                    "and majority= instead of a Problem")
    refuse_batch(first, entry)
    merged(first, "similarity", similarity)
    params = {k: merged(first, k, v) for k, v in given.items()}
    weights = first.weighting
    if weights is not None:
        if weights.pairs is not None:  # the cells run the dense engine, as for a dense W
            weights = weights.dense()
        hold(weights.L.nbytes, "the validated log-weights")
        inp = DesignInput(None, None, weights, first.similarity, float(rtol))
    else:
        inp = DesignInput(first.record, first.labels_for_solver(), None, first.similarity,
                          float(rtol))
    return replace(inp, search=dict(search or {})), params


def tolerance(tol: object, rtol: object) -> float:
    """The relative tolerance of a design tool: ``tol``, or its deprecated alias ``rtol``.

    Raises
    ------
    InvalidParameterError
        If it is not a number in ``(0, 1)``, or both are given.
    """
    value, name = tol_keyword(tol, rtol, DEFAULT_RTOL, stacklevel=4)
    return check_rtol(value, name)


def search_settings(starts: object, seed: object) -> dict[str, int]:
    """The ``starts`` and ``seed`` given for a search in ``R^dim`` (:func:`dgp.optimum`'s
    defaults for the ones not given).

    Raises
    ------
    InvalidParameterError
        If one is not an integer ``>= 0``.
    """
    return {name: check_int(value, name, minimum=0)
            for name, value in (("starts", starts), ("seed", seed)) if value is not None}


def fixed_parameters(problem: DesignInput, given: Mapping[str, object], swept: Sequence[str],
           needed: Sequence[str], *, grid: bool = False) -> dict[str, float | int]:
    """The fixed parameters: every needed one given or swept, none both, none foreign.

    ``swept`` are the parameters the caller varies (a phase map's grid, with ``grid=True``) or
    finds (``recommend``); a missing one is asked for in those words."""
    takes = set(needed)
    out: dict[str, float | int] = {}
    for name, value in given.items():
        if value is None:
            continue
        if name in swept:
            raise ParameterError(name, f"is both fixed (= {describe(value)}) and swept by the "
                                 "grid; give it once")
        if name not in takes:
            raise ParameterError(name, f"does not apply to {describe_input(problem)} (it takes "
                                 f"{', '.join(sorted(takes))})")
        out[name] = check_value(name, value)
    for name in needed:
        if name not in out and name not in swept:
            how = "fixed or in the grid" if grid else "give its value"
            raise ParameterError(name, f"is missing: {describe_input(problem)} needs it ({how})")
    return out


def describe_input(problem: DesignInput) -> str:
    """The input in words, for messages."""
    return "a weight matrix" if problem.rec is None else f"objective {problem.rec.name!r}"


def needed_parameters(problem: DesignInput) -> tuple[str, ...]:
    """The parameters a cell of this input needs (``tau``, ``dim`` and the objective's)."""
    return ("tau", "dim") + (() if problem.rec is None else problem.rec.params)


# ----------------------------------------------------------------------------------------------
# one cell
# ----------------------------------------------------------------------------------------------


def optimum_takes_dim() -> bool:
    """Whether ``dgp.optimum`` accepts ``dim`` (the optimum in R^d, not only the free
    one); until it does, excess losses of general weightings are not computed."""
    from dgp.optima import optimum

    return "dim" in inspect.signature(optimum).parameters


def prototype_rank(G: np.ndarray) -> int:
    """Numerical rank of a prototype Gram, by the one rank rule of the tolerance policy
    (:meth:`dgp.tolerance.Tolerance.rank`, as the KKT certificate of :mod:`dgp.prototypes`
    counts them)."""
    return DEFAULT_POLICY.rank(np.linalg.eigvalsh(0.5 * (G + G.T)))


def cell_prototypes_in_dim(problem: DesignInput, params: Mapping[str, Any]):
    """The class prototypes of a cell in ``R^dim`` (:func:`dgp.supcon_prototypes` with the
    cell's ``dim`` and the problem's ``starts`` and ``seed``), for a cell whose free optimum
    (:func:`cell_prototypes`, whose checks it passed) does not fit."""
    from dgp.prototypes import supcon_prototypes

    assert problem.rec is not None
    return supcon_prototypes(problem.labels_for(params).sizes, tau=params["tau"],
                             eps=problem.rec.prototype_eps(params), dim=params["dim"],
                             identifiability=False, progress=False, **problem.search)


def cell_prototypes(problem: DesignInput, params: Mapping[str, Any]):
    """The optimal class prototypes of a cell, or the code saying why there are none."""
    from dgp.prototypes import supcon_prototypes

    sizes = problem.labels_for(params).sizes
    assert sizes is not None
    if sizes.min() < 2:
        return None, "not-computed-singletons"
    assert problem.rec is not None
    eps = problem.rec.prototype_eps(params)
    tau = params["tau"]
    balanced = bool((sizes == sizes[0]).all())
    if eps is not None and balanced and 1.0 + tau * math.log(eps) < -1.0 / (sizes.size - 1):
        return balanced_soft_supcon_simplex(sizes, tau=tau, eps=eps), "prototypes"
    if tau < PROTOTYPES_TAU_MIN and not (eps is None and balanced):
        return None, "not-computed-tau"
    if tau > SOLVER_TAU_MAX and not (eps is None and sizes.size == 2):  # a flat loss (solver)
        return None, "not-computed-tau"
    # a map reports no loss gap to the simplex: not computed
    return supcon_prototypes(sizes, tau=tau, eps=eps, identifiability=False), "prototypes"


def closed_form_boundary(problem: DesignInput, fixed: Mapping[str, Any],
              first: Mapping[str, Any]) -> Boundary | None:
    """The closed-form boundary of the problem, when one exists and its hypotheses hold."""
    rec = problem.rec
    if rec is None or problem.similarity != "cosine":
        return None
    if rec.boundary == "simplex":
        K = problem.classes if problem.labels is None else int(problem.labels.sizes.size)
        if problem.labels is not None and problem.labels.sizes.min() < 2:
            return None  # tau* assumes every class has a positive pair
        n = 0 if problem.labels is None else problem.labels.n
        return Boundary("tau*", f"tau* = K / ((K - 1)(-log eps)), K = {K}: the target is the "
                        "centred regular simplex at tau*, realizable in dim >= K below it, "
                        "inconsistent above it", {"K": K}, K, n)
    if rec.boundary != "sphere":
        return None
    lab = problem.labels
    assert lab is not None
    fit = label_sphere(rec.weighting.points(lab), rtol=problem.rtol)
    if not on_label_sphere(fit, problem.rtol):
        return None
    R, m = float(fit.radius), int(fit.affine_dim)
    what = rec.weighting.symbol
    return Boundary(f"tau R^2 = {what}", f"tau R^2 = {what}, R = {R:.6g} (labels on a sphere in "
                    f"an affine hull of dimension m = {m}): realizable in dim >= m + 1 = {m + 1} "
                    f"below, inconsistent above (N >= dim + m + 3)", {"R": R, "m": m}, m + 1,
                    lab.n)


