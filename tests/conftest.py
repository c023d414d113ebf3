"""Fixtures shared by the tests: ``cli``, the one way a test runs the ``dgp`` command line.

In this process (no interpreter start-up), with stdout and stderr captured apart::

    def test_classify_json(cli, tmp_path):
        np.save(tmp_path / "W.npy", W)
        r = cli("classify", tmp_path / "W.npy", "--tau", "0.5", "--dim", "2", "--json")
        assert r.code == 0 and r.err == ""
        assert r.json["verdict"] == "realizable"  # stdout parsed on first use

    def test_bad_tau(cli, tmp_path):
        r = cli("classify", tmp_path / "W.npy", "--tau", "-1", "--dim", "2")
        assert r.code == 2 and r.out == "" and r.err.startswith("error: --tau")

In a child process ``python -m dgp ...``, for what only a real process shows (the console
entry's exit and flush, a closed or full stdout, a hypothesis profile that ``dgp prove`` loads
and that must not leak into the test session, the current directory of ``dgp audit``)::

    r = cli.process("prove", "--only", "entropic-bound", "--json")
    r = cli.process("audit", "mod:loss", cwd=tmp_path, env={"DGP_MEMORY_LIMIT": "1G"})

Both return a :class:`CliRun`. The fixture is session-scoped and keeps no state, so it may be
used from module-scoped fixtures and from hypothesis tests. Arguments may be ``str`` or paths.
"""

from __future__ import annotations

import contextlib
import fcntl
import io
import json
import os
import pickle
import subprocess
import sys
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import pytest

import dgp
from dgp.cli import main

#: BLAS and OpenMP thread variables a worker hands to the children it starts
_THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: the limit a pytest-xdist worker keeps for the whole session (see pytest_configure)
_WORKER_LIMITS: list[Any] = []


def pytest_configure(config: pytest.Config) -> None:
    """Under pytest-xdist (``-n W``), each worker runs its BLAS and OpenMP pools, and the
    children it starts, on ``cores // W`` threads (at least one), as scikit-learn's test suite
    does: ``W`` workers with a pool each of every core oversubscribe the machine, and OpenBLAS's
    spinning threads then slow every test several times over (the slow step took 8:03 instead of
    about 5 minutes on 2 cores). Tests that need a count set it themselves (``test_threads``)."""
    workers = os.environ.get("PYTEST_XDIST_WORKER_COUNT")
    if not workers or _WORKER_LIMITS:
        return
    from threadpoolctl import threadpool_limits

    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = max(1, (cores or 1) // max(1, int(workers)))
    _WORKER_LIMITS.append(threadpool_limits(limits=threads))
    for name in _THREAD_VARIABLES:
        os.environ.setdefault(name, str(threads))


# ---------------------------------------------------------------------------------------------
# pytest-xdist: longest work first, shared work on one worker

#: tests (node-id prefixes) that share one costly computation of the session (a module-scoped
#: fixture, or ``session_shared``): under pytest-xdist one worker runs each group, so the work
#: is neither done twice nor waited for by the other worker (the slow step's setups that waited
#: on another worker's file lock took 19-29 s each, a worker idle meanwhile)
XDIST_GROUPS = {
    "tests/test_docs_render.py::": "docs-site",  # the site build and its browsers
    "tests/test_prototypes_dim.py::test_acceptance": "prototypes-dim-acceptance",
    "tests/test_verify.py::test_supcon_imbalance": "verify-imbalance",  # trained runs, cached
    "tests/test_verify.py::test_a_wrong_prediction": "verify-imbalance",
    # the module fixture rank3 (about 3 s; CI's quick suite made it on both workers)
    "tests/test_nonnegative.py::test_rank_deficient_no_worse": "nonnegative-rank3",
    "tests/test_nonnegative.py::test_dnn_bound_below_the_loss": "nonnegative-rank3",
    "tests/test_nonnegative.py::test_permutation_of_classes": "nonnegative-rank3",
    "tests/test_nonnegative.py::test_text_and_json": "nonnegative-rank3",
    # the module fixture beyond_enumeration
    "tests/test_stochastic_batch.py::test_optimum_dispatches_beyond": "stochastic-beyond",
    "tests/test_stochastic_batch.py::test_a_loose_bound_says_so": "stochastic-beyond",
}

#: seconds (call and setup: the 25 slowest of a CI slow step of 679 s on 2 cores) of the tests
#: that take longest, keyed by a group of :data:`XDIST_GROUPS` (all its tests) or by node-id
#: prefix: under pytest-xdist they start first, longest first (a long test started last leaves
#: the other worker idle until it ends). A stale entry only changes the order.
XDIST_LONGEST = {
    "docs-site": 110.0,
    "tests/test_docs.py::test_digits_walkthrough_training_check": 60.0,
    "tests/test_full_batch_at_scale.py::test_labels_above_the_threshold": 22.0,
    "tests/test_verify.py::test_soft_supcon_tau_star_located_from_the_data": 36.5,
    "tests/test_stochastic_batch.py::test_a_sparse_graph_is_read_from_its_pairs": 12.0,
    "tests/test_verify.py::test_all_json_unconverged_runs": 32.7,
    "tests/test_rank_d_policy.py::test_reaches_the_best_of_256_descents": 32.1,
    "tests/test_verify.py::test_continuous_labels_off_the_sphere": 25.0,
    "verify-imbalance": 31.0,
    "tests/test_rank_d_search.py::test_signed_k30_d8_draw": 30.3,
    "tests/test_docs.py::test_page_examples[docs/audit.md]": 26.4,
    "tests/test_batch_exact_enumeration.py::test_sample_level_batches_beyond": 23.4,
    "prototypes-dim-acceptance": 22.0,
    "tests/test_stochastic_batch.py::test_labels_and_their_dense_weights": 12.0,
    "stochastic-beyond": 20.0,
    "tests/test_nonnegative.py::test_property_rank_two_factor_and_bound": 17.3,
    "tests/test_rank_d_search.py::test_relu_flat_miss": 16.7,
    "tests/test_recommend.py::test_minority_cosine_in_a_dimension": 15.1,
    "tests/test_verify.py::test_uninformative_images": 14.8,
    "tests/test_small_batch_step_budget.py::test_small_batches_are_no_worse": 13.5,
    "tests/test_memory_estimate.py::test_estimate_covers_the_traced_peak[phase]": 13.2,
    "tests/test_structured_batches_memory.py::test_a_knn_graph": 33.3,
    "tests/test_structured_batches_memory.py::test_an_x_clr_problem": 12.4,
    # the quick suite's longest (CI's quick step on 2 workers): started first there too
    "proofs/t19_rank_d_certificate.py::test_property_rank_d_optimum": 9.6,
    "proofs/t22_zero_patterns.py::test_property_pure_sources": 7.5,
    "nonnegative-rank3": 9.0,
}


def _xdist_group(nodeid: str) -> str | None:
    return next((g for prefix, g in XDIST_GROUPS.items() if nodeid.startswith(prefix)), None)


def _expected_seconds(nodeid: str) -> float:
    group = _xdist_group(nodeid)
    if group in XDIST_LONGEST:
        return XDIST_LONGEST[group]
    return next((s for key, s in XDIST_LONGEST.items() if nodeid.startswith(key)), 0.0)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist, every worker orders its collection the same way: the tests of a group
    of :data:`XDIST_GROUPS`, or a test alone, by the seconds the group or the test is expected
    to take (:data:`XDIST_LONGEST`), longest first; the rest as collected."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    unit: dict[str, float] = {}
    for item in items:
        key = _xdist_group(item.nodeid) or item.nodeid
        unit[key] = max(unit.get(key, 0.0), _expected_seconds(item.nodeid))
    items.sort(key=lambda item: -unit[_xdist_group(item.nodeid) or item.nodeid])


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own; only with xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``-n W`` (pytest-xdist's default ``--dist load``): units of work in the workers' order
    (:func:`pytest_collection_modifyitems`), a unit being a group of :data:`XDIST_GROUPS` or a
    test alone, each handed to the next worker with fewer than three tests queued (xdist's
    ``loadscope`` scheduler with these units, not reordered by their number of tests)."""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return _xdist_group(nodeid) or nodeid

    config.option.loadscopereorder = False
    return GroupScheduling(config, log)


# the folder that holds the dgp package this process imported: a child process is given it
# first on its path, so that it runs the same dgp whatever its current directory
_DGP_ROOT = str(Path(dgp.__file__).resolve().parents[1])


@dataclass(frozen=True)
class CliRun:
    """What one command line did.

    Attributes
    ----------
    code : int
        The exit status a shell would see: what :func:`dgp.cli.main` returned, or the status of
        the ``SystemExit`` it raised (argparse usage errors and ``--help``, ``--version``).
    out, err : str
        Everything written to stdout and to stderr.
    output : str
        Both streams as a terminal shows them: interleaved in write order in this process;
        from a child process (captured apart) stdout followed by stderr.
    """

    code: int
    out: str
    err: str
    output: str = field(repr=False)

    @cached_property
    def json(self) -> Any:
        """stdout parsed as JSON (on first use)."""
        return json.loads(self.out)


class _Tee(io.StringIO):
    """One captured stream that also writes into the shared, interleaved one."""

    def __init__(self, both: io.StringIO) -> None:
        super().__init__()
        self._both = both

    def write(self, s: str) -> int:
        self._both.write(s)
        return super().write(s)


class Cli:
    """The runner the ``cli`` fixture returns (see the module docstring)."""

    def __call__(self, *argv: str | os.PathLike) -> CliRun:
        """Run ``dgp *argv`` through :func:`dgp.cli.main` in this process."""
        both = io.StringIO()
        out, err = _Tee(both), _Tee(both)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main([os.fspath(a) for a in argv])
            except SystemExit as exc:  # argparse usage errors, --help, --version
                code = exc.code
            if code is None:
                code = 0
            elif not isinstance(code, int):  # as the interpreter does with a message
                print(code, file=sys.stderr)
                code = 1
        return CliRun(code, out.getvalue(), err.getvalue(), both.getvalue())

    def process(
        self,
        *argv: str | os.PathLike,
        cwd: str | os.PathLike | None = None,
        env: dict[str, str] | None = None,
        timeout: float = 600,
    ) -> CliRun:
        """Run ``python -m dgp *argv`` in a child process.

        ``env`` holds variables added to this process's environment; ``timeout`` (seconds)
        only guards against a hang (:class:`subprocess.TimeoutExpired`).
        """
        child_env = {**os.environ, **(env or {})}
        child_env["PYTHONPATH"] = os.pathsep.join(
            p for p in (_DGP_ROOT, child_env.get("PYTHONPATH")) if p
        )
        proc = subprocess.run(
            [sys.executable, "-m", "dgp", *(os.fspath(a) for a in argv)],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=child_env,
            timeout=timeout,
            check=False,
        )
        return CliRun(proc.returncode, proc.stdout, proc.stderr, proc.stdout + proc.stderr)


@pytest.fixture(scope="session")
def twin_pairs() -> Any:
    """Three pairs of twin samples, strongly tied within (1) and weakly across (0.1): 6 samples,
    3 points, whose random starts on the batch path sometimes end in another arrangement (a read
    only array: the tests share it)."""
    import numpy as np

    W = np.full((6, 6), 0.1)
    for a in range(0, 6, 2):
        W[a, a + 1] = W[a + 1, a] = 1.0
    np.fill_diagonal(W, 0.0)
    W.flags.writeable = False
    return W


@pytest.fixture(scope="session")
def cli() -> Cli:
    """Run the ``dgp`` command line: ``cli(*argv)`` here, ``cli.process(*argv)`` in a child."""
    return Cli()


@pytest.fixture(scope="session")
def session_shared(tmp_path_factory: pytest.TempPathFactory):
    """``session_shared(name, make)``: ``make()``, computed once per test session and shared.

    A module-scoped fixture is made again on every pytest-xdist worker that runs one of its
    tests (CI's slow step solved the 18 s acceptance case of test_prototypes_dim on both of its
    workers). Here the first worker to ask makes it and pickles it into a folder of the
    session's (the one above the worker's own); a worker that asks meanwhile waits on a file
    lock and reads it. Without xdist it is a memo. ``name`` must say everything the value
    depends on; the value must pickle, and is shared, so a test must not modify it.
    """
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent
    folder = base / "session-shared"
    folder.mkdir(exist_ok=True)
    memo: dict[str, Any] = {}

    def shared(name: str, make: Any) -> Any:
        if name not in memo:
            path = folder / f"{name}.pickle"
            with open(folder / f"{name}.lock", "w") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                if path.exists():
                    memo[name] = pickle.loads(path.read_bytes())
                else:
                    memo[name] = make()
                    part = folder / f"{name}.part"
                    part.write_bytes(pickle.dumps(memo[name]))
                    part.replace(path)
        return memo[name]

    return shared
