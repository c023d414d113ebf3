"""Phase maps: the cells of a grid, evaluated serially, on joblib workers or on Dask."""

from __future__ import annotations

import contextlib
import itertools
import math
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.constants import SOLVER_TAU_MAX
from dgp.design._common import (
    EXCESS_SOURCES,
    GENERAL_OPTIMUM_MAX_N,
    GRID_PARAMETERS,
    MAX_CELLS,
    Boundary,
    DesignInput,
    cell_prototypes,
    check_value,
    closed_form_boundary,
    describe_input,
    design_input,
    fixed_parameters,
    imbalanced_sizes,
    needed_parameters,
    optimum_takes_dim,
    prototype_rank,
    search_settings,
    tolerance,
)
from dgp.display import format_rows, html_pre, html_rows
from dgp.errors import (
    DgpWarning,
    ParameterError,
    ParameterTypeError,
    check_choice,
    check_int,
    describe,
)
from dgp.problem import Problem
from dgp.records import Record
from dgp.resources import MEMORY_LIMIT_ENV, copies_that_fit, format_bytes
from dgp.spec import not_given

__all__ = [
    "PhaseMap",
    "dask_local_cluster",
    "phase",
]

def _evaluate(problem: DesignInput, params: Mapping[str, Any], excess: bool) -> dict[str, Any]:
    """Everything a phase map reports about one cell (plain JSON values)."""
    res = problem.classify(params)
    cell: dict[str, Any] = dict(params)
    cell.update(
        verdict=res.verdict,
        rank=res.rank,
        c_interval=None if res.c_interval is None else list(res.c_interval),
        near_threshold=res.near_threshold,
        min_dim=res.min_dim,
    )
    value: float | None = None
    source = "skipped"
    max_cos: float | None = None
    protos = None
    if problem.is_class:
        protos, code = cell_prototypes(problem, params)
        if protos is not None and prototype_rank(protos.gram) > params["dim"]:
            protos, code = None, "not-computed-dim"
        if protos is not None:
            K = protos.gram.shape[0]
            max_cos = float(protos.gram[~np.eye(K, dtype=bool)].max())
    if excess:
        if res.verdict != "inconsistent":
            value, source = 0.0, "attained"
        elif problem.is_class:
            source = code
            value = None if protos is None else float(protos.excess_loss)
        elif res.similarity != "cosine":
            source = "not-computed-euclidean"
        elif res.n > GENERAL_OPTIMUM_MAX_N:
            source = "not-computed-size"
        elif not optimum_takes_dim():
            source = "not-computed-solver"
        elif params["tau"] > SOLVER_TAU_MAX:  # the loss is flat (dgp.solver.check_solver_tau)
            source = "not-computed-tau"
        else:
            from dgp.optima import optimum

            opt = optimum(problem.dense_weights(params), tau=params["tau"], dim=params["dim"],
                          **problem.search)
            value, source = float(opt.loss - opt.entropic_bound), "optimum"
    cell["excess_loss"] = value
    cell["excess_source"] = source
    if problem.is_class:
        cell["max_cosine"] = max_cos
    return cell


def _run_chunk(problem: DesignInput, chunk: list[dict[str, Any]], excess: bool) -> list[dict]:
    """The cells of one task, each with one BLAS thread: the same bits whichever process or
    machine runs it, and no oversubscription when several workers share a machine."""
    from dgp.solver import single_threaded

    with single_threaded():
        return [_evaluate(problem, params, excess) for params in chunk]


# ----------------------------------------------------------------------------------------------
# running a sweep: serial, joblib, Dask
# ----------------------------------------------------------------------------------------------


class _Progress:
    """A one-line progress report on stderr (only when asked for)."""

    def __init__(self, total: int, enabled: bool, what: str) -> None:
        self.total, self.enabled, self.what = total, enabled, what
        self.done = 0
        self.start = time.perf_counter()
        self.last = 0.0

    def update(self, k: int) -> None:
        self.done += k
        if not self.enabled:
            return
        now = time.perf_counter()
        if now - self.last < 0.2 and self.done < self.total:
            return
        self.last = now
        frac = self.done / max(1, self.total)
        bar = "#" * int(30 * frac)
        sys.stderr.write(f"\r{self.what}: [{bar:<30}] {self.done}/{self.total} "
                         f"({now - self.start:.1f} s)")
        if self.done >= self.total:
            sys.stderr.write("\n")
        sys.stderr.flush()


def _chunks(items: list, n_chunks: int) -> list[list]:
    n_chunks = max(1, min(len(items), n_chunks))
    bounds = np.linspace(0, len(items), n_chunks + 1).round().astype(int)
    return [items[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def _require_joblib():
    try:
        import joblib
    except ImportError as exc:
        raise ImportError("parallel sweeps (jobs > 1, scheduler) need joblib: pip install "
                          "joblib, or pip install \"dgp-contrastive[dask]\"") from exc
    return joblib


def _require_distributed():
    try:
        import distributed
    except ImportError as exc:
        raise ImportError("scheduler needs Dask's distributed scheduler: pip install "
                          "\"dgp-contrastive[dask]\"") from exc
    return distributed


def _check_jobs(jobs: object) -> int:
    if isinstance(jobs, bool) or not isinstance(jobs, int | np.integer) or (
            jobs != -1 and jobs < 1):
        raise ParameterError("jobs", f"must be an integer >= 1, or -1 for every core; got "
                             f"{describe(jobs)}")
    return int(jobs)


def _check_scheduler(scheduler: object) -> str | None:
    if scheduler is None:
        return None
    if not isinstance(scheduler, str) or not scheduler.strip():
        raise ParameterError("scheduler", f"must be 'local' or a Dask scheduler address such as "
                             f"'tcp://HOST:8786', got {describe(scheduler)}")
    text = scheduler.strip()
    if text != "local" and "://" not in text and ":" not in text:
        raise ParameterError("scheduler", f"must be 'local' or a Dask scheduler address such as "
                             f"'tcp://HOST:8786', got {describe(scheduler)}")
    return text


def _workers_that_fit(problem: DesignInput, workers: int) -> int:
    """``workers``, or fewer when their working copies of a dense weighting (one per worker,
    beside the copy joblib ships to them) do not all fit in the memory budget; a warning names
    ``--jobs`` when it caps them. One worker that does not fit is refused by the cell itself."""
    each = problem.cell_bytes
    if workers <= 1 or not each:
        return workers
    fit = copies_that_fit(each, beside=problem.weights.L.nbytes)
    if fit is None or fit >= workers:
        return workers
    warnings.warn(f"jobs: {workers} workers would each need {format_bytes(each)} for their copy "
                  f"of the {problem.weights.n} x {problem.weights.n} log-weights, more than the "
                  f"memory budget allows beside the input; running {max(fit, 1)} (set "
                  f"{MEMORY_LIMIT_ENV} to allow more)", DgpWarning, stacklevel=3)
    return max(fit, 1)


def _map_cells(problem: DesignInput, cells: list[dict], *, excess: bool, jobs: int,
               scheduler: str | None, progress: bool, what: str) -> list[dict]:
    """Evaluate every cell, in order: serially, with joblib's process pool, or on Dask."""
    bar = _Progress(len(cells), progress, what)
    out: list[dict] = []
    if jobs == 1 and scheduler is None:
        for chunk in _chunks(cells, max(1, len(cells) // 50)):
            out += _run_chunk(problem, chunk, excess)
            bar.update(len(chunk))
        return out
    joblib = _require_joblib()
    if scheduler is None:
        # never more workers than cells or cores: each costs a process start
        workers = min(joblib.cpu_count() if jobs == -1 else jobs, len(cells), joblib.cpu_count())
        workers = _workers_that_fit(problem, workers)
        if workers <= 1:
            return _map_cells(problem, cells, excess=excess, jobs=1, scheduler=None,
                              progress=progress, what=what)
        chunks = _chunks(cells, 8 * workers)
        run = joblib.Parallel(n_jobs=workers, return_as="generator")
        try:
            for part in run(joblib.delayed(_run_chunk)(problem, ch, excess) for ch in chunks):
                out += part
                bar.update(len(part))
        except BaseException:  # an interrupt or a failed cell: no worker outlives the sweep
            from joblib.externals.loky import get_reusable_executor

            get_reusable_executor().shutdown(wait=True, kill_workers=True)
            raise
        return out
    if scheduler == "local":
        workers = _workers_that_fit(
            problem, 2 if jobs == 1 else (joblib.cpu_count() if jobs == -1 else jobs))
        with dask_local_cluster(workers) as address:
            return _on_dask(address, problem, cells, excess, bar)
    return _on_dask(scheduler, problem, cells, excess, bar)


@contextlib.contextmanager
def dask_local_cluster(workers: int = 2) -> Iterator[str]:
    """A Dask ``LocalCluster`` of this machine on the loopback interface (one thread per
    worker process, no dashboard), stopped on exit; yields its scheduler address.

    This is what ``scheduler="local"`` runs on. Like any multiprocessing code, a script that
    uses it needs an ``if __name__ == "__main__":`` guard (workers are spawned).

    Raises
    ------
    ImportError
        If dask.distributed is not installed (the ``dask`` extra).
    """
    import logging

    distributed = _require_distributed()
    n = check_int(workers, "workers", minimum=1)
    cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True,
                                       host="127.0.0.1", dashboard_address=None,
                                       silence_logs=logging.ERROR)
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _on_dask(address: str, problem: DesignInput, cells: list[dict], excess: bool,
             bar: _Progress) -> list[dict]:
    """The cells on the Dask cluster at ``address``, through joblib's Dask backend."""
    joblib = _require_joblib()
    distributed = _require_distributed()
    _probe(address)
    try:
        client = distributed.Client(address, timeout="20s")
    except OSError as exc:  # unreachable address, refused connection, timeout
        raise ParameterError("scheduler", f"{address!r}: cannot connect to a Dask scheduler "
                             f"there ({exc})") from None
    out: list[dict] = []
    with client:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        chunks = _chunks(cells, 8 * workers)
        with joblib.parallel_config(backend="dask", scatter=[problem]):
            run = joblib.Parallel(return_as="generator")
            for part in run(joblib.delayed(_run_chunk)(problem, ch, excess) for ch in chunks):
                out += part
                bar.update(len(part))
    return out


def _probe(address: str) -> None:
    """Fail at once on a ``tcp://`` address nothing listens on (Dask would retry until its
    timeout)."""
    import socket

    scheme, _, rest = address.rpartition("://")
    if scheme not in ("", "tcp"):
        return
    host, _, port = rest.rpartition(":")
    if not port.isdigit():
        raise ParameterError("scheduler", f"{address!r} has no port; use tcp://HOST:PORT")
    try:
        socket.create_connection((host.strip("[]") or "127.0.0.1", int(port)), timeout=10).close()
    except OSError as exc:
        raise ParameterError("scheduler", f"{address!r}: cannot connect to a Dask scheduler "
                             f"there ({exc.strerror or exc})") from None


# ----------------------------------------------------------------------------------------------
# phase maps
# ----------------------------------------------------------------------------------------------


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
        point) and the context (``fixed``, ``axes``, ``boundaries``, ``excess_sources``)."""
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


def _axis_values(name: str, values: object) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1 or arr.size == 0:
        raise ParameterError(f"grid[{name!r}]", f"must be a non-empty 1-D sequence of values, got "
                             f"shape {arr.shape}")
    if arr.dtype.kind not in "iuf" or arr.dtype.kind == "b":
        raise ParameterTypeError(f"grid[{name!r}]", f"must hold numbers, got dtype {arr.dtype}")
    checked = [check_value(name, v.item(), f"grid[{name!r}]") for v in arr]
    if len(set(checked)) != len(checked):
        raise ParameterError(f"grid[{name!r}]", "holds a value twice")
    return np.array(checked, dtype=np.int64 if name == "dim" else float)


def _grid(grid: object) -> dict[str, np.ndarray]:
    if not isinstance(grid, Mapping) or not grid:
        raise ParameterError("grid", f"must map one or two parameter names to their values, such "
                             f"as {{'tau': taus, 'eps': epss}}; got {describe(grid)}")
    if len(grid) > 2:
        raise ParameterError("grid", f"sweeps at most two parameters, got {len(grid)}: "
                             f"{', '.join(map(str, grid))}")
    axes: dict[str, np.ndarray] = {}
    for name, values in grid.items():
        check_choice(name, GRID_PARAMETERS, "grid")
        axes[name] = _axis_values(name, values)
    cells = math.prod(a.size for a in axes.values())
    if cells > MAX_CELLS:
        raise ParameterError("grid", f"has {cells} cells, above the limit of {MAX_CELLS}")
    return axes


def phase(
    objective: str | Problem | None = None,
    labels: object = None,
    *,
    grid: Mapping[str, object],
    W: object = None,
    sizes: object = None,
    tau: float | None = None,
    dim: int | None = None,
    eps: float | None = None,
    sigma: float | None = None,
    label_tau: float | None = None,
    similarity: str | None = None,
    classes: int | None = None,
    majority: int | None = None,
    profile: str = "exponential",
    tol: float | None = None,
    excess: bool = True,
    jobs: int = 1,
    scheduler: str | None = None,
    progress: bool = False,
    starts: int | None = None,
    seed: int | None = None,
    rtol: object = not_given,
) -> PhaseMap:
    r"""The verdict map of an objective (or a weighting) over a grid of one or two parameters.

    Each cell is :func:`dgp.classify_objective` (or :func:`dgp.classify`) at the cell's
    parameters: verdict, rank, ``c`` interval, and where the bound

    .. math:: L(Z) \ge \sum_i H(p_i)

    is not attained in :math:`\mathbb R^d`, the excess :math:`\min_{Z \in \mathbb R^{N\times d}}
    L(Z) - \sum_i H(p_i)` of the optimum (:data:`EXCESS_SOURCES` says how each was obtained).

    Parameters
    ----------
    objective : dgp.Problem or {"supcon", "soft-supcon", "y-aware", "euclid-euclid", "x-clr", \
"y-aware-colnorm"}
        A :class:`dgp.Problem` (a weighting, or an objective with labels or sizes: its
        ``tau``, objective parameters and similarity are fixed values, a keyword may repeat
        them but not contradict them), or the objective; ``None`` with ``W``.
    labels : array_like, optional
        Class labels (class objectives) or ``N x p`` label values.
    grid : mapping
        One or two of ``tau``, ``dim``, ``eps``, ``sigma``, ``label_tau``, ``imbalance``, each
        with its values (a 1-D sequence). The first parameter varies slowest in ``cells`` and
        runs along the figure's x axis.
    W : array_like, optional
        A weight matrix instead of an objective (sweep ``tau`` and ``dim``).
    sizes : sequence of int, optional
        Class sizes instead of labels (class objectives).
    tau, dim, eps, sigma, label_tau : optional
        The fixed parameters: every parameter the objective needs is either fixed or swept.
    similarity : {"cosine", "euclidean"}, optional
        Latent similarity; the objective's own by default (cosine for ``W``).
    classes, majority : int, optional
        An ``imbalance`` sweep: the number of classes and the largest class size; the sizes of
        each cell are :func:`imbalanced_sizes` with ``profile``.
    profile : {"exponential", "step"}
    tol : float
        Relative tolerance of every classification (``rtol``: its deprecated name).
    excess : bool
        Compute the excess loss of inconsistent cells (the class objectives solve one
        prototype problem per cell; the verdicts do not need it).
    jobs : int
        Worker processes (joblib); ``-1`` for every core. With ``scheduler``, the number of
        workers of a ``"local"`` cluster.
    scheduler : str, optional
        ``"local"`` (a Dask ``LocalCluster`` on this machine, loopback only, stopped at the end)
        or the address of a running Dask scheduler (``"tcp://HOST:8786"``); needs the ``dask``
        extra. The cells are the same whichever runs them.
    progress : bool
        Report progress on stderr.
    starts, seed : int, optional
        Random starts and their seed of the search in ``R^dim`` of a general weighting's
        excess loss (:func:`dgp.optimum`'s defaults otherwise).

    Returns
    -------
    PhaseMap
        Always a :class:`PhaseMap`; its :meth:`~PhaseMap.to_frame` is a pandas DataFrame (when
        pandas is installed) and :meth:`~PhaseMap.to_arrays` a dict of numpy arrays.

    Raises
    ------
    ValueError
        If the input is not one of the modes above, a grid parameter is unknown, foreign to
        the objective, fixed as well, or has an invalid value (``dim`` must be integers), a
        needed parameter is missing, the grid has more than two parameters or
        :data:`MAX_CELLS` cells, ``jobs`` or ``scheduler`` is invalid.
    TypeError
        If a value has the wrong type.
    ImportError
        If ``jobs > 1`` or ``scheduler`` is asked for without joblib / dask.distributed.

    Examples
    --------
    >>> import numpy as np
    >>> pm = phase("soft-supcon", sizes=[4, 4, 4], grid={"tau": [0.3, 0.6, 0.9, 1.2]},
    ...            eps=0.1, dim=3)
    >>> [c["verdict"] for c in pm.cells]
    ['realizable', 'realizable', 'inconsistent', 'inconsistent']
    >>> b = pm.boundaries[0]
    >>> round(b.tau_c({"eps": 0.1}), 6), b.disagree
    (0.651442, 0)
    """
    axes = _grid(grid)
    rtol = tolerance(tol, rtol)
    problem, given = design_input(
        objective, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol, entry="phase",
        given={"tau": tau, "eps": eps, "sigma": sigma, "label_tau": label_tau},
        search=search_settings(starts, seed), classes=classes, majority=majority,
        profile=profile, sweeps_imbalance="imbalance" in axes)
    needed = needed_parameters(problem) + (("imbalance",) if "imbalance" in axes else ())
    if "imbalance" in axes and not problem.is_class:  # pragma: no cover - refused above
        raise ParameterError("grid", "sweeps imbalance, which needs a class objective")
    fixed = fixed_parameters(problem, {"tau": given["tau"], "dim": dim, "eps": given["eps"],
                             "sigma": given["sigma"], "label_tau": given["label_tau"]},
                             tuple(axes), needed, grid=True)
    for name in axes:
        if name not in needed:
            raise ParameterError("grid", f"sweeps {name!r}, which does not apply to "
                                 f"{describe_input(problem)} (it takes {', '.join(needed)})")
    jobs = _check_jobs(jobs)
    sched = _check_scheduler(scheduler)
    if not isinstance(excess, bool):
        raise ParameterTypeError("excess", f"must be True or False, got {describe(excess)}")
    names = tuple(axes)
    cells = [dict(fixed) | {p: _plain(v) for p, v in zip(names, combo, strict=True)}
             for combo in itertools.product(*(axes[p] for p in names))]
    # one key order in every cell: the swept parameters first, then the fixed ones
    cells = [{**{p: c[p] for p in names}, **{k: c[k] for k in fixed}} for c in cells]
    for v in axes.get("imbalance", ()):  # every ratio is checked before the sweep starts
        try:
            imbalanced_sizes(classes=problem.classes, majority=problem.majority,
                             ratio=float(v), profile=problem.profile)
        except ParameterError as exc:
            raise ParameterError("grid['imbalance']", exc.detail) from None
    results = _map_cells(problem, cells, excess=excess, jobs=jobs, scheduler=sched,
                         progress=progress, what="dgp phase")
    results = [{k: v for k, v in r.items() if k not in fixed} for r in results]
    boundary = closed_form_boundary(problem, fixed, cells[0])
    boundaries = () if boundary is None else (boundary.checked(
        [{**fixed, **r} for r in results]),)
    n = None if problem.labels is None and problem.weights is None else (
        problem.weights.n if problem.weights is not None else problem.labels.n)
    return PhaseMap(problem.name, names, axes, fixed, problem.similarity, n, tuple(results),
                    boundaries, float(rtol), _inputs(problem))


def _inputs(problem: DesignInput) -> dict[str, Any]:
    if problem.weights is not None:
        return {}
    if problem.labels is None:
        return {"classes": problem.classes, "majority": problem.majority,
                "profile": problem.profile}
    if problem.labels.kind == "class":
        return {"sizes": problem.labels.sizes.tolist()}
    return {"labels_shape": list(problem.labels.values.shape)}


def _plain(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


