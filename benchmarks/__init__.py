"""Ratio benchmarks against named baselines, each measured in the same process.

Each module exposes ``run(quick: bool) -> list[dict]``; every dict has ``name``, ``baseline``,
``ratio`` (our time over the baseline's unless ``ratio_meaning`` says otherwise), ``target``
(the bound the ratio must meet, as text) and ``ok``. ``python -m benchmarks`` runs them all and
writes ``docs/benchmarks.md``.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["best_time", "interleaved"]


def best_time(fn: Callable[[], object], *, repeat: int = 3) -> float:
    """Best wall time of ``repeat`` calls (seconds)."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def interleaved(
    ours: Callable[[], object], base: Callable[[], object], *, repeat: int = 3
) -> tuple[float, float]:
    """Best times of two functions measured alternately, so that machine noise hits both."""
    t_ours, t_base = float("inf"), float("inf")
    for _ in range(repeat):
        t_base = min(t_base, best_time(base, repeat=1))
        t_ours = min(t_ours, best_time(ours, repeat=1))
    return t_ours, t_base
