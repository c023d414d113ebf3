"""The ``dgp`` command line: one module per subcommand, errors as one ``error:`` line.

Each subcommand module says what its command is and does: ``HELP`` (its line in ``dgp
--help``), ``DESCRIPTION`` (and ``EPILOG`` where it has one), ``add_arguments(parser)`` (its flags)
and ``run(args) -> int``; :func:`build_parser` makes every subparser from them in one place. The
library raises errors that name its *parameters*
(:class:`dgp.errors.ParameterError`); here they become one line on stderr starting with
``error:``, naming the flag instead, with exit status 2, and so do the other input errors
(:class:`dgp.errors.InputError`, :class:`dgp.errors.InputTypeError`). The exception's class
decides the exit status, never its base: a bare ``ValueError`` or ``TypeError`` (numpy's, or a
violated invariant of dgp) is dgp's own failure. A failure of dgp itself
(:class:`dgp.errors.SolverError`, or any unexpected exception) is one ``error:`` line with exit
status 1: it is not the user's fault. ``DGP_TRACEBACK=1`` shows the traceback instead. Warnings
of the library (:class:`dgp.errors.DgpWarning`) are ``warning:`` lines on stderr. The command
line holds no mathematics.
"""

from __future__ import annotations

import argparse
import difflib
import importlib
import os
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Mapping
from typing import Any, ClassVar

try:  # numpy comes with these: the longest import before the console script's entry()
    from dgp.cli._text import printable
    from dgp.cli._words import SYNONYMS, cli_words, command_flags, flag_for, flag_homes
    from dgp.errors import (
        DgpWarning,
        InputError,
        InputTypeError,
        ParameterError,
        ParameterTypeError,
        SolverError,
        join_param,
    )
    from dgp.resources import DETERMINISTIC_ENV, deterministic, deterministic_requested
except KeyboardInterrupt:
    # Ctrl-C while the `dgp` command starts: its one line and status, not a traceback; an
    # import by a program of the user's keeps Python's own KeyboardInterrupt
    if os.path.basename((getattr(sys, "argv", None) or [""])[0]) != "dgp":
        raise
    sys.stderr.write("error: interrupted\n")
    raise SystemExit(130) from None

__all__ = ["build_parser", "cli_words", "command_flags", "flag_for", "main"]

# Subcommand modules, in the order ``dgp --help`` lists them.
_COMMANDS: tuple[str, ...] = (
    "classify", "metrics", "prove", "tour", "verify", "audit", "supcon", "optimum", "phase",
    "recommend", "floors",
)

class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one ``error:`` line naming the fix, exit 2."""

    argv: ClassVar[tuple[str, ...]] = ()  # the command line being parsed, for suggestions

    def error(self, message: str) -> None:  # type: ignore[override]
        known = [o for a in self._actions for o in a.option_strings]
        hint = ""
        bad = _INVALID_CHOICE.match(message)
        if bad is not None:  # a mistyped subcommand or choice: the closest one
            close = difflib.get_close_matches(bad.group(1), re.findall(r"'([^']*)'",
                                                                       bad.group(2)), n=1)
            if close:
                hint = f"; did you mean {close[0]}?"
        for arg in (a.split("=")[0] for a in _Parser.argv if a.startswith("--")):
            if arg in known:
                continue
            close = [SYNONYMS[arg]] if SYNONYMS.get(arg) in known else difflib.get_close_matches(
                arg, known, n=1, cutoff=0.6)
            if close:
                hint = f"; {arg} is not a flag of `{self.prog}`: did you mean {close[0]}?"
                break
        sys.stderr.write(f"error: {message}{hint} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


_INVALID_CHOICE = re.compile(r"argument [^:]+: invalid choice: '([^']*)' \(choose from (.*)\)$")

_DETERMINISTIC_HELP = (
    f"BLAS on one thread, for output bit-identical whatever the number of cores (also "
    f"{DETERMINISTIC_ENV}=1); by default dgp uses every core, and floats may differ in the last "
    "digits between thread counts (verdicts, ranks and certificates do not)"
)


def build_parser() -> argparse.ArgumentParser:
    """The parser of every subcommand."""
    from dgp import __version__

    parser = _Parser(
        prog="dgp",
        description="Weighted contrastive learning as a distance geometry problem: what geometry "
        "a weighted InfoNCE objective gives your embeddings, before you train.",
    )
    parser.add_argument("--version", action="version", version=f"dgp {__version__}")
    parser.add_argument("--deterministic", action="store_true", help=_DETERMINISTIC_HELP)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in _COMMANDS:
        _add_command(sub, name, importlib.import_module(f"dgp.cli.{name}"))
    for p in sub.choices.values():  # a global flag, also accepted after the command
        p.add_argument("--deterministic", action="store_true", default=argparse.SUPPRESS,
                       help=_DETERMINISTIC_HELP)
        if "--quiet" not in p._option_string_actions:  # the heartbeat's off switch, everywhere
            p.add_argument("--quiet", action="store_true",
                           help="no progress lines on stderr (the 'still working' notes)")
    parser.set_defaults(subcommands=sub.choices)
    return parser


def _add_command(sub: argparse._SubParsersAction, name: str, command: Any) -> None:
    """The subparser of one command, from what its module declares (module docstring)."""
    p = sub.add_parser(name, help=command.HELP, description=command.DESCRIPTION,
                       epilog=getattr(command, "EPILOG", None))
    command.add_arguments(p)
    p.set_defaults(func=command.run)


def _warning_printer(flags: Mapping[str, str | None]):
    """``warnings.showwarning`` for a command: one ``warning:`` line in the command line's
    words (:func:`cli_words`)."""

    def show(message, category, filename, lineno, file=None, line=None) -> None:
        text = printable(cli_words(str(message).replace("\n", " "), flags))
        prefix = ("warning: " if issubclass(category, DgpWarning)
                  else f"warning: {category.__name__}: ")
        sys.stderr.write(prefix + text + "\n")

    return show


def _safe_streams() -> None:
    """Streams that never fail on what dgp prints: a character the output encoding cannot
    represent (a class name in an ASCII locale) is written as its escape, and a stderr that the
    process was started without (``2>&-``) is /dev/null, opened now so that it also holds
    file descriptor 2 (no file that dgp opens later can take it)."""
    if sys.stderr is None or _closed(sys.stderr):
        try:  # the lowest free descriptor: 2 itself when it is closed
            sys.stderr = open(os.open(os.devnull, os.O_WRONLY), "w", encoding="utf-8")
        except OSError:  # pragma: no cover - no /dev/null
            pass
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="backslashreplace")
            except (ValueError, OSError):  # pragma: no cover - a detached or closed stream
                pass


def _closed(stream: Any) -> bool:
    """Whether ``stream`` writes to a file descriptor that cannot be written (a process started
    with ``2>&-``: Python still makes ``sys.stderr``, and every write fails). A stream without a
    descriptor (a test's buffer) is open."""
    try:
        fd = stream.fileno()
    except (AttributeError, ValueError, OSError):  # io.UnsupportedOperation is an OSError
        return False
    try:
        import fcntl
    except ImportError:  # pragma: no cover - not POSIX: an open descriptor is taken as usable
        try:
            os.fstat(fd)
        except OSError:
            return True
        return False
    try:  # closed, or open for reading only (a wrapper may have reused descriptor 2)
        return fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY
    except OSError:
        return True


def main(argv: list[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    _safe_streams()
    if sys.stdout is None:  # started with stdout closed
        sys.stderr.write("error: cannot write the output (stdout is closed)\n")
        return 1
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # without the engine (no scipy): answers at once
        from dgp import __version__

        sys.stdout.write(f"dgp {__version__}\n")
        return 0
    parser = build_parser()
    if not argv:  # bare `dgp`: what it can do, as `dgp --help` says it (exit 0)
        parser.print_help()
        return 0
    argv = _negative_values(parser, argv)
    _Parser.argv = tuple(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:  # reported by the subcommand's parser, which knows its own flags
        args.subcommands[args.command].error(f"unrecognized arguments: {' '.join(extra)}")
    flags = flag_homes(parser.get_default("subcommands") or {}, args.command)
    previous = warnings.showwarning
    warnings.showwarning = _warning_printer(flags)
    previous_handlers = _on_signals()
    try:
        try:
            from dgp.cli._output import check_files
            from dgp.resources import holding, time_budget

            time_budget()  # a malformed DGP_TIME_BUDGET_S is refused before any work
            check_files(args.subcommands[args.command], args)  # before any work
            with holding():  # the files as read count in every memory check of the command
                return _run(args)
        except Exception:
            _reraise_signal()
            raise
    except SolverError as exc:  # dgp's own failure, not the user's
        sys.stderr.write(f"error: {printable(cli_words(str(exc), flags))}\n")
        return 1
    except (ParameterError, ParameterTypeError) as exc:
        text = join_param(flag_for(exc.param, flags), exc.detail)
        sys.stderr.write(f"error: {printable(cli_words(text, flags))}\n")
        return 2
    except (InputError, InputTypeError) as exc:  # bad input beyond one argument's value
        sys.stderr.write(f"error: {printable(cli_words(str(exc), flags))}\n")
        return 2
    except KeyboardInterrupt:  # Ctrl-C: workers and child processes are stopped on the way
        return _stopped(signal.SIGINT)
    except _Terminated:
        return _stopped(signal.SIGTERM)
    except BrokenPipeError:  # the reader (e.g. `| head`) left: not an error of ours
        _quiet_stdout()
        return 0
    except ImportError as exc:  # a missing extra
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except OSError as exc:  # the output could not be written (a full disk, /dev/full)
        where = f" {exc.filename!r}" if exc.filename else ""
        sys.stderr.write(f"error: cannot write the output{where} ({exc.strerror or exc})\n")
        return 1
    except Exception as exc:  # the one place that turns an internal failure into a line
        if os.environ.get("DGP_TRACEBACK"):
            raise
        sys.stderr.write(f"error: internal error ({type(exc).__name__}: {exc}); please report "
                         "it\n")
        return 1
    finally:
        warnings.showwarning = previous
        for signum, handler in previous_handlers.items():
            signal.signal(signum, handler)


_NEGATIVE = re.compile(r"-(\d|\.\d|inf\b)")


def _negative_values(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--flag -1:1`` as ``--flag=-1:1``: argparse takes a value that starts with ``-`` and is
    not a plain negative number (a range, a list) for a flag, so join it to the flag that takes
    it."""
    sub = parser.get_default("subcommands") or {}
    command = next((a for a in argv if a in sub), None)
    if command is None:
        return argv
    takes_value = {o for a in sub[command]._actions if a.nargs != 0 for o in a.option_strings}
    out: list[str] = []
    k = 0
    while k < len(argv):
        a = argv[k]
        if a in takes_value and k + 1 < len(argv) and _NEGATIVE.match(argv[k + 1]):
            out.append(f"{a}={argv[k + 1]}")
            k += 2
            continue
        out.append(a)
        k += 1
    return out


class _Terminated(BaseException):
    """Raised in the main thread by SIGTERM, so that cleanup runs as for Ctrl-C."""


#: the signals that arrived while the command ran, in order: the first decides the exit status
#: (130 or 143) whatever exception it surfaced as, since a library may catch the interrupt in
#: its own code (a process pool starting its workers) and raise an error of its own instead
_STOPPED_BY: list[int] = []


def _on_signals() -> dict[int, Any]:
    """While a command runs (main thread only): SIGTERM raises :class:`_Terminated`, SIGINT
    :class:`KeyboardInterrupt` as Python's own handler does, and both are recorded in
    :data:`_STOPPED_BY`. A SIGINT that the process inherited ignored (a shell's background
    job) stays ignored. Returns the previous handlers, to be restored."""
    _STOPPED_BY.clear()
    if threading.current_thread() is not threading.main_thread():
        return {}

    def on_term(signum, frame):
        _STOPPED_BY.append(signum)
        raise _Terminated

    def on_int(signum, frame):
        _STOPPED_BY.append(signum)
        raise KeyboardInterrupt

    previous = {signal.SIGTERM: signal.signal(signal.SIGTERM, on_term)}
    if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
        previous[signal.SIGINT] = signal.signal(signal.SIGINT, on_int)
    return previous


def _reraise_signal() -> None:
    """Inside an ``except``: if a signal arrived while the command ran, raise what it raised
    (:class:`KeyboardInterrupt`, :class:`_Terminated`) in place of the error it surfaced as
    (e.g. a process pool that caught the interrupt while starting its workers), so that the
    signal's own branch of :func:`main` decides the status."""
    if _STOPPED_BY:
        raise (KeyboardInterrupt if _STOPPED_BY[0] == signal.SIGINT else _Terminated)() from None


def _stopped(signum: int) -> int:
    """The one line and the exit status of a command ended by ``signum``."""
    if signum == signal.SIGINT:
        sys.stderr.write("error: interrupted\n")
        return 130
    sys.stderr.write("error: terminated (SIGTERM)\n")
    return 143


#: seconds after which a command that is still running says so on stderr (a terminal only)
PROGRESS_AFTER = 2.0
#: ... and then every this many seconds
PROGRESS_EVERY = 10.0
#: commands that report their own progress (a bar or one line per step)
_OWN_PROGRESS = frozenset({"phase", "prove", "verify"})


class _Heartbeat:
    """A progress line on stderr for a command still running after :data:`PROGRESS_AFTER`
    seconds, then every :data:`PROGRESS_EVERY` seconds (whole lines, from a daemon thread; only
    when stderr is a terminal, so that scripts and ``--json`` readers see nothing)."""

    def __init__(self, command: str, enabled: bool) -> None:
        self.command = command
        self.enabled = enabled
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._beat, daemon=True)

    def _beat(self) -> None:
        start = time.monotonic()
        wait = PROGRESS_AFTER
        while not self.stop.wait(wait):
            elapsed = time.monotonic() - start
            sys.stderr.write(f"dgp {self.command}: still working ({elapsed:.0f} s; Ctrl-C stops "
                             "it)\n")
            sys.stderr.flush()
            wait = PROGRESS_EVERY

    def __enter__(self) -> _Heartbeat:
        if self.enabled:
            self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        if self.enabled:
            self.thread.join()


def _heartbeat(args: argparse.Namespace) -> _Heartbeat:
    from dgp.cli._output import quiet

    silent = quiet(args) or args.command in _OWN_PROGRESS
    return _Heartbeat(args.command, enabled=not silent and sys.stderr.isatty())


def _run(args: argparse.Namespace) -> int:
    """Run the command, on one BLAS thread under ``--deterministic`` or ``DGP_DETERMINISTIC=1``
    (the variable is set for the command's child processes too), with a progress line when it
    runs long (:class:`_Heartbeat`)."""
    with _heartbeat(args):
        return _run_command(args)


def _run_command(args: argparse.Namespace) -> int:
    if not (args.deterministic or deterministic_requested()):
        return int(args.func(args) or 0)
    previous = os.environ.get(DETERMINISTIC_ENV)
    os.environ[DETERMINISTIC_ENV] = "1"
    try:
        with deterministic():
            return int(args.func(args) or 0)
    finally:
        if previous is None:
            del os.environ[DETERMINISTIC_ENV]
        else:
            os.environ[DETERMINISTIC_ENV] = previous


def _quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so that the interpreter's final flush
    does not fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - no file descriptor
        pass


def entry() -> None:
    """Console-script entry point: exit with :func:`main`'s status, flushing stdout safely. A
    Ctrl-C before the command runs (while the subcommands are imported and the command line
    parsed) ends as one during the command does: one line, status 130, no traceback."""
    try:
        status = main()
    except KeyboardInterrupt:
        status = _stopped(signal.SIGINT)
    if sys.stdout is None:
        _exit(status)
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        _quiet_stdout()
    except OSError as exc:
        sys.stderr.write(f"error: cannot write the output ({exc.strerror or exc})\n")
        status = 1
    _exit(status)


def _exit(status: int) -> None:
    """End the process with ``status``: as usual (``SystemExit``), or, when an interrupted
    LAPACK call is still running in its thread (:func:`dgp._linalg.work_left_running`: a Ctrl-C
    or SIGTERM during a dense reduction), at once with :func:`os._exit` after the exit handlers
    (less the one that would wait for that call) and the streams' flush: the interpreter's
    own exit would free the arrays that LAPACK is still using."""
    from dgp._linalg import join_left_running, work_left_running

    if not work_left_running():
        raise SystemExit(status)
    import atexit

    for signum in (signal.SIGINT, signal.SIGTERM):  # a second Ctrl-C: the same exit, no traceback
        signal.signal(signum, signal.SIG_IGN)
    atexit.unregister(join_left_running)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(status)


if __name__ == "__main__":  # pragma: no cover
    entry()
