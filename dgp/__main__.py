"""``python -m dgp``: the command line. A Ctrl-C while it is imported is one line and status
130, as one while a command runs (:func:`dgp.cli.entry`), never a traceback."""

import sys

try:
    from dgp.cli import entry
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted\n")
    raise SystemExit(130) from None

entry()
