"""Edge lists: ``i j [weight]`` lines, a header row or not, node names, repeated edges."""

from __future__ import annotations

import re

import numpy as np

from dgp.errors import check_flag, describe
from dgp.io._source import Source
from dgp.io._text import check_text_memory, data_line, is_number, loadtxt, longest_line, read_layout

_EDGE_HEADER_WORDS = {
    "source", "target", "weight", "from", "to", "u", "v", "i", "j", "node1", "node2", "src",
    "dst", "w", "a", "b", "head", "tail",
}  # fmt: skip


def _looks_like_header(table: np.ndarray, second: list[str] | None) -> bool:
    """Whether the first row of an edge table (not made of header words) is a header: a field
    that is text above a number in the next row, while its node fields name no node of the
    other rows and are not both integers (``0 1 abc`` is an edge with a bad weight, not a
    header)."""
    first = [str(x) for x in table[0]]
    if second is None or len(second) != len(first):
        return False
    if not any(not is_number(a) and is_number(b) for a, b in zip(first, second, strict=True)):
        return False
    if all(re.fullmatch(r"[+-]?\d{1,18}", f) for f in first[:2]):
        return False
    rest = set(table[1:, :2].ravel().tolist())
    return not (first[0] in rest or first[1] in rest)


def read_edges(src: Source, *, directed: object):
    """Endpoints, weights, node names (``None`` for integer labels) and ``directed`` (checked
    here, where it is used: a bool) of an edge list.

    Raises
    ------
    ParameterTypeError
        If ``directed`` is not True or False.
    """
    directed = check_flag(directed, "directed")
    layout = read_layout(src)
    lineno, first = layout.rows[0]
    second = layout.second
    n_cols = len(first)
    if n_cols not in (2, 3):
        raise src.error(
            f"line {lineno} has {n_cols} field{'s' if n_cols != 1 else ''}; an edge list has "
            "'i j' or 'i j weight' on each line"
        )
    check_text_memory(src, layout, n_cols, 4 * max(longest_line(src), 1))
    table = np.char.strip(loadtxt(src, layout, skip=0, usecols=None, dtype=str, expect="text"))
    header = {f.lower() for f in first} <= _EDGE_HEADER_WORDS or _looks_like_header(
        table, second
    )
    skip = lineno if header else 0
    if header:
        table = table[1:]
    if table.shape[0] == 0:
        raise src.error(f"has a header (line {lineno}) but no edges")

    def line_of(row: int) -> int:
        return data_line(src, skip=skip, row=row)

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
        ok = np.array([is_number(str(x)) for x in text_w], dtype=bool)
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
    return ends[keep, 0], ends[keep, 1], w[keep], names, directed
