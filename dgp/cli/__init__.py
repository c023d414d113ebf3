"""The ``dgp`` command line: one module per subcommand, errors as one ``error:`` line.

Each subcommand module defines ``register(subparsers)``, which adds its parser and sets
``func(args) -> int``. Bad input raises :class:`ValueError` or :class:`TypeError` in the library;
here it becomes one line on stderr starting with ``error:`` and exit status 2. A failure of dgp
itself (:class:`dgp.errors.SolverError`, or any unexpected exception) is one ``error:`` line with
exit status 1: it is not the user's fault. ``DGP_TRACEBACK=1`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from dgp.errors import SolverError

__all__ = ["main"]

# Subcommand modules, in the order ``dgp --help`` lists them.
_COMMANDS: tuple[str, ...] = (
    "classify", "metrics", "prove", "tour", "verify", "audit", "supcon", "optimum",
)


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one ``error:`` line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"error: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dgp",
        description="Weighted contrastive learning as a distance geometry problem.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in _COMMANDS:
        importlib.import_module(f"dgp.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except SolverError as exc:  # dgp's own failure, not the user's
        sys.stderr.write(f"error: {exc}\n")
        return 1
    except (ValueError, TypeError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except BrokenPipeError:  # the reader (e.g. `| head`) left: not an error of ours
        sys.stderr.close()
        return 0
    except ImportError as exc:  # a missing extra
        sys.stderr.write(f"error: {exc}\n")
        return 2
    except Exception as exc:  # the one place that turns an internal failure into a line
        if os.environ.get("DGP_TRACEBACK"):
            raise
        sys.stderr.write(f"error: internal error ({type(exc).__name__}: {exc}); please report it\n")
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
