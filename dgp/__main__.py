"""``python -m dgp``: the command line. A Ctrl-C while it is imported is one line and status
130, as one while a command runs (:func:`dgp.cli.entry`), never a traceback: also where the
interrupt lands inside an extension module's import, which then fails with an ``ImportError``
instead (numpy: "PyCapsule_Import could not import module datetime"); the handler below records
that an interrupt came, so only such an ``ImportError`` is read as the interrupt."""

import signal
import sys

_interrupted = []


def _on_interrupt(signum, frame):
    _interrupted.append(signum)
    raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_interrupt)
try:
    from dgp.cli import entry
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted\n")
    raise SystemExit(130) from None
except ImportError:
    if not _interrupted:
        raise
    sys.stderr.write("error: interrupted\n")
    raise SystemExit(130) from None
signal.signal(signal.SIGINT, signal.default_int_handler)

entry()
