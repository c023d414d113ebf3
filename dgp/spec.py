"""What an entry point reads of a problem: the protocol that :class:`dgp.Problem` implements.

:class:`dgp.Problem` is built on the floor of the objective registry (it validates labels and
objective parameters there), above :func:`dgp.optimum` and :func:`dgp.supcon_prototypes`. Those
functions accept a problem through this protocol, defined here below them all, so that every
import still walks down the floors: an entry point asks the problem for what it needs (its
weighting as the solver takes it, its class sizes, its classification) and never imports the
class itself.

:func:`merged` is the one rule for a field that may come from the problem or from a keyword of
the entry point: either one gives it, and two values that disagree are refused.
"""

from __future__ import annotations

import abc
import math
import numbers
import sys
import warnings
from typing import Any

from dgp.errors import InvalidParameterError, describe

__all__ = ["SAMPLING_DEFAULTS", "SAMPLING_FIELDS", "NotGiven", "ProblemSpec", "merged",
           "not_given", "problem_fields", "tol_keyword"]

class NotGiven:
    """The default of a deprecated keyword, told apart from any value a caller may pass
    (``None`` included, which the keyword refuses as it always did)."""

    def __repr__(self) -> str:
        return "not_given"


#: the default of ``rtol``, the deprecated alias of ``tol`` (lower case: a signature shows it
#: as the value it is, not as the name of a constant)
not_given = NotGiven()

#: the sampling fields of a problem, in the order of :func:`dgp.supcon_prototypes`
SAMPLING_FIELDS = ("batch_size", "sampler", "samples_per_class", "reduction",
                   "anchors_without_positives")


class ProblemSpec(abc.ABC):
    """A validated problem, as the entry points read it (implemented by :class:`dgp.Problem`).

    Attributes every implementation has: ``tau`` (float or ``None``), ``similarity``, ``eps``
    (the Soft SupCon cross-class weight or ``None``), ``objective`` (the registry name or
    ``None`` for a weight matrix) and the sampling fields :data:`SAMPLING_FIELDS` (``None``
    where not given).
    """

    tau: float | None
    similarity: str
    eps: float | None
    objective: str | None
    batch_size: int | None
    sampler: str | None
    samples_per_class: int | None
    reduction: str | None
    anchors_without_positives: str | None

    @abc.abstractmethod
    def solver_weights(self) -> Any:
        """The weighting in a form :func:`dgp.engine.target.check_weights` accepts (validated
        log-weights, or the dense weights of an objective), for the dense programs.

        Raises
        ------
        InvalidParameterError
            If an objective parameter the weighting needs is missing.
        """

    @abc.abstractmethod
    def batch_source(self) -> Any:
        """The weighting read one batch at a time (:class:`dgp.solver.BatchWeights`), without
        an ``N x N`` array where the problem is built from labels."""

    @property
    @abc.abstractmethod
    def n_samples(self) -> int:
        """The number of samples ``N``."""

    @abc.abstractmethod
    def prototype_input(self, entry: str, eps: object = None) -> tuple[Any, float | None]:
        """The class sizes (a 1-D ``int64`` array) of a SupCon / Soft SupCon problem and its
        cross-class weight (``None`` for SupCon), ``eps`` merged with the problem's own.

        Raises
        ------
        InvalidParameterError
            If the problem has no class structure that ``entry`` (the caller's name, for the
            message) can use, or its objective's parameter is missing or contradicted.
        """

    @abc.abstractmethod
    def classification(self, *, tau: float, dim: int, rtol: float, method: str,
                       floor: bool, search: Any = None) -> Any:
        """The :class:`dgp.result.Classification` of this problem with validated settings."""


def _same(a: object, b: object) -> bool:
    if isinstance(a, numbers.Real) and isinstance(b, numbers.Real) and not isinstance(
            a, bool) and not isinstance(b, bool):
        fa, fb = float(a), float(b)
        return fa == fb or (math.isnan(fa) and math.isnan(fb))
    return type(a) is type(b) and a == b


def merged(problem: ProblemSpec | None, name: str, given: object, default: object = None) -> Any:
    """The value of field ``name``: the keyword ``given`` or the problem's own (``None`` in
    either means not given there), else ``default``.

    Raises
    ------
    InvalidParameterError
        If both give it with different values.
    """
    own = None if problem is None else getattr(problem, name)
    if given is None:
        return default if own is None else own
    if own is not None and not _same(own, given):
        raise InvalidParameterError(name, f"= {describe(given)} disagrees with the Problem's "
                                    f"{name} = {describe(own)}; give it once")
    return given


def tol_keyword(tol: object, rtol: object, default: float, *,
                stacklevel: int = 3) -> tuple[Any, str]:
    """The value of ``tol``, with ``rtol`` accepted as its deprecated alias (a
    :class:`DeprecationWarning` pointing at the user's call, ``stacklevel`` frames up), ``default``
    when neither is given (``rtol`` is :data:`not_given` by default: an explicit ``None`` is
    refused by the validator, as before); and the name it was given as (for the messages of its
    validator).

    Callers inside dgp that still pass ``rtol`` (the command line's ``--rtol``) get no
    warning: the user did not write that call.

    Raises
    ------
    InvalidParameterError
        If both are given.
    """
    if rtol is not_given:
        return (default if tol is None else tol), "tol"
    caller = sys._getframe(stacklevel - 1).f_globals.get("__name__", "")
    if caller != "dgp" and not caller.startswith("dgp."):
        warnings.warn("rtol is deprecated: use tol (the same relative tolerance)",
                      DeprecationWarning, stacklevel=stacklevel)
    if tol is not None:
        raise InvalidParameterError("rtol", f"= {describe(rtol)} is the deprecated name of tol "
                                    f"(= {describe(tol)}); give tol only")
    return rtol, "rtol"


#: the value of a sampling field that no one gave
SAMPLING_DEFAULTS = {"sampler": "uniform", "reduction": "mean",
                     "anchors_without_positives": "drop"}


def problem_fields(problem: ProblemSpec | None, entry: str, **given: object) -> tuple[Any, ...]:
    """The fields ``given`` (``tau`` and sampling fields, in the order given) of a solver entry
    point of the cosine loss, each from its keyword or the problem (:func:`merged`), the
    sampling fields defaulting as :data:`SAMPLING_DEFAULTS`; not yet validated.

    Raises
    ------
    InvalidParameterError
        If ``tau`` is missing, a keyword contradicts the problem, or the problem's similarity
        is not cosine (``entry`` solves the cosine loss).
    """
    if problem is not None and problem.similarity != "cosine":
        raise InvalidParameterError("similarity", f"= {problem.similarity!r}: {entry} solves "
                                    "the cosine loss (unit-norm embeddings)")
    out = tuple(merged(problem, k, v, SAMPLING_DEFAULTS.get(k)) for k, v in given.items())
    if "tau" in given and out[list(given).index("tau")] is None:
        raise InvalidParameterError("tau", "is missing: give it as a keyword or a field of the "
                                    "Problem")
    return out
