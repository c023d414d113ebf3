"""The matplotlib figure class of dgp: a plain :class:`matplotlib.figure.Figure` that also
shows itself in a notebook.

Every figure dgp returns (:mod:`dgp.plots`, :meth:`dgp.PhaseMap.figure`) is built without
``pyplot`` (no GUI backend, no global figure registry, nothing to close), so IPython would see an
object with only a ``text/plain`` repr (``<Figure size 1150x480 with 3 Axes>``) unless
``%matplotlib inline`` had registered matplotlib's own formatter. :class:`NotebookFigure` adds
``_repr_png_``, which IPython, Jupyter, nbclient, nbconvert and VS Code call on any object, with
whatever backend is active (``Agg`` in CI included) and wherever the figure was made (a script,
a module, another thread). Where matplotlib's inline formatter is registered, IPython uses it
instead (it is registered for :class:`~matplotlib.figure.Figure` and so for this subclass):
still one image, never two.

Why not pyplot-managed figures under IPython: they would enter pyplot's registry (kept alive
until closed, shown a second time by the inline backend at the end of the cell), depend on the
kernel's backend (none under ``MPLBACKEND=Agg``), and need IPython to be detected when the figure
is made rather than when it is shown.

Needs the ``plot`` extra; importing this module without matplotlib raises an
:class:`ImportError` naming it.
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import sys
import tempfile
from typing import Any

from dgp.errors import InputError, install_hint

__all__ = ["NotebookFigure", "require_matplotlib"]


def require_matplotlib() -> Any:
    """Import matplotlib, or raise an :class:`ImportError` naming the ``plot`` extra.

    Where matplotlib's own folder (``MPLCONFIGDIR``, else ``~/.config/matplotlib``) cannot be
    written (an unwritable or missing ``HOME``), ``MPLCONFIGDIR`` is pointed at a temporary
    folder first, so that matplotlib does not complain on stderr about making one itself.

    Raises
    ------
    ImportError
        If matplotlib is not installed (the ``plot`` extra).
    InputError
        If ``MPLBACKEND`` names no backend matplotlib knows (matplotlib refuses to import).
    """
    if "matplotlib" not in sys.modules:
        _writable_config_dir()
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"figures need matplotlib, which is not installed: {install_hint('plot')}",
            name=exc.name,
        ) from exc
    except ValueError as exc:  # rcParams refuse the backend that the environment names
        backend = os.environ.get("MPLBACKEND")
        if not backend or "backend" not in str(exc):
            raise
        raise InputError(
            f"MPLBACKEND={backend!r} is not a backend matplotlib knows; dgp only writes figure "
            "files, so unset it or set MPLBACKEND=Agg"
        ) from None
    return matplotlib


def _writable_config_dir() -> None:
    """Set ``MPLCONFIGDIR`` to a new temporary folder (removed at exit) when matplotlib's
    default configuration or cache folder cannot be made or written; an ``MPLCONFIGDIR`` the
    user set is kept."""
    if os.environ.get("MPLCONFIGDIR"):
        return
    home = os.path.expanduser("~")
    folders = [os.path.join(os.environ.get(var) or os.path.join(home, default), "matplotlib")
               for var, default in (("XDG_CONFIG_HOME", ".config"), ("XDG_CACHE_HOME", ".cache"))]
    try:
        for folder in folders:
            os.makedirs(folder, exist_ok=True)
            with tempfile.TemporaryFile(dir=folder):
                pass
        return  # both writable: matplotlib's own choice stands
    except OSError:
        pass
    temp = tempfile.mkdtemp(prefix="dgp-matplotlib-")
    atexit.register(shutil.rmtree, temp, ignore_errors=True)
    os.environ["MPLCONFIGDIR"] = temp


require_matplotlib()

from matplotlib.figure import Figure  # noqa: E402


class NotebookFigure(Figure):
    """A :class:`matplotlib.figure.Figure` with a PNG representation for notebooks.

    Everything else is matplotlib's: ``savefig``, axes, pickling.

    >>> fig = NotebookFigure(figsize=(2, 1), dpi=50)
    >>> ax = fig.add_subplot()
    >>> fig._repr_png_()[:8] == b"\\x89PNG\\r\\n\\x1a\\n"
    True
    """

    def _repr_png_(self) -> bytes:
        """The figure as PNG bytes at its own dpi, cropped to what is drawn (as
        ``%matplotlib inline`` shows figures)."""
        buf = io.BytesIO()
        self.savefig(buf, format="png", bbox_inches="tight")
        return buf.getvalue()
