"""Running a sweep: the report of one cell, and the cells of a grid evaluated serially, on joblib
workers or on a Dask cluster (one BLAS thread per task, workers that fit in memory)."""

from __future__ import annotations

import contextlib
import itertools
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np

from dgp.constants import SOLVER_TAU_MAX
from dgp.design._common import (
    DesignInput,
    cell_prototypes,
    cell_prototypes_in_dim,
    optimum_takes_dim,
    prototype_rank,
)
from dgp.design._parameters import GENERAL_OPTIMUM_MAX_N
from dgp.errors import DgpWarning, ParameterError, check_int, describe
from dgp.resources import MEMORY_LIMIT_ENV, available_cores, copies_that_fit, format_bytes


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
            # the free optimum does not fit: the one rank-d solver's prototypes in R^dim, the
            # answer of supcon_prototypes, optimum and loss_floors at this dim
            protos, code = cell_prototypes_in_dim(problem, params), "prototypes-dim"
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
                          progress=False, **problem.search)  # the map shows its own
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


def check_jobs(jobs: object) -> int:
    if isinstance(jobs, bool) or not isinstance(jobs, int | np.integer) or (
            jobs != -1 and jobs < 1):
        raise ParameterError("jobs", f"must be an integer >= 1, or -1 for every core; got "
                             f"{describe(jobs)}")
    return int(jobs)


def check_scheduler(scheduler: object) -> str | None:
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


def map_cells(problem: DesignInput, cells: list[dict], *, excess: bool, jobs: int,
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
        # never more workers than cells or than the cores this process may use (its affinity
        # and cgroup quota): each costs a process start, and each runs one BLAS thread
        cores = available_cores()
        workers = min(cores if jobs == -1 else jobs, len(cells), cores)
        workers = _workers_that_fit(problem, workers)
        if workers <= 1:
            return map_cells(problem, cells, excess=excess, jobs=1, scheduler=None,
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
        cores = available_cores()
        workers = _workers_that_fit(
            problem, min(2 if jobs == 1 else (cores if jobs == -1 else jobs), cores))
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
