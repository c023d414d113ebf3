"""The ``.npy`` format: the header is checked against the file size and the memory budget
before any data is read, and nothing is ever unpickled."""

from __future__ import annotations

import math
import os
import tokenize
import zipfile
from typing import BinaryIO

import numpy as np

from dgp.errors import InputError, describe
from dgp.io._source import Source
from dgp.resources import check_memory, dense_weighting_bytes, format_bytes

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"


NUMERIC = "biuf"
_HEADER_ERRORS = (
    ValueError,
    SyntaxError,
    TypeError,
    KeyError,
    OverflowError,
    RecursionError,
    EOFError,
    UnicodeDecodeError,
    tokenize.TokenError,
)


def shape_text(shape: tuple[int, ...]) -> str:
    return " x ".join(str(s) for s in shape) if shape else "scalar"


def _dtype_problem(dtype: np.dtype, allowed: str) -> str | None:
    """Why an array of ``dtype`` cannot be used (``None`` when it can)."""
    if dtype.hasobject:
        return (
            "holds Python objects (dtype object), which could only be read by unpickling; dgp "
            "never unpickles files. Save a plain numeric array with numpy.save(..., "
            "allow_pickle=False)"
        )
    if dtype.kind in allowed:
        return None
    why = {
        "c": f"holds complex numbers ({dtype}); dgp needs real numbers (save .real if the "
        "imaginary part is meaningless)",
        "M": f"holds dates ({dtype}), not numbers",
        "m": f"holds time differences ({dtype}), not numbers",
        "U": f"holds strings ({dtype}), not numbers",
        "S": f"holds byte strings ({dtype}), not numbers",
        "V": f"holds a structured or raw array ({dtype}); save one plain numeric array",
    }
    if dtype.kind in "biuf":  # numbers, but not the kind this array must hold
        want = {"iu": "integers", "biu": "integers", "SU": "strings"}.get(allowed, "numbers")
        return f"holds {dtype} numbers; it must hold {want}"
    return why.get(dtype.kind, f"holds {dtype} data, not numbers")


def no_work(shape: tuple[int, ...]) -> float:
    return 0.0


def weights_work(shape: tuple[int, ...]) -> float:
    """What a dense weighting of this shape costs after reading: the validator's working copy
    (:func:`dgp.resources.dense_weighting_bytes`), alive beside the array as read."""
    return dense_weighting_bytes(shape[0]) if len(shape) == 2 and shape[0] == shape[1] else 0.0


def read_npy(
    fh: BinaryIO, available: int, src: Source, *, what: str, allowed: str = NUMERIC,
    then=no_work,
) -> np.ndarray:
    """Read one ``.npy`` stream of ``available`` bytes after checking its header.

    ``what`` names the array in messages (the file, or ``member 'x' of`` the archive); the
    memory check counts the array and ``then(shape)``, the working set made from it next.
    """

    def fail(detail: str) -> InputError:
        return src.error(f"{what}{detail}")

    head = fh.read(len(NPY_MAGIC))
    if head != NPY_MAGIC:
        if head.startswith(ZIP_MAGIC):
            fix = "; rename it to .npz" if src.ext == ".npy" else ""
            raise fail(f"is a zip archive (an .npz), not a .npy file{fix}")
        if not head:
            raise fail("is empty")
        raise fail(
            "is not a .npy file (it does not start with the .npy magic string); save arrays "
            "with numpy.save"
        )
    fh.seek(-len(NPY_MAGIC), os.SEEK_CUR)
    try:
        version = np.lib.format.read_magic(fh)
    except _HEADER_ERRORS:
        raise fail("has a corrupted .npy header (no format version)") from None
    if version == (3, 0):
        raise fail(
            "is a version 3.0 .npy file (a structured array with non-ASCII field names); save "
            "one plain numeric array"
        )
    if version not in ((1, 0), (2, 0)):
        raise fail(f"has an unknown .npy format version {version[0]}.{version[1]}")
    read_header = (
        np.lib.format.read_array_header_1_0
        if version == (1, 0)
        else np.lib.format.read_array_header_2_0
    )
    try:
        shape, _, dtype = read_header(fh)
    except _HEADER_ERRORS as exc:  # what numpy raises on a damaged header, TokenError included
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise fail(
            f"has a corrupted .npy header ({describe(detail)}); save the array again with "
            "numpy.save"
        ) from None
    if not all(isinstance(s, int) and s >= 0 for s in shape):
        raise fail(f"has a corrupted .npy header (shape {describe(shape)})")
    problem = _dtype_problem(dtype, allowed)
    if problem is not None:
        raise fail(problem)
    count = math.prod(shape)
    nbytes = count * dtype.itemsize
    have = available - fh.tell()
    if have < nbytes:
        raise fail(
            f"is truncated: its header describes a {shape_text(shape)} {dtype} array "
            f"({format_bytes(nbytes)}) but only {format_bytes(max(have, 0))} of data follow"
        )
    work = then(shape)
    check_memory(
        nbytes + work,
        what=f"reading {what}{src.name} file {src.path!r} ({shape_text(shape)} {dtype})"
        + (" and its float64 working copy" if work else ""),
    )
    fh.seek(0)
    try:
        arr = np.lib.format.read_array(fh, allow_pickle=False)
    except (ValueError, OSError, EOFError, zipfile.BadZipFile) as exc:
        raise fail(f"cannot be read as a .npy array ({exc})") from None
    if not arr.dtype.isnative:
        arr = arr.astype(arr.dtype.newbyteorder("="))
    return arr
