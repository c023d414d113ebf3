"""Label tables: which column, whether the first line is a header, class names or numbers."""

from __future__ import annotations

import re

import numpy as np

from dgp.errors import describe
from dgp.io._archive import binary_array, npz_members
from dgp.io._npy import NUMERIC, shape_text
from dgp.io._source import Source, suggest
from dgp.io._text import (
    INDEX_NAMES,
    check_text_memory,
    data_line,
    is_finite_number,
    is_number,
    loadtxt,
    longest_line,
    read_layout,
)

_LABEL_KEYS = ("labels", "label", "y", "targets", "target", "classes", "arr_0")


def _column_index(
    column: str | int, header: tuple[str, ...] | None, n_cols: int, src: Source
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
                f"has no column {column!r}{suggest(column, header)}; its columns are {names}"
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
    names: np.ndarray, src: Source, *, skip: int, where: str
) -> tuple[np.ndarray, tuple[str, ...]] | None:
    """Integer codes (sorted order) and the class names; ``None`` when every name is a number.

    A missing label, or numbers mixed with names, is refused with the line of the odd one out.
    """

    def line_of(row: int) -> int:
        return data_line(src, skip=skip, row=row) if skip >= 0 else row + 1

    names = np.char.strip(names)
    empty = np.flatnonzero(names == "")
    if empty.size:
        raise src.error(
            f"{where}: line {line_of(int(empty[0]))} has no label; every sample needs one"
        )
    classes, codes = np.unique(names, return_inverse=True)
    codes = codes.reshape(-1)
    numeric = np.array([is_finite_number(str(c)) for c in classes], dtype=bool)
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


def _as_class_numbers(values: np.ndarray, src: Source, *, skip: int, where: str) -> np.ndarray:
    flat = values.astype(np.float64, copy=False).reshape(-1)
    bad = ~np.isfinite(flat) | (np.round(flat) != flat) | (np.abs(flat) > 2.0**53)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        line = data_line(src, skip=skip, row=row) if skip >= 0 else row + 1
        raise src.error(
            f"{where}: line {line} holds {flat[row]:g}, not an integer class label; class "
            "labels are integers or names (for continuous labels use kind='continuous')"
        )
    return flat.astype(np.int64)


def _finish_labels(
    data: np.ndarray,
    columns: tuple[str | int, ...],
    all_columns: tuple[str | int, ...],
    src: Source,
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


def binary_labels(src: Source, *, column, kind: str, key: str | None):
    if src.ext == ".npz" and key is None and isinstance(column, str):
        zf, members = npz_members(src)
        zf.close()
        if column in members:  # a name may choose the array of an archive
            key, column = column, None
    arr = binary_array(src, key=key, preferred=_LABEL_KEYS, allowed=NUMERIC + "US")
    if arr.ndim == 0 or arr.ndim > 2:
        raise src.error(f"holds a {shape_text(arr.shape)} array; labels are 1-D or N x p")
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


def text_labels(src: Source, *, column, kind: str):
    layout = read_layout(src, names=True)
    lineno, first = layout.rows[0]
    second = layout.second
    n_cols = len(first)
    header: tuple[str, ...] | None = None
    if second is not None and len(second) == n_cols:
        if n_cols > 1 and first[0] == "":  # pandas to_csv: unnamed index column
            header = first
        elif any(
            not is_number(a) and is_finite_number(b) for a, b in zip(first, second, strict=True)
        ):
            header = first
        elif isinstance(column, str) and column in first:
            header = first
    index_col = header is not None and n_cols > 1 and header[0].lower() in INDEX_NAMES
    if column is not None:
        cols = [_column_index(column, header, n_cols, src)]
    else:
        cols = list(range(1 if index_col else 0, n_cols))
    single_row = header is None and second is None and n_cols > 1
    skip = lineno if header is not None else 0
    usecols = tuple(cols) if len(cols) < n_cols else None
    probe = second if header is not None else first
    numeric = probe is not None and all(is_finite_number(probe[c]) for c in cols)
    if numeric or kind == "continuous":
        check_text_memory(src, layout, len(cols), 8)
        table = loadtxt(src, layout, skip=skip, usecols=usecols, dtype=float, expect="number")
    else:  # class names: strings, parsed by the C parser too
        check_text_memory(src, layout, len(cols), 4 * max(longest_line(src), 1))
        table = loadtxt(src, layout, skip=skip, usecols=usecols, dtype=str, expect="text")
        if header is None and len(cols) == 1 and table.shape[0] > 2:
            top = table[0, 0].strip()
            if not is_number(top) and not (np.char.strip(table[1:, 0]) == top).any():
                header, skip = first, lineno  # a column name, not a class of one sample
                table = table[1:]
    if single_row:  # one line of several values: one label per value
        table, cols = table.reshape(-1, 1), [0]
    all_columns = tuple(
        _column_label(c, header) for c in range(table.shape[1] if single_row else n_cols)
    )
    columns = tuple(_column_label(c, header) for c in cols)
    return _finish_labels(table, columns, all_columns, src, kind=kind, skip=skip)
