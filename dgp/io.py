"""Reading user files: matrices and labels from ``.npy`` (never unpickled) or text.

Every failure is a :class:`ValueError` whose message names the file and what is wrong with it.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["load_array"]

_TEXT = (".csv", ".txt", ".tsv")


def load_array(path: str | os.PathLike, *, name: str) -> np.ndarray:
    """Load a numeric array from ``path``.

    ``.npy`` files are read with ``allow_pickle=False``: a file holding Python objects is refused,
    never executed. ``.csv``/``.txt``/``.tsv`` files may separate values by commas or whitespace.

    Raises
    ------
    ValueError
        If the file is missing, unreadable, empty, of an unknown type, holds pickled objects or
        is not numeric.
    """
    p = os.fspath(path)
    if not os.path.exists(p):
        raise ValueError(f"{name} file {p!r} does not exist")
    if os.path.isdir(p):
        raise ValueError(f"{name} path {p!r} is a directory, not a file")
    ext = os.path.splitext(p)[1].lower()
    if ext == ".npy":
        try:
            arr = np.load(p, allow_pickle=False)
        except ValueError as exc:
            if "pickle" in str(exc).lower():
                raise ValueError(
                    f"{name} file {p!r} holds pickled Python objects; dgp never unpickles files. "
                    "Save a plain numeric array with numpy.save(..., allow_pickle=False)"
                ) from None
            raise ValueError(f"{name} file {p!r} is not a valid .npy file ({exc})") from None
        except (OSError, EOFError) as exc:
            raise ValueError(f"{name} file {p!r} is not a valid .npy file ({exc})") from None
        if arr.dtype.kind not in "biuf":
            raise ValueError(f"{name} file {p!r} holds {arr.dtype} data, expected numbers")
        return arr
    if ext in _TEXT:
        try:
            with open(p, encoding="utf-8") as fh:
                text = fh.read()
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"cannot read {name} file {p!r} as text ({exc})") from None
        rows = [ln.strip() for ln in text.splitlines()]
        rows = [r for r in rows if r and not r.startswith("#")]
        if not rows:
            raise ValueError(f"{name} file {p!r} is empty")
        try:
            data = [[float(x) for x in r.replace(",", " ").split()] for r in rows]
        except ValueError:
            raise ValueError(
                f"{name} file {p!r} holds a value that is not a number; expected numbers "
                "separated by commas or whitespace"
            ) from None
        widths = {len(r) for r in data}
        if len(widths) != 1:
            raise ValueError(f"{name} file {p!r} has rows of different lengths {sorted(widths)}")
        arr = np.array(data, dtype=float)
        if arr.shape[1] == 1:
            arr = arr[:, 0]
        if np.isfinite(arr).all() and np.equal(np.round(arr), arr).all():
            return arr.astype(np.int64) if arr.ndim == 1 else arr
        return arr
    raise ValueError(f"{name} file {p!r} has unknown type {ext!r}; use .npy, .csv or .txt")
