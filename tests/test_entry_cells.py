"""One formatter of a Gram's cells with their half-widths (:func:`dgp.display.entry_cells`),
as text and as LaTeX: the same numbers, the same rule for which entries carry an error."""

from __future__ import annotations

import numpy as np

from dgp.display import entry_cells


def _parse(cell: str, pm: str) -> tuple[float, float | None]:
    v, _, h = cell.partition(pm)
    return float(v), (float(h) if h else None)


def test_latex_cells_are_the_text_cells_numbers():
    rng = np.random.default_rng(0)
    G = rng.uniform(-1, 1, (4, 4))
    half = np.where(rng.uniform(size=(4, 4)) < 0.5, 0.0, rng.uniform(0, 0.1, (4, 4)))
    interval = (G - half, G + half)
    text = entry_cells(G, interval, 6)
    latex = entry_cells(G, interval, 6, latex=True)
    for i in range(4):
        for j in range(4):
            v, h = _parse(text[i][j], "±")
            lv, lh = _parse(latex[i][j], r" \pm ")
            assert v == lv == round(G[i, j], 6)
            assert h == lh and (h is None) == (half[i, j] == 0)
            assert h is None or h == round(half[i, j], 6)
            assert text[i][j].startswith("+") == (G[i, j] >= 0)
            assert not latex[i][j].startswith("+")


def test_without_half_widths_no_cell_has_an_error():
    G = np.array([[1.0, -0.25], [-0.25, 1.0]])
    assert entry_cells(G, digits=2) == [["+1.00", "-0.25"], ["-0.25", "+1.00"]]
    assert entry_cells(G, digits=2, latex=True) == [["1.00", "-0.25"], ["-0.25", "1.00"]]
