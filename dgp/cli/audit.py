"""``dgp audit MODULE:CALLABLE``: recover and classify the weighting a torch loss optimises.

**This imports and runs the named module**: its top-level code and the loss itself execute,
with your permissions. The audit runs in a child process, so that a loss that never returns is
stopped after ``--timeout`` seconds, its own prints go to stderr (``--json`` keeps stdout one
JSON object), and a crash of the loss does not take dgp with it. The current directory is not
put on the module search path unless asked (``--path .``). Between dgp and that child sits a
small supervisor, a child subreaper on Linux (``prctl(PR_SET_CHILD_SUBREAPER)``): whatever the
audited code starts, daemons that double-fork out of the session included, is reparented to it
and killed (found through ``/proc``) when the audit ends; elsewhere the child's process group is
killed.

The child probes the loss's gradient at several points and fits the w-InfoNCE model of
:mod:`dgp.torch.audit`. Exit status: 0 whatever it finds; 2 for bad input (a malformed
``MODULE:CALLABLE``, a module that does not exist, a bad flag or labels file, a probe that would
not fit in memory); 1 when the loss fails (it raises, recurses, has no gradient, fails to
import, does not return within ``--timeout``, or kills its process) or dgp itself fails.
"""

from __future__ import annotations

import argparse
import importlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any

import numpy as np

from dgp.cli._output import emit_json, jsonable, table
from dgp.constants import MATCH_RTOL
from dgp.errors import InputError

__all__ = ["DEFAULT_TIMEOUT", "UserCodeError", "descendants", "load_callable", "register", "run",
           "supervise", "worker"]

#: seconds an audit may take, import of the module included, before it is stopped
DEFAULT_TIMEOUT = 300.0

_WARNING = (
    "dgp audit IMPORTS AND RUNS the named module (its top-level code and the loss), in a child "
    "process stopped after --timeout seconds; audit only code you would run yourself."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "audit",
        help="recover and classify the weighting a torch loss really optimises (runs the "
        "named code; torch extra)",
        description=(
            _WARNING + " It calls the loss at several probe embeddings, recovers its anchor "
            "weights and weighting from the gradients, matches them against the registered "
            "objectives, classifies the effective weighting and predicts its geometry. A "
            "class is instantiated with no arguments. Example: "
            "dgp audit pytorch_metric_learning.losses:SupConLoss"
        ),
    )
    p.add_argument("target", metavar="MODULE:CALLABLE",
                   help="the loss: a function or an nn.Module instance, or a class")
    p.add_argument("--n", type=int, default=12,
                   help="number of embeddings probed (two-view losses: n/2 samples, 2 views; "
                   "default 12)")
    p.add_argument(
        "--labels", default="auto", metavar="KIND|FILE",
        help="auto (default: continuous, then classes when continuous labels give no "
        "w-InfoNCE, then pairs/none), continuous, classes, pairs (SimCLR's positives), none, "
        "or a .npy/.csv label file (one label per sample)",
    )
    p.add_argument("--call", choices=("auto", "embeddings", "views", "pair"), default="auto",
                   help="how to call the loss: loss(embeddings, labels), loss(features "
                   "[b, 2, d], labels) or loss(z1, z2, labels); default: try them in turn")
    p.add_argument("--tau", type=float,
                   help="temperature (default: the loss's tau or temperature attribute, else "
                   "estimated from the probes; a given one that does not fit is replaced by "
                   "the estimate, with a warning naming both)")
    p.add_argument("--similarity", choices=("auto", "cosine", "euclidean"), default="auto",
                   help="latent similarity (default: detected from the gradient)")
    p.add_argument("--dim", type=int, help="embedding dimension for the verdict (default N)")
    p.add_argument("--match-rtol", type=float, default=MATCH_RTOL,
                   help="relative tolerance of the gradient model and of a match (default "
                   "1e-6; a loss that adds a small constant inside its log, or computes in "
                   "float32, may need a larger one)")
    p.add_argument("--probes", type=int, default=3, help="probe points (default 3)")
    p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"stop the audit after this many seconds (default {DEFAULT_TIMEOUT:g})")
    p.add_argument("--path", action="append", default=[], metavar="DIR",
                   help="put DIR first on the module search path (repeatable; the current "
                   "directory is searched only when given as --path .)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _split_target(target: str) -> tuple[str, str]:
    module_name, sep, attr = target.partition(":")
    parts = module_name.split(".")
    if (not sep or not module_name or not attr or not all(p.isidentifier() for p in parts)
            or not all(a.isidentifier() for a in attr.split("."))):
        raise InputError(f"the target must look like MODULE:CALLABLE (e.g. "
                         f"pytorch_metric_learning.losses:SupConLoss), got {target!r}")
    return module_name, attr


class _InputError(Exception):
    """Bad input found in the child (exit 2)."""


class UserCodeError(Exception):
    """A failure inside the audited code (exit 1)."""


def load_callable(target: str) -> Any:
    """Import ``MODULE:CALLABLE`` from the module search path as it is (this runs the module);
    a class is instantiated with no arguments.

    Raises
    ------
    ValueError
        If ``target`` is malformed, the module does not exist or lacks the attribute, or the
        attribute is not callable.
    RuntimeError
        If importing the module or instantiating the class fails inside its code.
    """
    module_name, attr = _split_target(target)
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        missing = exc.name or ""
        if missing == "torch":
            raise ImportError('the torch backend is not installed: pip install '
                              '"dgp-contrastive[torch]"') from None
        if missing and (module_name == missing or module_name.startswith(missing + ".")):
            raise InputError(f"cannot import module {module_name!r}: no module named "
                             f"{missing!r} on the search path (add its folder with --path)"
                             ) from None
        raise UserCodeError(f"importing module {module_name!r} failed: it needs {missing!r}, "
                         "which is not installed") from None
    except Exception as exc:  # the module's own code failed: user code, any exception
        raise UserCodeError(f"importing module {module_name!r} failed inside it: "
                         f"{type(exc).__name__}: {exc}") from None
    obj = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise InputError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if isinstance(obj, type):
        try:
            obj = obj()
        except Exception as exc:  # user code, any exception
            raise UserCodeError(f"{target}() failed: {type(exc).__name__}: {exc}") from None
    if not callable(obj):
        raise InputError(f"{target!r} is not callable")
    return obj


# --------------------------------------------------------------------------------------------
# the child process


def _work(req: dict[str, Any]) -> dict[str, Any]:
    from dgp.torch import check_audit_arguments  # torch-free

    labels = req["labels"]
    rows = req["n"] if not isinstance(labels, list) else 2 * len(labels)
    check_audit_arguments(n=rows, probes=req["probes"], match_rtol=req["match_rtol"])
    # the user's folders, first on the search path from here on only: dgp's own modules (the
    # supervisor's and the worker's, argparse and json included) are imported already, so a
    # module of the same name there (an argparse.py) shadows nothing of dgp's
    sys.path[:0] = req.get("path", [])
    loss_fn = load_callable(req["target"])  # the user's module runs from here on
    from dgp.torch._compat import require_torch

    require_torch()
    from dgp.torch.audit import LossCallError, audit_loss

    if isinstance(labels, list):
        labels = np.asarray(labels)
    try:
        report = audit_loss(
            loss_fn, labels=labels, n=req["n"], tau=req["tau"], similarity=req["similarity"],
            call=req["call"], dim=req["dim"], name=req["target"], match_rtol=req["match_rtol"],
            probes=req["probes"])
    except LossCallError as exc:
        raise UserCodeError(str(exc)) from None
    out = report.to_dict()
    out["summary"] = report.summary()
    return out


def worker() -> None:
    """Entry point of the worker: read the request file named on the command line, write one
    JSON result file; the loss's own output goes to stderr.

    Only the worker process itself writes the result, atomically (temp file + rename): a copy
    of it that the audited module forks (``os.fork()`` then raise, or a forked child that goes
    on) can neither overwrite the worker's answer nor leave half of one.
    """
    with open(sys.argv[2], encoding="utf-8") as fh:
        request = json.load(fh)
    result_path = request.pop("result_path")
    me = os.getpid()
    os.dup2(2, 1)  # prints of the audited code, Python or C level, go to stderr
    sys.stdout = sys.stderr
    from dgp.errors import ParameterError, ParameterTypeError, SolverError

    try:
        result: dict[str, Any] = {"ok": _work(request)}
    except UserCodeError as exc:
        result = {"error": "user", "message": str(exc)}
    except (ParameterError, ParameterTypeError) as exc:
        result = {"error": "parameter", "param": exc.param, "detail": exc.detail,
                  "type": isinstance(exc, TypeError)}
    except ImportError as exc:
        result = {"error": "input", "message": str(exc)}
    except (ValueError, TypeError) as exc:
        result = {"error": "input", "message": str(exc)}
    except SolverError as exc:
        result = {"error": "dgp", "message": str(exc)}
    except RecursionError:
        result = {"error": "user", "message": "the audited code recursed without end"}
    except KeyboardInterrupt:
        result = {"error": "user", "message": "the audited code raised KeyboardInterrupt"}
    except Exception as exc:  # the child's last line of defence: report, never a traceback
        result = {"error": "dgp", "message": f"internal error ({type(exc).__name__}: {exc}); "
                  "please report it"}
    if os.getpid() != me:  # a fork of the worker made by the audited code: not our answer
        os._exit(0)
    try:
        _write_atomically(result_path, json.dumps(jsonable(result)))
    except OSError:  # the audited code deleted the folder: the parent sees it is gone
        os._exit(1)


def _write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)


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
            _write_atomically(os.path.join(folder, "status.json"), json.dumps(status))
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


def _run_child(req: dict[str, Any], *, paths: list[str], timeout: float) -> dict[str, Any]:
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
        _write_atomically(os.path.join(folder, "request.json"),
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


# --------------------------------------------------------------------------------------------
# the parent


def _check(args: argparse.Namespace) -> None:
    """The command line's own flags; the audit's arguments (``--n``, ``--probes``,
    ``--match-rtol``, the memory) are checked by the child before it imports the module."""
    from dgp.errors import ParameterError

    _split_target(args.target)
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        raise ParameterError("timeout", f"must be a positive number of seconds, got "
                             f"{args.timeout:g}")
    for d in args.path:
        if not os.path.isdir(d):
            raise ParameterError("path", f"{d!r} is not a folder")


def _labels(spec: str) -> Any:
    if spec in ("auto", "continuous", "classes", "pairs", "none"):
        return spec
    from dgp.io import load_labels

    return load_labels(spec, name="labels").values.tolist()


def run(args: argparse.Namespace) -> int:
    _check(args)

    labels = _labels(args.labels)
    req = {"target": args.target, "labels": labels, "n": args.n, "tau": args.tau,
           "similarity": args.similarity, "call": args.call, "dim": args.dim,
           "match_rtol": args.match_rtol, "probes": args.probes}
    try:
        result = _run_child(req, paths=args.path, timeout=args.timeout)
    except UserCodeError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    if "ok" not in result:
        return _raise(result)
    out = result["ok"]
    if args.json:
        emit_json(out)
        return 0
    print(_text(out))
    return 0


def _raise(result: dict[str, Any]) -> int:
    from dgp.errors import ParameterError, ParameterTypeError, SolverError

    kind = result.get("error")
    if kind == "parameter":
        cls = ParameterTypeError if result.get("type") else ParameterError
        raise cls(result["param"], result["detail"])
    if kind == "input":
        raise InputError(result["message"])
    if kind == "dgp":
        raise SolverError(result["message"])
    sys.stderr.write(f"error: {result.get('message', 'the audit failed')}\n")
    return 1


def _fmt(x: Any) -> str:
    return "-" if x is None else f"{x:.3g}"


def _text(out: dict[str, Any]) -> str:
    lines = [f"audit of {out['callable']}  ({_WARNING.split(' (')[0].lower()})"]
    kv: list[tuple[str, str]] = []
    call = {"embeddings": "loss(embeddings, labels)", "views": "loss(features [b, 2, d], labels)",
            "pair": "loss(z1, z2, labels)"}[out["call"]]
    kv.append(("called as", f"{call}, N = {out['n']}"))
    kv.append(("labels", f"{out['labels']}: {out['labels_note']}"))
    tau_text = f"{out['tau']:.6g} ({out['tau_source']}"
    if out["tau_given"] is not None and out["tau_source"] == "estimated":
        tau_text += f"; the given {out['tau_given']:g} does not fit"
    tau_text += f"; estimate {out['tau_estimate']:.6g}, residual {out['tau_residual']:.2g})"
    kv.append(("temperature", tau_text))
    kv.append(("latent", f"{out['similarity']} ({out['similarity_source']})"))
    model = out["model"]
    if out["identified"]:
        kv.append(("model", f"w-InfoNCE, partition {model['partition']} (residual "
                   f"{model['residual']:.2g} over {out['probes']['count']} probes)"))
    else:
        kv.append(("model", f"not identified (best residual {model['residual']:.2g}, partition "
                   f"{model['partition']})"))
        named = out["named_form"]
        if named is not None:
            kv.append(("form", f"{named['form']}: {named['description']} (residual "
                       f"{named['residual']:.2g} at tau = {named['tau_estimate']:.6g})"))
    match = out["match"]
    if match is not None:
        par = "" if match["parameter"] is None else f" {match['parameter']}={match['value']:.6g}"
        kv.append(("match", f"{match['objective']}{par}, {match['form']}: {match['form_text']}"
                   f" (error {match['error']:.2g})"))
    elif out["identified"]:
        kv.append(("match", "none within --match-rtol"))
    if out["anchor_weights"] is not None:
        a = np.asarray(out["anchor_weights"])
        kv.append(("anchors", f"weights {a.min():.4g}..{a.max():.4g} (mean 1); reduction scale "
                   f"{out['reduction_scale']:.4g}"))
    c = out["classification"]
    if c is not None:
        kv.append(("verdict", f"{c['verdict']} (effective weighting, d = {c['dim']}): "
                   f"{c['reason']}"))
    geo = out["geometry"]
    if geo is not None:
        G = np.asarray(geo["gram"], dtype=float)
        off = G[~np.eye(len(G), dtype=bool)]
        what = "cosines" if out["similarity"] == "cosine" else "squared distances"
        kv.append(("geometry", f"optimal {what} in [{off.min():.4g}, {off.max():.4g}] "
                   f"({geo['reason']})"))
    inten = out["intended"]
    if inten is not None:
        par = "".join(f" {k}={v:.4g}" for k, v in inten["params"].items())
        kv.append(("vs intended", f"{inten['objective']}{par} ({inten['note']}): "
                   f"{inten['gap_measure']} {inten['max_gap']:.3g}, similarity r^2 "
                   f"{inten['similarity_r2']:.4f}"))
    import textwrap

    from dgp.display import format_rows

    lines += format_rows(kv, width=79).splitlines()
    if out["candidates"]:
        rows = [[k["objective"], k["form"],
                 "" if k["value"] is None else f"{k['parameter']}={k['value']:.4g}",
                 _fmt(k["error"])] for k in out["candidates"][:6]]
        lines += ["", table(rows, ["candidate", "form", "fitted", "error"])]
    if out["effective_weights"] is not None and out["n"] <= 16:
        with np.printoptions(precision=3, suppress=True, linewidth=79):
            lines += ["", "effective weighting R (scaled to max 1):",
                      str(np.asarray(out["effective_weights"], dtype=float))]
    for w in out["warnings"]:
        lines += textwrap.wrap("warning: " + w, width=79, subsequent_indent="  ")
    return "\n".join(lines)
