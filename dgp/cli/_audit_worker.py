"""The child of ``dgp audit``: the named ``MODULE:CALLABLE`` loaded (its module imported, with
only the paths asked for) and audited, its result written atomically for the parent."""

from __future__ import annotations

import importlib
import json
import os
import sys
from typing import Any

import numpy as np

from dgp.cli._output import jsonable
from dgp.errors import InputError


def split_target(target: str) -> tuple[str, str]:
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
    module_name, attr = split_target(target)
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
    return report.to_dict()  # --json prints exactly this (nothing added)


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
        write_atomically(result_path, json.dumps(jsonable(result)))
    except OSError:  # the audited code deleted the folder: the parent sees it is gone
        os._exit(1)


def write_atomically(path: str, text: str) -> None:
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as out:
        out.write(text)
    os.replace(tmp, path)
