"""Long LAPACK work that a signal interrupts: ``dgp._linalg.dsytrd`` is scipy's ``dsytrd`` bit
for bit but releases the GIL, ``interruptible`` runs work in a thread while the main thread
keeps handling signals, and the command line stops a dense ``classify`` within a fraction of a
second of Ctrl-C or SIGTERM (exit 130 / 143, one line, no output file), where it used to wait
for the end of the reduction (about 50 s at N = 4000)."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from scipy.linalg import lapack

from dgp._linalg import (
    INTERRUPT_POLL_S,
    dsytrd,
    interruptible,
    join_left_running,
    work_left_running,
)
from dgp.errors import InvalidParameterError


def _symmetric(n: int, seed: int) -> np.ndarray:
    A = np.random.default_rng(seed).standard_normal((n, n))
    return A + A.T


@pytest.mark.parametrize("n", [1, 2, 7, 130, 400])
@pytest.mark.parametrize("lower", [0, 1])
def test_dsytrd_is_scipys_bit_for_bit(n, lower):
    A = _symmetric(n, seed=n)
    lwork = int(lapack.dsytrd_lwork(n, lower=lower)[0])
    want = lapack.dsytrd(np.array(A, order="F"), lower=lower, lwork=lwork, overwrite_a=1)
    B = np.array(A, order="F")
    got = dsytrd(B, lower=lower, lwork=lwork, overwrite_a=1)
    assert got[0] is B  # overwritten in place, as scipy's wrapper does
    for g, w in zip(got[:4], want[:4], strict=True):
        assert g.shape == w.shape and np.array_equal(g, w)
    assert got[4] == want[4] == 0


def test_dsytrd_reduces_to_a_similar_tridiagonal():
    """An independent check of the numbers: T has the eigenvalues of A."""
    A = _symmetric(60, seed=3)
    _, d, e, _, info = dsytrd(A, lower=1)  # C order, no overwrite: a Fortran copy
    assert info == 0
    T = np.diag(d) + np.diag(e, 1) + np.diag(e, -1)
    np.testing.assert_allclose(np.linalg.eigvalsh(T), np.linalg.eigvalsh(A), atol=1e-10)
    np.testing.assert_array_equal(A, _symmetric(60, seed=3))  # the input was not touched


def test_dsytrd_refuses_a_matrix_that_is_not_square():
    with pytest.raises(InvalidParameterError, match="square"):
        dsytrd(np.zeros((3, 4)))


def test_interruptible_returns_and_raises_as_a_direct_call():
    assert interruptible(divmod, 17, 5) == (3, 2)
    with pytest.raises(ZeroDivisionError):
        interruptible(divmod, 1, 0)
    seen = []
    threading.Thread(target=lambda: seen.append(
        interruptible(threading.current_thread))).start()
    while not seen:
        time.sleep(0.01)
    assert seen[0].name != "dgp-lapack"  # off the main thread: a direct call


def test_interruptible_keeps_the_callers_context():
    from dgp.resources import deterministic, deterministic_requested

    with deterministic():
        assert interruptible(deterministic_requested) is True
        assert interruptible(threading.current_thread).name == "dgp-lapack"
    assert interruptible(deterministic_requested) is False


def test_the_main_thread_runs_python_while_dsytrd_runs():
    """The GIL is released: scipy's own wrapper keeps it for the whole reduction."""
    n = 700
    A = np.array(_symmetric(n, seed=1), order="F")
    done = threading.Event()
    ticks = []

    def reduce():
        dsytrd(A, lower=1, overwrite_a=1)
        done.set()

    t = threading.Thread(target=reduce)
    start = time.perf_counter()
    t.start()
    while not done.is_set():
        ticks.append(time.perf_counter())
        time.sleep(0.002)
    t.join()
    elapsed = time.perf_counter() - start
    if elapsed > 0.05:  # long enough to tell: the main thread kept running throughout
        assert len(ticks) >= 5 and max(np.diff([start, *ticks])) < elapsed / 2


# a child that interrupts itself inside a long dsytrd, then ends as a program would
_LIBRARY_CHILD = textwrap.dedent("""
    import os, signal, sys, threading, time
    import numpy as np
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from dgp._linalg import dsytrd, work_left_running
    n = int(sys.argv[1])
    A = np.random.default_rng(0).standard_normal((n, n))
    A = np.asfortranarray(A + A.T)
    dsytrd(np.eye(3))  # the LAPACK routine found (imports) before the clock starts
    sent = []
    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)
    threading.Timer(0.3, interrupt).start()
    start = time.monotonic()
    try:
        dsytrd(A, lower=1, overwrite_a=1)
        print("finished", time.monotonic() - start, flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.monotonic() - sent[0], work_left_running(), flush=True)
    del A  # the work keeps its own reference
    raise SystemExit(130)
""")


@pytest.mark.slow
def test_a_signal_stops_dsytrd_at_once_and_the_program_exits_cleanly():
    """The interrupt surfaces within a poll; at exit the program waits for the work it left
    (its arrays are still in LAPACK's use: exiting under it would be a segmentation fault)."""
    proc = subprocess.run([sys.executable, "-c", _LIBRARY_CHILD, "2500"], capture_output=True,
                          text=True, timeout=300,
                          env={"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
                               "PATH": "/usr/bin:/bin"})
    assert proc.returncode == 130, proc.stderr
    word, latency, left = proc.stdout.split()
    if word == "finished":  # pragma: no cover - a machine so fast that 0.3 s was enough
        pytest.skip(f"dsytrd at N = 2500 took {latency} s, before the signal")
    assert word == "interrupted" and left == "True"
    assert float(latency) < 10 * INTERRUPT_POLL_S + 0.5


def test_a_signal_handler_runs_during_the_wait_and_the_left_work_is_joined():
    """A handler's exception surfaces within a poll while the work still runs; the thread is
    recorded until it ends (what the command line asks before exiting at once) and
    join_left_running waits for it."""
    import os

    class Stop(Exception):
        pass

    def handler(signum, frame):
        raise Stop

    release = threading.Event()
    previous = signal.signal(signal.SIGUSR1, handler)
    timer = threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGUSR1))
    try:
        timer.start()
        start = time.monotonic()
        with pytest.raises(Stop):
            interruptible(release.wait, 30)
        assert time.monotonic() - start < 0.1 + 10 * INTERRUPT_POLL_S + 1.0
    finally:
        signal.signal(signal.SIGUSR1, previous)
        timer.cancel()
    assert work_left_running()
    release.set()
    join_left_running()
    assert not work_left_running()


def test_a_classification_in_the_worker_thread_is_the_direct_one_bit_for_bit(monkeypatch):
    """At N >= INTERRUPTIBLE_MIN_N dgp.classify runs the engine in interruptible's thread:
    the same verdict, numbers and embedding as the engine called directly in this thread."""
    import importlib

    import dgp
    from dgp._linalg import INTERRUPTIBLE_MIN_N
    from dgp.engine.pipeline import classify_weights
    from dgp.tolerance import DEFAULT_RTOL, Tolerance

    threads = []
    verdict = importlib.import_module("dgp.engine._weighting_verdict")
    real = verdict.classify_weights

    def recording(*args, **kwargs):
        threads.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(verdict, "classify_weights", recording)
    n = INTERRUPTIBLE_MIN_N
    X = np.random.default_rng(7).standard_normal((n, 3))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    W = np.exp(X @ X.T / 0.5)
    with dgp.deterministic():
        got = dgp.classify(W, tau=0.5, dim=3)
        weights = dgp.classification.weighting(W)
        want = classify_weights(weights, similarity="cosine", tau=0.5, dim=3,
                                tol=Tolerance.make(DEFAULT_RTOL, n=weights.n,
                                                   unit_roundoff=weights.unit_roundoff))
    assert threads == ["dgp-lapack"]
    assert got.verdict == want.verdict == "realizable" and got.rank == 3
    assert got.to_dict(embedding=True) == want.to_dict(embedding=True)
