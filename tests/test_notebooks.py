"""The docs notebook runs in a real Jupyter kernel (nbclient) and its figures display there.

Every figure dgp returns must show as an image when a notebook cell ends with it, without
``%matplotlib inline``; the phase map's HTML must set its ASCII map in a monospace font (an
nbconvert export otherwise uses a proportional one and the columns do not line up). Cells
tagged ``figure`` must have exactly one PNG output of a plausible size, the cell tagged
``phase-map`` an HTML part whose ``<pre>`` declares a monospace font.
"""

from __future__ import annotations

import base64
import json
import os
import struct
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOK = ROOT / "docs" / "notebooks" / "figures.ipynb"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
KERNEL = "dgp-tests-python"


def execute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *, backend: str | None,
            first: str | None = None):
    """Run the notebook in a fresh kernel importing this checkout's dgp; ``first`` is a cell
    put before the others."""
    nb = nbformat.read(NOTEBOOK, as_version=4)
    if first is not None:
        nb.cells.insert(0, nbformat.v4.new_code_cell(first))
    path = os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    monkeypatch.setenv("PYTHONPATH", path)
    # a kernel of this interpreter, whatever kernels the user has installed as "python3"
    spec = tmp_path / "jupyter" / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "dgp tests", "language": "python"}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    if backend is None:
        monkeypatch.delenv("MPLBACKEND", raising=False)  # the kernel's own (inline) backend
    else:
        monkeypatch.setenv("MPLBACKEND", backend)
    client = nbclient.NotebookClient(nb, timeout=120, kernel_name=KERNEL,
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    return nb


def png_size(data: str) -> tuple[int, int]:
    raw = base64.b64decode(data)
    assert raw[:8] == PNG_SIGNATURE
    width, height = struct.unpack(">II", raw[16:24])  # the IHDR chunk
    return width, height


class PreFonts(HTMLParser):
    """The ``style`` of every ``<pre>`` and the text inside it."""

    def __init__(self) -> None:
        super().__init__()
        self.pres: list[list[str]] = []
        self._inside = False

    def handle_starttag(self, tag, attrs):
        if tag == "pre":
            self.pres.append([dict(attrs).get("style") or "", ""])
            self._inside = True

    def handle_endtag(self, tag):
        if tag == "pre":
            self._inside = False

    def handle_data(self, data):
        if self._inside:
            self.pres[-1][1] += data


def tagged(nb, tag: str):
    return [c for c in nb.cells if tag in c.get("metadata", {}).get("tags", [])]


def check_outputs(nb) -> None:
    figures = tagged(nb, "figure")
    assert len(figures) == 5
    for cell in figures:
        images = [o for o in cell.outputs if "image/png" in o.get("data", {})]
        assert len(images) == 1, (cell.source, [o.get("data", {}).keys() for o in cell.outputs])
        width, height = png_size(images[0]["data"]["image/png"])
        assert width > 300 and height > 200, (cell.source, width, height)
    (phase,) = tagged(nb, "phase-map")
    (out,) = [o for o in phase.outputs if "text/html" in o.get("data", {})]
    parser = PreFonts()
    parser.feed(out["data"]["text/html"])
    (pre,) = parser.pres
    style, text = pre
    font = next(p for p in style.split(";") if p.strip().startswith("font-family"))
    assert font.strip().endswith("monospace"), style
    assert "o realizable" in text and "> tau" in text  # the ASCII map itself, lines kept


# slow: about 5 s or more of CPU on 2 cores; it runs in the slow step of CI (-m slow)
@pytest.mark.slow
def test_figures_display_without_matplotlib_magic(tmp_path, monkeypatch):
    nb = execute(tmp_path, monkeypatch, backend=None)
    check_outputs(nb)


@pytest.mark.slow
def test_figures_display_once_with_inline_magic_and_agg(tmp_path, monkeypatch):
    # matplotlib's own formatter takes over after %matplotlib inline: still one image per cell
    check_outputs(execute(tmp_path, monkeypatch, backend=None, first="%matplotlib inline"))
    # a headless backend (CI): the figures still carry their image
    check_outputs(execute(tmp_path, monkeypatch, backend="Agg"))


def test_the_notebook_is_stored_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code")
