"""An HTML summary takes its matrix's printed cells (:func:`dgp.display.html_summary`,
``cells=``), so no result patches markup after the block is built: a sampled prototype Gram's
entries with their half-widths sit in the block's one table."""

from __future__ import annotations

import re

import numpy as np

import dgp
from dgp.display import entry_cells, html_summary


def test_a_matrix_is_its_cells():
    G = np.array([[1.0, -0.5, 0.25], [-0.5, 1.0, 0.0], [0.25, 0.0, 1.0]])
    a = html_summary("t", [("k", "v")], matrix=G, caption="c")
    assert a == html_summary("t", [("k", "v")], cells=entry_cells(G), caption="c")
    assert a.count("<table>") == 2 and a.endswith("</table></div>")  # the pairs', the matrix's
    assert "<td>-0.5000</td>" in a and "<th>2</th>" in a


def test_sampled_prototypes_show_each_entry_with_its_half_width_inside_the_block():
    p = dgp.Problem(objective="supcon", sizes=[4, 3, 2], tau=0.5)
    res = dgp.supcon_prototypes(p, batch_size=6, exact_max=3, samples=60, replicates=1,
                                progress=False)
    lo, hi = res.batch.gram_interval
    assert (hi > lo).any()
    out = res._repr_html_()
    assert out.startswith("<div>") and out.endswith("</table></div>") and out.count("<div>") == 1
    cells = re.findall(r"<td>([^<]*±[^<]*)</td>", out)
    half = (hi - lo) / 2
    want = [f"{res.gram[a, b]:+.4f}±{half[a, b]:.4f}"
            for a in range(3) for b in range(3) if half[a, b] > 0]
    assert cells == want
