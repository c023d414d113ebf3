r"""One public problem: the weighting, the temperature, the similarity and the sampling spec,
validated once.

A :class:`Problem` is what every entry point (:func:`dgp.classify`, :func:`dgp.optimum`,
:func:`dgp.supcon_prototypes`, :func:`dgp.phase`, :func:`dgp.recommend`,
:func:`dgp.loss_floors`) accepts as its first argument. It is given in one of three forms, by
keyword only (a bare list is never guessed to be labels or class sizes):

- a weighting: ``Problem(W=...)`` (or ``weights=``: a dense array, a ``scipy.sparse`` matrix,
  a networkx graph) or ``Problem(log_weights=...)``;
- an objective with labels: ``Problem(objective=..., labels=..., sigma= | eps= | label_tau=)``;
- a class objective with its class sizes: ``Problem(objective="supcon" | "soft-supcon",
  sizes=..., eps=...)``;

plus ``tau``, ``similarity`` and the sampling fields (``batch_size``, ``sampler``,
``samples_per_class``, ``reduction``, ``anchors_without_positives``). Every parameter is checked
on construction against its constraint, declared once in :data:`PARAMETER_CONSTRAINTS` (one
table, one checker, in the manner of scikit-learn's parameter validation); a bad value raises
:class:`dgp.errors.InvalidParameterError` naming the parameter. A problem is frozen: assigning
an attribute raises.

The entry points on lower floors read it through the protocol
:class:`dgp.spec.ProblemSpec`, so that no import walks up the floors.

>>> import dgp
>>> p = dgp.Problem(objective="soft-supcon", sizes=[3, 3, 3], eps=0.1, tau=0.5)
>>> p
Problem(objective='soft-supcon', sizes=[3, 3, 3], eps=0.1, tau=0.5, similarity='cosine')
>>> p.n, p.sizes
(9, (3, 3, 3))
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgp.classification import FLOOR_MAX_N, weights_verdict
from dgp.engine.target import LogWeights
from dgp.engine.target import log_weights as validated_log_weights
from dgp.errors import (
    InvalidParameterError,
    check_choice,
    check_int,
    check_positive,
    check_temperature,
    check_unit_interval,
    describe,
)
from dgp.infonce import SIMILARITIES
from dgp.objectives import registry
from dgp.objectives.classify import classify_labels
from dgp.objectives.registry import OBJECTIVE_NAMES, Labels, Objective
from dgp.resources import blas_threads, check_memory
from dgp.solver import (
    NO_POSITIVE,
    REDUCTIONS,
    SAMPLERS,
    DenseBatchWeights,
    SparseBatchWeights,
    check_batch,
)
from dgp.spec import SAMPLING_DEFAULTS, SAMPLING_FIELDS, ProblemSpec, merged

__all__ = ["FORMS", "PARAMETER_CONSTRAINTS", "Constraint", "Problem"]

#: how a problem was given
FORMS = ("weights", "labels", "sizes")


@dataclass(frozen=True)
class Constraint:
    """The constraint of one parameter of :class:`Problem`.

    Attributes
    ----------
    what : str
        What a valid value is, in words.
    check : callable
        ``check(value, name, record, batch=False)`` returns the validated value or raises
        :class:`~dgp.errors.InvalidParameterError` naming ``name``; ``record`` is the
        objective's registry record (``None`` for a weighting); ``batch``: the problem has a
        batch size (a weighting may then have samples without positives, and class labels or
        sizes singleton classes: anchors without positives in every batch).
    valid : object
        A value the constraint accepts (an example).
    invalid : tuple
        Values the constraint refuses (examples, for tests and documentation).
    context : dict
        The other parameters of a valid problem in which this one applies: with them and
        ``valid`` :class:`Problem` accepts the problem, with them and an ``invalid`` value it
        refuses this parameter.
    batch_only : tuple
        Values refused in that context but accepted with a batch size (``check(...,
        batch=True)``): a weighting's sample without positives, a SupCon singleton class.
    """

    what: str
    check: Callable[..., Any]
    valid: Any
    invalid: tuple[Any, ...]
    context: Mapping[str, Any] = field(default_factory=dict)
    batch_only: tuple[Any, ...] = ()


def _weights(value: object, name: str, rec: Objective | None, batch: bool = False
             ) -> LogWeights:
    # sparse matrices and graphs with zero weights stay as their positive pairs (no N x N
    # array); a batch problem's samples without positives are anchors without positives in
    # every batch
    if name == "log_weights":
        return validated_log_weights(log_weights=value, sparse_above=1, empty_rows=batch)
    return validated_log_weights(value, name=name, sparse_above=1, empty_rows=batch)


def _labels(value: object, name: str, rec: Objective | None, batch: bool = False) -> Labels:
    assert rec is not None
    return rec.check_labels(value, name, batch=batch)


def _sizes(value: object, name: str, rec: Objective | None, batch: bool = False
           ) -> np.ndarray:
    assert rec is not None
    n = rec.check_sizes(value, name, batch=batch)
    n.setflags(write=False)
    return n


def _positive(value: object, name: str, rec: Objective | None, batch: bool = False) -> float:
    return check_positive(value, name)


def _temperature(value: object, name: str, rec: Objective | None, batch: bool = False
                 ) -> float:
    return check_temperature(value, name)


def _unit(value: object, name: str, rec: Objective | None, batch: bool = False) -> float:
    return check_unit_interval(value, name)


def _choice(choices: tuple[str, ...]) -> Callable[..., str]:
    def check(value: object, name: str, rec: Objective | None, batch: bool = False) -> str:
        return check_choice(value, choices, name)

    return check


def _integer(minimum: int) -> Callable[..., int]:
    def check(value: object, name: str, rec: Objective | None, batch: bool = False) -> int:
        return check_int(value, name, minimum=minimum)

    return check


_W = [[0.0, 1.0], [1.0, 0.0]]
_EMPTY_ROW = [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 0.0]]  # sample 2: no positive
_SIZES = {"objective": "supcon", "sizes": [3, 3]}
_SOFT = {"objective": "soft-supcon", "sizes": [3, 3]}
_BATCH = {**_SIZES, "batch_size": 4}

#: the constraint of every parameter of :class:`Problem`, declared once
PARAMETER_CONSTRAINTS: dict[str, Constraint] = {
    "W": Constraint(
        "a weight matrix: array, scipy.sparse matrix or networkx graph, N x N, non-negative off "
        "the diagonal, every row with positive mass (with batch_size: some row)", _weights, _W,
        ([[0.0, -1.0], [1.0, 0.0]], [[0.0, 0.0], [1.0, 0.0]], [[1.0, 2.0, 3.0]],
         [[0.0, np.nan], [1.0, 0.0]]), batch_only=(_EMPTY_ROW,)),
    "weights": Constraint("as W (another name for it)", _weights, _W,
                          ([[0.0, -1.0], [1.0, 0.0]], [1.0, 2.0]), batch_only=(_EMPTY_ROW,)),
    "log_weights": Constraint("log w_ij, N x N, -inf for a zero weight, no +inf or NaN",
                              _weights, [[0.0, -1.0], [-1.0, 0.0]],
                              ([[0.0, np.inf], [0.0, 0.0]], [[0.0, -np.inf], [-np.inf, 0.0]])),
    "objective": Constraint(f"one of {', '.join(OBJECTIVE_NAMES)}", _choice(OBJECTIVE_NAMES),
                            "supcon", ("simclr", 3), {"labels": [0, 0, 1, 1]}),
    "labels": Constraint("class labels (class objectives) or N x p label values", _labels,
                         [0, 0, 1, 1], ([0, 0, 1], [[0.5, np.nan], [1.0, 2.0]], [0.5, 1.5],
                                        [0, 0, 0], [[0], [0, 1]]),
                         {"objective": "supcon"}, batch_only=([0, 1, 1, 2, 2],)),
    "sizes": Constraint("class sizes n_1..n_K, at least 2 classes, each of at least 2 samples "
                        "(SupCon; 1 with batch_size where some class has 2)", _sizes, [3, 2],
                        ([3], [3, 1], [3.5, 2], [[3, 3]], [[3], [3, 3]]),
                        {"objective": "supcon"}, batch_only=([3, 1], [1, 2, 4])),
    "sigma": Constraint("a finite number > 0", _positive, 1.0, (0.0, -1.0, "1"),
                        {"objective": "y-aware", "labels": [[0.0], [1.0], [2.0]]}),
    "eps": Constraint("a number in (0, 1)", _unit, 0.1, (0.0, 1.0, 1.5), _SOFT),
    "label_tau": Constraint("a finite number > 0 whose inverse is finite", _temperature, 0.5,
                            (0.0, float("inf"), 1e-320),
                            {"objective": "x-clr",
                             "labels": [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]}),
    "tau": Constraint("a finite number > 0 whose inverse is finite", _temperature, 0.1,
                      (0.0, -0.5, float("inf"), "0.5", True, 1e-320), _SIZES),
    "similarity": Constraint(f"one of {', '.join(SIMILARITIES)}", _choice(SIMILARITIES),
                             "euclidean", ("dot", 1), _SIZES),
    "batch_size": Constraint("an integer >= 3, at most N for uniform batches", _integer(3), 4,
                             (2, 3.5, "8", 100), _SIZES),
    "sampler": Constraint(f"one of {', '.join(SAMPLERS)}", _choice(SAMPLERS),
                          "class-balanced", ("random",), _BATCH),
    "samples_per_class": Constraint("an integer >= 2 (sampler='m-per-class')", _integer(2), 2,
                                    (1, 2.0), {**_BATCH, "sampler": "m-per-class"}),
    "reduction": Constraint(f"one of {', '.join(REDUCTIONS)}", _choice(REDUCTIONS), "sum",
                            ("median",), _BATCH),
    "anchors_without_positives": Constraint(f"one of {', '.join(NO_POSITIVE)}",
                                            _choice(NO_POSITIVE), "zero", ("skip",), _BATCH),
}

_OBJECTIVE_PARAMS = ("sigma", "eps", "label_tau")
_SAMPLING = SAMPLING_FIELDS


def _refuse_with(present: str, names: Mapping[str, object], why: str) -> None:
    for name, value in names.items():
        if value is not None:
            raise InvalidParameterError(name, f"cannot be combined with {present} ({why})")


@dataclass(frozen=True, init=False, repr=False, eq=False)
class Problem(ProblemSpec):
    r"""A weighted contrastive problem, validated once (module docstring).

    Parameters
    ----------
    W, weights : array_like, scipy.sparse matrix or networkx graph, shape (N, N), optional
        The weights (``weights`` is another name for ``W``); the diagonal is ignored. A sparse
        matrix or graph with zero weights is kept as its positive pairs. Every row needs a
        positive weight, except in a batch problem (``batch_size``): a sample without one is an
        anchor without positives in every batch.
    log_weights : array_like, shape (N, N), optional
        :math:`\log w_{ij}` instead (``-inf`` for a zero weight).
    objective : {"supcon", "soft-supcon", "y-aware", "euclid-euclid", "x-clr", "y-aware-colnorm"}
        A named objective, with ``labels`` or (class objectives) ``sizes``.
    labels : array_like, optional
        Class labels for the class objectives; ``N x p`` label values otherwise.
    sizes : sequence of int, optional
        Class sizes of SupCon / Soft SupCon (never read from ``labels``, nor the reverse). A
        SupCon class of one sample (in sizes or labels) only in a batch problem, where its
        anchor has no positive in any batch; some class needs two.
    sigma, eps, label_tau : float, optional
        The objective's parameter; one it does not take is refused. A missing one may be given
        later (a keyword of the entry point, or a phase map's grid).
    tau : float, optional
        Temperature ``> 0``; an entry point may take it as a keyword instead.
    similarity : {"cosine", "euclidean"}, optional
        Latent similarity; the objective's own by default (cosine for a weighting).
    batch_size, sampler, samples_per_class, reduction, anchors_without_positives : optional
        The sampling spec of mini-batch predictions (as :func:`dgp.supcon_prototypes`); the
        last four need ``batch_size``.

    Attributes
    ----------
    form : {"weights", "labels", "sizes"}
        How the problem was given.
    objective : str or None
        The objective's registry name (``None`` for a weighting).
    record : dgp.objectives.Objective or None
        Its registry record.
    weighting : dgp.engine.target.LogWeights or None
        The validated weighting (read-only arrays).
    labels_record : dgp.objectives.Labels or None
        The validated labels (built from ``sizes`` in that form).
    sizes : tuple of int or None
        The class sizes of a class objective (from ``sizes`` or counted from ``labels``).
    n : int
        Number of samples.

    Raises
    ------
    dgp.InvalidParameterError
        For positional arguments, a bad value (naming the parameter), or fields that contradict
        each other (naming the one that does not apply).

    Examples
    --------
    >>> import numpy as np, dgp
    >>> p = dgp.Problem(W=np.ones((4, 4)), tau=0.5)
    >>> p.form, p.n, p.similarity
    ('weights', 4, 'cosine')
    >>> dgp.Problem([2, 2, 2])
    Traceback (most recent call last):
    ...
    dgp.errors.InvalidParameterError: Problem takes keyword arguments only, got 1 positional
    ([2, 2, 2]): give W=..., ... (a list is never guessed to be labels or sizes)
    """

    form: str
    objective: str | None
    record: Objective | None
    weighting: LogWeights | None
    labels_record: Labels | None
    sizes: tuple[int, ...] | None
    n: int
    sigma: float | None
    eps: float | None
    label_tau: float | None
    tau: float | None
    similarity: str
    batch_size: int | None
    sampler: str | None
    samples_per_class: int | None
    reduction: str | None
    anchors_without_positives: str | None

    def __init__(
        self,
        *args: object,
        W: object = None,
        weights: object = None,
        log_weights: object = None,
        objective: object = None,
        labels: object = None,
        sizes: object = None,
        sigma: object = None,
        eps: object = None,
        label_tau: object = None,
        tau: object = None,
        similarity: object = None,
        batch_size: object = None,
        sampler: object = None,
        samples_per_class: object = None,
        reduction: object = None,
        anchors_without_positives: object = None,
    ) -> None:
        if args:
            raise InvalidParameterError(
                "Problem", f"takes keyword arguments only, got {len(args)} positional "
                f"({describe(args[0])}): give W=..., log_weights=..., or objective=... with "
                "labels=... or sizes=... (a list is never guessed to be labels or sizes)")
        given = {"W": W, "weights": weights, "log_weights": log_weights, "objective": objective,
                 "labels": labels, "sizes": sizes, "sigma": sigma, "eps": eps,
                 "label_tau": label_tau, "tau": tau, "similarity": similarity,
                 "batch_size": batch_size, "sampler": sampler,
                 "samples_per_class": samples_per_class, "reduction": reduction,
                 "anchors_without_positives": anchors_without_positives}
        rec = self._check_form(given)

        batch = given["batch_size"] is not None
        out = {name: PARAMETER_CONSTRAINTS[name].check(value, name, rec, batch=batch)
               for name, value in given.items() if value is not None}
        if out.get("batch_size") is None:
            _refuse_with("no batch_size", {k: given[k] for k in _SAMPLING[1:]},
                         "the sampling spec applies to mini-batch predictions; give batch_size "
                         "as well")
        if out.get("samples_per_class") is not None and out.get("sampler") != "m-per-class":
            raise InvalidParameterError("samples_per_class", "applies to sampler='m-per-class' "
                                        f"only (sampler is {out.get('sampler', 'uniform')!r})")
        weighting = next((out[k] for k in ("W", "weights", "log_weights") if k in out), None)
        if weighting is not None:
            form, n, lab, class_sizes = "weights", weighting.n, None, None
            sim = out.get("similarity", "cosine")
        else:
            assert rec is not None
            sim = out.get("similarity", rec.similarity)
            if "sizes" in out:
                form, class_sizes, lab = "sizes", out["sizes"], None
                n = int(class_sizes.sum())
            else:
                form, lab = "labels", out["labels"]
                class_sizes, n = lab.sizes, lab.n
        if out.get("batch_size") is not None and (class_sizes is not None
                                                  or out.get("sampler") in (None, "uniform")):
            # the batch against the samples it draws from, checked here once (a batch larger
            # than N, or m-per-class without samples_per_class, was refused only later)
            check_batch(np.ones(int(n), dtype=np.int64) if class_sizes is None else
                        np.asarray(class_sizes, dtype=np.int64),
                        **{**SAMPLING_DEFAULTS, "samples_per_class": None,
                           **{k: out[k] for k in _SAMPLING if out.get(k) is not None}})
        values = {
            "form": form, "objective": None if rec is None else rec.name, "record": rec,
            "weighting": weighting, "labels_record": lab, "n": int(n),
            "sizes": None if class_sizes is None else tuple(int(v) for v in class_sizes),
            "similarity": sim,
        }
        values |= {k: out.get(k) for k in (*_OBJECTIVE_PARAMS, "tau", *_SAMPLING)}
        self.__setstate__(values)

    def __setstate__(self, state: Mapping[str, Any]) -> None:
        """Set the fields once (construction, unpickling) and make the arrays read-only."""
        for name, value in state.items():
            object.__setattr__(self, name, value)
        w, lab = self.weighting, self.labels_record
        arrays = ((w.L, w.entropies) if w is not None else ()) + (
            (lab.values, lab.classes, lab.sizes) if lab is not None else ())
        for a in arrays:
            if isinstance(a, np.ndarray):
                a.setflags(write=False)

    @staticmethod
    def _check_form(given: Mapping[str, object]) -> Objective | None:
        """The form of the problem: exactly one weighting or one objective, with the fields
        that apply to it; the objective's record (``None`` for a weighting)."""
        w_names = [k for k in ("W", "weights", "log_weights") if given[k] is not None]
        if len(w_names) > 1:
            raise InvalidParameterError(w_names[1], f"cannot be combined with {w_names[0]}: give "
                                        "one weighting")
        if w_names:
            _refuse_with(f"a weighting ({w_names[0]})",
                         {k: given[k] for k in ("objective", "labels", "sizes",
                                                *_OBJECTIVE_PARAMS)},
                         "an objective builds its own weighting from labels or sizes")
            return None
        if given["objective"] is None:
            for name in ("labels", "sizes", *_OBJECTIVE_PARAMS):
                if given[name] is not None:
                    raise InvalidParameterError("objective", f"is missing: {name} needs a "
                                                "named objective (objective=...)")
            raise InvalidParameterError("W", "or objective: give a weighting (W=, weights= or "
                                        "log_weights=) or an objective with labels= or sizes=")
        rec = registry.get(given["objective"])
        for name in _OBJECTIVE_PARAMS:
            if given[name] is not None and name not in rec.params:
                takes = ", ".join(rec.params) or "no parameters"
                raise InvalidParameterError(name, f"does not apply to objective {rec.name!r} "
                                            f"(it takes {takes})")
        if given["sizes"] is not None:
            if rec.labels != "class":
                raise InvalidParameterError("sizes", f"applies to the class objectives (supcon, "
                                            f"soft-supcon), not to {rec.name!r}; give labels")
            if given["labels"] is not None:
                raise InvalidParameterError("sizes", "cannot be combined with labels: give the "
                                            "labels, or the class sizes")
        elif given["labels"] is None:
            what = "class labels or sizes=" if rec.labels == "class" else "N x p label values"
            raise InvalidParameterError("labels", f"is missing: objective {rec.name!r} needs "
                                        f"{what}")
        return rec

    # -- what the entry points ask --------------------------------------------------------------
    def objective_params(self, **given: object) -> dict[str, float]:
        """The objective's parameters, each from the problem or from ``given`` (keywords of an
        entry point), all of them present and in range.

        Raises
        ------
        InvalidParameterError
            If one is missing, given twice with different values, or does not apply.
        """
        assert self.record is not None
        values = {k: merged(self, k, given.get(k)) for k in _OBJECTIVE_PARAMS}
        return self.record.check_params(**values)

    def labels_for_solver(self) -> Labels:
        """The labels record (built from the class sizes in the ``sizes`` form)."""
        if self.labels_record is not None:
            return self.labels_record
        assert self.sizes is not None
        n = np.asarray(self.sizes, dtype=np.int64)
        check_memory(3 * 8.0 * float(n.sum()), what=f"the labels of {int(n.sum())} samples",
                     hint="give smaller class sizes (the geometry depends on their ratios)")
        return Labels("class", np.repeat(np.arange(n.size), n), np.arange(n.size), n)

    def solver_weights(self) -> Any:
        """The weighting as the dense programs take it: the validated log-weights, or the dense
        ``N x N`` weights of the objective (its parameters must be in the problem)."""
        if self.weighting is not None:
            return self.weighting
        assert self.record is not None
        return self.record.weights(self.labels_for_solver(), self.objective_params())

    def batch_source(self) -> Any:
        """The weighting read one batch at a time (:class:`dgp.solver.BatchWeights`): an
        objective's batches from its labels (never an ``N x N`` array), or the log-weights of a
        weight matrix."""
        w = self.weighting
        if w is not None and w.pairs is not None:  # sparse: its positive pairs, as CSR
            return SparseBatchWeights(w.pairs.weights())
        if w is not None:
            return DenseBatchWeights(w.L)
        assert self.record is not None
        lab = self.labels_for_solver()
        return registry.LabelBatchWeights(self.record, lab.values, self.objective_params())

    @property
    def n_samples(self) -> int:
        """The number of samples ``N``."""
        if self.weighting is not None:
            return int(self.weighting.n)
        if self.sizes is not None:
            return int(np.sum(self.sizes))
        return int(self.labels_for_solver().values.shape[0])

    def dense_weights(self) -> np.ndarray:
        """The ``N x N`` weights as a new array (zero diagonal; a weighting's canonical weights
        :math:`w_{ij} / w_{\\max}`, which have the same row distributions)."""
        w = self.solver_weights()
        return w.weights() if isinstance(w, LogWeights) else w

    def prototype_input(self, entry: str, eps: object = None) -> tuple[np.ndarray, float | None]:
        """The class sizes and the ``eps`` of :func:`dgp.supcon_prototypes` (``None`` for
        SupCon), ``eps`` given as a keyword merged with the problem's.

        Raises
        ------
        InvalidParameterError
            As :meth:`class_sizes`; if the objective's parameter is missing or contradicted.
        """
        sizes = self.class_sizes(entry)
        assert self.record is not None
        return sizes, self.record.prototype_eps(self.objective_params(eps=eps))

    def class_sizes(self, entry: str = "this entry point") -> np.ndarray:
        """The class sizes of a SupCon / Soft SupCon problem, as an ``int64`` array.

        Raises
        ------
        InvalidParameterError
            For a weighting or a label-kernel objective.
        """
        if self.sizes is None or self.record is None or self.record.labels != "class":
            what = "a weight matrix" if self.record is None else f"objective {self.objective!r}"
            raise InvalidParameterError(
                "problem", f"is {what}; {entry} needs a class objective (supcon, soft-supcon) "
                "with labels or sizes (dgp.optimum takes any weighting)")
        return np.array(self.sizes, dtype=np.int64)

    def classification(self, *, tau: float, dim: int, rtol: float, method: str = "spectral",
                       floor: bool = False, search: Mapping[str, int] | None = None):
        """The :class:`dgp.result.Classification` of the problem (validated settings): the
        engine of :func:`dgp.classify` for a weighting, the structured paths of
        :func:`dgp.classify_objective` for an objective (``search``: the loss floor's
        ``starts`` and ``seed``)."""
        search = dict(search or {})
        if self.weighting is not None:
            # a copy (the engine consumes it), dense where dgp.classify(W, floor=True) would
            # densify a small sparse W for the cosine loss floor
            small = floor and self.weighting.n <= FLOOR_MAX_N and self.similarity == "cosine"
            # read again by the validator: a batch problem's empty row is refused here too
            w = validated_log_weights(self.weighting)
            w = w.dense() if small else w
            return weights_verdict(w, similarity=self.similarity, tau=tau, dim=dim, rtol=rtol,
                                   method=method, floor=floor, search=search)
        assert self.record is not None
        params = self.objective_params()
        with blas_threads():
            return classify_labels(self.record, self.labels_for_solver(), params,
                                   similarity=self.similarity, tau=tau, dim=dim, rtol=rtol,
                                   method=method, floor=floor, search=search)

    # -- display --------------------------------------------------------------------------------
    def fields(self) -> dict[str, Any]:
        """The given fields as plain values (``W`` and ``labels`` described, not copied)."""
        out: dict[str, Any] = {}
        if self.weighting is not None:
            w = self.weighting
            kind = "sparse pairs" if w.pairs is not None else "dense"
            out["W"] = (f"<{w.n} x {w.n} weights, {kind}, "
                        f"{'symmetric' if w.symmetric else 'asymmetric'}, "
                        f"{w.n_zero} zero weights>")
        else:
            out["objective"] = self.objective
            if self.form == "sizes":
                out["sizes"] = list(self.sizes)
            else:
                lab = self.labels_record
                shape = " x ".join(str(s) for s in lab.values.shape)
                out["labels"] = (f"<{shape} class labels, sizes {list(self.sizes)}>"
                                 if lab.kind == "class" else f"<{shape} label values>")
        for name in (*_OBJECTIVE_PARAMS, "tau"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out["similarity"] = self.similarity
        for name in _SAMPLING:
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        return out

    def __repr__(self) -> str:
        parts = []
        for k, v in self.fields().items():
            parts.append(f"{k}={v}" if isinstance(v, str) and v.startswith("<") else
                         f"{k}={v!r}")
        return f"Problem({', '.join(parts)})"

    __str__ = __repr__
