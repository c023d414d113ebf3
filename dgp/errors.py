"""Validators used at the public boundary.

Every public function checks its arguments with these helpers before doing any mathematics, so
that bad input gives one clear :class:`InvalidParameterError` (a :class:`ValueError`; a wrong
type is also a :class:`TypeError`) naming the argument and the bad value, and never a wrong
answer. The CLI turns these errors into one ``error:`` line.
"""

from __future__ import annotations

import math
import numbers
from typing import Any

import numpy as np

__all__ = [
    "SINGLETON_HINT",
    "DgpError",
    "DgpWarning",
    "InputError",
    "InputTypeError",
    "InvalidParameterError",
    "ParameterError",
    "ParameterTypeError",
    "SolverError",
    "as_array",
    "check_choice",
    "check_class_sizes",
    "check_dim",
    "check_flag",
    "check_int",
    "check_labels_class",
    "check_labels_continuous",
    "check_open_interval",
    "check_positive",
    "check_sizes",
    "check_some_pair",
    "check_square",
    "check_temperature",
    "check_unit_interval",
    "class_codes",
    "describe",
    "install_hint",
    "join_param",
    "least_class_size",
    "least_class_size_hint",
]


class DgpError(Exception):
    """Base class of the errors dgp raises on purpose (bad input or a failure of its own)."""


class InvalidParameterError(DgpError, ValueError):
    """A bad parameter: names it (``param``) and says what is wrong (``detail``).

    Every invalid parameter of every public entry point raises this one class (a wrong type
    raises its subclass :class:`ParameterTypeError`, which is also a :class:`TypeError`), so
    ``except dgp.InvalidParameterError`` catches them all. The message is
    ``f"{param} {detail}"``; the command line shows the same text with the parameter replaced
    by its flag (``sigma`` -> ``--sigma``) and exits with status 2.
    """

    def __init__(self, param: str, detail: str) -> None:
        super().__init__(join_param(param, detail))
        self.param = param
        self.detail = detail

    def __reduce__(self):  # picklable (a worker's error travels back to the parent)
        return type(self), (self.param, self.detail)


#: the name of :class:`InvalidParameterError` before v4, kept as an alias
ParameterError = InvalidParameterError


def join_param(param: str, detail: str) -> str:
    """``param`` followed by ``detail`` (no space before an index such as ``[3, 4]``)."""
    return f"{param}{detail}" if detail.startswith("[") else f"{param} {detail}"


class ParameterTypeError(InvalidParameterError, TypeError):
    """A parameter of the wrong type: an :class:`InvalidParameterError` (hence a
    :class:`ValueError`) that is also a :class:`TypeError`; ``param`` and ``detail`` as
    there."""


class InputError(DgpError, ValueError):
    """Bad input that is not one argument's value alone: a file's content, arguments that
    contradict each other, data that do not fit an experiment. Exit status 2 on the command
    line, like :class:`ParameterError`."""


class InputTypeError(DgpError, TypeError):
    """Input of the wrong kind (a sparse matrix where a dense one is needed, strings where
    numbers are); exit status 2 on the command line."""


class DgpWarning(UserWarning):
    """Something in the input looks suspicious (underflowed weights, float32 precision); the
    result still holds for the input as given. Results repeat it in their ``warnings``."""


class SolverError(DgpError, RuntimeError):
    """dgp itself failed (a solver that did not converge, a violated internal invariant).

    Not the user's fault: the command line reports it as one ``error:`` line with exit status 1.
    """


def install_hint(extra: str) -> str:
    """How to install an optional extra: from a source checkout (dgp is not on the package
    index yet) or from a wheel of the ``dgp-contrastive`` distribution."""
    return (f'pip install -e ".[{extra}]" in the dgp source folder (or pip install '
            f'"dgp-contrastive[{extra}]" from a wheel)')


def describe(value: object) -> str:
    """A short ``repr`` of a value for an error message (at most 60 characters)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _real(value: object, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(name, f"must be a real number, got {describe(value)}")
    try:
        return float(value)
    except OverflowError:
        raise ParameterError(name, f"must be a finite number, got {describe(value)}") from None


def check_open_interval(value: object, name: str, low: float, high: float = math.inf) -> float:
    """Return ``value`` as a finite float in the open interval ``(low, high)``.

    Raises
    ------
    ParameterTypeError
        If ``value`` is not a real number.
    ParameterError
        If it is not finite or not in ``(low, high)``; the message reads
        ``"must be a finite number > low"`` for an unbounded interval, else
        ``"must lie strictly between low and high"``.

    >>> check_open_interval(0.5, "eps", 0, 1)
    0.5
    >>> check_open_interval(0, "tau", 0)
    Traceback (most recent call last):
    ...
    dgp.errors.InvalidParameterError: tau must be a finite number > 0, got 0
    """
    out = _real(value, name)
    if not (math.isfinite(out) and low < out < high):
        rule = (f"be a finite number > {low:g}" if math.isinf(high) else
                f"lie strictly between {low:g} and {high:g}")
        raise ParameterError(name, f"must {rule}, got {describe(value)}")
    return out


def check_positive(value: object, name: str) -> float:
    """Return ``value`` as a finite float ``> 0`` (:func:`check_open_interval` on
    ``(0, inf)``)."""
    return check_open_interval(value, name, 0.0)


def check_temperature(value: object, name: str = "tau") -> float:
    """Return ``value`` as a finite float ``> 0`` whose inverse is finite too (similarities are
    divided by a temperature; below about 5.57e-309 its inverse overflows).

    >>> check_temperature(1e-310)
    Traceback (most recent call last):
    ...
    dgp.errors.InvalidParameterError: tau = 1e-310 is too small: its inverse is beyond the \
float range (about 1.8e308); use a value >= 5.57e-309
    """
    t = check_positive(value, name)
    if not math.isfinite(1.0 / t):
        raise ParameterError(name, f"= {t:g} is too small: its inverse is beyond the float "
                             "range (about 1.8e308); use a value >= 5.57e-309")
    return t


def check_unit_interval(value: object, name: str) -> float:
    """Return ``value`` as a float in ``(0, 1)`` (:func:`check_open_interval` on ``(0, 1)``)."""
    return check_open_interval(value, name, 0.0, 1.0)


def check_int(value: object, name: str, *, minimum: int, maximum: int | None = None) -> int:
    """Return ``value`` as an ``int`` in ``[minimum, maximum]``.

    Raises
    ------
    ParameterTypeError
        If ``value`` is not an integer.
    ParameterError
        If it is out of range.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(name, f"must be an integer >= {minimum}, got {describe(value)}")
    v = int(value)
    if v < minimum or (maximum is not None and v > maximum):
        rng = f">= {minimum}" if maximum is None else f"in [{minimum}, {maximum}]"
        raise ParameterError(name, f"must be an integer {rng}, got {describe(value)}")
    return v


def check_dim(value: object, name: str = "dim") -> int:
    """Return ``value`` as an integer ``>= 1``.

    Raises
    ------
    ParameterTypeError
        If ``value`` is not an integer.
    ParameterError
        If ``value < 1``.
    """
    return check_int(value, name, minimum=1)


def check_square(value: object, name: str, *, size: int | None = None) -> np.ndarray:
    """Return ``value`` as a finite square float matrix (a copy), ``size x size`` when ``size``
    is given.

    Raises
    ------
    ParameterError
        If ``value`` is not a finite square matrix of that size.

    >>> check_square([[1, 2], [3, 4]], "gram").tolist()
    [[1.0, 2.0], [3.0, 4.0]]
    >>> check_square(np.eye(2), "gram", size=3)
    Traceback (most recent call last):
    ...
    dgp.errors.InvalidParameterError: gram must be a finite 3 x 3 matrix, got shape (2, 2)
    """
    A = np.array(as_array(value, name, float))
    square = A.ndim == 2 and A.shape[0] == A.shape[1]
    if not square or (size is not None and A.shape[0] != size) or not np.isfinite(A).all():
        what = "square" if size is None else f"{size} x {size}"
        raise ParameterError(name, f"must be a finite {what} matrix, got shape {A.shape}")
    return A


def check_flag(value: object, name: str) -> bool:
    """Return ``value`` as a ``bool`` if it is ``True`` or ``False`` (numpy's too).

    Raises
    ------
    ParameterTypeError
        If ``value`` is anything else (``0``, ``1``, ``"yes"``, ``None``).
    """
    if not isinstance(value, bool | np.bool_):
        raise ParameterTypeError(name, f"must be True or False, got {describe(value)}")
    return bool(value)


def check_choice(value: object, choices: tuple[str, ...], name: str) -> str:
    """Return ``value`` if it is one of ``choices``.

    Raises
    ------
    ParameterError
        If ``value`` is not one of ``choices``.
    """
    if not isinstance(value, str) or value not in choices:
        raise ParameterError(name, f"must be one of {', '.join(choices)}; got {describe(value)}")
    return value


def as_array(value: object, name: str, dtype: Any = None) -> np.ndarray:
    """``numpy.asarray(value, dtype)``, a ragged nesting (rows of different lengths, which numpy
    refuses with a bare ``ValueError``) refused by name.

    >>> try:
    ...     as_array([[1], [2, 3]], "labels")
    ... except InvalidParameterError as exc:
    ...     print(exc.param, "|", exc.detail.split(";")[0])
    labels | is ragged (nested sequences of different lengths)
    """
    try:
        return np.asarray(value, dtype=dtype)
    except ValueError as exc:
        if "inhomogeneous" not in str(exc) and "sequence" not in str(exc):
            raise
        raise ParameterError(name, "is ragged (nested sequences of different lengths); give a "
                             "flat list or an N x p array") from None


def _real_array(labels: object, name: str) -> np.ndarray:
    arr = as_array(labels, name)
    if arr.dtype.kind == "c":
        raise ParameterError(name, f"must be real, got complex dtype {arr.dtype}")
    return arr


def class_codes(
    labels: object, name: str = "labels", *, min_count: int = 2, hint: str = ""
) -> tuple[np.ndarray, np.ndarray]:
    """Class labels as integer codes ``0..K-1`` (sorted label order) and the sorted classes.

    Labels may be integers, integral floats, booleans or strings (class names). ``hint`` ends
    the refusal of a class below ``min_count``.

    Raises
    ------
    ParameterTypeError
        If the labels are floats that are not integers, or of another dtype.
    ParameterError
        If they are not one column, fewer than 2, or a class has fewer than ``min_count``
        samples.
    """
    arr = _real_array(labels, name)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ParameterError(name, f"must be one column of class labels, got shape {arr.shape}")
    if arr.size < 2:
        raise ParameterError(name, f"must hold at least 2 samples, got {arr.size}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or not np.equal(np.round(arr), arr).all():
            i = int(np.flatnonzero(~np.isfinite(arr) | (np.round(arr) != arr))[0])
            raise ParameterTypeError(
                name, f"must be class labels (integers or names); sample {i} is {arr[i]!r}"
            )
        arr = arr.astype(np.int64)
    elif arr.dtype.kind == "O":
        if not all(isinstance(v, str) for v in arr.tolist()):
            raise ParameterTypeError(name, "must be class labels (integers or names), got an "
                                     "object array with non-string values")
        arr = arr.astype(str)
    elif arr.dtype.kind not in "iubU":
        raise ParameterTypeError(name, f"must be class labels, got dtype {arr.dtype}")
    classes, codes, counts = np.unique(arr, return_inverse=True, return_counts=True)
    if (counts < min_count).any():
        small = np.flatnonzero(counts < min_count)
        more = f" (and {small.size - 1} more such classes)" if small.size > 1 else ""
        raise ParameterError(
            name, f"has class {classes[small[0]].item()!r} with {int(counts[small[0]])} "
            f"sample(s){more}; every class needs at least {min_count} (an anchor needs a "
            f"positive){hint}"
        )
    return codes.astype(np.int64), classes


def check_labels_class(labels: object, name: str = "labels") -> np.ndarray:
    """Return integer class labels as a 1-D ``int64`` array; every class needs >= 2 samples.

    Raises
    ------
    ParameterTypeError, ParameterError
        As :func:`class_codes`; strings are refused here (use :func:`class_codes`).
    """
    arr = _real_array(labels, name)
    if arr.dtype.kind in "UO":
        raise ParameterTypeError(name, "must be integer class labels here, got strings")
    codes, classes = class_codes(arr, name)
    return classes[codes].astype(np.int64)


def check_labels_continuous(labels: object, name: str = "labels") -> np.ndarray:
    """Return continuous labels as a float ``N x p`` array (a 1-D input becomes ``N x 1``).

    Raises
    ------
    ParameterTypeError
        If the labels are not real numbers.
    ParameterError
        If the labels are not 1-D or 2-D, fewer than 2 samples, or hold a NaN or infinity.
    """
    arr = _real_array(labels, name)
    if arr.dtype.kind not in "iufb":
        raise ParameterTypeError(
            name, f"must be numbers for a continuous objective, got dtype {arr.dtype}"
        )
    arr = np.array(arr, dtype=float, order="C")
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ParameterError(name, f"must be an N x p array, got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise ParameterError(name, f"must hold at least 2 samples, got {arr.shape[0]}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise ParameterError(name, f"row {i} holds a NaN or infinite value")
    return arr


#: the end of a full-batch refusal of a SupCon singleton class: what takes one
SINGLETON_HINT = ("; the mini-batch predictions (dgp.supcon_prototypes and dgp.optimum given a "
                  "batch size; dgp supcon and dgp optimum with --batch-size) take a singleton "
                  "class, whose anchor has no positive in any batch")


def least_class_size(*, positives_across: bool, batch: bool) -> int:
    """The smallest class of a class objective: 2 where a class's own samples are its only
    positives (SupCon) at full batch; 1 in a batch problem (``batch``: a singleton's anchor has
    no positive in any batch and is dropped or counted as zero, as ``anchors_without_positives``
    says, and its sample stays a negative) or where anchors have positives across classes
    (``positives_across``: Soft SupCon)."""
    return 1 if batch or positives_across else 2


def least_class_size_hint(least: int) -> str:
    """How a refusal of a class below ``least`` (:func:`least_class_size`) ends: where a
    singleton is refused only at full batch, :data:`SINGLETON_HINT` (the entry points that
    take it); else nothing."""
    return SINGLETON_HINT if least == 2 else ""


def check_some_pair(counts: np.ndarray, name: str, *, positives_across: bool) -> None:
    """Refuse class sizes (or label counts) where no anchor has a positive: no class of two
    samples, unless anchors have positives across classes.

    Raises
    ------
    ParameterError
        Naming ``name``.
    """
    if not positives_across and counts.max() < 2:
        raise ParameterError(name, "has no class of 2 or more samples: no anchor has a positive")


def check_class_sizes(sizes: object, name: str = "sizes", *, positives_across: bool,
                      batch: bool) -> np.ndarray:
    """:func:`check_sizes` with the smallest class of :func:`least_class_size` (a full-batch
    refusal of a singleton says what takes it), and some anchor with a positive
    (:func:`check_some_pair`).

    Raises
    ------
    ParameterError, ParameterTypeError
        As :func:`check_sizes` and :func:`check_some_pair`.
    """
    least = least_class_size(positives_across=positives_across, batch=batch)
    n = check_sizes(sizes, name, min_size=least, hint=least_class_size_hint(least))
    check_some_pair(n, name, positives_across=positives_across)
    return n


def check_sizes(sizes: object, name: str = "sizes", *, min_size: int = 2,
                hint: str = "") -> np.ndarray:
    """Return class sizes as a 1-D ``int64`` array; at least 2 classes, each of size
    ``>= min_size`` (``hint`` ends the refusal of a smaller one).

    Raises
    ------
    ParameterTypeError
        If a size is not an integer.
    ParameterError
        If there are fewer than 2 classes, a size is below ``min_size`` or too large to count.
    """
    if isinstance(sizes, list | tuple) and any(
        isinstance(v, numbers.Integral) and not isinstance(v, bool) and abs(int(v)) >= 2**53
        for v in sizes
    ):
        raise ParameterError(name, f"holds a size >= 2**53, too large to count: {describe(sizes)}")
    arr = as_array(sizes, name)
    if arr.ndim != 1:
        raise ParameterError(name, f"must be a list of class sizes, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or not np.equal(np.round(arr), arr).all():
            raise ParameterTypeError(name, f"must be integers, got {describe(arr.tolist())}")
    elif arr.dtype.kind not in "iu":
        raise ParameterTypeError(name, f"must be integers, got {describe(arr.tolist())}")
    if arr.size and np.abs(arr.astype(float)).max() >= 2.0**53:
        raise ParameterError(name, f"holds a size >= 2**53, too large to count: {describe(sizes)}")
    arr = arr.astype(np.int64)
    if arr.size < 2:
        raise ParameterError(name, f"must list at least 2 classes, got {arr.size}")
    if (arr < min_size).any():
        k = int(np.flatnonzero(arr < min_size)[0])
        if arr.min() >= 0 and np.unique(arr).size < arr.size and arr.max() < arr.size:
            # repeated small codes: one class label per sample, not one size per class
            raise ParameterError(
                name, f"= {describe(arr.tolist())} looks like one class label per sample, not "
                "one size per class; give them as labels (labels=..., or --labels FILE), or "
                "count them first (numpy.bincount)"
            )
        raise ParameterError(
            name, f"[{k}] = {int(arr[k])}; every class needs at least {min_size} samples"
            + (" (a singleton has no positive pair)" if min_size == 2 else "") + hint
        )
    return arr
