"""The result of a phase map (:class:`PhaseMap`): the cells, their verdicts and boundaries, as a
table, a data frame, text and a figure."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.design._closed_form import Boundary
from dgp.design._parameters import EXCESS_SOURCES
from dgp.display import format_rows, html_pre, html_rows
from dgp.records import Record

_FRAME_COLUMNS = ("verdict", "rank", "c_lo", "c_hi", "excess_loss", "excess_source",
                  "near_threshold", "min_dim")


@dataclass(frozen=True, eq=False)
class PhaseMap(Record):
    """A verdict map over a grid of parameters (:func:`phase`).

    One return type, whatever is installed: :meth:`to_frame` gives a pandas DataFrame (pandas
    needed), :meth:`to_arrays` a dict of numpy arrays (no dependency), :meth:`to_dict` the JSON
    of ``dgp phase --json``, :meth:`to_csv` a CSV file, :meth:`figure` a figure.

    Attributes
    ----------
    objective : str
        The objective's name, or ``"weights"`` for a weight matrix.
    params : tuple of str
        The swept parameters, in grid order (the first varies slowest).
    axes : dict of str to ndarray
        The values of each swept parameter.
    fixed : dict
        The fixed parameters.
    similarity : str
    n : int or None
        Number of samples (``None`` when an imbalance sweep changes it from cell to cell).
    cells : tuple of dict
        One per grid point: the parameters, ``verdict``, ``rank``, ``c_interval`` (``[lo, hi]``,
        ``None`` for an unbounded side; ``None`` when no constant works), ``excess_loss``
        (nats summed over anchors; ``None`` when not computed), ``excess_source`` (a key of
        :data:`EXCESS_SOURCES`), ``near_threshold``, ``min_dim`` and, for the class
        objectives, ``max_cosine`` (the largest cosine between two optimal class prototypes,
        ``None`` when their rank exceeds ``dim``).
    boundaries : tuple of Boundary
        Closed-form boundaries, checked against the cells.
    rtol : float
        The tolerance of every classification.
    inputs : dict
        What the weighting was built from: ``sizes`` (class objectives), ``classes``,
        ``majority`` and ``profile`` (an imbalance sweep), ``labels_shape`` (label kernels).

    A map has no certificate of its own (:attr:`certificate` is ``None``; :meth:`to_dict` has
    no ``certificate``): each cell's verdict is that of :func:`dgp.classify` at the cell's
    parameters, which certifies it there.
    """

    objective: str
    params: tuple[str, ...]
    axes: dict[str, np.ndarray]
    fixed: dict[str, Any]
    similarity: str
    n: int | None
    cells: tuple[dict[str, Any], ...]
    boundaries: tuple[Boundary, ...]
    rtol: float
    inputs: dict[str, Any]

    @property
    def certificate(self) -> None:
        """``None``: the map as a whole certifies nothing. A cell's verdict is certified by the
        certificate of :func:`dgp.classify` at its parameters (``kind``, ``statement``,
        ``certified``: call it for a cell you rely on); the map keeps of it the verdict,
        ``near_threshold`` (decided within tolerance of a critical value) and the ``c``
        interval, not the certificate itself."""
        return None

    # -- tables ------------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, ...]:
        """Number of values of each swept parameter."""
        return tuple(self.axes[p].size for p in self.params)

    def _columns(self) -> list[str]:
        extra = ["max_cosine"] if self.cells and "max_cosine" in self.cells[0] else []
        return [*self.params, *_FRAME_COLUMNS, *extra]

    def to_arrays(self) -> dict[str, np.ndarray]:
        """The tidy table as a dict of numpy arrays, one entry per cell.

        ``rank``, ``min_dim``, ``excess_loss`` and ``max_cosine`` are floats with NaN where the
        value is missing; ``c_lo``/``c_hi`` are the ends of the ``c`` interval (``-inf``/``inf``
        for an unbounded side, NaN when no constant works).
        """
        out: dict[str, np.ndarray] = {}
        for p in self.params:
            out[p] = np.array([c[p] for c in self.cells],
                              dtype=np.int64 if p == "dim" else float)
        out["verdict"] = np.array([c["verdict"] for c in self.cells], dtype=str)
        for key in ("rank", "min_dim", "excess_loss"):
            out[key] = np.array([np.nan if c[key] is None else c[key] for c in self.cells],
                                dtype=float)
        lo, hi = [], []
        for c in self.cells:
            ci = c["c_interval"]
            lo.append(np.nan if ci is None else (-np.inf if ci[0] is None else ci[0]))
            hi.append(np.nan if ci is None else (np.inf if ci[1] is None else ci[1]))
        out["c_lo"], out["c_hi"] = np.array(lo, dtype=float), np.array(hi, dtype=float)
        out["excess_source"] = np.array([c["excess_source"] for c in self.cells], dtype=str)
        out["near_threshold"] = np.array([c["near_threshold"] for c in self.cells], dtype=bool)
        if "max_cosine" in self._columns():
            out["max_cosine"] = np.array(
                [np.nan if c["max_cosine"] is None else c["max_cosine"] for c in self.cells],
                dtype=float)
        return {k: out[k] for k in self._columns()}

    def to_frame(self):
        """The tidy table as a pandas DataFrame (``rank``/``min_dim`` as nullable integers).

        Raises
        ------
        ImportError
            If pandas is not installed (:meth:`to_arrays` needs nothing).
        """
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError("PhaseMap.to_frame needs pandas (pip install pandas); "
                              "PhaseMap.to_arrays gives the same table as numpy arrays") from exc
        arrays = self.to_arrays()
        frame = pd.DataFrame(arrays)
        for key in ("rank", "min_dim"):
            frame[key] = pd.array([None if c[key] is None else int(c[key]) for c in self.cells],
                                  dtype="Int64")
        return frame

    def json_items(self, options):
        """The JSON of ``dgp phase --json``: ``objective``, ``params``, ``cells`` (one per grid
        point) and the context (``fixed``, ``axes``, ``boundaries``, ``excess_sources``); no
        ``certificate`` (:attr:`certificate`)."""
        yield from (("objective", self.objective), ("params", self.params),
                    ("cells", [dict(c) for c in self.cells]),
                    ("axes", {p: self.axes[p] for p in self.params}),
                    ("fixed", dict(self.fixed)), ("similarity", self.similarity), ("n", self.n),
                    ("rtol", self.rtol), ("inputs", dict(self.inputs)),
                    ("boundaries", self.boundaries))
        yield "excess_sources", {k: EXCESS_SOURCES[k]
                                 for k in sorted({c["excess_source"] for c in self.cells})}

    def to_csv(self, path: str) -> None:
        """Write the tidy table (:meth:`to_arrays` columns) as CSV; empty fields are missing."""
        import csv

        cols = self._columns()
        arrays = self.to_arrays()
        with open(path, "w", newline="", encoding="utf-8") as fh:
            writer = csv.writer(fh)
            writer.writerow(cols)
            for k in range(len(self.cells)):
                row = []
                for col in cols:
                    v = arrays[col][k]
                    if isinstance(v, np.floating) and np.isnan(v):
                        row.append("")
                    elif col in ("rank", "min_dim"):
                        row.append(str(int(v)))
                    elif isinstance(v, np.floating):
                        row.append(repr(float(v)))
                    else:
                        row.append(str(v.item() if hasattr(v, "item") else v))
                writer.writerow(row)

    # -- display -----------------------------------------------------------------------------
    def counts(self) -> dict[str, int]:
        """Number of cells of each verdict."""
        out = {"realizable": 0, "degenerate": 0, "inconsistent": 0}
        for c in self.cells:
            out[c["verdict"]] += 1
        return out

    def _summary_rows(self) -> list[tuple[str, str]]:
        shape = " x ".join(f"{p} ({self.axes[p].size} values, {_span(self.axes[p])})"
                           for p in self.params)
        fixed = ", ".join(f"{k} = {v:g}" for k, v in self.fixed.items()) or "none"
        rows = [("map", f"{self.objective}, {self.similarity} similarity"
                 + ("" if self.n is None else f", N = {self.n}")),
                ("grid", shape), ("fixed", fixed),
                ("verdicts", ", ".join(f"{k} {v}" for k, v in self.counts().items()))]
        near = sum(bool(c["near_threshold"]) for c in self.cells)
        if near:
            rows.append(("caution", f"{near} cell(s) decided within tolerance of a critical "
                         "value"))
        ex = [c["excess_loss"] for c in self.cells
              if c["excess_loss"] is not None and c["excess_source"] != "attained"]
        parts = [f"{min(ex):.4g} .. {max(ex):.4g} nats above the bound where it is not "
                 "attained"] if ex else []
        missing = sorted({c["excess_source"] for c in self.cells
                          if c["excess_source"].startswith("not-computed")})
        for code in missing:  # one row: the values, then why some cells have none
            k = sum(c["excess_source"] == code for c in self.cells)
            why = EXCESS_SOURCES[code].removeprefix("not computed: ")
            parts.append(f"{k} cell{'s' if k != 1 else ''} without a value ({why})")
        if parts:
            rows.append(("excess loss", "; ".join(parts)))
        for b in self.boundaries:
            rows.append(("boundary", f"{b.formula}; {b.agree} cells agree, {b.disagree} "
                         f"disagree, {b.skipped} not predicted"))
        return rows

    def ascii_map(self, *, width: int = 60, height: int = 24) -> str:
        """The verdicts as characters (``o`` realizable, ``~`` degenerate, ``.`` inconsistent),
        subsampled to at most ``width`` x ``height``; the first parameter runs left to right."""
        char = {"realizable": "o", "degenerate": "~", "inconsistent": "."}
        shape = self.shape
        grid = np.array([char[c["verdict"]] for c in self.cells]).reshape(
            shape if len(shape) == 2 else (shape[0], 1))
        xs = np.unique(np.linspace(0, grid.shape[0] - 1, min(width, grid.shape[0])).round()
                       .astype(int))
        ys = np.unique(np.linspace(0, grid.shape[1] - 1, min(height, grid.shape[1])).round()
                       .astype(int))
        x_ax = self.axes[self.params[0]]
        lines = []
        if len(self.params) == 2:
            y_ax = self.axes[self.params[1]]
            label = self.params[1]
            for j in ys[::-1]:
                lines.append(f"{_num(y_ax[j]):>9} |" + "".join(grid[i, j] for i in xs))
            lines.insert(0, f"{label:>9} ^")
        else:
            lines.append(" " * 9 + " |" + "".join(grid[i, 0] for i in xs))
        lines.append(" " * 10 + "+" + "-" * len(xs) + f"> {self.params[0]}")
        left, right = _num(x_ax[0]), _num(x_ax[-1])
        lines.append(" " * 11 + left + " " * max(1, len(xs) - len(left) - len(right)) + right)
        lines.append(" " * 11 + "o realizable   ~ degenerate   . inconsistent")
        return "\n".join(lines)

    def __str__(self) -> str:
        return format_rows(self._summary_rows()) + "\n\n" + self.ascii_map()

    def _repr_html_(self) -> str:
        return html_rows(self._summary_rows()) + html_pre(self.ascii_map())

    # -- figure ------------------------------------------------------------------------------
    def figure(self):
        """The map as a figure: verdicts with the closed-form boundaries drawn over them, the
        excess loss, and (class objectives) the largest prototype cosine.

        Returns
        -------
        matplotlib.figure.Figure

        Raises
        ------
        ImportError
            If matplotlib is not installed (the ``plot`` extra).
        """
        from dgp.design._figure import phase_figure

        return phase_figure(self)


def _num(x: float) -> str:
    return f"{x:.3g}"


def _span(values: np.ndarray) -> str:
    return f"{_num(values[0])} .. {_num(values[-1])}"
