"""Interrupts and children: SIGINT and SIGTERM end a command with exit 130/143 and one line, no
worker outlives the run, and an audited module that forks then raises is reported as its error
at once (not as a timeout)."""

from __future__ import annotations

import signal
import subprocess
import time

import numpy as np
import pytest
from _foreground import dgp_foreground

LONG_PHASE = dgp_foreground("phase", "--objective", "soft-supcon", "--sizes", "30,20,10",
                            "--grid", "tau=0.05:2:60", "--grid", "eps=0.01:0.9:60", "--dim", "3",
                            "--jobs", "2")


def _alive_in_group(pgid: int) -> list[str]:
    """Processes of the group that are still running (zombies are dead)."""
    out = subprocess.run(["ps", "-o", "stat=,args=", "-g", str(pgid)], capture_output=True,
                         text=True).stdout
    return [line for line in out.splitlines() if line.strip() and not line.strip().startswith("Z")]


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code", "line"), [
    (signal.SIGINT, 130, "error: interrupted"),
    (signal.SIGTERM, 143, "error: terminated (SIGTERM)"),
])
def test_a_signal_ends_a_parallel_sweep_with_one_line_and_no_worker_left(sig, code, line):
    proc = subprocess.Popen(LONG_PHASE, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)
    deadline = time.monotonic() + 60
    while len(_alive_in_group(proc.pid)) < 3 and time.monotonic() < deadline:  # workers up
        time.sleep(0.2)
    assert proc.poll() is None, "the sweep ended before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == code
    assert err.strip().splitlines() == [line]
    time.sleep(1.0)
    assert _alive_in_group(proc.pid) == []


def test_repeated_grid_flags_add_axes(cli):
    r = cli("phase", "--objective", "soft-supcon", "--sizes", "30,20,10", "--grid",
            "tau=0.1,0.5", "--grid", "eps=0.1,0.2", "--dim", "3", "--json")
    assert r.code == 0 and r.json["params"] == ["tau", "eps"] and len(r.json["cells"]) == 4


@pytest.mark.slow
def test_workers_never_exceed_the_cells(monkeypatch):
    import joblib

    asked = []
    real = joblib.Parallel

    def recording(*args, **kwargs):
        asked.append(kwargs.get("n_jobs"))
        return real(*args, **kwargs)

    monkeypatch.setattr(joblib, "Parallel", recording)
    from dgp import phase

    pm = phase(objective="soft-supcon", sizes=[30, 20, 10], grid={"tau": [0.1, 0.5, 1.0]},
               eps=0.1, dim=3, jobs=1000)
    assert len(pm.cells) == 3
    assert asked and max(asked) <= min(3, joblib.cpu_count())


FORK_THEN_RAISE = """
import os, time
if os.fork() == 0:
    time.sleep(30)  # a child of the module that keeps running
    os._exit(0)
raise RuntimeError("after forking")
"""


@pytest.mark.slow
@pytest.mark.torch
def test_an_audited_module_that_forks_then_raises_is_its_error_at_once(tmp_path, cli):
    pytest.importorskip("torch")
    (tmp_path / "forker.py").write_text(FORK_THEN_RAISE)
    t0 = time.monotonic()
    r = cli.process("audit", "forker:loss", "--path", tmp_path, "--timeout", "25", timeout=60,
                    env={"PYTHONDONTWRITEBYTECODE": "1"})
    assert time.monotonic() - t0 < 20
    assert r.code == 1
    assert "RuntimeError: after forking" in r.err
    assert r.err.count("\n") == 1


def _swallowing(sig: int):
    """A command that, like a process pool starting its workers, catches the interrupt that
    ``sig`` raises inside it and raises an error of its own instead."""

    def run(args):
        import os

        try:
            os.kill(os.getpid(), sig)
            time.sleep(5.0)  # the handler runs here
        except BaseException as exc:
            raise RuntimeError("worker start failed") from exc
        return 0

    return run


@pytest.mark.parametrize(("sig", "code", "line"), [
    (signal.SIGINT, 130, "error: interrupted"),
    (signal.SIGTERM, 143, "error: terminated (SIGTERM)"),
])
def test_a_signal_decides_the_exit_status_whatever_error_it_surfaced_as(monkeypatch, capsys, sig,
                                                                         code, line):
    import dgp.cli as cli_module

    monkeypatch.setattr(cli_module, "_run", _swallowing(sig))
    # a foreground command's SIGINT (this run may be a background job, SIGINT ignored)
    inherited = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
        assert cli_module.main(["prove", "--quiet"]) == code
        assert capsys.readouterr().err.strip().splitlines() == [line]
        # the caller's handlers are back, and the next command starts with no signal recorded
        assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
        monkeypatch.setattr(cli_module, "_run", lambda args: 0)
        assert cli_module.main(["prove", "--quiet"]) == 0
    finally:
        signal.signal(signal.SIGINT, inherited)


def test_an_inherited_ignored_sigint_stays_ignored(monkeypatch, capsys):
    """A shell's background job starts with SIGINT ignored: dgp keeps it so (the command runs
    on), as POSIX programs do."""
    import os

    import dgp.cli as cli_module

    def run(args):
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.05)
        return 0

    monkeypatch.setattr(cli_module, "_run", run)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        assert cli_module.main(["prove", "--quiet"]) == 0
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err == ""


# ``python -m dgp`` in the foreground (tests/_foreground.py), with the engine's dsytrd marked: a
# line on stderr when the dense reduction starts
_MARKED_BOOT = """
import runpy, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)
import dgp._linalg as la
real = la.dsytrd
def marked(*args, **kwargs):
    sys.stderr.write("MARK\\n"); sys.stderr.flush()
    return real(*args, **kwargs)
la.dsytrd = marked  # before the engine imports it
sys.argv[0] = "dgp"
runpy.run_module("dgp", run_name="__main__", alter_sys=True)
"""
#: N of the interrupted dense classify: a reduction of several seconds on one core
_INTERRUPT_N = 3500


@pytest.fixture(scope="module")
def big_weights(tmp_path_factory):
    path = tmp_path_factory.mktemp("dense") / "W.npy"
    A = np.random.default_rng(41).random((_INTERRUPT_N, _INTERRUPT_N))
    np.save(path, np.exp(A + A.T))
    return path


def test_the_engine_reduces_through_the_interruptible_dsytrd():
    """The dense engine calls dgp._linalg.dsytrd (scipy's wrapper keeps the GIL, so no signal
    handler could run before the reduction ends)."""
    import sys

    import dgp._linalg
    import dgp.engine.dense  # loads the modules of the dense reduction

    users = [name for name, m in list(sys.modules.items())
             if name.startswith("dgp.engine") and getattr(m, "dsytrd", None) is not None]
    assert users and all(sys.modules[u].dsytrd is dgp._linalg.dsytrd for u in users)


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code", "line"), [
    (signal.SIGINT, 130, "error: interrupted"),
    (signal.SIGTERM, 143, "error: terminated (SIGTERM)"),
])
def test_a_signal_stops_a_dense_classify_within_a_second(big_weights, tmp_path, sig, code, line):
    """Signalled 0.3 s into the reduction, which has seconds left on one core (about 9 s at
    this N when the reduction kept the GIL), the command ends within a second with its one line
    and status, no output and no temporary file."""
    import os
    import sys

    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.Popen([sys.executable, "-c", _MARKED_BOOT, "classify", str(big_weights),
                             "--tau", "0.5", "--dim", "3", "--no-floor", "--quiet", "--json",
                             "--save-embedding", str(tmp_path / "E.npy")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    assert proc.stderr.readline() == "MARK\n"
    time.sleep(0.3)  # inside the reduction
    sent = time.monotonic()
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=300)
    latency = time.monotonic() - sent
    assert (proc.returncode, out, err.strip().splitlines()) == (code, "", [line])
    assert list(tmp_path.iterdir()) == []
    assert latency < 1.0
