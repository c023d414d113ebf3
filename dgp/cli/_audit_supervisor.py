"""The supervisor of ``dgp audit``: a child subreaper between dgp and the worker (Linux), so that
nothing the audited code starts outlives the audit, the process group killed elsewhere, and
the parent's side that starts it, waits for it within ``--timeout`` and reads its result."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

from dgp.cli._audit_worker import UserCodeError, write_atomically

# --------------------------------------------------------------------------------------------
# the supervisor: a child subreaper between dgp and the worker, so that nothing the audited
# code starts outlives the audit (a double fork with setsid() leaves the process group and the
# session, but not the subreaper's subtree)

#: prctl option making a process the reaper of its orphaned descendants (linux/prctl.h)
_PR_SET_CHILD_SUBREAPER = 36
#: seconds the parent waits for the supervisor to clean up after asking it to stop
_SUPERVISOR_GRACE = 10.0
#: seconds between the supervisor's checks that dgp (its parent) is still alive
_PARENT_POLL = 0.2


def _become_subreaper() -> bool:
    """``prctl(PR_SET_CHILD_SUBREAPER, 1)``: orphans among our descendants are reparented to
    us instead of init (Linux >= 3.4). False where that is not available."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid``, read from the parent links of ``/proc`` (Linux;
    an empty list elsewhere)."""
    parents: dict[int, int] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="utf-8", errors="replace") as fh:
                stat = fh.read()
        except OSError:  # it ended meanwhile
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) >= 2:
            parents[int(entry)] = int(fields[1])
    children: dict[int, list[int]] = {}
    for child, parent in parents.items():
        children.setdefault(parent, []).append(child)
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def _kill_descendants() -> None:
    """Kill and reap every descendant of this process (the subreaper): repeat until none is
    left, so that a process forked during a pass is caught by the next."""
    me = os.getpid()
    while True:
        found = descendants(me)
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        reaped = False
        while True:
            try:
                pid, _ = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:  # no child left at all
                return
            if pid == 0:
                break
            reaped = True
        if not found and not reaped:
            # children remain that /proc does not show (not Linux): wait for them
            try:
                os.waitpid(-1, 0)
            except ChildProcessError:
                return


def supervise() -> None:
    """Entry point of the supervisor: run the worker under a deadline, then kill everything
    the audited code left behind, and write the worker's status for the parent."""
    folder = sys.argv[2]
    with open(os.path.join(folder, "request.json"), encoding="utf-8") as fh:
        timeout = float(json.load(fh)["timeout"])
    parent = os.getppid()
    subreaper = _become_subreaper()
    stop = {"signal": None}

    def on_signal(signum: int, _frame: Any) -> None:
        stop["signal"] = signum
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    status: dict[str, Any] = {"returncode": None, "timed_out": False, "stopped": False}
    proc = None
    try:
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP.replace("supervise", "worker"), sys.argv[1],
             os.path.join(folder, "request.json")],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            # a session and group of its own: the audited code killing its process group kills
            # the worker, never this supervisor (which then cleans up and reports it); without a
            # subreaper, that group is also what is killed at the end
            start_new_session=True,
        )
        deadline = time.monotonic() + timeout
        while True:
            try:
                status["returncode"] = proc.wait(
                    timeout=max(0.0, min(_PARENT_POLL, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                if os.getppid() != parent:  # dgp itself was killed: clean up, report to no one
                    status["stopped"] = True
                    break
                if time.monotonic() >= deadline:
                    status["timed_out"] = True
                    break
    except KeyboardInterrupt:
        status["stopped"] = True
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        if proc is not None and not subreaper:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        _kill_descendants()
        if proc is not None and status["returncode"] is None and proc.returncode is not None:
            status["returncode"] = proc.returncode
        status["subreaper"] = subreaper
        try:
            write_atomically(os.path.join(folder, "status.json"), json.dumps(status))
        except OSError:  # the audited code deleted the folder: the parent sees it is gone
            pass


_BOOTSTRAP = (
    "import sys, json; cfg = json.loads(sys.argv[1]); sys.path.pop(0); "
    "sys.path.append(cfg['dgp']); "
    "from dgp.cli.audit import supervise; supervise()"
)


def _stop_group(proc: subprocess.Popen) -> None:
    """Kill the supervisor's process group (what is left of it once it has cleaned up)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:  # the group is already gone
        pass
    proc.wait()


#: prctl option reading whether a process is a child subreaper (linux/prctl.h)
_PR_GET_CHILD_SUBREAPER = 37


def _subreaper_flag() -> int | None:
    """Whether this process is a child subreaper now (0 or 1), ``None`` where it cannot be
    read (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        flag = ctypes.c_int(0)
        if libc.prctl(_PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0) != 0:
            return None
        if not flag.value and libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
            return None
        return flag.value
    except (OSError, AttributeError):
        return None


def _restore_subreaper(flag: int) -> None:
    import ctypes
    import ctypes.util

    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_CHILD_SUBREAPER, flag, 0, 0, 0)
    except (OSError, AttributeError):  # pragma: no cover - it was set a moment ago
        pass


def _kill_new_descendants(before: set[int]) -> None:
    """Kill and reap the descendants of this process that were not there before the audit:
    what the audited code left after killing the supervisor (a daemon, reparented here while
    this process is a subreaper). Processes of the caller's own (``before``) are left alone."""
    me = os.getpid()
    for _ in range(100):  # a process forked during a pass is caught by the next
        found = [p for p in descendants(me) if p not in before]
        if not found:
            return
        for pid in found:
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        for pid in found:
            try:
                os.waitpid(pid, 0)
            except ChildProcessError:  # not our child (yet): reparented after its parent dies
                pass
        time.sleep(0.01)


def _signal_name(signum: int) -> str:
    """``SIGKILL``, ``SIGRTMIN+6`` or ``70``: any signal number, real-time ones too (which
    :class:`signal.Signals` does not name)."""
    try:
        return signal.Signals(signum).name
    except ValueError:
        low, high = getattr(signal, "SIGRTMIN", None), getattr(signal, "SIGRTMAX", None)
        if low is not None and high is not None and low <= signum <= high:
            return f"SIGRTMIN+{signum - low} ({signum})"
        return str(signum)


def run_child(req: dict[str, Any], *, paths: list[str], timeout: float) -> dict[str, Any]:
    """The audit in a supervised child (module docstring). While it runs, this process is a
    child subreaper too (Linux), so that what the audited code leaves after killing the
    supervisor itself is reparented here and killed when the audit ends."""
    before = set(descendants(os.getpid()))
    flag = _subreaper_flag()
    try:
        return _supervised(req, paths=paths, timeout=timeout)
    finally:
        if flag is not None:
            _kill_new_descendants(before)
            if not flag:
                _restore_subreaper(0)


def _supervised(req: dict[str, Any], *, paths: list[str], timeout: float) -> dict[str, Any]:
    import dgp

    dgp_root = os.path.dirname(os.path.dirname(os.path.abspath(dgp.__file__)))
    cfg = json.dumps({"path": [], "dgp": dgp_root})  # the user's folders: the worker's only
    # the audited code may delete this folder: its cleanup then has nothing left to remove
    with tempfile.TemporaryDirectory(prefix="dgp-audit-", ignore_cleanup_errors=True) as folder:
        result_path = os.path.join(folder, "result.json")
        write_atomically(os.path.join(folder, "request.json"),
                          json.dumps({**req, "result_path": result_path, "timeout": timeout,
                                      "path": [os.path.abspath(p) for p in paths]}))
        proc = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, cfg, folder], stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout + _SUPERVISOR_GRACE)
        except subprocess.TimeoutExpired:  # the supervisor itself is stuck: stop it all
            _stop_group(proc)
        except BaseException:  # an interrupt (Ctrl-C, SIGTERM): the supervisor cleans up
            proc.terminate()
            try:
                proc.wait(timeout=_SUPERVISOR_GRACE)
            except subprocess.TimeoutExpired:
                pass
            _stop_group(proc)
            raise
        _stop_group(proc)
        deleted = not os.path.isdir(folder)
        status: dict[str, Any] = {}
        out = ""
        for name, into in (("status.json", "status"), ("result.json", "out")):
            path = os.path.join(folder, name)
            if os.path.exists(path):
                with open(path, encoding="utf-8") as fh:
                    text = fh.read()
                if into == "status":
                    status = json.loads(text)
                else:
                    out = text
    if out.strip():  # the worker's own answer, even if something it started lingered
        try:
            return json.loads(out)
        except json.JSONDecodeError:
            raise UserCodeError(f"the audit process of {req['target']} wrote something that "
                                "is not its result") from None
    if deleted:
        raise UserCodeError(f"the audit's working folder was deleted while running "
                            f"{req['target']} (the loss or its module deleted it)")
    if not status:  # the supervisor itself did not finish: something killed it
        src = proc.returncode
        how = (f"was killed by signal {_signal_name(-src)}" if src is not None and src < 0
               else f"ended with status {src}")
        raise UserCodeError(f"the audit's supervisor {how} while running {req['target']} (the "
                            "loss or its module killed it; what it had started was stopped)")
    if status.get("timed_out"):
        raise UserCodeError(f"the audit of {req['target']} did not finish within "
                            f"{timeout:g} s (--timeout): the loss may never return")
    rc = status.get("returncode")
    how = ("ended without a status" if rc is None else
           f"was killed by signal {_signal_name(-rc)}" if rc < 0
           else f"exited with status {rc}")
    raise UserCodeError(f"the audit process {how} while running {req['target']} (the loss or "
                        "its module ended the process)")
