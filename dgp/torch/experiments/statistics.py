"""Statistics of the experiments: summaries over seeds and paired verdicts."""


from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from dgp.torch._compat import require_torch

torch = require_torch()


# ----------------------------------------------------------------------------------------------
# aggregation


def mean_sd(values: Sequence[float | None]) -> list[float] | None:
    v = np.asarray([x for x in values if x is not None], dtype=float)
    if v.size == 0:
        return None
    return [float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0]


def summarise(runs: Sequence[dict[str, Any]], keys: Sequence[str]) -> list[dict[str, Any]]:
    """Mean and standard deviation of ``keys`` over the converged runs of each condition.

    Runs without training (``converged`` is None: untrained encoder, raw pixels) are summarised
    over all their seeds. Each row holds ``condition``, ``n_seeds``, ``trained``, ``n_converged``
    and, for
    each key, ``[mean, sd]`` (null when no run counts).
    """
    rows = []
    for cond in dict.fromkeys(r["condition"] for r in runs):
        group = [r for r in runs if r["condition"] == cond]
        counted = [r for r in group if r.get("converged") is not False]
        row: dict[str, Any] = {
            "condition": cond,
            "n_seeds": len(group),
            "trained": any(r.get("converged") is not None for r in group),
            "n_converged": sum(1 for r in group if r.get("converged")),
        }
        for k in keys:
            row[k] = mean_sd([r.get(k) for r in counted])
        rows.append(row)
    return rows


def paired_difference(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of ``a - b`` over paired seeds."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if d.size < 2:
        return float(d.mean()) if d.size else float("nan"), float("nan")
    return float(d.mean()), float(d.std(ddof=1) / math.sqrt(d.size))


def paired_verdict(
    a: Sequence[float], b: Sequence[float], names: tuple[str, str]
) -> dict[str, Any]:
    """Which of two references the runs are closer to: ``a`` and ``b`` are the distances of each
    converged seed to reference 0 and 1. Decided when the paired mean difference is more than
    twice its standard error; else ``undecided``."""
    if len(a) < 2:
        return {"supports": "undecided", "why": f"{len(a)} converged run(s); 2 are needed"}
    mean, se = paired_difference(b, a)  # > 0: closer to reference 0
    if mean > 2 * se:
        winner = names[0]
    elif mean < -2 * se:
        winner = names[1]
    else:
        winner = "undecided"
    return {"supports": winner, "distance_difference": [mean, se]}

