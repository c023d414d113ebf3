"""Ratio benchmarks against named baselines, each measured in the same process.

Each module exposes ``run(quick: bool) -> list[dict]``; every dict has ``name``, ``baseline``,
``ratio`` (our time over the baseline's unless ``ratio_meaning`` says otherwise), ``target``
(the bound the ratio must meet, as text) and ``ok``. ``python -m benchmarks`` runs them all and
writes ``docs/benchmarks.md``.
"""

from __future__ import annotations

import time
import tracemalloc
from collections.abc import Callable

import numpy as np

__all__ = ["best_time", "growth_table", "interleaved", "paired_ratio", "paired_ratios"]


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


def paired_ratios(
    ours: Callable[[], object], base: Callable[[], object], *, repeat: int = 5
) -> tuple[list[float], float, float]:
    """The ``repeat`` ratios of our time over the baseline's, each pair run back to back (the
    order alternating), with the best time of each side (:func:`paired_ratio` takes their
    median; the quartiles show how noisy the machine was)."""
    ratios, t_ours, t_base = [], float("inf"), float("inf")
    for k in range(repeat):
        if k % 2:
            o, b = best_time(ours, repeat=1), best_time(base, repeat=1)
        else:
            b, o = best_time(base, repeat=1), best_time(ours, repeat=1)
        ratios.append(o / b)
        t_ours, t_base = min(t_ours, o), min(t_base, b)
    return ratios, t_ours, t_base


def paired_ratio(
    ours: Callable[[], object], base: Callable[[], object], *, repeat: int = 5
) -> tuple[float, float, float]:
    """The median of ``repeat`` ratios of our time over the baseline's, each pair run back to
    back (the order alternating), with the best time of each side.

    On a shared machine the speed of the same LAPACK call drifts by 10-15% between seconds; a
    ratio of two best times taken at different moments carries that drift, a ratio of two
    adjacent runs mostly does not, and the median discards the pairs a burst of load hit."""
    ratios, t_ours, t_base = paired_ratios(ours, base, repeat=repeat)
    return float(np.median(ratios)), t_ours, t_base


def growth_table(
    name: str,
    sizes: list[int],
    make_call: Callable[[int], Callable[[], object]],
    *,
    target: str,
    max_time_exponent: float,
    max_memory_exponent: float,
    fit_from: int = 0,
) -> dict:
    """Time and traced peak memory of ``make_call(n)()`` against ``n``, with the exponents of
    log-log fits (from ``sizes[fit_from]`` on for time, where start-up costs fade)."""
    times, peaks = [], []
    for n in sizes:
        call = make_call(n)
        call()  # warm-up
        times.append(best_time(call, repeat=2))
        tracemalloc.start()
        call()
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    slope_t = float(np.polyfit(np.log(sizes[fit_from:]), np.log(times[fit_from:]), 1)[0])
    slope_m = float(np.polyfit(np.log(sizes), np.log(peaks), 1)[0])
    return {
        "name": name,
        "baseline": "fitted exponent of time and peak memory in N",
        "table": [
            {"n": n, "seconds": t, "peak_mib": m / 2**20}
            for n, t, m in zip(sizes, times, peaks, strict=True)
        ],
        "time_exponent": slope_t,
        "memory_exponent": slope_m,
        "ratio": slope_t,
        "ratio_meaning": "fitted time exponent",
        "target": target,
        "ok": slope_t < max_time_exponent and slope_m < max_memory_exponent,
    }
