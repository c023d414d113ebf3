"""Shared output helpers of the CLI: JSON with numpy values, simple aligned tables."""

from __future__ import annotations

import json
import sys
from typing import Any

import numpy as np

from dgp.errors import InputError
from dgp.records import plain

__all__ = ["array_path", "emit_json", "jsonable", "plot_path", "save_array", "table"]


#: numpy values (and non-finite floats, as null) to plain JSON values: the certificates' own
jsonable = plain


def emit_json(obj: Any) -> None:
    """Print one JSON object on stdout and nothing else."""
    sys.stdout.write(json.dumps(jsonable(obj), indent=2) + "\n")


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain aligned text table."""
    cols = [header, *rows]
    widths = [max(len(r[k]) for r in cols) for k in range(len(header))]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    lines = [fmt.format(*header), fmt.format(*("-" * w for w in widths))]
    lines += [fmt.format(*r) for r in rows]
    return "\n".join(line.rstrip() for line in lines)


_FIGURE_FORMATS = (".png", ".pdf", ".svg")


def plot_path(path: str) -> str:
    """Check a ``--plot FILE`` before any work: the figure's real path (``.png`` added when
    there is no extension).

    Raises
    ------
    ValueError
        If the path is a directory, its extension is not a figure format, or its folder does
        not exist or is not writable.
    """
    import os

    if os.path.isdir(path):
        raise InputError(f"--plot {path!r} is a directory; give a file name such as "
                         f"{os.path.join(path, 'figure.png')!r}")
    ext = os.path.splitext(path)[1]
    if not ext:
        path, ext = path + ".png", ".png"
    if ext.lower() not in _FIGURE_FORMATS:
        raise InputError(f"--plot {path!r}: unknown figure format {ext!r}; use one of "
                         f"{', '.join(_FIGURE_FORMATS)}")
    return _writable(path, "--plot")


def _writable(path: str, flag: str) -> str:
    """``path`` if its folder exists and is writable."""
    import os

    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InputError(f"{flag} {path!r}: the folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise InputError(f"{flag} {path!r}: the folder {folder!r} is not writable")
    return path


_ARRAY_FORMATS = (".npy", ".csv", ".txt")


def array_path(path: str, flag: str) -> str:
    """Check an output array path (``--save-embedding FILE``) before any work.

    Raises
    ------
    ValueError
        If the path is a directory, has an unknown extension, or its folder does not exist or
        is not writable.
    """
    import os

    if os.path.isdir(path):
        raise InputError(f"{flag} {path!r} is a directory; give a file name ending in .npy or "
                         ".csv")
    ext = os.path.splitext(path)[1].lower()
    if ext not in _ARRAY_FORMATS:
        raise InputError(f"{flag} {path!r}: use a .npy, .csv or .txt file name")
    return _writable(path, flag)


def save_array(path: str, array) -> None:
    """Write ``array`` to ``path`` (``.npy`` without pickles, or comma-separated text)."""
    import os

    arr = np.asarray(array, dtype=float)
    if os.path.splitext(path)[1].lower() == ".npy":
        np.save(path, arr, allow_pickle=False)
    else:
        np.savetxt(path, arr, delimiter=",", fmt="%.17g")
