r"""Reading user files, and the memory budget every allocation-heavy step checks first.

Loaders
-------
- :func:`load_array`: a plain numeric array (``.npy``, ``.npz``, ``.csv``/``.tsv``/``.txt``).
- :func:`load_weights`: an :math:`N \times N` weighting, dense or ``scipy.sparse``.
- :func:`load_labels`: labels as people have them (header rows, pandas ``to_csv`` output, class
  names such as ``cat``/``dog``, a column chosen by name or position, ``.npz``).
- :func:`load_edge_list`: a graph from lines ``i j [weight]`` (a ``networkx`` graph).

Every failure is a :class:`ValueError` whose message names the file, says what is really wrong
(the line and column of a bad value in a text file) and how to fix it: never a traceback, never
unbounded memory, never a hang. Only regular files are read (no devices, FIFOs or sockets, also
not through a symlink); ``.npy`` headers are parsed and checked against the file size and the
memory budget before any data is read, and nothing is ever unpickled. Text is parsed by numpy's C
parser (:func:`numpy.loadtxt`), at about the size of the final array.

The memory budget (:func:`check_memory`, :func:`memory_budget`) lives in
:mod:`dgp.resources` and is re-exported here.
"""

from __future__ import annotations

import csv
import difflib
import io
import lzma
import math
import os
import re
import stat
import tokenize
import warnings
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

import numpy as np

from dgp.errors import InputError, InputTypeError, check_choice, describe
from dgp.resources import (
    DEFAULT_MEMORY_FRACTION,
    MEMORY_LIMIT_ENV,
    MemoryLimitError,
    check_memory,
    dense_weighting_bytes,
    format_bytes,
    hold,
    memory_budget,
)

__all__ = [
    "DEFAULT_MEMORY_FRACTION",
    "EDGE_LIST_FORMATS",
    "LABEL_FORMATS",
    "MEMORY_LIMIT_ENV",
    "WEIGHT_FORMATS",
    "LabelFile",
    "MemoryLimitError",
    "check_memory",
    "format_bytes",
    "load_array",
    "load_edge_list",
    "load_labels",
    "load_npz",
    "load_weights",
    "memory_budget",
]

# ----------------------------------------------------------------------------------------------
# opening files: regular files only
# ----------------------------------------------------------------------------------------------

_NPY_MAGIC = b"\x93NUMPY"
_ZIP_MAGIC = b"PK\x03\x04"
_TEXT = (".csv", ".tsv", ".txt")
_EDGE_TEXT = (*_TEXT, ".edges", ".edgelist")
_MAX_LINE = 1 << 26  # one text line may not exceed 64 Mi characters


@dataclass(frozen=True)
class _Source:
    """An open regular file: what it is called in messages, its path, size and binary handle."""

    name: str
    path: str
    size: int
    fh: BinaryIO

    def error(self, detail: str) -> InputError:
        return InputError(f"{self.name} file {self.path!r} {detail}")

    @property
    def ext(self) -> str:
        return os.path.splitext(self.path)[1].lower()


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return kind
    return "special file"


@contextmanager
def _open(path: object, name: str) -> Iterator[_Source]:
    """Open ``path`` for binary reading if, and only if, it is a regular file.

    ``os.stat`` (following symlinks) decides before anything is opened, so a device is never
    opened and a FIFO never waited on; the descriptor is opened non-blocking and checked again
    with ``fstat``, so a file swapped in between cannot slip through.
    """
    try:
        p = os.fspath(path)  # type: ignore[arg-type]
    except TypeError:
        raise InputTypeError(
            f"{name} must be a path (str or os.PathLike), not {describe(path)}"
        ) from None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    link = " (through a symlink)" if os.path.islink(p) else ""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if link:
            raise InputError(f"{name} file {p!r} is a symlink to a missing file") from None
        raise InputError(f"{name} file {p!r} does not exist") from None
    except PermissionError:
        raise InputError(f"{name} file {p!r} cannot be read (permission denied)") from None
    except (OSError, ValueError) as exc:  # ELOOP, ENAMETOOLONG, ENOTDIR, embedded NUL
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"{name} file {p!r} cannot be opened ({reason})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = _file_kind(st.st_mode)
        fix = "; give the path of a file inside it" if kind == "directory" else ""
        raise InputError(
            f"{name} path {p!r} is a {kind}{link}, not a regular file; dgp reads only regular "
            f"files{fix}"
        )
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except PermissionError:
        raise InputError(f"{name} file {p!r} cannot be read (permission denied)") from None
    except OSError as exc:
        raise InputError(f"{name} file {p!r} cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                f"{name} path {p!r} is a {_file_kind(st.st_mode)}{link}, not a regular file; "
                "dgp reads only regular files"
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield _Source(name=name, path=p, size=int(st.st_size), fh=fh)


# ----------------------------------------------------------------------------------------------
# .npy and .npz: the header is checked before any data is read
# ----------------------------------------------------------------------------------------------

_NUMERIC = "biuf"
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


def _shape_text(shape: tuple[int, ...]) -> str:
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


def _no_work(shape: tuple[int, ...]) -> float:
    return 0.0


def _weights_work(shape: tuple[int, ...]) -> float:
    """What a dense weighting of this shape costs after reading: the validator's working copy
    (:func:`dgp.resources.dense_weighting_bytes`), alive beside the array as read."""
    return dense_weighting_bytes(shape[0]) if len(shape) == 2 and shape[0] == shape[1] else 0.0


def _read_npy(
    fh: BinaryIO, available: int, src: _Source, *, what: str, allowed: str = _NUMERIC,
    then=_no_work,
) -> np.ndarray:
    """Read one ``.npy`` stream of ``available`` bytes after checking its header.

    ``what`` names the array in messages (the file, or ``member 'x' of`` the archive); the
    memory check counts the array and ``then(shape)``, the working set made from it next.
    """

    def fail(detail: str) -> InputError:
        return src.error(f"{what}{detail}")

    head = fh.read(len(_NPY_MAGIC))
    if head != _NPY_MAGIC:
        if head.startswith(_ZIP_MAGIC):
            fix = "; rename it to .npz" if src.ext == ".npy" else ""
            raise fail(f"is a zip archive (an .npz), not a .npy file{fix}")
        if not head:
            raise fail("is empty")
        raise fail(
            "is not a .npy file (it does not start with the .npy magic string); save arrays "
            "with numpy.save"
        )
    fh.seek(-len(_NPY_MAGIC), os.SEEK_CUR)
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
            f"is truncated: its header describes a {_shape_text(shape)} {dtype} array "
            f"({format_bytes(nbytes)}) but only {format_bytes(max(have, 0))} of data follow"
        )
    work = then(shape)
    check_memory(
        nbytes + work,
        what=f"reading {what}{src.name} file {src.path!r} ({_shape_text(shape)} {dtype})"
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


def _npz_members(src: _Source) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    try:
        zf = zipfile.ZipFile(src.fh)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError) as exc:
        src.fh.seek(0)
        if src.fh.read(len(_NPY_MAGIC)) == _NPY_MAGIC:
            raise src.error("is a .npy file, not an .npz archive; rename it to .npy") from None
        raise src.error(f"is not an .npz (zip) archive ({exc})") from None
    members: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        if info.is_dir():
            continue
        key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
        members[key] = info
    if not members:
        raise src.error("is an empty .npz archive")
    return zf, members


def _suggest(word: str, options) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options`` (case first), else ``""``."""
    options = [str(o) for o in options]
    same = [o for o in options if o.lower() == word.lower()]
    close = same or difflib.get_close_matches(word.lower(), [o.lower() for o in options], n=1)
    if not close:
        return ""
    match = next(o for o in options if o.lower() == close[0].lower())
    return f" (did you mean {match!r}?)"


def _pick_member(
    src: _Source, members: dict[str, zipfile.ZipInfo], key: str | None, preferred: tuple[str, ...]
) -> str:
    keys = sorted(members)
    listing = ", ".join(repr(k) for k in keys)
    if key is not None:
        if key in members:
            return key
        raise src.error(f"has no array {key!r}{_suggest(key, keys)}; it holds {listing}")
    if len(keys) == 1:
        return keys[0]
    lower = {k.lower(): k for k in keys}
    for want in preferred:
        if want.lower() in lower:
            return lower[want.lower()]
    raise src.error(
        f"holds several arrays ({listing}) and none is called {' or '.join(preferred[:3])}; "
        "choose one (key=...)"
    )


def _read_member(
    src: _Source, zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, allowed: str,
    then=_no_work,
) -> np.ndarray:
    if not info.filename.endswith(".npy"):
        raise src.error(f"member {info.filename!r} is not a .npy array")
    try:
        with zf.open(info) as member:
            return _read_npy(
                member, info.file_size, src, what=f"member {key!r} of the archive ",
                allowed=allowed, then=then,
            )  # fmt: skip
    # a damaged archive: a bad CRC or header (BadZipFile, EOFError), an encrypted member
    # (RuntimeError), an unknown compression method (NotImplementedError), a corrupt deflate,
    # bzip2 or lzma stream (zlib.error, OSError, lzma.LZMAError)
    except (zipfile.BadZipFile, OSError, EOFError, NotImplementedError, RuntimeError,
            zlib.error, lzma.LZMAError) as exc:
        detail = str(exc) or type(exc).__name__
        if isinstance(exc, RuntimeError) and "encrypted" in detail:
            detail = "it is encrypted: a password would be needed"
        raise src.error(f"member {key!r} of the archive cannot be read ({detail}); the archive "
                        "is damaged, encrypted or compressed in a way numpy cannot read: save "
                        "it again with numpy.savez or numpy.savez_compressed") from None


def load_npz(path: str | os.PathLike, *, name: str) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` archive (:func:`numpy.savez`), read as :func:`load_array`
    reads one: never unpickled, each member's ``.npy`` header checked against the size its
    archive declares and against the memory budget *before* it is read, and a damaged,
    encrypted or oddly compressed member refused with a message naming it.

    Raises
    ------
    ValueError
        If the file is missing, not a regular file, not an ``.npz`` archive, or one of its
        members cannot be read or holds anything but numbers (the message names the member);
        :class:`MemoryLimitError` if a member would exceed the memory budget.
    """
    out: dict[str, np.ndarray] = {}
    with _open(path, name) as src:
        zf, members = _npz_members(src)
        with zf:
            for key in sorted(members):
                out[key] = _read_member(src, zf, members[key], key, _NUMERIC)
    return out


def _is_sparse_npz(members: dict[str, zipfile.ZipInfo]) -> bool:
    return "format" in members and "shape" in members and "data" in members


_SPARSE_PARTS = {
    "csr": ("data", "indices", "indptr"),
    "csc": ("data", "indices", "indptr"),
    "bsr": ("data", "indices", "indptr"),
    "dia": ("data", "offsets"),
    "coo": ("data",),
}


def _read_sparse(src: _Source, zf: zipfile.ZipFile, members: dict[str, zipfile.ZipInfo]):
    """A matrix saved by :func:`scipy.sparse.save_npz`, as a validated CSR array."""
    import scipy.sparse as sp

    fmt_arr = _read_member(src, zf, members["format"], "format", "SU")
    fmt = fmt_arr.item()
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else str(fmt)
    if fmt not in _SPARSE_PARTS:
        raise src.error(f"holds a sparse matrix in an unknown format {fmt!r}")
    shape = _read_member(src, zf, members["shape"], "shape", "iu")
    if shape.shape != (2,) or (shape < 0).any():
        raise src.error(f"holds a sparse matrix with a bad shape {describe(shape.tolist())}")
    n_rows, n_cols = (int(s) for s in shape)
    parts = list(_SPARSE_PARTS[fmt])
    if fmt == "coo":
        parts += ["coords"] if "coords" in members else ["row", "col"]
    missing = [k for k in parts if k not in members]
    if missing:
        raise src.error(f"holds a {fmt} sparse matrix without its {', '.join(missing)} array")
    total = sum(members[k].file_size for k in parts) + 8 * (n_rows + 1)
    check_memory(
        3 * total, what=f"reading the sparse {src.name} file {src.path!r} ({n_rows} x {n_cols})"
    )
    arrays = {
        k: _read_member(src, zf, members[k], k, "biuf" if k == "data" else "iu") for k in parts
    }
    try:
        if fmt in ("csr", "csc", "bsr"):
            cls = {"csr": sp.csr_array, "csc": sp.csc_array, "bsr": sp.bsr_array}[fmt]
            mat = cls((arrays["data"], arrays["indices"], arrays["indptr"]), shape=(n_rows, n_cols))
        elif fmt == "dia":
            mat = sp.dia_array((arrays["data"], arrays["offsets"]), shape=(n_rows, n_cols))
        elif "coords" in arrays:
            mat = sp.coo_array((arrays["data"], tuple(arrays["coords"])), shape=(n_rows, n_cols))
        else:
            mat = sp.coo_array(
                (arrays["data"], (arrays["row"], arrays["col"])), shape=(n_rows, n_cols)
            )
        out = sp.csr_array(mat)
        out.check_format(full_check=True)
    except (ValueError, TypeError, IndexError) as exc:
        raise src.error(f"holds an invalid {fmt} sparse matrix ({exc})") from None
    return out


# ----------------------------------------------------------------------------------------------
# text: layout from the first lines, numbers parsed by numpy's C parser
# ----------------------------------------------------------------------------------------------

_NUMBER = re.compile(
    r"^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$", re.IGNORECASE
)
_INDEX_NAMES = ("", "unnamed: 0", "index")


_FINITE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def _is_number(field: str) -> bool:
    """A number as numpy's parser reads it (``inf`` and ``nan`` included)."""
    return bool(_NUMBER.match(field.strip()))


def _is_finite_number(field: str) -> bool:
    """Digits, a decimal point, an exponent: where labels are concerned, ``inf``, ``NaN`` or
    ``Infinity`` are more likely class names than numbers (no valid label is infinite)."""
    return bool(_FINITE.match(field.strip()))


@dataclass(frozen=True)
class _Layout:
    """What the first data lines of a text file say about it."""

    delimiter: str | None  # ",", ";", "\t", or None for runs of whitespace
    rows: tuple[tuple[int, tuple[str, ...]], ...]  # (line number, fields) of the first data lines
    n_lines: int  # number of lines in the file (an upper bound on the data rows)

    @property
    def first(self) -> tuple[str, ...]:
        return self.rows[0][1]

    @property
    def second(self) -> tuple[str, ...] | None:
        return self.rows[1][1] if len(self.rows) > 1 else None


def _text(src: _Source) -> io.TextIOWrapper:
    """A text view of the file from its start: UTF-8, an optional BOM, any newline convention."""
    src.fh.seek(0)
    return io.TextIOWrapper(src.fh, encoding="utf-8-sig", newline=None)


def _split(body: str, delimiter: str | None) -> tuple[str, ...]:
    if delimiter is None:
        return tuple(body.split())
    return tuple(f.strip() for f in next(csv.reader([body], delimiter=delimiter, quotechar='"')))


def _body(line: str) -> str:
    """A line without its comment (``#`` to the end), line end and surrounding spaces (tabs are
    kept: a leading tab is an empty first field). Blank when ``not _body(line).strip()``."""
    return line.split("#", 1)[0].strip(" \r\n")


@contextmanager
def _lines(src: _Source) -> Iterator[Iterator[tuple[int, str]]]:
    """``(line number, line)`` of every line, each at most :data:`_MAX_LINE` characters.

    A context manager, so that the text view is detached (never closing the file) however the
    iteration ends.
    """
    text = _text(src)

    def numbered() -> Iterator[tuple[int, str]]:
        lineno = 0
        while True:
            try:
                line = text.readline(_MAX_LINE)
            except UnicodeDecodeError as exc:
                raise src.error(
                    f"is not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r} near line "
                    f"{lineno + 1}); save it as UTF-8"
                ) from None
            if not line:
                return
            lineno += 1
            if len(line) >= _MAX_LINE and not line.endswith("\n"):
                raise src.error(
                    f"has a line {lineno} longer than {_MAX_LINE} characters; put one row of "
                    "values (one sample) per line"
                )
            yield lineno, line

    try:
        yield numbered()
    finally:
        text.detach()


def _count_lines(src: _Source) -> int:
    """Number of lines (an upper bound on the data rows), counted in binary chunks."""
    src.fh.seek(0)
    newlines = returns = 0
    while chunk := src.fh.read(1 << 20):
        newlines += chunk.count(b"\n")
        returns += chunk.count(b"\r")
    return max(newlines, returns) + 1


def _longest_line(src: _Source) -> int:
    """Length in bytes of the longest line (it bounds the width of a parsed string)."""
    src.fh.seek(0)
    longest = run = 0
    while chunk := src.fh.read(1 << 20):
        pieces = chunk.replace(b"\r", b"\n").split(b"\n")
        if len(pieces) == 1:
            run += len(pieces[0])
            continue
        inner = max(map(len, pieces[1:-1]), default=0)
        longest = max(longest, run + len(pieces[0]), inner)
        run = len(pieces[-1])  # continues in the next chunk
    return max(longest, run)


_WHOLE_LINE = "\x1f"  # a delimiter no text line holds: each line is one field


def _layout(src: _Source, *, names: bool = False) -> _Layout:
    """The delimiter and the first data lines (blank and ``#`` comment lines skipped).

    Commas, tabs or semicolons in the first data line make the delimiter; otherwise runs of
    whitespace do, except that a line is one field when the first line holds a single value,
    or (``names``: class names may contain spaces) when the first lines hold different numbers
    of words or no number at all.
    """
    src.fh.seek(0)
    head = src.fh.read(8192)
    if head.startswith(_NPY_MAGIC):
        raise src.error("is a binary .npy file, not text; rename it to .npy")
    if head.startswith(_ZIP_MAGIC):
        raise src.error("is a zip archive (an .npz), not text; rename it to .npz")
    if b"\x00" in head:
        raise src.error("is a binary file, not text (it holds NUL bytes)")
    n_lines = _count_lines(src)
    found: list[tuple[int, str]] = []
    with _lines(src) as numbered:
        for lineno, line in numbered:
            body = _body(line)
            if body.strip():
                found.append((lineno, body))
                if len(found) == (50 if names else 2):
                    break
    if not found:
        raise src.error("is empty (no data lines)")
    first = found[0][1]
    delimiter = next((d for d in ("\t", ",", ";") if d in first), None)
    if delimiter is None:
        words = [b.split() for _, b in found]
        if len(words[0]) == 1 or (
            names
            and (
                len({len(w) for w in words}) > 1
                or not any(_is_finite_number(x) for w in words for x in w)
            )
        ):
            delimiter = _WHOLE_LINE
    try:
        parsed = tuple((n, _split(b, delimiter)) for n, b in found[:2])
    except csv.Error as exc:
        raise src.error(f"line {found[0][0]} cannot be split into fields ({exc})") from None
    return _Layout(delimiter, parsed, n_lines)


def _loadtxt(
    src: _Source,
    layout: _Layout,
    *,
    skip: int,
    usecols: tuple[int, ...] | None,
    dtype: type,
    expect: str,
) -> np.ndarray:
    """Parse the data lines after the first ``skip`` lines into a 2-D array.

    ``expect`` ("number" or "text") selects how a failure is explained.
    """
    text = _text(src)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # "input contained no data" etc.
            arr = np.loadtxt(
                text,
                dtype=dtype,
                delimiter=layout.delimiter,
                comments="#",
                skiprows=skip,
                usecols=usecols,
                ndmin=2,
                quotechar='"' if layout.delimiter is not None else None,
            )
    except UnicodeDecodeError as exc:
        raise src.error(
            f"is not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r}); save it as UTF-8"
        ) from None
    except ValueError as exc:
        where = _locate(src, layout, skip=skip, usecols=usecols, expect=expect)
        raise src.error(where or f"cannot be parsed ({exc})") from None
    finally:
        text.detach()
    return arr


def _locate(
    src: _Source, layout: _Layout, *, skip: int, usecols: tuple[int, ...] | None, expect: str
) -> str | None:
    """Find the first line that makes parsing fail and say what is wrong with it."""
    width = len(layout.first) if skip < layout.rows[0][0] else None
    ref_line = layout.rows[0][0]
    with _lines(src) as numbered:
        for lineno, line in numbered:
            if lineno <= skip:
                continue
            body = _body(line)
            if not body.strip():
                continue
            try:
                fields = _split(body, layout.delimiter)
            except csv.Error as exc:
                return f"line {lineno} cannot be split into fields ({exc})"
            if width is None:
                width, ref_line = len(fields), lineno
            need = (max(usecols) + 1) if usecols else width
            if (usecols and len(fields) < need) or (not usecols and len(fields) != width):
                sep = "commas" if layout.delimiter == "," else "the same separator"
                return (
                    f"line {lineno} has {len(fields)} values where line {ref_line} has {width}; "
                    f"every row needs the same number of values, separated by {sep}"
                )
            if expect != "number":
                continue
            for c in usecols if usecols else range(len(fields)):
                value = fields[c]
                if value == "":
                    return f"line {lineno}, column {c + 1} is empty; every entry needs a value"
                if not _is_number(value):
                    return (
                        f"line {lineno}, column {c + 1}: {describe(value)} is not a number; "
                        "expected numbers separated by commas or whitespace"
                    )
    return None


def _data_line(src: _Source, *, skip: int, row: int) -> int:
    """The line number of data row ``row`` (0-based) after the first ``skip`` lines."""
    k = -1
    with _lines(src) as numbered:
        for lineno, line in numbered:
            if lineno > skip and _body(line).strip():
                k += 1
                if k == row:
                    return lineno
    return -1  # pragma: no cover - rows always come from the same file


def _check_text_memory(src: _Source, layout: _Layout, n_cols: int, itemsize: int,
                       work: float = 0.0) -> None:
    nbytes = 1.25 * layout.n_lines * max(n_cols, 1) * itemsize + work
    check_memory(
        nbytes,
        what=f"reading {src.name} file {src.path!r} (up to {layout.n_lines} lines of {n_cols} "
        "values)" + (" and its float64 working copy" if work else ""),
        hint="save the array with numpy.save (.npy) and check its size",
    )


def _numeric_table(src: _Source, then=_no_work) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """A numeric text table: optional header row (pandas index column dropped), then numbers;
    the memory check counts the table and ``then((rows, columns))``, made from it next."""
    layout = _layout(src)
    lineno, first = layout.rows[0]
    header = None
    skip = 0
    usecols = None
    if not all(_is_number(f) for f in first):
        header, skip = first, lineno
        if len(first) > 1 and first[0].lower() in _INDEX_NAMES:
            usecols = tuple(range(1, len(first)))
        if layout.second is None:
            raise src.error(f"has a header (line {lineno}) but no data lines")
    n_cols = len(usecols) if usecols else len(layout.rows[-1][1])
    _check_text_memory(src, layout, n_cols, 8, then((n_cols, n_cols)))
    arr = _loadtxt(src, layout, skip=skip, usecols=usecols, dtype=float, expect="number")
    if arr.size == 0:
        raise src.error("holds no numbers")
    if header is not None and usecols:
        header = header[1:]
    return arr, header


def _text_array(src: _Source) -> np.ndarray:
    arr, _ = _numeric_table(src)
    if arr.shape[1] == 1:
        arr = arr[:, 0]
    return arr


# ----------------------------------------------------------------------------------------------
# public loaders
# ----------------------------------------------------------------------------------------------

_ARRAY_KEYS = ("arr_0", "array", "data")
_WEIGHT_KEYS = ("W", "weights", "w", "arr_0")
_LABEL_KEYS = ("labels", "label", "y", "targets", "target", "classes", "arr_0")


def _hold(arr, name: str) -> None:
    """Count a loaded array in every later memory check of the command
    (:func:`dgp.resources.hold`): it stays alive beside what is made from it."""
    parts = (arr.data, arr.indices, arr.indptr) if hasattr(arr, "indptr") else (arr,)
    hold(sum(p.nbytes for p in parts), f"the {name} file as read")


def _dispatch_error(src: _Source, allowed: tuple[str, ...]) -> InputError:
    ext = src.ext or "(none)"
    return src.error(f"has an unknown type {ext!r}; use {', '.join(allowed)}")


def _binary_array(src: _Source, *, key: str | None, preferred: tuple[str, ...], allowed: str):
    """The array of a ``.npy`` file or the chosen member of an ``.npz`` archive."""
    if src.ext == ".npy":
        return _read_npy(src.fh, src.size, src, what="", allowed=allowed)
    zf, members = _npz_members(src)
    with zf:
        if _is_sparse_npz(members) and key is None:
            raise src.error("holds a scipy.sparse matrix; only weights may be sparse")
        k = _pick_member(src, members, key, preferred)
        return _read_member(src, zf, members[k], k, allowed)


def load_array(path: str | os.PathLike, *, name: str, key: str | None = None) -> np.ndarray:
    """Load a plain numeric array from ``path``.

    Accepted formats:

    - ``.npy`` (:func:`numpy.save`); never unpickled: an object array is refused.
    - ``.npz`` (:func:`numpy.savez`): the array ``key``, else the only array, else one called
      ``arr_0``, ``array`` or ``data``.
    - ``.csv``/``.tsv``/``.txt``: numbers separated by commas, tabs, semicolons or whitespace, one
      row per line; ``#`` starts a comment; a UTF-8 byte-order mark is accepted; a header row
      (a line with a field that is not a number) is skipped, and so is the index column of
      pandas ``to_csv`` output (a header whose first field is empty). A single column is
      returned 1-D, as ``int64`` when every value is an integer.

    Parameters
    ----------
    path : str or os.PathLike
        A regular file (devices, FIFOs and sockets are refused, also through a symlink).
    name : str
        What the file is, for messages (e.g. ``"embeddings"``).
    key : str, optional
        The array to read from an ``.npz`` archive.

    Returns
    -------
    numpy.ndarray
        Booleans, integers or floats, in native byte order.

    Raises
    ------
    ValueError
        If the file is missing, not a regular file, unreadable, empty, of an unknown type,
        corrupted or truncated, holds Python objects, complex numbers, dates or strings, a text
        value that is not a number (the message gives its line and column), or would exceed the
        memory budget (:class:`MemoryLimitError`).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "z.csv"
    >>> _ = f.write_text("# two samples\\n1, 2\\n3, 4\\n")
    >>> load_array(f, name="embeddings")
    array([[1., 2.],
           [3., 4.]])
    """
    with _open(path, name) as src:
        if src.ext in (".npy", ".npz"):
            arr = _binary_array(src, key=key, preferred=_ARRAY_KEYS, allowed=_NUMERIC)
        elif src.ext in _TEXT:
            arr = _text_array(src)
            if arr.ndim == 1 and np.isfinite(arr).all() and np.equal(np.round(arr), arr).all():
                arr = arr.astype(np.int64)
        else:
            raise _dispatch_error(src, (".npy", ".npz", ".csv", ".tsv", ".txt"))
    if arr.ndim == 0:
        raise InputError(f"{name} file {os.fspath(path)!r} holds a single number, not an array")
    if arr.size == 0:
        raise InputError(f"{name} file {os.fspath(path)!r} holds an empty array {arr.shape}")
    _hold(arr, name)
    return arr


#: accepted formats of a weights file (quoted by the command line's help)
WEIGHT_FORMATS = (
    "an N x N matrix: .npy (never unpickled), .npz (numpy.savez: the array W or weights, or "
    "the only one; scipy.sparse.save_npz: a sparse matrix, absent entries being zero weights) "
    "or .csv/.tsv/.txt (numbers separated by commas or whitespace, # comments, an optional "
    "header row)"
)


def load_weights(path: str | os.PathLike, *, name: str = "WEIGHTS", key: str | None = None):
    """Load an ``N x N`` weighting (or log-weighting) from ``path``.

    Accepted formats: an N x N matrix: .npy (never unpickled), .npz (numpy.savez: the array W
    or weights, or the only one; scipy.sparse.save_npz: a sparse matrix, absent entries being
    zero weights) or .csv/.tsv/.txt (numbers separated by commas or whitespace, # comments, an
    optional header row). Text may hold ``inf``/``-inf``/``nan`` (log-weights use ``-inf``);
    values are checked by the function that uses them, not here.

    Parameters
    ----------
    path : str or os.PathLike
        A regular file.
    name : str
        What the file is, for messages.
    key : str, optional
        The array to read from a dense ``.npz`` archive.

    Returns
    -------
    numpy.ndarray or scipy.sparse.csr_array
        A dense array in its stored dtype (float32 stays float32) or, for a file written by
        :func:`scipy.sparse.save_npz`, a validated CSR array.

    Raises
    ------
    ValueError
        As :func:`load_array`, and if the matrix is not square.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "w.csv"
    >>> _ = f.write_text("0 1\\n1 0\\n")
    >>> load_weights(f)
    array([[0., 1.],
           [1., 0.]])
    """
    with _open(path, name) as src:
        if src.ext == ".npz":
            zf, members = _npz_members(src)
            with zf:
                if _is_sparse_npz(members) and key is None:
                    W = _read_sparse(src, zf, members)
                else:
                    k = _pick_member(src, members, key, _WEIGHT_KEYS)
                    W = _read_member(src, zf, members[k], k, _NUMERIC, then=_weights_work)
        elif src.ext == ".npy":
            W = _read_npy(src.fh, src.size, src, what="", allowed=_NUMERIC, then=_weights_work)
        elif src.ext in _TEXT:
            W, _ = _numeric_table(src, then=_weights_work)
        else:
            raise _dispatch_error(src, (".npy", ".npz", ".csv", ".tsv", ".txt"))
        if W.ndim != 2 or W.shape[0] != W.shape[1]:
            raise src.error(f"holds a {_shape_text(W.shape)} array; weights are an N x N matrix")
    _hold(W, name)
    return W


#: accepted formats of a labels file (quoted by the command line's help)
LABEL_FORMATS = (
    ".npy/.npz (an array of labels, integer or class names; .npz: the array labels or y, or "
    "the only one) or .csv/.tsv/.txt: one label per line, or a table with one column per field "
    "(comma, tab or whitespace separated, # comments, an optional header row, pandas to_csv "
    "output with its index column); class labels may be integers or names (cat, dog: numbered "
    "in sorted order); pick a column by name or position"
)


@dataclass(frozen=True)
class LabelFile:
    """Labels read from a file by :func:`load_labels`.

    Attributes
    ----------
    values : numpy.ndarray
        Read-only. Class labels: ``int64`` of shape ``(N,)`` (class names replaced by their
        index in ``classes``). Continuous labels: ``float64`` of shape ``(N,)`` or ``(N, p)``.
    classes : tuple of str or None
        The class names, in sorted order, when the file names its classes (``values[i]`` is an
        index into it); ``None`` when the labels are numbers.
    columns : tuple of (str or int)
        The columns used: their header names when the file has a header, else their 0-based
        positions in the file.
    path : str
        The file read.
    """

    values: np.ndarray
    classes: tuple[str, ...] | None
    columns: tuple[str | int, ...]
    path: str

    def __len__(self) -> int:
        return int(self.values.shape[0])

    def class_name(self, code: int) -> str:
        """The name of class ``code`` (its number as text when the labels are numbers)."""
        return self.classes[code] if self.classes is not None else str(code)

    @property
    def labels(self) -> np.ndarray:
        """The labels as the file gives them, for the library: the class names (a string
        array) when the file names its classes, so that messages and results speak of ``'dog'``,
        not of class 2; else ``values``."""
        if self.classes is None:
            return self.values
        return np.asarray(self.classes, dtype=str)[self.values]


def _column_index(
    column: str | int, header: tuple[str, ...] | None, n_cols: int, src: _Source
) -> int:
    if isinstance(column, str):
        if header is not None and column in header:
            return header.index(column)
        if header is not None:
            low = [h.lower() for h in header]
            if column.lower() in low:
                return low.index(column.lower())
        if re.fullmatch(r"-?\d+", column.strip()):
            column = int(column)
        else:
            if header is None:
                raise src.error(
                    f"has no header row, so there is no column named {column!r}; choose the "
                    f"column by its 0-based position (0 to {n_cols - 1}; on the command line "
                    "--label-column)"
                )
            names = ", ".join(repr(h) for h in header)
            raise src.error(
                f"has no column {column!r}{_suggest(column, header)}; its columns are {names}"
            )
    if not -n_cols <= column < n_cols:
        raise src.error(
            f"has {n_cols} column{'s' if n_cols != 1 else ''}; column {column} is out of range "
            f"(0-based positions 0 to {n_cols - 1})"
        )
    return column % n_cols


def _column_label(c: int, header: tuple[str, ...] | None) -> str | int:
    return header[c] if header is not None and header[c] != "" else c


def _class_codes(
    names: np.ndarray, src: _Source, *, skip: int, where: str
) -> tuple[np.ndarray, tuple[str, ...]] | None:
    """Integer codes (sorted order) and the class names; ``None`` when every name is a number.

    A missing label, or numbers mixed with names, is refused with the line of the odd one out.
    """

    def line_of(row: int) -> int:
        return _data_line(src, skip=skip, row=row) if skip >= 0 else row + 1

    names = np.char.strip(names)
    empty = np.flatnonzero(names == "")
    if empty.size:
        raise src.error(
            f"{where}: line {line_of(int(empty[0]))} has no label; every sample needs one"
        )
    classes, codes = np.unique(names, return_inverse=True)
    codes = codes.reshape(-1)
    numeric = np.array([_is_finite_number(str(c)) for c in classes], dtype=bool)
    if numeric.all():
        return None
    if numeric.any():
        per_row = numeric[codes]
        odd = per_row if 2 * per_row.sum() <= per_row.size else ~per_row
        row = int(np.flatnonzero(odd)[0])
        among = "class names" if odd is per_row else "numeric labels"
        raise src.error(
            f"{where}: line {line_of(row)} holds {describe(str(names[row]))} among {among}; fix "
            "that line, or give every class a name"
        )
    return codes.astype(np.int64), tuple(str(c) for c in classes)


def _as_class_numbers(values: np.ndarray, src: _Source, *, skip: int, where: str) -> np.ndarray:
    flat = values.astype(np.float64, copy=False).reshape(-1)
    bad = ~np.isfinite(flat) | (np.round(flat) != flat) | (np.abs(flat) > 2.0**53)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        line = _data_line(src, skip=skip, row=row) if skip >= 0 else row + 1
        raise src.error(
            f"{where}: line {line} holds {flat[row]:g}, not an integer class label; class "
            "labels are integers or names (for continuous labels use kind='continuous')"
        )
    return flat.astype(np.int64)


def load_labels(
    path: str | os.PathLike,
    *,
    name: str = "labels",
    column: str | int | None = None,
    kind: str = "auto",
    key: str | None = None,
) -> LabelFile:
    """Load labels from ``path``, as people have them.

    Accepted formats: .npy/.npz (an array of labels, integer or class names; .npz: the array
    labels or y, or the only one) or .csv/.tsv/.txt: one label per line, or a table with one
    column per field (comma, tab or whitespace separated, # comments, an optional header row,
    pandas to_csv output with its index column); class labels may be integers or names (cat,
    dog: numbered in sorted order); pick a column by name or position.

    The first data line is a header when one of its fields is not a number while the line
    below holds a number there, when its first field is empty (pandas' unnamed index, which is
    then skipped), or when it names a column of class names that it never occurs in again (a
    class needs at least two samples). A single line of several values is one label per value.

    Parameters
    ----------
    path : str or os.PathLike
        A regular file.
    name : str
        What the file is, for messages.
    column : str or int, optional
        The column to use: a header name, or a 0-based position in the file (negative counts
        from the end; a string of digits is a position unless it is a header name). In an
        ``.npz`` archive a name may also choose the array. Default: the only column (after
        dropping a pandas index column); for continuous labels, all columns.
    kind : {"auto", "class", "continuous"}
        ``"class"``: one column of integers or names (names are numbered in sorted order and
        kept in :attr:`LabelFile.classes`). ``"continuous"``: numbers, one or more columns.
        ``"auto"``: class names when the column holds names, else the numbers as they are
        (``int64`` when all are integers).
    key : str, optional
        The array to read from an ``.npz`` archive.

    Returns
    -------
    LabelFile
        ``values`` (read-only), ``classes`` (names or ``None``), ``columns`` used, ``path``.

    Raises
    ------
    ValueError
        As :func:`load_array`; and, naming the line and column, if a value is missing, is not a
        number where numbers are needed, or is not an integer for class labels; if several
        columns could be meant for class labels (choose one with ``column``); or if ``column``
        does not exist.
    TypeError
        If ``column`` is neither a string nor an integer.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "y.csv"
    >>> _ = f.write_text(",species\\n0,dog\\n1,cat\\n2,dog\\n3,cat\\n")  # pandas to_csv
    >>> lab = load_labels(f)
    >>> lab.values, lab.classes, lab.columns
    (array([1, 0, 1, 0]), ('cat', 'dog'), ('species',))
    """
    check_choice(kind, ("auto", "class", "continuous"), "kind")
    if column is not None and (isinstance(column, bool) or not isinstance(column, (str, int))):
        raise InputTypeError(f"column must be a column name or a 0-based position, got {column!r}")
    with _open(path, name) as src:
        if src.ext in (".npy", ".npz"):
            out = _binary_labels(src, column=column, kind=kind, key=key)
        elif src.ext in _TEXT:
            out = _text_labels(src, column=column, kind=kind)
        else:
            raise _dispatch_error(src, (".npy", ".npz", ".csv", ".tsv", ".txt"))
    values, classes, columns = out
    if values.shape[0] == 0:
        raise InputError(f"{name} file {os.fspath(path)!r} holds no labels")
    values = np.ascontiguousarray(values)
    values.flags.writeable = False
    return LabelFile(values=values, classes=classes, columns=columns, path=os.fspath(path))


def _finish_labels(
    data: np.ndarray,
    columns: tuple[str | int, ...],
    all_columns: tuple[str | int, ...],
    src: _Source,
    *,
    kind: str,
    skip: int,
) -> tuple[np.ndarray, tuple[str, ...] | None, tuple[str | int, ...]]:
    """Labels from the selected columns ``data`` (2-D, numbers or strings) of a table.

    ``skip`` is the number of lines before the first data row (``-1``: not a text file, rows
    are numbered from 1).
    """
    where = "column " + ", ".join(repr(c) if isinstance(c, str) else str(c) for c in columns)
    is_text = data.dtype.kind in "US"
    if data.shape[1] > 1 and (kind == "class" or (kind == "auto" and is_text)):
        names = ", ".join(repr(c) if isinstance(c, str) else str(c) for c in all_columns)
        raise src.error(
            f"has {len(all_columns)} columns ({names}); class labels are one column: choose it "
            "with column=..., a header name or a 0-based position"
        )
    if is_text:
        if kind == "continuous":
            raise src.error(f"{where} holds text where continuous labels need numbers")
        named = _class_codes(data[:, 0], src, skip=skip, where=where)
        if named is not None:
            return named[0], named[1], columns
        data = np.char.strip(data).astype(np.float64)  # every "name" is a number
    if kind == "class":
        return _as_class_numbers(data[:, 0], src, skip=skip, where=where), None, columns
    if data.shape[1] > 1:
        return data.astype(np.float64), None, columns
    values = data[:, 0]
    integral = values.dtype.kind in "biu" or (
        np.isfinite(values).all() and (np.round(values) == values).all()
    )
    if kind == "auto" and integral and (np.abs(values) <= 2.0**53).all():
        return values.astype(np.int64), None, columns
    return values.astype(np.float64), None, columns


def _binary_labels(src: _Source, *, column, kind: str, key: str | None):
    if src.ext == ".npz" and key is None and isinstance(column, str):
        zf, members = _npz_members(src)
        zf.close()
        if column in members:  # a name may choose the array of an archive
            key, column = column, None
    arr = _binary_array(src, key=key, preferred=_LABEL_KEYS, allowed=_NUMERIC + "US")
    if arr.ndim == 0 or arr.ndim > 2:
        raise src.error(f"holds a {_shape_text(arr.shape)} array; labels are 1-D or N x p")
    if arr.dtype.kind == "S":
        try:
            arr = np.char.decode(arr, "utf-8")
        except UnicodeDecodeError:
            raise src.error("holds byte strings that are not UTF-8 class names") from None
    table = arr[:, None] if arr.ndim == 1 else arr
    all_columns = tuple(range(table.shape[1]))
    if column is not None:
        c = _column_index(column, None, table.shape[1], src)
        table, columns = table[:, [c]], (c,)
    else:
        columns = all_columns
    return _finish_labels(table, columns, all_columns, src, kind=kind, skip=-1)


def _text_labels(src: _Source, *, column, kind: str):
    layout = _layout(src, names=True)
    lineno, first = layout.rows[0]
    second = layout.second
    n_cols = len(first)
    header: tuple[str, ...] | None = None
    if second is not None and len(second) == n_cols:
        if n_cols > 1 and first[0] == "":  # pandas to_csv: unnamed index column
            header = first
        elif any(
            not _is_number(a) and _is_finite_number(b) for a, b in zip(first, second, strict=True)
        ):
            header = first
        elif isinstance(column, str) and column in first:
            header = first
    index_col = header is not None and n_cols > 1 and header[0].lower() in _INDEX_NAMES
    if column is not None:
        cols = [_column_index(column, header, n_cols, src)]
    else:
        cols = list(range(1 if index_col else 0, n_cols))
    single_row = header is None and second is None and n_cols > 1
    skip = lineno if header is not None else 0
    usecols = tuple(cols) if len(cols) < n_cols else None
    probe = second if header is not None else first
    numeric = probe is not None and all(_is_finite_number(probe[c]) for c in cols)
    if numeric or kind == "continuous":
        _check_text_memory(src, layout, len(cols), 8)
        table = _loadtxt(src, layout, skip=skip, usecols=usecols, dtype=float, expect="number")
    else:  # class names: strings, parsed by the C parser too
        _check_text_memory(src, layout, len(cols), 4 * max(_longest_line(src), 1))
        table = _loadtxt(src, layout, skip=skip, usecols=usecols, dtype=str, expect="text")
        if header is None and len(cols) == 1 and table.shape[0] > 2:
            top = table[0, 0].strip()
            if not _is_number(top) and not (np.char.strip(table[1:, 0]) == top).any():
                header, skip = first, lineno  # a column name, not a class of one sample
                table = table[1:]
    if single_row:  # one line of several values: one label per value
        table, cols = table.reshape(-1, 1), [0]
    all_columns = tuple(
        _column_label(c, header) for c in range(table.shape[1] if single_row else n_cols)
    )
    columns = tuple(_column_label(c, header) for c in cols)
    return _finish_labels(table, columns, all_columns, src, kind=kind, skip=skip)


#: accepted formats of an edge-list file
EDGE_LIST_FORMATS = (
    "text (.csv/.tsv/.txt/.edges/.edgelist): one edge per line, 'i j' or 'i j weight' (comma, "
    "tab or whitespace separated, # comments, an optional header row such as 'source,target,"
    "weight'); integer node labels are kept, other labels are numbered in sorted order; a "
    "missing weight is 1"
)
_EDGE_HEADER_WORDS = {
    "source", "target", "weight", "from", "to", "u", "v", "i", "j", "node1", "node2", "src",
    "dst", "w", "a", "b", "head", "tail",
}  # fmt: skip


def load_edge_list(path: str | os.PathLike, *, directed: bool = False, name: str = "edges"):
    """Load a weighted graph from an edge list.

    Accepted formats: text (.csv/.tsv/.txt/.edges/.edgelist): one edge per line, 'i j' or 'i j
    weight' (comma, tab or whitespace separated, # comments, an optional header row such as
    'source,target,weight'); integer node labels are kept, other labels are numbered in sorted
    order; a missing weight is 1.

    An edge listed twice (for an undirected graph: also as ``j i``) must carry the same weight
    both times. Weights must be finite and ``>= 0``.

    Parameters
    ----------
    path : str or os.PathLike
        A regular file.
    directed : bool
        Build a :class:`networkx.DiGraph` (``i j`` is the edge from ``i`` to ``j``) instead of an
        undirected :class:`networkx.Graph`.
    name : str
        What the file is, for messages.

    Returns
    -------
    networkx.Graph or networkx.DiGraph
        Edges carry a ``"weight"`` attribute. With named nodes, node ``k`` is the ``k``-th name in
        sorted order and carries it as its ``"name"`` attribute. Nodes are added in sorted order.

    Raises
    ------
    ImportError
        If networkx is not installed.
    ValueError
        As :func:`load_array`; and, naming the line, if a line does not have 2 or 3 fields, a
        node label is empty, a weight is not a finite number ``>= 0``, or an edge is listed twice
        with different weights.
    TypeError
        If ``directed`` is not a bool.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "g.csv"
    >>> _ = f.write_text("source,target,weight\\ncat,dog,2.5\\ndog,eel,1\\n")
    >>> G = load_edge_list(f)
    >>> sorted(G.edges(data="weight")), G.nodes[0]["name"]
    ([(0, 1, 2.5), (1, 2, 1.0)], 'cat')
    """
    if not isinstance(directed, (bool, np.bool_)):
        raise InputTypeError(f"directed must be True or False, got {describe(directed)}")
    try:
        import networkx as nx
    except ImportError:
        raise ImportError("load_edge_list needs networkx: pip install networkx") from None
    with _open(path, name) as src:
        if src.ext not in _EDGE_TEXT:
            raise _dispatch_error(src, _EDGE_TEXT)
        u, v, w, names = _edges(src, directed=bool(directed))
    G = nx.DiGraph() if directed else nx.Graph()
    if names is None:
        G.add_nodes_from(np.unique(np.concatenate([u, v])).tolist())
    else:
        G.add_nodes_from((k, {"name": n}) for k, n in enumerate(names))
    G.add_weighted_edges_from(zip(u.tolist(), v.tolist(), w.tolist(), strict=True))
    return G


def _looks_like_header(table: np.ndarray, second: list[str] | None) -> bool:
    """Whether the first row of an edge table (not made of header words) is a header: a field
    that is text above a number in the next row, while its node fields name no node of the
    other rows and are not both integers (``0 1 abc`` is an edge with a bad weight, not a
    header)."""
    first = [str(x) for x in table[0]]
    if second is None or len(second) != len(first):
        return False
    if not any(not _is_number(a) and _is_number(b) for a, b in zip(first, second, strict=True)):
        return False
    if all(re.fullmatch(r"[+-]?\d{1,18}", f) for f in first[:2]):
        return False
    rest = set(table[1:, :2].ravel().tolist())
    return not (first[0] in rest or first[1] in rest)


def _edges(src: _Source, *, directed: bool):
    """Endpoints, weights and node names (``None`` for integer labels) of an edge list."""
    layout = _layout(src)
    lineno, first = layout.rows[0]
    second = layout.second
    n_cols = len(first)
    if n_cols not in (2, 3):
        raise src.error(
            f"line {lineno} has {n_cols} field{'s' if n_cols != 1 else ''}; an edge list has "
            "'i j' or 'i j weight' on each line"
        )
    _check_text_memory(src, layout, n_cols, 4 * max(_longest_line(src), 1))
    table = np.char.strip(_loadtxt(src, layout, skip=0, usecols=None, dtype=str, expect="text"))
    header = {f.lower() for f in first} <= _EDGE_HEADER_WORDS or _looks_like_header(
        table, second
    )
    skip = lineno if header else 0
    if header:
        table = table[1:]
    if table.shape[0] == 0:
        raise src.error(f"has a header (line {lineno}) but no edges")

    def line_of(row: int) -> int:
        return _data_line(src, skip=skip, row=row)

    nodes = table[:, :2]
    empty = np.flatnonzero((nodes == "").any(axis=1))
    if empty.size:
        raise src.error(f"line {line_of(int(empty[0]))} has an empty node label")
    names: tuple[str, ...] | None = None
    if all(re.fullmatch(r"[+-]?\d{1,18}", str(x)) for x in np.unique(nodes)):
        ends = nodes.astype(np.int64)
    else:
        uniq, codes = np.unique(nodes, return_inverse=True)
        ends, names = codes.reshape(nodes.shape).astype(np.int64), tuple(str(x) for x in uniq)
    if n_cols == 3:
        text_w = table[:, 2]
        ok = np.array([_is_number(str(x)) for x in text_w], dtype=bool)
        if not ok.all():
            row = int(np.flatnonzero(~ok)[0])
            raise src.error(
                f"line {line_of(row)}, column 3: {describe(str(text_w[row]))} is not a number; "
                "the third field of an edge is its weight"
            )
        w = text_w.astype(np.float64)
        bad = ~np.isfinite(w) | (w < 0)
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            raise src.error(f"line {line_of(row)}: weight {w[row]:g} is not a finite number >= 0")
    else:
        w = np.ones(table.shape[0])
    a, b = ends[:, 0], ends[:, 1]
    if not directed:
        a, b = np.minimum(a, b), np.maximum(a, b)
    order = np.lexsort((b, a))
    same = (np.diff(a[order]) == 0) & (np.diff(b[order]) == 0)
    clash = same & (w[order][1:] != w[order][:-1])
    if clash.any():
        k = int(np.flatnonzero(clash)[0])
        r1, r2 = sorted((int(order[k]), int(order[k + 1])))
        raise src.error(
            f"lists the edge on line {line_of(r1)} again on line {line_of(r2)} with another "
            f"weight ({w[r1]:g} and {w[r2]:g}); keep one"
        )
    keep = np.ones(table.shape[0], dtype=bool)
    keep[order[1:][same]] = False
    return ends[keep, 0], ends[keep, 1], w[keep], names


def __getattr__(name: str):
    """``dgp.io.Labels`` is the old name of :class:`LabelFile` (two classes were named
    ``Labels``; an objective's validated labels are :class:`dgp.objectives.registry.Labels`)."""
    if name == "Labels":
        import warnings

        warnings.warn("dgp.io.Labels is renamed dgp.io.LabelFile", DeprecationWarning,
                      stacklevel=2)
        return LabelFile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
