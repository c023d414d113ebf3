"""Text from the user's files, printed safely: the command line shows names (class names,
paths) that a file may fill with anything. Imports nothing heavy (the error path uses it)."""

from __future__ import annotations

__all__ = ["printable"]

#: control characters (C0 but tab, DEL and C1): a terminal would act on them (escape sequences
#: move the cursor, recolour or retitle the terminal), so text from the user's files is shown
#: with them escaped
_CONTROL = {c: f"\\x{c:02x}" for c in (*range(0x00, 0x09), *range(0x0a, 0x20), *range(0x7f, 0xa0))}


def printable(text: str) -> str:
    """``text`` with its control characters escaped (``\\x1b``), tabs kept: what a name from a
    user's file (a class name, a path) may be printed as on a terminal, on one line.

    >>> printable("cat\\x1b[2J\\nnext")
    'cat\\\\x1b[2J\\\\x0anext'
    """
    return text.translate(_CONTROL)
