"""Text tables: the layout from the first lines, numbers (or class names) parsed by numpy's C
parser, and the line and column of the first value that fails."""

from __future__ import annotations

import csv
import io
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from dgp.errors import describe
from dgp.io._npy import NPY_MAGIC, ZIP_MAGIC, no_work
from dgp.io._source import Source
from dgp.resources import check_memory

MAX_LINE = 1 << 26  # one text line may not exceed 64 Mi characters


_NUMBER = re.compile(
    r"^[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)$", re.IGNORECASE
)
INDEX_NAMES = ("", "unnamed: 0", "index")


_FINITE = re.compile(r"^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$")


def is_number(field: str) -> bool:
    """A number as numpy's parser reads it (``inf`` and ``nan`` included)."""
    return bool(_NUMBER.match(field.strip()))


def is_finite_number(field: str) -> bool:
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


def _text(src: Source) -> io.TextIOWrapper:
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
def _lines(src: Source) -> Iterator[Iterator[tuple[int, str]]]:
    """``(line number, line)`` of every line, each at most :data:`MAX_LINE` characters.

    A context manager, so that the text view is detached (never closing the file) however the
    iteration ends.
    """
    text = _text(src)

    def numbered() -> Iterator[tuple[int, str]]:
        lineno = 0
        while True:
            try:
                line = text.readline(MAX_LINE)
            except UnicodeDecodeError as exc:
                raise src.error(
                    f"is not UTF-8 text (byte {exc.object[exc.start : exc.start + 1]!r} near line "
                    f"{lineno + 1}); save it as UTF-8"
                ) from None
            if not line:
                return
            lineno += 1
            if len(line) >= MAX_LINE and not line.endswith("\n"):
                raise src.error(
                    f"has a line {lineno} longer than {MAX_LINE} characters; put one row of "
                    "values (one sample) per line"
                )
            yield lineno, line

    try:
        yield numbered()
    finally:
        text.detach()


def _count_lines(src: Source) -> int:
    """Number of lines (an upper bound on the data rows), counted in binary chunks."""
    src.fh.seek(0)
    newlines = returns = 0
    while chunk := src.fh.read(1 << 20):
        newlines += chunk.count(b"\n")
        returns += chunk.count(b"\r")
    return max(newlines, returns) + 1


def longest_line(src: Source) -> int:
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


def read_layout(src: Source, *, names: bool = False) -> _Layout:
    """The delimiter and the first data lines (blank and ``#`` comment lines skipped).

    Commas, tabs or semicolons in the first data line make the delimiter; otherwise runs of
    whitespace do, except that a line is one field when the first line holds a single value,
    or (``names``: class names may contain spaces) when the first lines hold different numbers
    of words or no number at all.
    """
    src.fh.seek(0)
    head = src.fh.read(8192)
    if head.startswith(NPY_MAGIC):
        raise src.error("is a binary .npy file, not text; rename it to .npy")
    if head.startswith(ZIP_MAGIC):
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
                or not any(is_finite_number(x) for w in words for x in w)
            )
        ):
            delimiter = _WHOLE_LINE
    try:
        parsed = tuple((n, _split(b, delimiter)) for n, b in found[:2])
    except csv.Error as exc:
        raise src.error(f"line {found[0][0]} cannot be split into fields ({exc})") from None
    return _Layout(delimiter, parsed, n_lines)


def loadtxt(
    src: Source,
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
    src: Source, layout: _Layout, *, skip: int, usecols: tuple[int, ...] | None, expect: str
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
                if not is_number(value):
                    return (
                        f"line {lineno}, column {c + 1}: {describe(value)} is not a number; "
                        "expected numbers separated by commas or whitespace"
                    )
    return None


def data_line(src: Source, *, skip: int, row: int) -> int:
    """The line number of data row ``row`` (0-based) after the first ``skip`` lines."""
    k = -1
    with _lines(src) as numbered:
        for lineno, line in numbered:
            if lineno > skip and _body(line).strip():
                k += 1
                if k == row:
                    return lineno
    return -1  # pragma: no cover - rows always come from the same file


def check_text_memory(src: Source, layout: _Layout, n_cols: int, itemsize: int,
                       work: float = 0.0) -> None:
    nbytes = 1.25 * layout.n_lines * max(n_cols, 1) * itemsize + work
    check_memory(
        nbytes,
        what=f"reading {src.name} file {src.path!r} (up to {layout.n_lines} lines of {n_cols} "
        "values)" + (" and its float64 working copy" if work else ""),
        hint="save the array with numpy.save (.npy) and check its size",
    )


def numeric_table(src: Source, then=no_work) -> tuple[np.ndarray, tuple[str, ...] | None]:
    """A numeric text table: optional header row (pandas index column dropped), then numbers;
    the memory check counts the table and ``then((rows, columns))``, made from it next."""
    layout = read_layout(src)
    lineno, first = layout.rows[0]
    header = None
    skip = 0
    usecols = None
    if not all(is_number(f) for f in first):
        header, skip = first, lineno
        if len(first) > 1 and first[0].lower() in INDEX_NAMES:
            usecols = tuple(range(1, len(first)))
        if layout.second is None:
            raise src.error(f"has a header (line {lineno}) but no data lines")
    n_cols = len(usecols) if usecols else len(layout.rows[-1][1])
    check_text_memory(src, layout, n_cols, 8, then((n_cols, n_cols)))
    arr = loadtxt(src, layout, skip=skip, usecols=usecols, dtype=float, expect="number")
    if arr.size == 0:
        raise src.error("holds no numbers")
    if header is not None and usecols:
        header = header[1:]
    return arr, header


def text_array(src: Source) -> np.ndarray:
    arr, _ = numeric_table(src)
    if arr.shape[1] == 1:
        arr = arr[:, 0]
    return arr
