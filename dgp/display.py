"""Readable summaries of results: aligned text for ``str`` and an HTML table for notebooks.

Every result class of dgp renders its ``(name, value)`` rows through these functions, so that
``str`` fits a terminal and ``_repr_html_`` shows the same rows in a notebook."""

from __future__ import annotations

import html
import math
import sys
import textwrap
from collections.abc import Callable

import numpy as np

from dgp.constants import SCALE_FLOOR

__all__ = ["HTML_MONOSPACE", "SUMMARY_TABLE_MAX", "distinct_digits", "entry_cells",
           "format_duration", "format_nats", "format_rows", "format_summary", "html_pre",
           "html_rows", "html_summary", "html_table", "stderr_progress"]

#: the font of ASCII drawings in HTML: monospace whatever the page's stylesheet (an nbconvert
#: export or a docs theme may set ``pre`` in a proportional font), so that columns line up
HTML_MONOSPACE = ("font-family: ui-monospace, SFMono-Regular, Menlo, Consolas, 'DejaVu Sans Mono', "
                  "'Liberation Mono', monospace")

#: the largest Gram (N x N samples, or K x K classes) a result's summary shows whole, in text and
#: HTML; beyond it the summary says how to ask for it (one choice for every result)
SUMMARY_TABLE_MAX = 8

#: significant digits of a float that Python's repr needs to round-trip (float64)
_ROUND_TRIP_DIGITS = 17


def distinct_digits(*values: float, minimum: int = 6) -> int:
    """The fewest significant digits (at least ``minimum``) at which the distinct ``values``
    print differently with ``:.{k}g``: the two ends of a bracket then never print alike.

    >>> a, b = 0.651441722856, 0.6514417228561234
    >>> k = distinct_digits(a, b)
    >>> k, f"{a:.{k}g}", f"{b:.{k}g}"
    (13, '0.651441722856', '0.6514417228561')
    >>> distinct_digits(0.5, 0.75)
    6
    """
    distinct = {float(v) for v in values}
    for k in range(minimum, _ROUND_TRIP_DIGITS):
        if len({f"{v:.{k}g}" for v in distinct}) == len(distinct):
            return k
    return _ROUND_TRIP_DIGITS


def format_duration(seconds: float) -> str:
    """An estimated duration as people read it: seconds below two minutes, else minutes.

    >>> format_duration(23.4), format_duration(236.1)
    ('23 s', '4 min')
    """
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def format_nats(value: float, log_value: float | None = None) -> str:
    """A non-negative amount of nats, written from its log where the float underflows.

    >>> format_nats(0.0, -1000.0)
    '5.076e-435'
    >>> format_nats(0.0, -math.inf), format_nats(0.25), format_nats(0.0, -2e300)
    ('0', '0.25', 'exp(-2e+300)')
    """
    if value > SCALE_FLOOR or log_value is None or (value == 0 and log_value == -math.inf):
        return "0" if value == 0 else f"{value:.4g}"
    e10 = log_value / math.log(10.0)
    if abs(e10) > 1e15:  # a power of ten whose exponent float64 cannot print digit by digit
        return f"exp({log_value:.6g})"
    exp = math.floor(e10)
    return f"{10.0 ** (e10 - exp):.3f}e{exp}"


#: columns of a result's text summary: a value longer than that continues on the next lines,
#: under its first word
SUMMARY_WIDTH = 80


def format_summary(title: str, pairs: list[tuple[str, str]]) -> str:
    """``title`` and ``name  value`` lines with the names aligned, each line at most
    :data:`SUMMARY_WIDTH` columns (longer values wrap at spaces, under their first word).

    >>> print(format_summary("T", [("a", "1"), ("long name", "2")]))
    T
      a          1
      long name  2
    """
    width = max((len(k) for k, _ in pairs), default=0)
    indent = " " * (width + 4)
    lines = [title]
    for k, v in pairs:
        lines += textwrap.wrap(v, width=SUMMARY_WIDTH, initial_indent=f"  {k:<{width}}  ",
                               subsequent_indent=indent, break_on_hyphens=False,
                               break_long_words=False) or [f"  {k}"]
    return "\n".join(lines)


def format_rows(rows: list[tuple[str, str]], *, width: int = 80) -> str:
    """``name  value`` lines, names aligned, values wrapped so that each line fits ``width``.

    >>> print(format_rows([("verdict", "degenerate"), ("why", "a b c " * 10)], width=50))
    verdict  degenerate
    why      a b c a b c a b c a b c a b c a b c a b c
             a b c a b c a b c
    """
    key_width = max((len(k) for k, _ in rows), default=0) + 2
    lines = []
    for key, value in rows:
        wrapped = textwrap.wrap(value, width=max(40, width - key_width)) or [""]
        lines.append(f"{key:<{key_width}}{wrapped[0]}")
        lines += [" " * key_width + w for w in wrapped[1:]]
    return "\n".join(lines)


def html_rows(rows: list[tuple[str, str]]) -> str:
    """The rows as a two-column HTML table (names left, values left-aligned, escaped).

    >>> print(html_rows([("a", "<1>")]).replace("><", ">\\n<"))
    <table>
    <tr>
    <th style='text-align:left'>a</th>
    <td style='text-align:left'>&lt;1&gt;</td>
    </tr>
    </table>
    """
    body = "".join(
        f"<tr><th style='text-align:left'>{html.escape(k)}</th>"
        f"<td style='text-align:left'>{html.escape(v)}</td></tr>"
        for k, v in rows
    )
    return f"<table>{body}</table>"


def html_pre(text: str) -> str:
    """Preformatted text (an ASCII map) as HTML in a monospace font, escaped, never wrapped.

    >>> out = html_pre("a < b  o")
    >>> out.startswith('<pre style="font-family: ui-monospace'), out.endswith(">a &lt; b  o</pre>")
    (True, True)
    """
    return (f'<pre style="{HTML_MONOSPACE}; white-space: pre; line-height: 1.25">'
            f"{html.escape(text, quote=False)}</pre>")


def html_table(cells: list[list[str]], labels: list[str], caption: str = "") -> str:
    """An HTML table of a small matrix's printed ``cells`` (:func:`entry_cells`: a Gram's
    entries, with their intervals' half-widths where they come from sampled batches), rows and
    columns headed by ``labels``."""
    head = "".join(f"<th>{html.escape(lab)}</th>" for lab in labels)
    body = "".join(f"<tr><th>{html.escape(labels[i])}</th>"
                   + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                   for i, row in enumerate(cells))
    cap = f"<caption>{html.escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}<tr><th></th>{head}</tr>{body}</table>"


def html_summary(
    title: str,
    pairs: list[tuple[str, str]],
    *,
    matrix: np.ndarray | None = None,
    cells: list[list[str]] | None = None,
    labels: list[str] | None = None,
    caption: str = "",
) -> str:
    """An HTML block: the summary as a two-column table, then optionally a small matrix
    (:func:`html_table`): ``matrix``, printed by :func:`entry_cells`, or its ``cells`` printed
    already (a sampled Gram's entries with their half-widths)."""
    out = f"<div><strong>{html.escape(title)}</strong>{html_rows(pairs)}"
    if matrix is not None:
        cells = entry_cells(matrix)
    if cells is not None:
        labels = labels or [str(i) for i in range(len(cells))]
        out += html_table(cells, labels, caption)
    return out + "</div>"


def stderr_progress(what: str | None = None) -> Callable[[str], None]:
    """The ``progress`` callable of a long solve that reports on stderr (flushed, also when
    stderr is not a terminal, so that a log file or a notebook sees it as it happens): each
    line starts with ``dgp:`` and, when given, ``what``. Solvers call it at most every few
    seconds and only when they are given it; the entry points give it unless
    ``progress=False``."""
    prefix = "dgp: " if what is None else f"dgp: {what}: "

    def report(line: str) -> None:
        print(prefix + line, file=sys.stderr, flush=True)

    return report


def entry_cells(G: np.ndarray, interval: tuple[np.ndarray, np.ndarray] | None = None,
                digits: int = 4, *, latex: bool = False) -> list[list[str]]:
    r"""The cells of a printed Gram: each entry with ``digits`` decimals and its sign, and where
    its 95% ``interval`` (``(lower, upper)`` arrays) has positive width, ``±`` its half-width
    (``+0.1234±0.0056``): no sampled entry printed without its error where it was measured
    (a ``nan`` interval, not measured, prints the entry alone: the caption says why). ``latex``:
    LaTeX's cells (``0.1234 \pm 0.0056``, a sign on negative entries only)."""
    half = np.zeros_like(G) if interval is None else (interval[1] - interval[0]) / 2
    half = np.where(np.isfinite(half), half, 0.0)
    sign, pm = ("", r" \pm ") if latex else ("+", "±")
    return [[f"{v:{sign}.{digits}f}" if h == 0 else f"{v:{sign}.{digits}f}{pm}{h:.{digits}f}"
             for v, h in zip(row, hrow, strict=True)] for row, hrow in zip(G, half, strict=True)]
