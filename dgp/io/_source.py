"""Opening user files: regular files only, and the wording of what is wrong with one."""

from __future__ import annotations

import difflib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import BinaryIO

from dgp.errors import InputError, InputTypeError, describe


@dataclass(frozen=True)
class Source:
    """An open regular file: what it is called in messages, its path, size and binary handle."""

    name: str
    path: str
    size: int
    fh: BinaryIO

    def error(self, detail: str) -> InputError:
        return InputError(f"{self.name} file {self.path!r} {detail}")

    @property
    def ext(self) -> str:
        return os.path.splitext(self.path)[1].lower()


def _file_kind(mode: int) -> str:
    for test, kind in (
        (stat.S_ISDIR, "directory"),
        (stat.S_ISFIFO, "FIFO (named pipe)"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
        (stat.S_ISSOCK, "socket"),
    ):
        if test(mode):
            return kind
    return "special file"


@contextmanager
def open_regular(path: object, name: str) -> Iterator[Source]:
    """Open ``path`` for binary reading if, and only if, it is a regular file.

    ``os.stat`` (following symlinks) decides before anything is opened, so a device is never
    opened and a FIFO never waited on; the descriptor is opened non-blocking and checked again
    with ``fstat``, so a file swapped in between cannot slip through.
    """
    try:
        p = os.fspath(path)  # type: ignore[arg-type]
    except TypeError:
        raise InputTypeError(
            f"{name} must be a path (str or os.PathLike), not {describe(path)}"
        ) from None
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    link = " (through a symlink)" if os.path.islink(p) else ""
    try:
        st = os.stat(p)
    except FileNotFoundError:
        if link:
            raise InputError(f"{name} file {p!r} is a symlink to a missing file") from None
        raise InputError(f"{name} file {p!r} does not exist") from None
    except PermissionError:
        raise InputError(f"{name} file {p!r} cannot be read (permission denied)") from None
    except (OSError, ValueError) as exc:  # ELOOP, ENAMETOOLONG, ENOTDIR, embedded NUL
        reason = getattr(exc, "strerror", None) or str(exc)
        raise InputError(f"{name} file {p!r} cannot be opened ({reason})") from None
    if not stat.S_ISREG(st.st_mode):
        kind = _file_kind(st.st_mode)
        fix = "; give the path of a file inside it" if kind == "directory" else ""
        raise InputError(
            f"{name} path {p!r} is a {kind}{link}, not a regular file; dgp reads only regular "
            f"files{fix}"
        )
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(p, flags)
    except PermissionError:
        raise InputError(f"{name} file {p!r} cannot be read (permission denied)") from None
    except OSError as exc:
        raise InputError(f"{name} file {p!r} cannot be opened ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                f"{name} path {p!r} is a {_file_kind(st.st_mode)}{link}, not a regular file; "
                "dgp reads only regular files"
            )
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        yield Source(name=name, path=p, size=int(st.st_size), fh=fh)


def suggest(word: str, options) -> str:
    """`` (did you mean 'x'?)`` for the closest of ``options`` (case first), else ``""``."""
    options = [str(o) for o in options]
    same = [o for o in options if o.lower() == word.lower()]
    close = same or difflib.get_close_matches(word.lower(), [o.lower() for o in options], n=1)
    if not close:
        return ""
    match = next(o for o in options if o.lower() == close[0].lower())
    return f" (did you mean {match!r}?)"


def dispatch_error(src: Source, allowed: tuple[str, ...]) -> InputError:
    ext = src.ext or "(none)"
    return src.error(f"has an unknown type {ext!r}; use {', '.join(allowed)}")
