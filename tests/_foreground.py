"""The command line of ``python -m dgp`` as a terminal runs it in the foreground.

A shell starts a background job (``cmd &``, a CI script run that way) with SIGINT ignored, and
Python, like every POSIX program, keeps a signal ignored that it inherits ignored: a ``dgp``
started from such a test run would rightly sleep through the SIGINT a test sends it. The tests
of Ctrl-C give the child what a terminal gives a foreground command, Python's own SIGINT
handler, before ``dgp`` starts.
"""

from __future__ import annotations

import sys

_BOOT = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
         "sys.argv[0] = 'dgp'; runpy.run_module('dgp', run_name='__main__', alter_sys=True)")


def dgp_foreground(*args: str) -> list[str]:
    """``[python, -c, ..., *args]``: ``python -m dgp *args`` with SIGINT's default handler."""
    return [sys.executable, "-c", _BOOT, *args]
