"""Writing matrices the user asked for (``--save-gram``, ``--save-embedding``): ``.npy`` or
``.csv``, with the destination checked before any work is done."""

from __future__ import annotations

import os

import numpy as np

__all__ = ["EXPORT_EXTENSIONS", "check_save_path", "save_matrix"]

EXPORT_EXTENSIONS = (".npy", ".csv")


def check_save_path(path: str | None, flag: str) -> None:
    """Refuse a destination that cannot be written, before the work starts.

    Raises
    ------
    ValueError
        If the extension is not ``.npy``/``.csv``, the path is a directory, or its folder is
        missing or not writable.
    """
    if path is None:
        return
    ext = os.path.splitext(path)[1].lower()
    if ext not in EXPORT_EXTENSIONS:
        raise ValueError(
            f"{flag} {path!r}: give a file name ending in .npy or .csv (got {ext or 'none'})"
        )
    if os.path.isdir(path):
        raise ValueError(f"{flag} {path!r} is a directory; give a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"{flag} {path!r}: folder {folder!r} does not exist")
    if not os.access(folder, os.W_OK):
        raise ValueError(f"{flag} {path!r}: folder {folder!r} is not writable")


def save_matrix(path: str, array: np.ndarray) -> None:
    """Write ``array`` as ``.npy`` (no pickle) or comma-separated text (17 significant digits)."""
    arr = np.asarray(array, dtype=float)
    if path.lower().endswith(".npy"):
        np.save(path, arr, allow_pickle=False)
    else:
        np.savetxt(path, np.atleast_2d(arr), delimiter=",", fmt="%.17g")
