r"""Design tools: phase maps over a grid of parameters, inverse questions answered with
certificates, and the loss floors that explain a training curve's plateau.

Three questions users ask before they train, answered from the same engine as
:func:`dgp.classify`:

* :func:`phase` — the verdict (realizable, degenerate, inconsistent), the rank, the ends of the
  ``c`` interval and, where the bound cannot be attained, the excess loss of the optimum, on a
  grid of one or two parameters: :math:`(\tau, \varepsilon)` for Soft SupCon,
  :math:`(\tau, \sigma)` for y-Aware and Euclidean–Euclidean, :math:`(\tau, \tau_y)` for X-CLR,
  :math:`(\tau, \text{imbalance ratio})` for SupCon, :math:`(\tau, d)` for any weighting. Where a
  closed form exists the exact boundary is computed, drawn over the grid and checked cell by
  cell (:class:`Boundary`):

  .. math::

      \text{Soft SupCon: } \tau^* = \frac{K}{(K-1)(-\log\varepsilon)}, \qquad
      \text{y-Aware (labels on a sphere of radius } R\text{): } \tau R^2 = \sigma^2, \qquad
      \text{X-CLR: } \tau R^2 = \tau_y .

  Cells are independent, so a sweep runs in parallel through joblib (``jobs``) or on a Dask
  cluster (``scheduler``); each cell is computed with one BLAS thread, so the map is the same
  bit for bit whichever runs it.
* :func:`recommend` — the inverse questions: the largest :math:`\tau` at which a weighting stays
  realizable in :math:`\mathbb R^d`; the :math:`\tau` (or :math:`\varepsilon`) at which Soft
  SupCon's target is the centred regular simplex; the largest :math:`\tau` keeping every
  minority-pair prototype cosine below a threshold; the smallest :math:`d` attaining the bound.
  Each answer is found by a scan and a bisection on the engine's own verdicts and comes with a
  certificate: the verdicts (or cosines) on both sides of the returned value, and the closed
  form where one exists.
* :func:`loss_floors` — for an objective and sizes, the optimal loss (the floor a training
  curve cannot cross), the loss of the collapsed configuration (every embedding at one point)
  and the expected loss of a random embedding, per anchor in the reduction conventions of
  pytorch-metric-learning's ``SupConLoss`` and of the SupContrast reference (base temperature
  included).

Excess loss of the optimum, where the bound is not attained in :math:`\mathbb R^d`
(:data:`EXCESS_SOURCES`): for SupCon and Soft SupCon, from the certified class prototypes of
:func:`dgp.supcon_prototypes` whenever their rank fits in :math:`d`; for other cosine weightings
from ``dgp.optimum.optimum(W, tau=..., dim=...)`` once it accepts a dimension; otherwise the cell
says it is not computed and why, rather than reporting a number that may be wrong.
"""

from __future__ import annotations

import html
import inspect
import itertools
import math
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgp.engine.pipeline import classify_weights
from dgp.engine.target import LogWeights
from dgp.engine.target import log_weights as canonical_log_weights
from dgp.engine.tolerance import DEFAULT_RTOL, Tolerance
from dgp.errors import (
    ParameterError,
    ParameterTypeError,
    check_choice,
    check_dim,
    check_int,
    check_positive,
    check_sizes,
    check_unit_interval,
    describe,
)
from dgp.infonce import SIMILARITIES
from dgp.objectives import registry
from dgp.objectives.classify import classify_labels
from dgp.objectives.registry import Labels, Objective
from dgp.result import Classification

__all__ = [
    "CONVENTIONS",
    "EXCESS_SOURCES",
    "GRID_PARAMETERS",
    "PROFILES",
    "WANTS",
    "Boundary",
    "LossFloors",
    "PhaseMap",
    "Recommendation",
    "balanced_soft_supcon_simplex",
    "imbalanced_sizes",
    "loss_floors",
    "parse_want",
    "phase",
    "recommend",
]

#: parameters a phase map can sweep (``imbalance``: the ratio of the largest class size to the
#: smallest, for the class objectives)
GRID_PARAMETERS = ("tau", "dim", "eps", "sigma", "label_tau", "imbalance")
#: how :func:`imbalanced_sizes` spreads the class sizes
PROFILES = ("exponential", "step")
#: the questions :func:`recommend` answers (``minority-cosine<=X`` takes a threshold)
WANTS = ("realizable", "simplex", "minority-cosine<=X", "min-dim")
#: reduction conventions of a per-anchor loss (:class:`LossFloors`)
CONVENTIONS = ("sum", "pml", "supcontrast")
#: largest number of cells of one map
MAX_CELLS = 1_000_000
#: largest N for which the general optimum (``dgp.optimum.optimum``) is asked for
GENERAL_OPTIMUM_MAX_N = 300
#: ``dgp.supcon_prototypes`` documents that its certified solver refuses ``tau < 0.004``
PROTOTYPES_TAU_MIN = 4e-3
#: SupContrast's default base temperature (``SupConLoss(temperature=0.07, base_temperature=0.07)``)
SUPCONTRAST_BASE_TEMPERATURE = 0.07

#: what each cell's ``excess_source`` means
EXCESS_SOURCES = {
    "attained": "the entropic bound is attained (or approached) in R^dim: the excess is 0",
    "prototypes": "loss of the optimal class prototypes (dgp.supcon_prototypes: closed form or "
    "certified solver) minus the bound; their rank fits in dim",
    "optimum": "dgp.optimum.optimum(W, tau, dim): the optimum in R^dim minus the bound",
    "not-computed-dim": "the free optimum (class prototypes) has rank above dim; the optimum in "
    "R^dim is not computed",
    "not-computed-solver": "not computed: this version of dgp.optimum.optimum has no dim "
    "argument, so no certified optimum in R^dim is available for this weighting",
    "not-computed-euclidean": "not computed: there is no optimum solver for the Euclidean latent",
    "not-computed-size": f"not computed: N > {GENERAL_OPTIMUM_MAX_N} for the general optimum",
    "not-computed-tau": f"not computed: tau < {PROTOTYPES_TAU_MIN}, below the range of the "
    "certified prototype solver",
    "not-computed-singletons": "not computed: a singleton class has no prototype problem",
    "skipped": "not asked for (excess=False)",
}

_OBJECTIVE_PARAMS = ("eps", "sigma", "label_tau")


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
    r = _check_value("imbalance", ratio, "ratio")
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
class _Problem:
    """A validated input of the design tools (picklable: it travels to the workers)."""

    rec: Objective | None
    labels: Labels | None
    weights: LogWeights | None
    similarity: str
    rtol: float
    classes: int | None = None
    majority: int | None = None
    profile: str = "exponential"

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
        codes = np.repeat(np.arange(sizes.size), sizes)
        return Labels("class", codes, np.arange(sizes.size), sizes)

    def object_params(self, params: Mapping[str, Any]) -> dict[str, float]:
        assert self.rec is not None
        return self.rec.check_params(**{p: params.get(p) for p in self.rec.params})

    def classify(self, params: Mapping[str, Any]) -> Classification:
        tau, dim = params["tau"], params["dim"]
        if self.weights is not None:
            w = replace(self.weights, L=self.weights.L.copy())  # the engine consumes its input
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


def _problem(
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
) -> _Problem:
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
        sim = "cosine" if similarity is None else check_choice(similarity, SIMILARITIES,
                                                               "similarity")
        return _Problem(None, None, canonical_log_weights(W), sim, float(rtol))
    if objective is None:
        raise ParameterError("objective", "is missing: give an objective (with labels, or sizes "
                             "for supcon / soft-supcon) or a weight matrix W")
    rec = registry.get(objective)
    sim = rec.similarity if similarity is None else check_choice(similarity, SIMILARITIES,
                                                                  "similarity")
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
        return _Problem(rec, rec.check_labels(labels), None, sim, float(rtol))
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
        return _Problem(rec, None, None, sim, float(rtol), int(classes), int(majority),
                        str(profile))
    for name, value in (("classes", classes), ("majority", majority)):
        if value is not None:
            raise ParameterError(name, "applies only to an imbalance sweep (grid with "
                                 "'imbalance'); give labels or sizes")
    if (labels is None) == (sizes is None):
        raise ParameterError("labels", f"or sizes: give exactly one for objective {rec.name!r} "
                             "(class labels, or the class sizes n_1..n_K)")
    if sizes is not None:
        n = check_sizes(sizes, min_size=rec.min_class_size)
        lab = Labels("class", np.repeat(np.arange(n.size), n), np.arange(n.size), n)
    else:
        lab = rec.check_labels(labels)
    return _Problem(rec, lab, None, sim, float(rtol))


def _check_value(name: str, value: object, label: str | None = None) -> float | int:
    """Validate one value of a parameter; errors name ``label`` (default: the parameter)."""
    label = name if label is None else label
    if name == "dim":
        return check_dim(value, label)
    if name == "eps":
        return check_unit_interval(value, label)
    if name == "imbalance":
        v = check_positive(value, label)
        if v < 1.0:
            raise ParameterError(label, f"is the ratio n_max / n_min and must be >= 1, got "
                                 f"{describe(value)}")
        return v
    return check_positive(value, label)


def _fixed(problem: _Problem, given: Mapping[str, object], swept: Sequence[str],
           needed: Sequence[str]) -> dict[str, float | int]:
    """The fixed parameters: every needed one given or swept, none both, none foreign."""
    takes = set(needed)
    out: dict[str, float | int] = {}
    for name, value in given.items():
        if value is None:
            continue
        if name in swept:
            raise ParameterError(name, f"is both fixed (= {describe(value)}) and swept by the "
                                 "grid; give it once")
        if name not in takes:
            raise ParameterError(name, f"does not apply to {_what(problem)} (it takes "
                                 f"{', '.join(sorted(takes))})")
        out[name] = _check_value(name, value)
    for name in needed:
        if name not in out and name not in swept:
            raise ParameterError(name, f"is missing: {_what(problem)} needs it, fixed or in the "
                                 "grid")
    return out


def _what(problem: _Problem) -> str:
    return "a weight matrix" if problem.rec is None else f"objective {problem.rec.name!r}"


def _needed(problem: _Problem) -> tuple[str, ...]:
    return ("tau", "dim") + (() if problem.rec is None else problem.rec.params)


# ----------------------------------------------------------------------------------------------
# one cell
# ----------------------------------------------------------------------------------------------


def _optimum_takes_dim() -> bool:
    """Whether ``dgp.optimum.optimum`` accepts ``dim`` (the optimum in R^d, not only the free
    one); until it does, excess losses of general weightings are not computed."""
    from dgp.optimum import optimum

    return "dim" in inspect.signature(optimum).parameters


def _prototype_rank(G: np.ndarray) -> int:
    lam = np.linalg.eigvalsh(0.5 * (G + G.T))
    return int(np.sum(lam > 1e-9 * max(1.0, float(lam[-1]))))


def _prototypes(problem: _Problem, params: Mapping[str, Any]):
    """The optimal class prototypes of a cell, or the code saying why there are none."""
    from dgp.prototypes import supcon_prototypes

    sizes = problem.labels_for(params).sizes
    assert sizes is not None
    if sizes.min() < 2:
        return None, "not-computed-singletons"
    eps = params.get("eps") if problem.name == "soft-supcon" else None
    tau = params["tau"]
    balanced = bool((sizes == sizes[0]).all())
    if eps is not None and balanced and 1.0 + tau * math.log(eps) < -1.0 / (sizes.size - 1):
        return balanced_soft_supcon_simplex(sizes, tau=tau, eps=eps), "prototypes"
    if tau < PROTOTYPES_TAU_MIN and not (eps is None and balanced):
        return None, "not-computed-tau"
    return supcon_prototypes(sizes, tau=tau, eps=eps), "prototypes"


def balanced_soft_supcon_simplex(sizes: object, *, tau: float, eps: float):
    r"""The optimal prototypes of Soft SupCon with equal class sizes past :math:`\tau^*`: the
    centred regular simplex.

    The prototype objective :math:`F` (:mod:`dgp.prototypes`) is convex on the elliptope and,
    with equal sizes, invariant under permutations of the classes, so the average of the
    permuted copies of a minimiser is an equiangular minimiser,
    :math:`G = (1-\rho)I + \rho 11^\top`, :math:`\rho \in [-1/(K-1), 1]`. Along that line
    :math:`F(\rho)` is convex, and :math:`F \ge \sum_i H(p_i)` (Gibbs) with equality at
    :math:`\rho_0 = 1 + \tau\log\varepsilon`, so :math:`\rho_0` is its minimiser over all
    real :math:`\rho`. Past :math:`\tau^*`, :math:`\rho_0 < -1/(K-1)`: :math:`F` increases on
    the feasible segment and its minimum is the simplex :math:`\rho = -1/(K-1)`. Tested
    against the certified solver of :func:`dgp.supcon_prototypes`.

    Returns
    -------
    dgp.prototypes.Prototypes
        ``method="closed-form"``.

    Raises
    ------
    ValueError
        If the sizes are not equal or :math:`\tau \le \tau^*`.
    """
    from dgp._linalg import simplex_gram
    from dgp.prototypes import Prototypes, entropic_bound_prototypes, prototype_loss

    n = check_sizes(sizes)
    tau = check_positive(tau, "tau")
    eps = check_unit_interval(eps, "eps")
    K = n.size
    if not (n == n[0]).all():
        raise ParameterError("sizes", f"must be equal for the closed form, got {n.tolist()}")
    if 1.0 + tau * math.log(eps) >= -1.0 / (K - 1):
        raise ParameterError("tau", f"= {tau:g} is not above tau* = "
                             f"{K / ((K - 1) * -math.log(eps)):.6g}, where the optimum attains "
                             "the bound (use dgp.supcon_prototypes)")
    G = simplex_gram(K)
    loss = prototype_loss(G, n, tau=tau, eps=eps)
    bound = entropic_bound_prototypes(n, eps=eps)
    return Prototypes(gram=G, loss=loss, method="closed-form", kkt_residual=None,
                      objective="soft-supcon", sizes=tuple(int(v) for v in n), tau=tau, eps=eps,
                      entropic_bound=bound, excess_loss=loss - bound)


def _evaluate(problem: _Problem, params: Mapping[str, Any], excess: bool) -> dict[str, Any]:
    """Everything a phase map reports about one cell (plain JSON values)."""
    res = problem.classify(params)
    cell: dict[str, Any] = dict(params)
    cell.update(
        verdict=res.verdict,
        rank=res.rank,
        c_interval=None if res.c_interval is None else list(res.c_interval),
        near_threshold=res.near_threshold,
        min_dim=res.min_dim,
    )
    value: float | None = None
    source = "skipped"
    max_cos: float | None = None
    protos = None
    if problem.is_class:
        protos, code = _prototypes(problem, params)
        if protos is not None and _prototype_rank(protos.gram) > params["dim"]:
            protos, code = None, "not-computed-dim"
        if protos is not None:
            K = protos.gram.shape[0]
            max_cos = float(protos.gram[~np.eye(K, dtype=bool)].max())
    if excess:
        if res.verdict != "inconsistent":
            value, source = 0.0, "attained"
        elif problem.is_class:
            source = code
            value = None if protos is None else float(protos.excess_loss)
        elif res.similarity != "cosine":
            source = "not-computed-euclidean"
        elif res.n > GENERAL_OPTIMUM_MAX_N:
            source = "not-computed-size"
        elif not _optimum_takes_dim():
            source = "not-computed-solver"
        else:
            from dgp.optimum import optimum

            opt = optimum(problem.dense_weights(params), tau=params["tau"], dim=params["dim"])
            value, source = float(opt.loss - opt.entropic_bound), "optimum"
    cell["excess_loss"] = value
    cell["excess_source"] = source
    if problem.is_class:
        cell["max_cosine"] = max_cos
    return cell


def _run_chunk(problem: _Problem, chunk: list[dict[str, Any]], excess: bool) -> list[dict]:
    """The cells of one task, each with one BLAS thread: the same bits whichever process or
    machine runs it, and no oversubscription when several workers share a machine."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return [_evaluate(problem, params, excess) for params in chunk]


# ----------------------------------------------------------------------------------------------
# running a sweep: serial, joblib, Dask
# ----------------------------------------------------------------------------------------------


class _Progress:
    """A one-line progress report on stderr (only when asked for)."""

    def __init__(self, total: int, enabled: bool, what: str) -> None:
        self.total, self.enabled, self.what = total, enabled, what
        self.done = 0
        self.start = time.perf_counter()
        self.last = 0.0

    def update(self, k: int) -> None:
        self.done += k
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < 0.2 and self.done < self.total:
            return
        self.last = now
        frac = self.done / max(1, self.total)
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r{self.what}: [{bar:<30}] {self.done}/{self.total} "
                         f"({now - self.start:.1f} s)")
        if self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _chunks(items: list, n_chunks: int) -> list[list]:
    n_chunks = max(1, min(len(items), n_chunks))
    bounds = np.linspace(0, len(items), n_chunks + 1).round().astype(int)
    return [items[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _require_joblib():
    try:
        import joblib
    except ImportError as exc:
        raise ImportError("parallel sweeps (jobs > 1, scheduler) need joblib: pip install "
                          "joblib, or pip install \"dgp-contrastive[dask]\"") from exc
    return joblib


def _require_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError("scheduler needs Dask's distributed scheduler: pip install "
                          "\"dgp-contrastive[dask]\"") from exc
    return distributed


def _check_jobs(jobs: object) -> int:
    if isinstance(jobs, bool) or not isinstance(jobs, int | np.integer) or (
            jobs != -1 and jobs < 1):
        raise ParameterError("jobs", f"must be an integer >= 1, or -1 for every core; got "
                             f"{describe(jobs)}")
    return int(jobs)


def _check_scheduler(scheduler: object) -> str | None:
    if scheduler is None:
        return None
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ParameterError("scheduler", f"must be 'local' or a Dask scheduler address such as "
                             f"'tcp://HOST:8786', got {describe(scheduler)}")
    text = scheduler.strip()
    if text != "local" and "://" not in text and ":" not in text:
        raise ParameterError("scheduler", f"must be 'local' or a Dask scheduler address such as "
                             f"'tcp://HOST:8786', got {describe(scheduler)}")
    return text


def _map_cells(problem: _Problem, cells: list[dict], *, excess: bool, jobs: int,
               scheduler: str | None, progress: bool, what: str) -> list[dict]:
    """Evaluate every cell, in order: serially, with joblib's process pool, or on Dask."""
    bar = _Progress(len(cells), progress, what)
    out: list[dict] = []
    if jobs == 1 and scheduler is None:
        for chunk in _chunks(cells, max(1, len(cells) // 50)):
            out += _run_chunk(problem, chunk, excess)
            bar.update(len(chunk))
        return out
    joblib = _require_joblib()
    if scheduler is None:
        workers = joblib.cpu_count() if jobs == -1 else jobs
        chunks = _chunks(cells, 8 * workers)
        run = joblib.Parallel(n_jobs=jobs, return_as="generator")
        for part in run(joblib.delayed(_run_chunk)(problem, ch, excess) for ch in chunks):
            out += part
            bar.update(len(part))
        return out
    distributed = _require_distributed()
    cluster = None
    if scheduler == "local":
        import logging

        cluster = distributed.LocalCluster(
            n_workers=2 if jobs == 1 else (joblib.cpu_count() if jobs == -1 else jobs),
            threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
            silence_logs=logging.ERROR,
        )
        address = cluster.scheduler_address
    else:
        address = scheduler
    try:
        try:
            client = distributed.Client(address, timeout="20s")
        except OSError as exc:  # unreachable address, refused connection, timeout
            raise ParameterError("scheduler", f"{address!r}: cannot connect to a Dask scheduler "
                                 f"there ({exc})") from None
        with client:
            workers = max(1, len(client.scheduler_info().get("workers", {})))
            chunks = _chunks(cells, 8 * workers)
            with joblib.parallel_config(backend="dask", scatter=[problem]):
                run = joblib.Parallel(return_as="generator")
                for part in run(joblib.delayed(_run_chunk)(problem, ch, excess)
                                for ch in chunks):
                    out += part
                    bar.update(len(part))
    finally:
        if cluster is not None:
            cluster.close()
    return out


# ----------------------------------------------------------------------------------------------
# closed-form boundaries
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Boundary:
    r"""A closed-form phase boundary drawn over a map and checked against its cells.

    The bound is attainable on one side only: :math:`\tau < \tau_c` (with enough dimensions)
    attains it, :math:`\tau > \tau_c` does not. ``tau_c`` depends on the other parameters.

    Attributes
    ----------
    name : str
        ``"tau*"`` (Soft SupCon), ``"tau R^2 = sigma^2"`` (y-Aware), ``"tau R^2 = tau_y"``
        (X-CLR).
    formula : str
        The closed form, with its constants.
    constants : dict
        ``K`` (Soft SupCon); ``R`` (sphere radius) and ``m`` (affine dimension) otherwise.
    dim_needed : int
        Dimension needed below the boundary (``K``, or ``m + 1``).
    n : int
        Number of samples (y-Aware and X-CLR: the closed form needs :math:`N \ge d + m + 3`).
    agree, disagree, skipped : int
        Cells whose verdict agrees with the closed form, disagrees, and cells not predicted
        (within ``1e-9`` relative of the boundary, or outside the theorem's hypotheses).
    mismatches : tuple of dict
        The first disagreeing cells (parameters, verdict, prediction).
    """

    name: str
    formula: str
    constants: dict[str, float]
    dim_needed: int
    n: int
    agree: int = 0
    disagree: int = 0
    skipped: int = 0
    mismatches: tuple[dict[str, Any], ...] = ()

    def tau_c(self, params: Mapping[str, float]) -> float:
        """The critical temperature at the other parameters of a cell."""
        if self.name == "tau*":
            K = self.constants["K"]
            return K / ((K - 1.0) * -math.log(params["eps"]))
        R2 = self.constants["R"] ** 2
        width2 = params["sigma"] ** 2 if "sigma" in params else params["label_tau"]
        return width2 / R2

    def other_c(self, tau: float) -> tuple[str, float]:
        """The critical value of the objective's parameter at temperature ``tau``."""
        if self.name == "tau*":
            K = self.constants["K"]
            return "eps", math.exp(-K / ((K - 1.0) * tau))
        R = self.constants["R"]
        if self.name.endswith("sigma^2"):
            return "sigma", R * math.sqrt(tau)
        return "label_tau", tau * R * R

    def predicts(self, params: Mapping[str, float]) -> bool | None:
        """Whether the closed form says the bound is attainable at a cell (``None``: no
        prediction, on the boundary or outside the hypotheses)."""
        if self.name != "tau*" and self.n < params["dim"] + self.constants["m"] + 3:
            return None
        ratio = params["tau"] / self.tau_c(params)
        if abs(ratio - 1.0) <= 1e-9:
            return None
        if ratio > 1.0:
            return False
        return params["dim"] >= self.dim_needed

    def checked(self, cells: Sequence[Mapping[str, Any]]) -> Boundary:
        """This boundary with its agreement counted over ``cells``."""
        agree = disagree = skipped = 0
        bad: list[dict[str, Any]] = []
        for cell in cells:
            pred = self.predicts(cell)
            if pred is None:
                skipped += 1
                continue
            got = cell["verdict"] != "inconsistent"
            if got == pred:
                agree += 1
            else:
                disagree += 1
                if len(bad) < 10:
                    bad.append({k: cell[k] for k in (*GRID_PARAMETERS, "verdict") if k in cell}
                               | {"predicted_attainable": pred})
        return replace(self, agree=agree, disagree=disagree, skipped=skipped,
                       mismatches=tuple(bad))

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields."""
        return {
            "name": self.name, "formula": self.formula, "constants": dict(self.constants),
            "dim_needed": self.dim_needed,
            "check": {"agree": self.agree, "disagree": self.disagree, "skipped": self.skipped,
                      "mismatches": list(self.mismatches)},
        }


def _boundary(problem: _Problem, fixed: Mapping[str, Any],
              first: Mapping[str, Any]) -> Boundary | None:
    """The closed-form boundary of the problem, when one exists and its hypotheses hold."""
    rec = problem.rec
    if rec is None or problem.similarity != "cosine":
        return None
    if rec.name == "soft-supcon":
        K = problem.classes if problem.labels is None else int(problem.labels.sizes.size)
        if problem.labels is not None and problem.labels.sizes.min() < 2:
            return None  # tau* assumes every class has a positive pair
        n = 0 if problem.labels is None else problem.labels.n
        return Boundary("tau*", f"tau* = K / ((K - 1)(-log eps)), K = {K}: the target is the "
                        "centred regular simplex at tau*, realizable in dim >= K below it, "
                        "inconsistent above it", {"K": K}, K, n)
    if rec.name not in ("y-aware", "x-clr"):
        return None
    from dgp.objectives.conditions import gaussian_explanation

    lab = problem.labels
    assert lab is not None
    points = rec.kernel(lab, problem.object_params({**fixed, **first})).points
    ex = gaussian_explanation(points, width2=1.0, tau=1.0, dim=1, similarity="cosine",
                              rtol=4.0 * float(np.finfo(float).eps), objective=rec.name)
    if not ex.details.get("on_sphere"):
        return None
    R = float(ex.details["sphere"]["radius"])
    m = int(ex.details["affine_dim"])
    what = "sigma^2" if rec.name == "y-aware" else "tau_y"
    return Boundary(f"tau R^2 = {what}", f"tau R^2 = {what}, R = {R:.6g} (labels on a sphere in "
                    f"an affine hull of dimension m = {m}): realizable in dim >= m + 1 = {m + 1} "
                    f"below, inconsistent above (N >= dim + m + 3)", {"R": R, "m": m}, m + 1,
                    lab.n)


# ----------------------------------------------------------------------------------------------
# phase maps
# ----------------------------------------------------------------------------------------------


_FRAME_COLUMNS = ("verdict", "rank", "c_lo", "c_hi", "excess_loss", "excess_source",
                  "near_threshold", "min_dim")


@dataclass(frozen=True, eq=False)
class PhaseMap:
    """A verdict map over a grid of parameters (:func:`phase`).

    One return type, whatever is installed: :meth:`to_frame` gives a pandas DataFrame (pandas
    needed), :meth:`to_arrays` a dict of numpy arrays (no dependency), :meth:`to_dict` the JSON
    of ``dgp phase --json``, :meth:`to_csv` a CSV file, :meth:`figure` a figure.

    Attributes
    ----------
    objective : str
        The objective's name, or ``"weights"`` for a weight matrix.
    params : tuple of str
        The swept parameters, in grid order (the first varies slowest).
    axes : dict of str to ndarray
        The values of each swept parameter.
    fixed : dict
        The fixed parameters.
    similarity : str
    n : int or None
        Number of samples (``None`` when an imbalance sweep changes it from cell to cell).
    cells : tuple of dict
        One per grid point: the parameters, ``verdict``, ``rank``, ``c_interval`` (``[lo, hi]``,
        ``None`` for an unbounded side; ``None`` when no constant works), ``excess_loss``
        (nats summed over anchors; ``None`` when not computed), ``excess_source`` (a key of
        :data:`EXCESS_SOURCES`), ``near_threshold``, ``min_dim`` and, for the class
        objectives, ``max_cosine`` (the largest cosine between two optimal class prototypes,
        ``None`` when their rank exceeds ``dim``).
    boundaries : tuple of Boundary
        Closed-form boundaries, checked against the cells.
    rtol : float
        The tolerance of every classification.
    """

    objective: str
    params: tuple[str, ...]
    axes: dict[str, np.ndarray]
    fixed: dict[str, Any]
    similarity: str
    n: int | None
    cells: tuple[dict[str, Any], ...]
    boundaries: tuple[Boundary, ...]
    rtol: float

    # -- tables ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Number of values of each swept parameter."""
        return tuple(self.axes[p].size for p in self.params)

    def _columns(self) -> list[str]:
        extra = ["max_cosine"] if self.cells and "max_cosine" in self.cells[0] else []
        return [*self.params, *_FRAME_COLUMNS, *extra]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The tidy table as a dict of numpy arrays, one entry per cell.

        ``rank``, ``min_dim``, ``excess_loss`` and ``max_cosine`` are floats with NaN where the
        value is missing; ``c_lo``/``c_hi`` are the ends of the ``c`` interval (``-inf``/``inf``
        for an unbounded side, NaN when no constant works).
        """
        out: dict[str, np.ndarray] = {}
        for p in self.params:
            out[p] = np.array([c[p] for c in self.cells],
                              dtype=np.int64 if p == "dim" else float)
        out["verdict"] = np.array([c["verdict"] for c in self.cells], dtype=str)
        for key in ("rank", "min_dim", "excess_loss"):
            out[key] = np.array([np.nan if c[key] is None else c[key] for c in self.cells],
                                dtype=float)
        lo, hi = [], []
        for c in self.cells:
            ci = c["c_interval"]
            lo.append(np.nan if ci is None else (-np.inf if ci[0] is None else ci[0]))
            hi.append(np.nan if ci is None else (np.inf if ci[1] is None else ci[1]))
        out["c_lo"], out["c_hi"] = np.array(lo, dtype=float), np.array(hi, dtype=float)
        out["excess_source"] = np.array([c["excess_source"] for c in self.cells], dtype=str)
        out["near_threshold"] = np.array([c["near_threshold"] for c in self.cells], dtype=bool)
        if "max_cosine" in self._columns():
            out["max_cosine"] = np.array(
                [np.nan if c["max_cosine"] is None else c["max_cosine"] for c in self.cells],
                dtype=float)
        return {k: out[k] for k in self._columns()}

    def to_frame(self):
        """The tidy table as a pandas DataFrame (``rank``/``min_dim`` as nullable integers).

        Raises
        ------
        ImportError
            If pandas is not installed (:meth:`to_arrays` needs nothing).
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("PhaseMap.to_frame needs pandas (pip install pandas); "
                              "PhaseMap.to_arrays gives the same table as numpy arrays") from exc
        arrays = self.to_arrays()
        frame = pd.DataFrame(arrays)
        for key in ("rank", "min_dim"):
            frame[key] = pd.array([None if c[key] is None else int(c[key]) for c in self.cells],
                                  dtype="Int64")
        return frame

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``dgp phase --json``: ``objective``, ``params``, ``cells`` (one per grid
        point) and the context (``fixed``, ``axes``, ``boundaries``, ``excess_sources``)."""
        from dgp.engine.certificates import plain

        return plain({
            "objective": self.objective,
            "params": list(self.params),
            "cells": [dict(c) for c in self.cells],
            "axes": {p: self.axes[p].tolist() for p in self.params},
            "fixed": dict(self.fixed),
            "similarity": self.similarity,
            "n": self.n,
            "rtol": self.rtol,
            "boundaries": [b.to_dict() for b in self.boundaries],
            "excess_sources": {k: EXCESS_SOURCES[k]
                               for k in sorted({c["excess_source"] for c in self.cells})},
        })

    def to_csv(self, path: str) -> None:
        """Write the tidy table (:meth:`to_arrays` columns) as CSV; empty fields are missing."""
        import csv

        cols = self._columns()
        arrays = self.to_arrays()
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(cols)
            for k in range(len(self.cells)):
                row = []
                for col in cols:
                    v = arrays[col][k]
                    if isinstance(v, np.floating) and np.isnan(v):
                        row.append("")
                    elif col in ("rank", "min_dim"):
                        row.append(str(int(v)))
                    elif isinstance(v, np.floating):
                        row.append(repr(float(v)))
                    else:
                        row.append(str(v.item() if hasattr(v, "item") else v))
                writer.writerow(row)

    # -- display -----------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Number of cells of each verdict."""
        out = {"realizable": 0, "degenerate": 0, "inconsistent": 0}
        for c in self.cells:
            out[c["verdict"]] += 1
        return out

    def _summary_rows(self) -> list[tuple[str, str]]:
        shape = " x ".join(f"{p} ({self.axes[p].size} values, {_span(self.axes[p])})"
                           for p in self.params)
        fixed = ", ".join(f"{k} = {v:g}" for k, v in self.fixed.items()) or "none"
        rows = [("map", f"{self.objective}, {self.similarity} similarity"
                 + ("" if self.n is None else f", N = {self.n}")),
                ("grid", shape), ("fixed", fixed),
                ("verdicts", ", ".join(f"{k} {v}" for k, v in self.counts().items()))]
        near = sum(bool(c["near_threshold"]) for c in self.cells)
        if near:
            rows.append(("caution", f"{near} cell(s) decided within tolerance of a critical "
                         "value"))
        ex = [c["excess_loss"] for c in self.cells
              if c["excess_loss"] is not None and c["excess_source"] != "attained"]
        if ex:
            rows.append(("excess loss", f"{min(ex):.4g} .. {max(ex):.4g} nats above the bound "
                         "where it is not attained"))
        missing = sorted({c["excess_source"] for c in self.cells
                          if c["excess_source"].startswith("not-computed")})
        for code in missing:
            rows.append(("excess", EXCESS_SOURCES[code]))
        for b in self.boundaries:
            rows.append(("boundary", f"{b.formula}; {b.agree} cells agree, {b.disagree} "
                         f"disagree, {b.skipped} not predicted"))
        return rows

    def ascii_map(self, *, width: int = 60, height: int = 24) -> str:
        """The verdicts as characters (``o`` realizable, ``~`` degenerate, ``.`` inconsistent),
        subsampled to at most ``width`` x ``height``; the first parameter runs left to right."""
        char = {"realizable": "o", "degenerate": "~", "inconsistent": "."}
        shape = self.shape
        grid = np.array([char[c["verdict"]] for c in self.cells]).reshape(
            shape if len(shape) == 2 else (shape[0], 1))
        xs = np.unique(np.linspace(0, grid.shape[0] - 1, min(width, grid.shape[0])).round()
                       .astype(int))
        ys = np.unique(np.linspace(0, grid.shape[1] - 1, min(height, grid.shape[1])).round()
                       .astype(int))
        x_ax = self.axes[self.params[0]]
        lines = []
        if len(self.params) == 2:
            y_ax = self.axes[self.params[1]]
            label = self.params[1]
            for j in ys[::-1]:
                lines.append(f"{_num(y_ax[j]):>9} |" + "".join(grid[i, j] for i in xs))
            lines.insert(0, f"{label:>9} ^")
        else:
            lines.append(" " * 9 + " |" + "".join(grid[i, 0] for i in xs))
        lines.append(" " * 10 + "+" + "-" * len(xs) + f"> {self.params[0]}")
        left, right = _num(x_ax[0]), _num(x_ax[-1])
        lines.append(" " * 11 + left + " " * max(1, len(xs) - len(left) - len(right)) + right)
        lines.append(" " * 11 + "o realizable   ~ degenerate   . inconsistent")
        return "\n".join(lines)

    def __str__(self) -> str:
        import textwrap

        rows = self._summary_rows()
        width = max(len(k) for k, _ in rows) + 2
        lines = []
        for key, value in rows:
            wrapped = textwrap.wrap(value, width=max(40, 80 - width)) or [""]
            lines.append(f"{key:<{width}}{wrapped[0]}")
            lines += [" " * width + w for w in wrapped[1:]]
        return "\n".join(lines) + "\n\n" + self.ascii_map()

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
            for k, v in self._summary_rows()
        )
        return f"<table>{body}</table><pre>{html.escape(self.ascii_map())}</pre>"

    # -- figure ------------------------------------------------------------------------------
    def figure(self):
        """The map as a figure: verdicts with the closed-form boundaries drawn over them, the
        excess loss, and (class objectives) the largest prototype cosine.

        Returns
        -------
        matplotlib.figure.Figure

        Raises
        ------
        ImportError
            If matplotlib is not installed (the ``plot`` extra).
        """
        return _figure(self)


def _num(x: float) -> str:
    return f"{x:.3g}"


def _span(values: np.ndarray) -> str:
    return f"{_num(values[0])} .. {_num(values[-1])}"


def _axis_values(name: str, values: object) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"grid[{name!r}]", f"must be a non-empty 1-D sequence of values, got "
                             f"shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise ParameterTypeError(f"grid[{name!r}]", f"must hold numbers, got dtype {arr.dtype}")
    checked = [_check_value(name, v.item(), f"grid[{name!r}]") for v in arr]
    if len(set(checked)) != len(checked):
        raise ParameterError(f"grid[{name!r}]", "holds a value twice")
    return np.array(checked, dtype=np.int64 if name == "dim" else float)


def _grid(grid: object) -> dict[str, np.ndarray]:
    if not isinstance(grid, Mapping) or not grid:
        raise ParameterError("grid", f"must map one or two parameter names to their values, such "
                             f"as {{'tau': taus, 'eps': epss}}; got {describe(grid)}")
    if len(grid) > 2:
        raise ParameterError("grid", f"sweeps at most two parameters, got {len(grid)}: "
                             f"{', '.join(map(str, grid))}")
    axes: dict[str, np.ndarray] = {}
    for name, values in grid.items():
        check_choice(name, GRID_PARAMETERS, "grid")
        axes[name] = _axis_values(name, values)
    cells = math.prod(a.size for a in axes.values())
    if cells > MAX_CELLS:
        raise ParameterError("grid", f"has {cells} cells, above the limit of {MAX_CELLS}")
    return axes


def phase(
    objective: str | None = None,
    labels: object = None,
    *,
    grid: Mapping[str, object],
    W: object = None,
    sizes: object = None,
    tau: float | None = None,
    dim: int | None = None,
    eps: float | None = None,
    sigma: float | None = None,
    label_tau: float | None = None,
    similarity: str | None = None,
    classes: int | None = None,
    majority: int | None = None,
    profile: str = "exponential",
    rtol: float = DEFAULT_RTOL,
    excess: bool = True,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: bool = False,
) -> PhaseMap:
    r"""The verdict map of an objective (or a weighting) over a grid of one or two parameters.

    Each cell is :func:`dgp.classify_objective` (or :func:`dgp.classify`) at the cell's
    parameters: verdict, rank, ``c`` interval, and where the bound

    .. math:: L(Z) \ge \sum_i H(p_i)

    is not attained in :math:`\mathbb R^d`, the excess :math:`\min_{Z \in \mathbb R^{N\times d}}
    L(Z) - \sum_i H(p_i)` of the optimum (:data:`EXCESS_SOURCES` says how each was obtained).

    Parameters
    ----------
    objective : {"supcon", "soft-supcon", "y-aware", "euclid-euclid", "x-clr", "y-aware-colnorm"}
        The objective; ``None`` with ``W``.
    labels : array_like, optional
        Class labels (class objectives) or ``N x p`` label values.
    grid : mapping
        One or two of ``tau``, ``dim``, ``eps``, ``sigma``, ``label_tau``, ``imbalance``, each
        with its values (a 1-D sequence). The first parameter varies slowest in ``cells`` and
        runs along the figure's x axis.
    W : array_like, optional
        A weight matrix instead of an objective (sweep ``tau`` and ``dim``).
    sizes : sequence of int, optional
        Class sizes instead of labels (class objectives).
    tau, dim, eps, sigma, label_tau : optional
        The fixed parameters: every parameter the objective needs is either fixed or swept.
    similarity : {"cosine", "euclidean"}, optional
        Latent similarity; the objective's own by default (cosine for ``W``).
    classes, majority : int, optional
        An ``imbalance`` sweep: the number of classes and the largest class size; the sizes of
        each cell are :func:`imbalanced_sizes` with ``profile``.
    profile : {"exponential", "step"}
    rtol : float
        Relative tolerance of every classification.
    excess : bool
        Compute the excess loss of inconsistent cells (the class objectives solve one
        prototype problem per cell; the verdicts do not need it).
    jobs : int
        Worker processes (joblib); ``-1`` for every core. With ``scheduler``, the number of
        workers of a ``"local"`` cluster.
    scheduler : str, optional
        ``"local"`` (a Dask ``LocalCluster`` on this machine, loopback only, stopped at the end)
        or the address of a running Dask scheduler (``"tcp://HOST:8786"``); needs the ``dask``
        extra. The cells are the same whichever runs them.
    progress : bool
        Report progress on stderr.

    Returns
    -------
    PhaseMap
        Always a :class:`PhaseMap`; its :meth:`~PhaseMap.to_frame` is a pandas DataFrame (when
        pandas is installed) and :meth:`~PhaseMap.to_arrays` a dict of numpy arrays.

    Raises
    ------
    ValueError
        If the input is not one of the modes above, a grid parameter is unknown, foreign to
        the objective, fixed as well, or has an invalid value (``dim`` must be integers), a
        needed parameter is missing, the grid has more than two parameters or
        :data:`MAX_CELLS` cells, ``jobs`` or ``scheduler`` is invalid.
    TypeError
        If a value has the wrong type.
    ImportError
        If ``jobs > 1`` or ``scheduler`` is asked for without joblib / dask.distributed.

    Examples
    --------
    >>> import numpy as np
    >>> pm = phase("soft-supcon", sizes=[4, 4, 4], grid={"tau": [0.3, 0.6, 0.9, 1.2]},
    ...            eps=0.1, dim=3)
    >>> [c["verdict"] for c in pm.cells]
    ['realizable', 'realizable', 'inconsistent', 'inconsistent']
    >>> b = pm.boundaries[0]
    >>> round(b.tau_c({"eps": 0.1}), 6), b.disagree
    (0.651442, 0)
    """
    axes = _grid(grid)
    problem = _problem(objective, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol,
                       classes=classes, majority=majority, profile=profile,
                       sweeps_imbalance="imbalance" in axes)
    needed = _needed(problem) + (("imbalance",) if "imbalance" in axes else ())
    if "imbalance" in axes and not problem.is_class:  # pragma: no cover - refused above
        raise ParameterError("grid", "sweeps imbalance, which needs a class objective")
    fixed = _fixed(problem, {"tau": tau, "dim": dim, "eps": eps, "sigma": sigma,
                             "label_tau": label_tau}, tuple(axes), needed)
    for name in axes:
        if name not in needed:
            raise ParameterError("grid", f"sweeps {name!r}, which does not apply to "
                                 f"{_what(problem)} (it takes {', '.join(needed)})")
    jobs = _check_jobs(jobs)
    sched = _check_scheduler(scheduler)
    if not isinstance(excess, bool):
        raise ParameterTypeError("excess", f"must be True or False, got {describe(excess)}")
    names = tuple(axes)
    cells = [dict(fixed) | {p: _plain(v) for p, v in zip(names, combo, strict=True)}
             for combo in itertools.product(*(axes[p] for p in names))]
    # one key order in every cell: the swept parameters first, then the fixed ones
    cells = [{**{p: c[p] for p in names}, **{k: c[k] for k in fixed}} for c in cells]
    for v in axes.get("imbalance", ()):  # every ratio is checked before the sweep starts
        try:
            imbalanced_sizes(classes=problem.classes, majority=problem.majority,
                             ratio=float(v), profile=problem.profile)
        except ParameterError as exc:
            raise ParameterError("grid['imbalance']", exc.detail) from None
    results = _map_cells(problem, cells, excess=excess, jobs=jobs, scheduler=sched,
                         progress=progress, what="dgp phase")
    results = [{k: v for k, v in r.items() if k not in fixed} for r in results]
    boundary = _boundary(problem, fixed, cells[0])
    boundaries = () if boundary is None else (boundary.checked(
        [{**fixed, **r} for r in results]),)
    n = None if problem.labels is None and problem.weights is None else (
        problem.weights.n if problem.weights is not None else problem.labels.n)
    return PhaseMap(problem.name, names, axes, fixed, problem.similarity, n, tuple(results),
                    boundaries, float(rtol))


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


# ----------------------------------------------------------------------------------------------
# the figure
# ----------------------------------------------------------------------------------------------


_VERDICT_COLOURS = ("tab:green", "tab:orange", "tab:red")


def _geometric(values: np.ndarray) -> bool:
    if values.size < 3 or (values <= 0).any():
        return False
    r = np.diff(np.log(values))
    return bool(np.allclose(r, r[0], rtol=1e-6) and not np.allclose(np.diff(values),
                                                                     np.diff(values)[0],
                                                                     rtol=1e-6))


def _edges(values: np.ndarray) -> np.ndarray:
    v = values.astype(float)
    if v.size == 1:
        return np.array([v[0] * 0.9, v[0] * 1.1]) if v[0] > 0 else np.array([v[0] - 1,
                                                                               v[0] + 1])
    t = np.log(v) if _geometric(values) else v
    mid = 0.5 * (t[1:] + t[:-1])
    e = np.concatenate([[t[0] - (mid[0] - t[0])], mid, [t[-1] + (t[-1] - mid[-1])]])
    return np.exp(e) if _geometric(values) else e


def _figure(pm: PhaseMap):
    from dgp.plots import require_matplotlib

    require_matplotlib()
    from matplotlib import colors
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch

    arrays = pm.to_arrays()
    two_d = len(pm.params) == 2
    xname = pm.params[0]
    yname = pm.params[1] if two_d else None
    nx = pm.axes[xname].size
    ny = pm.axes[yname].size if two_d else 1
    xe = _edges(pm.axes[xname])
    ye = _edges(pm.axes[yname]) if two_d else np.array([0.0, 1.0])

    def grid_of(values):
        return np.asarray(values, dtype=float).reshape(nx, ny).T

    panels = ["verdict", "excess"] + (["cosine"] if "max_cosine" in arrays else [])
    fig = Figure(figsize=(5.2 * len(panels), 4.4), dpi=100, layout="constrained")
    axs = fig.subplots(1, len(panels), squeeze=False)[0]
    code = {"realizable": 0, "degenerate": 1, "inconsistent": 2}
    V = grid_of([code[v] for v in arrays["verdict"]])
    cmap = colors.ListedColormap(_VERDICT_COLOURS)
    fixed = ", ".join(f"{k} = {v:g}" for k, v in pm.fixed.items())
    title = f"{pm.objective}" + ("" if pm.n is None else f", N = {pm.n}") + (
        f", {fixed}" if fixed else "")
    ax = axs[0]
    ax.pcolormesh(xe, ye, V, cmap=cmap, vmin=-0.5, vmax=2.5, shading="flat")
    near = grid_of(arrays["near_threshold"])
    if near.any():
        jj, ii = np.nonzero(near)
        xc = 0.5 * (xe[:-1] + xe[1:])
        yc = 0.5 * (ye[:-1] + ye[1:])
        ax.plot(xc[ii], yc[jj], "k.", ms=2, label="near threshold")
    handles = [Patch(color=c, label=k) for k, c in zip(code, _VERDICT_COLOURS, strict=True)
               if (V == code[k]).any()]
    for b in pm.boundaries:
        line = _boundary_line(b, pm, xname, yname, xe, ye)
        if line is not None:
            (h,) = ax.plot(*line, "k--", lw=1.6, label=_boundary_label(b))
            handles.append(h)
    ax.legend(handles=handles, loc="best", fontsize=8, framealpha=0.85)
    ax.set_title("verdict\n" + title, fontsize=10)
    ex = grid_of(arrays["excess_loss"])
    src = grid_of([s == "attained" for s in arrays["excess_source"]])
    ax = axs[1]
    positive = ex[np.isfinite(ex) & (ex > 0)]
    if positive.size:
        norm = colors.LogNorm(vmin=positive.min(), vmax=positive.max()) if (
            positive.max() > 10 * positive.min()) else colors.Normalize(0, positive.max())
        shown = np.where(src.astype(bool), np.nan, ex)
        mesh = ax.pcolormesh(xe, ye, np.ma.masked_invalid(shown), cmap="viridis", norm=norm,
                             shading="flat")
        fig.colorbar(mesh, ax=ax, label="excess loss (nats, summed over anchors)")
    missing = grid_of([s.startswith("not-computed") for s in arrays["excess_source"]])
    ax.pcolormesh(xe, ye, np.ma.masked_where(~missing.astype(bool), np.ones_like(ex)),
                  cmap=colors.ListedColormap(["0.8"]), shading="flat")
    handles = [Patch(color="white", ec="0.5", label="bound attained (0)")]
    if missing.any():
        handles.append(Patch(color="0.8", label="not computed"))
    ax.legend(handles=handles, loc="best", fontsize=8, framealpha=0.85)
    ax.set_title("excess loss of the optimum over the bound", fontsize=10)
    if "cosine" in panels:
        ax = axs[2]
        C = grid_of(arrays["max_cosine"])
        mesh = ax.pcolormesh(xe, ye, np.ma.masked_invalid(C), cmap="magma", shading="flat")
        fig.colorbar(mesh, ax=ax, label="largest prototype cosine")
        ax.set_title("closest pair of class prototypes", fontsize=10)
    for ax in axs:
        ax.set_xlabel(_LABELS.get(xname, xname))
        if _geometric(pm.axes[xname]):
            ax.set_xscale("log")
        if two_d:
            ax.set_ylabel(_LABELS.get(yname, yname))
            if _geometric(pm.axes[yname]):
                ax.set_yscale("log")
        else:
            ax.set_yticks([])
        ax.set_xlim(xe[0], xe[-1])
        ax.set_ylim(ye[0], ye[-1])
    return fig


_LABELS = {"tau": "temperature τ", "eps": "cross-class weight ε", "sigma": "kernel width σ",
           "label_tau": "label temperature τ_y", "dim": "dimension d",
           "imbalance": "imbalance ratio n_max / n_min"}


def _boundary_label(b: Boundary) -> str:
    if b.name == "tau*":
        return "τ* = K / ((K−1)(−log ε))"
    return "τR² = σ²" if b.name.endswith("sigma^2") else "τR² = τ_y"


def _boundary_line(b: Boundary, pm: PhaseMap, xname: str, yname: str | None,
                   xe: np.ndarray, ye: np.ndarray):
    """Points of the closed-form boundary inside the plotted area, or ``None``."""
    other = {"tau*": "eps"}.get(b.name, "sigma" if b.name.endswith("sigma^2") else "label_tau")
    names = (xname, yname)
    if "tau" in names:
        t_axis = 0 if xname == "tau" else 1
        o_name = names[1 - t_axis]
        if o_name == other:
            lo, hi = (ye[0], ye[-1]) if t_axis == 0 else (xe[0], xe[-1])
            vals = np.geomspace(lo, hi, 400) if lo > 0 else np.linspace(lo, hi, 400)
            if other == "eps":
                vals = vals[(vals > 0) & (vals < 1)]
            tc = np.array([b.tau_c({**pm.fixed, other: v}) for v in vals])
            return (tc, vals) if t_axis == 0 else (vals, tc)
        tc = b.tau_c(pm.fixed)
        if t_axis == 0:
            return np.array([tc, tc]), np.array([ye[0], ye[-1]])
        return np.array([xe[0], xe[-1]]), np.array([tc, tc])
    if other in names and "tau" in pm.fixed:
        _, oc = b.other_c(pm.fixed["tau"])
        if xname == other:
            return np.array([oc, oc]), np.array([ye[0], ye[-1]])
        return np.array([xe[0], xe[-1]]), np.array([oc, oc])
    return None


# ----------------------------------------------------------------------------------------------
# recommend: inverse questions by scan and bisection, with certificates
# ----------------------------------------------------------------------------------------------


def parse_want(want: object) -> tuple[str, float | None]:
    """Split ``want`` into the question and its threshold (``"minority-cosine<=0.2"``).

    Raises
    ------
    ValueError
        If ``want`` is not one of :data:`WANTS` (the threshold a number in ``[-1, 1]``).

    >>> parse_want("minority-cosine<=0.25")
    ('minority-cosine', 0.25)
    """
    choices = "realizable, simplex, minority-cosine<=X (X a cosine), min-dim"
    if not isinstance(want, str):
        raise ParameterError("want", f"must be one of {choices}; got {describe(want)}")
    text = want.strip()
    if text in ("realizable", "simplex", "min-dim"):
        return text, None
    head, sep, tail = text.partition("<=")
    if head.strip() == "minority-cosine" and sep:
        try:
            x = float(tail)
        except ValueError:
            x = float("nan")
        if not (-1.0 <= x <= 1.0):
            raise ParameterError("want", f"minority-cosine<=X needs a cosine X in [-1, 1], got "
                                 f"{tail.strip()!r}")
        return "minority-cosine", x
    raise ParameterError("want", f"must be one of {choices}; got {describe(want)}")


@dataclass(frozen=True, eq=False)
class Recommendation:
    """The answer of :func:`recommend`, with its certificate.

    Attributes
    ----------
    objective : str
        The objective, or ``"weights"``.
    want : str
        The question, as asked.
    parameter : str
        The parameter found: ``"tau"``, ``"eps"`` or ``"dim"``.
    value : float or int or None
        Its value; ``None`` when none exists in the searched range (``reason`` says why).
    reason : str
        One sentence: the answer and why it holds.
    certificate : dict
        What to re-check: the verdicts (or cosines) on both sides of ``value`` (``bracket``),
        the bracket's relative width, the scan, and the closed form where one exists.
    given : dict
        The fixed parameters of the question.
    """

    objective: str
    want: str
    parameter: str
    value: float | int | None
    reason: str
    certificate: dict[str, Any]
    given: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``dgp recommend --json``: ``objective``, ``want``, the parameter found
        (e.g. ``"tau"``) with its value, ``certificate``, ``reason`` and ``given``."""
        from dgp.engine.certificates import plain

        return plain({"objective": self.objective, "want": self.want,
                      self.parameter: self.value, "certificate": self.certificate,
                      "reason": self.reason, "given": self.given})

    def _rows(self) -> list[tuple[str, str]]:
        shown = "none" if self.value is None else (
            str(self.value) if isinstance(self.value, int) else f"{self.value:.12g}")
        rows = [("want", self.want), ("objective", self.objective),
                (self.parameter, shown), ("reason", self.reason)]
        br = self.certificate.get("bracket")
        if br:
            for side in ("below", "above"):
                if br.get(side):
                    rows.append((side, _describe_point(br[side])))
        cf = self.certificate.get("closed_form")
        if cf:
            rows.append(("closed form", f"{cf['formula']} = {cf['value']:.12g} (relative "
                         f"difference {cf['relative_difference']:.1e})"))
        return rows

    def __str__(self) -> str:
        import textwrap

        rows = self._rows()
        width = max(len(k) for k, _ in rows) + 2
        lines = []
        for key, value in rows:
            wrapped = textwrap.wrap(value, width=max(40, 80 - width)) or [""]
            lines.append(f"{key:<{width}}{wrapped[0]}")
            lines += [" " * width + w for w in wrapped[1:]]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        body = "".join(
            f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
            f"<td style='text-align:left'>{html.escape(v)}</td></tr>" for k, v in self._rows())
        return f"<table>{body}</table>"


def _describe_point(p: Mapping[str, Any]) -> str:
    parts = [f"{k} = {p[k]:.12g}" if isinstance(p[k], float) else f"{k} = {p[k]}"
             for k in ("tau", "eps", "dim") if k in p]
    if "verdict" in p:
        parts.append(p["verdict"] + (f" (rank {p['rank']})" if p.get("rank") is not None
                                     else ""))
        if p.get("near_threshold"):
            parts.append("near threshold")
    if "max_cosine" in p:
        parts.append(f"largest minority cosine {p['max_cosine']:.10g}")
    return ", ".join(parts)


@dataclass(frozen=True)
class _Axis:
    """A searched parameter and the monotone coordinate the bisection works in."""

    name: str
    to_t: Callable[[float], float]
    from_t: Callable[[float], float]


_TAU_AXIS = _Axis("tau", math.log, math.exp)
# eps in (0, 1) through u = -log eps: t = log u keeps tiny eps (1e-50) and eps near 1 resolved
_EPS_AXIS = _Axis("eps", lambda e: math.log(-math.log(e)), lambda t: math.exp(-math.exp(t)))


def _search(holds: Callable[[float], tuple[bool, dict]], axis: _Axis, lo: float, hi: float, *,
            num: int, t_tol: float,
            margin: Callable[[float], float | None] | None = None) -> dict[str, Any]:
    """Scan ``t`` on ``[t(lo), t(hi)]``, take the first stretch where ``holds`` (from the low
    end of ``t``), bisect its upper end to ``t_tol``.

    Returns the last point that holds (``below``), the first that does not (``above``), the
    stretches seen on the scan and the number of evaluations. With ``margin`` (a continuous
    function, positive where ``holds``), the boundary is then located as the root of the
    margin (:func:`_refine`): the bisection on verdicts stops at the edge of the engine's
    tolerance band, the root does not."""
    t0, t1 = sorted((axis.to_t(lo), axis.to_t(hi)))
    ts = np.linspace(t0, t1, num)
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


def _refine(margin: Callable[[float], float | None], axis: _Axis, a: float, b: float,
            t_lo: float, t_hi: float) -> dict[str, Any] | None:
    """The root of a continuous margin near the verdict flip ``[a, b]`` (in ``t``), searched
    no further than the scan step ``[t_lo, t_hi]``; ``None`` when it does not change sign."""
    from scipy.optimize import brentq

    calls = 0

    def m(t: float) -> float:
        nonlocal calls
        calls += 1
        v = margin(axis.from_t(t))
        return float("nan") if v is None else v

    width = max(b - a, 1e-15 * max(1.0, abs(a)))
    lo, hi = a, b
    m_lo, m_hi = m(lo), m(hi)
    while not m_lo > 0 and lo > t_lo:  # the tolerance band may reach past the root
        lo, width = max(t_lo, lo - width), 4.0 * width
        m_lo = m(lo)
    width = max(b - a, 1e-15 * max(1.0, abs(b)))
    while not m_hi < 0 and hi < t_hi:
        hi, width = min(t_hi, hi + width), 4.0 * width
        m_hi = m(hi)
    if not (m_lo > 0 > m_hi):
        return None
    t = brentq(m, lo, hi, xtol=1e-16 * max(1.0, abs(lo)), rtol=4 * np.finfo(float).eps,
               maxiter=200)
    return {"quantity": "max over c of the smallest eigenvalue of G(c) (continuous, zero at "
            "the boundary)", "root": axis.from_t(t), "margin_below": m_lo,
            "margin_above": m_hi, "evaluations": calls,
            "at": [axis.from_t(lo), axis.from_t(hi)]}


def _psd_margin(res: Classification) -> float | None:
    """The continuous margin of a cosine verdict: the largest smallest eigenvalue of the target
    family, when the certificate reports it."""
    value = res.to_dict()["certificate"].get("max_min_eigenvalue")
    return None if value is None else float(value)


def _point(res: Classification, **params: Any) -> dict[str, Any]:
    return {**params, "verdict": res.verdict, "rank": res.rank,
            "near_threshold": res.near_threshold, "min_dim": res.min_dim}


def _check_range(search: object, default: tuple[float, float], name: str) -> tuple[float, float]:
    if search is None:
        return default
    if not isinstance(search, Sequence) or len(search) != 2:
        raise ParameterError("search", f"must be a pair (lo, hi) of {name} values, got "
                             f"{describe(search)}")
    lo, hi = (_check_value(name, v, "search") for v in search)
    if not lo < hi:
        raise ParameterError("search", f"must have lo < hi, got {describe(search)}")
    return float(lo), float(hi)


def recommend(
    objective: str | None = None,
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
    rtol: float = DEFAULT_RTOL,
) -> Recommendation:
    r"""Answer an inverse design question, with a certificate.

    ``want`` is one of:

    * ``"realizable"`` — the largest :math:`\tau` at which the weighting stays realizable in
      :math:`\mathbb R^{d}` (``dim`` given): the upper end of the first stretch of realizable
      temperatures found by a geometric scan of ``search`` (default ``1e-4 .. 1e4``), bisected
      on the engine's verdict to a relative width of :math:`10^{-13}`;
    * ``"simplex"`` — Soft SupCon: the :math:`\tau` (``eps`` given) or the :math:`\varepsilon`
      (``tau`` given) at which the target is the centred regular simplex, i.e. the largest
      :math:`\tau` (smallest :math:`\varepsilon`) at which the bound is attained in :math:`K`
      dimensions; the closed form :math:`\tau^* = K/((K-1)(-\log\varepsilon))` is reported
      beside it;
    * ``"minority-cosine<=X"`` — SupCon / Soft SupCon: the largest :math:`\tau` such that every
      pair of minority classes keeps its optimal prototype cosine :math:`\le X` (the upper end
      of the first stretch from small :math:`\tau`; default ``search`` ``0.01 .. 10``);
      ``minority`` lists the minority classes (codes ``0..K-1`` in sorted label order;
      default: every class smaller than the largest);
    * ``"min-dim"`` — the smallest :math:`d` in which the bound is attained (``tau`` given).

    Parameters
    ----------
    objective, labels, W, sizes, tau, dim, eps, sigma, label_tau, similarity
        As :func:`phase` (the parameter searched for is not given).
    want : str
        The question (above).
    minority : sequence of int, optional
        ``minority-cosine``: the minority classes.
    search : (float, float), optional
        The range scanned for the parameter.
    points : int
        Number of scan points (geometric in :math:`\tau`; in :math:`\log(-\log\varepsilon)`).
        A stretch narrower than one scan step can be missed.
    rtol : float
        Relative tolerance of every classification.

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
    problem = _problem(objective, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol)
    pts = check_int(points, "points", minimum=5, maximum=10_000)
    given = {"tau": tau, "dim": dim, "eps": eps, "sigma": sigma, "label_tau": label_tau}
    name = problem.name
    if question == "simplex":
        if name != "soft-supcon" or problem.similarity != "cosine":
            raise ParameterError("want", f"'simplex' asks when Soft SupCon's target is the centred "
                                 f"regular simplex; it applies to objective 'soft-supcon' with "
                                 f"the cosine similarity, not {_what(problem)}")
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
        fixed = _fixed(problem, given, ("dim",), _needed(problem))
        return _recommend_min_dim(problem, fixed)
    if question == "realizable":
        if tau is not None:
            raise ParameterError("tau", "is what want='realizable' finds; do not give it")
        fixed = _fixed(problem, given, ("tau",), _needed(problem))
        return _recommend_realizable(problem, fixed, _check_range(search, (1e-4, 1e4), "tau"),
                                     pts, want)
    if not problem.is_class:
        raise ParameterError("want", f"'minority-cosine' compares class prototypes; it applies to "
                             f"supcon and soft-supcon, not {_what(problem)}")
    if tau is not None:
        raise ParameterError("tau", "is what want='minority-cosine<=X' finds; do not give it")
    fixed = _fixed(problem, {k: v for k, v in given.items() if k != "dim"}, ("tau", "dim"),
                   _needed(problem))
    if dim is not None:
        fixed["dim"] = check_dim(dim)
    assert threshold is not None
    return _recommend_minority(problem, fixed, threshold, minority,
                               _check_range(search, (0.01, 10.0), "tau"), pts, want)


def _recommend_realizable(problem: _Problem, fixed: dict, rng: tuple[float, float], pts: int,
                          want: str) -> Recommendation:
    def holds(t: float) -> tuple[bool, dict]:
        res = problem.classify({**fixed, "tau": t})
        return res.verdict == "realizable", _point(res, tau=t, dim=fixed["dim"])

    def margin(t: float) -> float | None:
        return _psd_margin(problem.classify({**fixed, "tau": t}))

    out = _search(holds, _TAU_AXIS, *rng, num=pts, t_tol=1e-13,
                  margin=margin if problem.similarity == "cosine" else None)
    value = out.pop("value", None)
    d = fixed["dim"]
    status = out["status"]
    if status == "found":
        reason = (f"realizable in dim = {d} up to tau = {value:.12g}; at tau = "
                  f"{out['above']['tau']:.12g} (relative distance {out['relative_width']:.1e}) "
                  f"it is {out['above']['verdict']}")
    elif status == "up-to-range-end":
        reason = (f"realizable in dim = {d} from the first realizable scan point up to the end "
                  f"of the search range, tau = {rng[1]:g}: no largest tau inside it (widen "
                  "search)")
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


def _closed_form_realizable(problem: _Problem, fixed: dict) -> dict | None:
    """The closed-form largest realizable tau, when the boundary's hypotheses hold."""
    first = {k: fixed.get(k, 1.0) for k in _OBJECTIVE_PARAMS if problem.rec and k in
             problem.rec.params}
    b = _boundary(problem, fixed, first)
    if b is None or fixed["dim"] < b.dim_needed:
        return None
    if b.name != "tau*" and b.n < fixed["dim"] + b.constants["m"] + 3:
        return None
    formula = {"tau*": "tau* = K / ((K - 1)(-log eps))"}.get(
        b.name, "tau = sigma^2 / R^2" if b.name.endswith("sigma^2") else "tau = tau_y / R^2")
    return {"formula": formula, "value": b.tau_c(fixed), "constants": dict(b.constants)}


def _given(fixed: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in fixed.items() if v is not None}


def _recommend_simplex(problem: _Problem, tau, eps, search, pts) -> Recommendation:
    assert problem.labels is not None
    K = int(problem.labels.sizes.size)
    singletons = bool(problem.labels.sizes.min() < 2)
    if eps is not None:
        e = check_unit_interval(eps, "eps")
        rng = _check_range(search, (1e-4, 1e4), "tau")

        def holds(t: float) -> tuple[bool, dict]:
            res = problem.classify({"tau": t, "dim": K, "eps": e})
            return res.attainable, _point(res, tau=t, dim=K)

        def margin(t: float) -> float | None:
            return _psd_margin(problem.classify({"tau": t, "dim": K, "eps": e}))

        out = _search(holds, _TAU_AXIS, *rng, num=pts, t_tol=1e-13, margin=margin)
        parameter, given = "tau", {"eps": e}
        cf_value = K / ((K - 1.0) * -math.log(e))
        formula = "tau* = K / ((K - 1)(-log eps))"
    else:
        t = check_positive(tau, "tau")
        rng = _check_range(search, (1e-300, 1.0 - 1e-12), "eps")

        def holds(e: float) -> tuple[bool, dict]:
            res = problem.classify({"tau": t, "dim": K, "eps": e})
            return res.attainable, _point(res, eps=e, dim=K)

        # realizable for eps >= eps*: in t = log(-log eps), the first stretch from small t
        def margin(e: float) -> float | None:
            return _psd_margin(problem.classify({"tau": t, "dim": K, "eps": e}))

        out = _search(holds, _EPS_AXIS, *rng, num=pts, t_tol=1e-14, margin=margin)
        parameter, given = "eps", {"tau": t}
        cf_value = math.exp(-K / ((K - 1.0) * t))
        formula = "eps* = exp(-K / ((K - 1) tau))"
    value = out.pop("value", None)
    cert: dict[str, Any] = {
        "method": f"scan of {parameter}, then bisection on whether the bound is attained in dim "
        f"K = {K} (up to the simplex it is, past it it is not)",
        "bracket": {"below": out.pop("below", None), "above": out.pop("above", None)}, **out}
    if value is not None:
        at = problem.classify({**given, parameter: value, "dim": K - 1})
        rho = 1.0 + (given.get("tau", value) * math.log(given.get("eps", value)))
        cert["at_value"] = _point(at, **{parameter: value}, dim=K - 1) | {
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


def _recommend_min_dim(problem: _Problem, fixed: dict) -> Recommendation:
    probe = problem.classify({**fixed, "dim": 1})
    d = probe.min_dim
    cert: dict[str, Any] = {"method": "the engine's min_dim, checked by the verdicts at "
                            "min_dim - 1 and min_dim"}
    if d is None:
        reason = ("the bound is not attained in any dimension: " + probe.reason)
        cert["bracket"] = {"below": None, "above": _point(probe, dim=1)}
        return Recommendation(problem.name, "min-dim", "dim", None, reason, cert,
                              _given(fixed))
    at = problem.classify({**fixed, "dim": d})
    below = problem.classify({**fixed, "dim": d - 1}) if d > 1 else None
    cert["bracket"] = {"below": None if below is None else _point(below, dim=d - 1),
                       "at": _point(at, dim=d)}
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


def _recommend_minority(problem: _Problem, fixed: dict, x: float, minority, rng, pts,
                        want: str) -> Recommendation:
    from dgp.prototypes import supcon_prototypes

    assert problem.labels is not None
    sizes = problem.labels.sizes
    if sizes.min() < 2:
        raise ParameterError("labels", "have a singleton class, which has no prototype problem")
    idx = _minority_classes(sizes, minority)
    eps = fixed.get("eps") if problem.name == "soft-supcon" else None
    dim = fixed.get("dim")
    sub = np.ix_(idx, idx)

    def holds(t: float) -> tuple[bool, dict]:
        p = supcon_prototypes(sizes, tau=t, eps=eps)
        M = p.gram[sub].copy()
        np.fill_diagonal(M, -np.inf)
        a, b = np.unravel_index(int(np.argmax(M)), M.shape)
        info = {"tau": t, "max_cosine": float(M[a, b]), "pair": [int(idx[a]), int(idx[b])],
                "method": p.method, "kkt_residual": p.kkt_residual,
                "rank": _prototype_rank(p.gram)}
        return float(M[a, b]) <= x, info

    out = _search(holds, _TAU_AXIS, *rng, num=pts, t_tol=1e-11)
    value = out.pop("value", None)
    cert: dict[str, Any] = {
        "method": "geometric scan of tau, then bisection on the largest optimal prototype "
        "cosine among minority pairs (dgp.supcon_prototypes, certified by its KKT residual)",
        "minority": idx.tolist(), "threshold": x,
        "bracket": {"below": out.pop("below", None), "above": out.pop("above", None)}, **out}
    if out["status"] == "found":
        b = cert["bracket"]
        reason = (f"every minority pair keeps its prototype cosine <= {x:g} up to tau = "
                  f"{value:.10g} (largest {b['below']['max_cosine']:.10g}); at tau = "
                  f"{b['above']['tau']:.10g} classes {b['above']['pair']} reach "
                  f"{b['above']['max_cosine']:.10g}")
        if dim is not None and b["below"]["rank"] > dim:
            reason += (f"; caution: these prototypes have rank {b['below']['rank']} > dim = "
                       f"{dim}, so they are the free-dimension optimum, not the one in R^dim")
    elif out["status"] == "up-to-range-end":
        reason = (f"the minority cosines stay <= {x:g} up to the end of the search range, tau = "
                  f"{rng[1]:g} (widen search)")
    else:
        reason = (f"the largest minority cosine exceeds {x:g} at every scanned tau in "
                  f"[{rng[0]:g}, {rng[1]:g}] (SupCon's small-tau limit is the simplex, cosine "
                  f"{-1.0 / (sizes.size - 1):.6g})")
    if problem.name == "supcon" and value is not None:
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


# ----------------------------------------------------------------------------------------------
# loss floors
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LossFloors:
    r"""Reference values of a w-InfoNCE loss for reading a training curve.

    All values are in nats. ``*_sum`` values are summed over the :math:`N` anchors (dgp's
    convention); :meth:`per_anchor` converts them:

    * ``"pml"`` — pytorch-metric-learning's ``SupConLoss`` with its default reducer
      (``AvgNonZeroReducer``): the mean over anchors that have a positive;
    * ``"supcontrast"`` — the SupContrast reference ``SupConLoss``: the mean over all anchors
      times :math:`\tau/\tau_{\text{base}}` (``base_temperature``, 0.07 by default);
    * ``"sum"`` — unchanged.

    Attributes
    ----------
    objective : str
    n : int
        Number of anchors (rows of the batch's similarity matrix: with several views per
        sample, every view is an anchor).
    anchors_with_positives : int
        Anchors with a positive weight on some other sample.
    tau : float
    dim : int or None
        Embedding dimension (``None``: free dimension).
    base_temperature : float
    entropic_bound : float or None
        :math:`\sum_i H(p_i)`, the floor when it is attained.
    optimal_sum : float or None
        :math:`\min_Z L(Z)` (in :math:`\mathbb R^{d}` when ``dim`` is given); ``None`` when
        not computed (``optimal_source`` says why).
    optimal_source : str
        How it was obtained.
    collapsed_sum : float
        The loss with every embedding at one point: :math:`q_{ij} = 1/(N-1)`, so each anchor
        costs :math:`\log(N-1)` whatever its weights.
    random_sum : float or None
        The expected loss of embeddings drawn independently and uniformly on the unit sphere of
        :math:`\mathbb R^d` (needs ``dim``), by Monte Carlo. Given the anchor,
        :math:`u_k = \langle z_i, z_k\rangle` are independent with density
        :math:`\propto (1-u^2)^{(d-3)/2}` and :math:`\mathbb E s_{ij} = 0`, so each anchor costs
        :math:`\mathbb E\log\sum_{k=1}^{N-1} e^{u_k/\tau}`, whatever its weights.
    random_stderr : float or None
        Standard error of ``random_sum``.
    random_interval : tuple of float or None
        Exact bounds on ``random_sum`` (Jensen): :math:`N\log(N-1) \le \cdot \le
        N[\log(N-1) + \log M_d(1/\tau)]`, :math:`M_d(\kappa) = \Gamma(d/2)(2/\kappa)^{d/2-1}
        I_{d/2-1}(\kappa)` the moment generating function of :math:`u`.
    random_samples : int
        Monte Carlo replicates.
    seed : int
    """

    objective: str
    n: int
    anchors_with_positives: int
    tau: float
    dim: int | None
    base_temperature: float
    entropic_bound: float | None
    optimal_sum: float | None
    optimal_source: str
    collapsed_sum: float
    random_sum: float | None
    random_stderr: float | None
    random_interval: tuple[float, float] | None
    random_samples: int
    seed: int

    def per_anchor(self, convention: str) -> dict[str, float | None]:
        """``optimal``, ``collapsed``, ``random`` (and ``entropic_bound``) in a convention.

        Raises
        ------
        ValueError
            If ``convention`` is not one of :data:`CONVENTIONS`.
        """
        check_choice(convention, CONVENTIONS, "convention")
        if convention == "sum":
            scale = 1.0
        elif convention == "pml":
            scale = 1.0 / self.anchors_with_positives
        else:
            scale = (self.tau / self.base_temperature) / self.n

        def conv(x: float | None) -> float | None:
            return None if x is None else x * scale

        return {"optimal": conv(self.optimal_sum), "collapsed": conv(self.collapsed_sum),
                "random": conv(self.random_sum), "entropic_bound": conv(self.entropic_bound)}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-ready fields, every convention included."""
        from dgp.engine.certificates import plain

        return plain({
            "objective": self.objective, "n": self.n,
            "anchors_with_positives": self.anchors_with_positives, "tau": self.tau,
            "dim": self.dim, "base_temperature": self.base_temperature,
            "optimal_source": self.optimal_source,
            "conventions": {c: self.per_anchor(c) for c in CONVENTIONS},
            "random_stderr": self.random_stderr,
            "random_interval": None if self.random_interval is None else list(
                self.random_interval),
            "random_samples": self.random_samples, "seed": self.seed,
        })

    def _table(self) -> list[list[str]]:
        conv = {c: self.per_anchor(c) for c in CONVENTIONS}
        rows = []
        for key, label in (("optimal", "optimal (floor)"), ("collapsed", "collapsed (1 point)"),
                           ("random", "random (uniform)")):
            rows.append([label, *("n/a" if conv[c][key] is None else f"{conv[c][key]:.6g}"
                                  for c in CONVENTIONS)])
        return rows

    def __str__(self) -> str:
        from textwrap import wrap

        head = [f"loss floors of {self.objective}: N = {self.n} anchors, tau = {self.tau:g}, "
                + ("free dimension" if self.dim is None else f"dim = {self.dim}")]
        cols = ["", "sum (nats)", "pml / anchor", f"SupContrast (base {self.base_temperature:g})"]
        rows = self._table()
        widths = [max(len(r[k]) for r in [cols, *rows]) for k in range(4)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines = [*head, "", fmt.format(*cols), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*r) for r in rows]
        lines += ["", *wrap("optimal: " + self.optimal_source, 80)]
        if self.random_sum is None:
            lines.append("random: needs dim (embeddings uniform on the unit sphere of R^dim)")
        else:
            lo, hi = self.random_interval
            lines += wrap(f"random: Monte Carlo over {self.random_samples} draws (seed "
                          f"{self.seed}), standard error {self.random_stderr:.2g}; exact bounds "
                          f"[{lo:.6g}, {hi:.6g}] summed", 80)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cols = ["", "sum (nats)", "pml / anchor", f"SupContrast (base {self.base_temperature:g})"]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>"
                       for r in self._table())
        return (f"<p>{html.escape(str(self).splitlines()[0])}</p><table><tr>{head}</tr>{body}"
                f"</table>")


def log_mgf_cosine(kappa: float, d: int) -> float:
    r""":math:`\log \mathbb E[e^{\kappa u}]` for :math:`u` the cosine between two independent
    uniform directions of :math:`\mathbb R^d`: :math:`\log[\Gamma(d/2)(2/\kappa)^{\nu}
    I_\nu(\kappa)]`, :math:`\nu = d/2 - 1`, in log space (scaled Bessel function, or its series
    when that underflows).

    >>> round(log_mgf_cosine(2.0, 1), 12) == round(math.log(math.cosh(2.0)), 12)
    True
    >>> round(log_mgf_cosine(2.0, 3), 12) == round(math.log(math.sinh(2.0) / 2.0), 12)
    True
    """
    from scipy.special import gammaln, ive, logsumexp

    nu = d / 2.0 - 1.0
    if d == 1:
        return kappa + math.log1p(math.exp(-2.0 * kappa)) - math.log(2.0)
    v = float(ive(nu, kappa))
    if v > 0.0 and math.isfinite(v):
        return float(gammaln(d / 2.0)) + nu * math.log(2.0 / kappa) + math.log(v) + kappa
    # series 0F1(; d/2; kappa^2/4) = sum_k (kappa^2/4)^k / ((d/2)_k k!)
    a = kappa * kappa / 4.0
    kmax = int(8.0 * math.sqrt(a) + 60)
    k = np.arange(kmax)
    terms = k * math.log(a) - gammaln(k + 1.0) - (gammaln(d / 2.0 + k) - gammaln(d / 2.0))
    return float(logsumexp(terms))


def _random_loss(n: int, tau: float, d: int, samples: int, seed: int) -> tuple[float, float]:
    """Monte Carlo mean and standard error of :math:`\\log\\sum_{k=1}^{n-1} e^{u_k/\\tau}`."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    vals = np.empty(samples)
    block = max(1, int(2_000_000 // max(1, n - 1)))
    for s in range(0, samples, block):
        m = min(block, samples - s)
        if d == 1:
            u = rng.choice([-1.0, 1.0], size=(m, n - 1))
        else:
            u = 2.0 * rng.beta((d - 1) / 2.0, (d - 1) / 2.0, size=(m, n - 1)) - 1.0
        vals[s:s + m] = logsumexp(u / tau, axis=1)
    se = float(vals.std(ddof=1) / math.sqrt(samples)) if samples > 1 else float("nan")
    return float(vals.mean()), se


def loss_floors(
    objective: str | None = None,
    labels: object = None,
    *,
    tau: float,
    W: object = None,
    sizes: object = None,
    dim: int | None = None,
    eps: float | None = None,
    sigma: float | None = None,
    label_tau: float | None = None,
    similarity: str | None = None,
    base_temperature: float = SUPCONTRAST_BASE_TEMPERATURE,
    samples: int | None = None,
    seed: int = 0,
    rtol: float = DEFAULT_RTOL,
) -> LossFloors:
    r"""The optimal, collapsed and random-embedding losses of an objective on a batch.

    A training curve of a w-InfoNCE loss

    .. math:: L(Z) = \sum_i \sum_{j\ne i} p_{ij}\Big(-s_{ij} + \log\sum_{k\ne i} e^{s_{ik}}\Big)

    starts near the random value, can stall at the collapsed value :math:`N\log(N-1)` (every
    embedding at one point) and cannot go below the optimum. The optimum is the entropic bound
    when it is attained; else, for SupCon and Soft SupCon, the loss of the optimal class
    prototypes (:func:`dgp.supcon_prototypes`, valid in ``dim`` when their rank fits); for other
    cosine weightings, ``dgp.optimum.optimum`` once it accepts a dimension.

    Parameters
    ----------
    objective, labels, W, sizes, eps, sigma, label_tau, similarity
        As :func:`phase`. ``sizes`` count the rows of one batch's similarity matrix (with
        ``n_views`` views per sample, each sample contributes ``n_views`` rows).
    tau : float
        Temperature.
    dim : int, optional
        Embedding dimension; ``None`` for the free-dimension optimum (no random value then).
    base_temperature : float
        SupContrast's ``base_temperature`` (its loss is scaled by ``tau / base_temperature``).
    samples : int, optional
        Monte Carlo replicates of the random embedding (default: about :math:`4\cdot10^6/N`,
        between 50 and 4000).
    seed : int
        Seed of the Monte Carlo draws.
    rtol : float
        Relative tolerance of the classification.

    Returns
    -------
    LossFloors

    Raises
    ------
    ValueError
        As :func:`phase`; ``base_temperature <= 0``; ``samples < 2``.
    TypeError
        If an argument has the wrong type.

    Examples
    --------
    >>> f = loss_floors("supcon", sizes=[4, 4, 4], tau=0.1)
    >>> round(f.per_anchor("pml")["optimal"], 6)     # log(3 + 8 e^{-15}): the simplex
    1.098612
    >>> round(f.per_anchor("pml")["collapsed"], 6)   # log(N - 1) = log 11
    2.397895
    """
    problem = _problem(objective, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol)
    needed = tuple(p for p in _needed(problem) if p != "dim")
    given = {"tau": tau, "eps": eps, "sigma": sigma, "label_tau": label_tau}
    fixed = _fixed(problem, given, (), needed)
    if dim is not None:
        fixed["dim"] = check_dim(dim)
    base = check_positive(base_temperature, "base_temperature")
    seed = check_int(seed, "seed", minimum=0)
    n = problem.weights.n if problem.weights is not None else problem.labels.n
    if samples is None:
        reps = int(min(4000, max(50, 4_000_000 // max(1, n - 1))))
    else:
        reps = check_int(samples, "samples", minimum=2)
    t = fixed["tau"]
    res = problem.classify({**fixed, "dim": fixed.get("dim", n)})
    bound = res.entropic_bound
    optimal, source = _optimal_loss(problem, fixed, res)
    collapsed = n * math.log(n - 1.0)
    random_sum = random_se = None
    interval = None
    if "dim" in fixed:
        mean, se = _random_loss(n, t, fixed["dim"], reps, seed)
        random_sum, random_se = n * mean, n * se
        interval = (collapsed, n * (math.log(n - 1.0) + log_mgf_cosine(1.0 / t, fixed["dim"])))
    return LossFloors(problem.name, n, n, t, fixed.get("dim"), base, bound, optimal, source,
                      collapsed, random_sum, random_se, interval, reps, seed)


def _optimal_loss(problem: _Problem, fixed: dict, res: Classification) -> tuple[float | None,
                                                                               str]:
    where = "free dimension" if "dim" not in fixed else f"R^{fixed['dim']}"
    if res.attainable:
        if res.entropic_bound is None:
            return None, "not computed: the entropic bound is attained but was not computed " \
                "(N above the exact-sums limit)"
        return res.entropic_bound, (f"the entropic bound sum_i H(p_i), attained in {where} "
                                    f"({res.verdict})")
    if problem.is_class:
        protos, code = _prototypes(problem, {**fixed, "dim": fixed.get("dim", res.n)})
        if protos is None:
            return None, EXCESS_SOURCES[code]
        r = _prototype_rank(protos.gram)
        if "dim" in fixed and r > fixed["dim"]:
            return None, EXCESS_SOURCES["not-computed-dim"]
        how = "closed form" if protos.kkt_residual is None else (
            f"certified solver, KKT residual {protos.kkt_residual:.1e}")
        return float(protos.loss), (f"the optimal class prototypes (dgp.supcon_prototypes, "
                                    f"{how}; rank {r}), classes collapsed; the bound "
                                    "is not attained")
    if res.similarity != "cosine":
        return None, EXCESS_SOURCES["not-computed-euclidean"]
    if res.n > GENERAL_OPTIMUM_MAX_N:
        return None, EXCESS_SOURCES["not-computed-size"]
    if not _optimum_takes_dim():
        return None, EXCESS_SOURCES["not-computed-solver"]
    from dgp.optimum import optimum

    opt = optimum(problem.dense_weights(fixed), tau=fixed["tau"], dim=fixed.get("dim"))
    return float(opt.loss), f"dgp.optimum.optimum in {where}"
