"""Validators used at the public boundary.

Every public function checks its arguments with these helpers before doing any mathematics, so
that bad input gives one clear :class:`ValueError` (or :class:`TypeError`) naming the argument and
the bad value, and never a wrong answer. The CLI turns these errors into one ``error:`` line.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

__all__ = [
    "DgpError",
    "ParameterError",
    "SolverError",
    "check_choice",
    "check_dim",
    "check_labels_class",
    "check_labels_continuous",
    "check_positive",
    "check_rtol",
    "check_sizes",
    "check_unit_interval",
    "check_weights",
    "describe",
]


class DgpError(Exception):
    """Base class of the errors dgp raises on purpose (bad input or a failure of its own)."""


class ParameterError(DgpError, ValueError):
    """A bad argument: names the parameter (``param``) and says what is wrong (``detail``).

    The message is ``f"{param} {detail}"``; the command line shows the same text with the
    parameter replaced by its flag (``sigma`` -> ``--sigma``).
    """

    def __init__(self, param: str, detail: str) -> None:
        super().__init__(f"{param} {detail}")
        self.param = param
        self.detail = detail


class SolverError(DgpError, RuntimeError):
    """dgp itself failed (a solver that did not converge, a violated internal invariant).

    Not the user's fault: the command line reports it as one ``error:`` line with exit status 1.
    """


def describe(value: object) -> str:
    """A short ``repr`` of a value for an error message (at most 60 characters)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def check_positive(value: object, name: str) -> float:
    """Return ``value`` as a finite float ``> 0``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is not finite or not strictly positive.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {describe(value)}")
    out = float(value)
    if not math.isfinite(out) or out <= 0:
        raise ValueError(f"{name} must be a finite number > 0, got {describe(value)}")
    return out


def check_unit_interval(value: object, name: str) -> float:
    """Return ``value`` as a float in the open interval ``(0, 1)``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``value`` is not in ``(0, 1)``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {describe(value)}")
    out = float(value)
    if not (0.0 < out < 1.0):
        raise ValueError(f"{name} must lie strictly between 0 and 1, got {describe(value)}")
    return out


def check_dim(value: object, name: str = "dim") -> int:
    """Return ``value`` as an integer ``>= 1``.

    Raises
    ------
    TypeError
        If ``value`` is not an integer.
    ValueError
        If ``value < 1``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer >= 1, got {describe(value)}")
    if int(value) < 1:
        raise ValueError(f"{name} must be an integer >= 1, got {describe(value)}")
    return int(value)


def check_rtol(value: object, name: str = "rtol") -> float:
    """Return a relative tolerance in ``(0, 1)``.

    Raises
    ------
    TypeError, ValueError
        As :func:`check_unit_interval`.
    """
    return check_unit_interval(value, name)


def check_choice(value: object, choices: tuple[str, ...], name: str) -> str:
    """Return ``value`` if it is one of ``choices``.

    Raises
    ------
    ValueError
        If ``value`` is not one of ``choices``.
    """
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}; got {describe(value)}")
    return value


def check_weights(W: object, name: str = "W") -> np.ndarray:
    """Return ``W`` as a validated float ``N x N`` weight matrix (a copy).

    The diagonal is ignored (it is set to zero in the copy). Off the diagonal the weights must be
    finite and non-negative, and every row needs positive mass, so that the row distribution
    ``p_ij = w_ij / sum_{k != i} w_ik`` exists.

    Raises
    ------
    TypeError
        If ``W`` cannot be read as a real array.
    ValueError
        If ``W`` is not square, has fewer than 2 rows, holds a NaN, infinite or negative entry off
        the diagonal, or a row with no positive mass; the message names the entry or row.
    """
    try:
        arr = np.array(W, dtype=float, copy=True)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a real-valued N x N array: {exc}") from None
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ValueError(f"{name} must be a square N x N matrix, got shape {arr.shape}")
    n = arr.shape[0]
    if n < 2:
        raise ValueError(f"{name} must have at least 2 rows (one anchor and one other), got {n}")
    np.fill_diagonal(arr, 0.0)  # ignored, whatever it holds (even NaN or inf)
    bad = ~np.isfinite(arr)
    if bad.any():
        i, j = (int(k) for k in np.argwhere(bad)[0])
        raise ValueError(f"{name}[{i}, {j}] is {arr[i, j]}; all weights must be finite")
    if (arr < 0).any():
        i, j = (int(k) for k in np.argwhere(arr < 0)[0])
        raise ValueError(f"{name}[{i}, {j}] = {arr[i, j]:g} is negative; weights must be >= 0")
    mass = arr.sum(axis=1)
    if (mass <= 0).any():
        i = int(np.flatnonzero(mass <= 0)[0])
        raise ValueError(
            f"row {i} of {name} has no positive weight off the diagonal; every anchor needs at "
            "least one positive weight"
        )
    return arr


def check_labels_class(labels: object, name: str = "labels") -> np.ndarray:
    """Return integer class labels as a 1-D ``int64`` array; every class needs >= 2 samples.

    Raises
    ------
    TypeError
        If the labels are not integers.
    ValueError
        If the labels are not 1-D, fewer than 2, or some class has a single sample.
    """
    arr = np.asarray(labels)
    if arr.ndim == 2 and arr.shape[1] == 1:
        arr = arr[:, 0]
    if arr.ndim != 1:
        raise ValueError(f"{name} must be one column of class labels, got shape {arr.shape}")
    if arr.size < 2:
        raise ValueError(f"{name} must hold at least 2 samples, got {arr.size}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or not np.equal(np.round(arr), arr).all():
            raise TypeError(f"{name} must be integer class labels; got non-integer values")
        arr = arr.astype(np.int64)
    elif arr.dtype.kind not in "iub":
        raise TypeError(f"{name} must be integer class labels, got dtype {arr.dtype}")
    arr = arr.astype(np.int64)
    classes, counts = np.unique(arr, return_counts=True)
    if (counts < 2).any():
        c = int(classes[np.flatnonzero(counts < 2)[0]])
        raise ValueError(
            f"class {c} in {name} has a single sample; every class needs at least 2 (an anchor "
            "needs a positive)"
        )
    return arr


def check_labels_continuous(labels: object, name: str = "labels") -> np.ndarray:
    """Return continuous labels as a float ``N x p`` array (a 1-D input becomes ``N x 1``).

    Raises
    ------
    TypeError
        If the labels are not numbers.
    ValueError
        If the labels are not 1-D or 2-D, fewer than 2 samples, or hold a NaN or infinity.
    """
    arr = np.asarray(labels)
    if arr.dtype.kind not in "iufb":
        raise TypeError(f"{name} must be numbers for a continuous objective, got dtype {arr.dtype}")
    arr = arr.astype(float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise ValueError(f"{name} must be an N x p array, got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise ValueError(f"{name} must hold at least 2 samples, got {arr.shape[0]}")
    bad = ~np.isfinite(arr)
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise ValueError(f"row {i} of {name} holds a NaN or infinite value")
    return arr


def check_sizes(sizes: object, name: str = "sizes") -> np.ndarray:
    """Return class sizes as a 1-D ``int64`` array; at least 2 classes, each of size >= 2.

    Raises
    ------
    TypeError
        If a size is not an integer.
    ValueError
        If there are fewer than 2 classes or a size is below 2.
    """
    arr = np.asarray(sizes)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a list of class sizes, got shape {arr.shape}")
    if arr.dtype.kind == "f":
        if not np.isfinite(arr).all() or not np.equal(np.round(arr), arr).all():
            raise TypeError(f"{name} must be integers, got {describe(arr.tolist())}")
    elif arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be integers, got {describe(arr.tolist())}")
    arr = arr.astype(np.int64)
    if arr.size < 2:
        raise ValueError(f"{name} must list at least 2 classes, got {arr.size}")
    if (arr < 2).any():
        k = int(np.flatnonzero(arr < 2)[0])
        raise ValueError(
            f"{name}[{k}] = {int(arr[k])}; every class needs at least 2 samples (a singleton "
            "has no positive pair)"
        )
    return arr
