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

import io
from typing import Any

from dgp.errors import install_hint

__all__ = ["NotebookFigure", "require_matplotlib"]


def require_matplotlib() -> Any:
    """Import matplotlib, or raise an :class:`ImportError` naming the ``plot`` extra."""
    try:
        import matplotlib
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError as exc:
        raise ImportError(
            f"figures need matplotlib, which is not installed: {install_hint('plot')}",
            name=exc.name,
        ) from exc
    return matplotlib


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
