"""Resource guards: estimate memory and time before allocating, and refuse with a clear error.

The budget is the smaller of ``DGP_MEMORY_BUDGET_GB`` (default 2 GiB of working arrays) and half
of what the process's address-space limit (``ulimit -v``) leaves, so that a refusal comes before
the kernel or the allocator kills the process. Time estimates count floating-point operations at
a conservative ``1e9`` per second and refuse above ``DGP_TIME_BUDGET_S`` (default one hour).
"""

from __future__ import annotations

import os
import resource

from dgp.errors import ParameterError

__all__ = ["check_memory", "check_time", "memory_budget", "time_budget"]

_FLOPS = 1e9


def memory_budget() -> float:
    """Bytes of working arrays dgp allows itself (module docstring)."""
    try:
        budget = float(os.environ.get("DGP_MEMORY_BUDGET_GB", "2")) * 2**30
    except ValueError:
        budget = 2.0 * 2**30
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    if soft not in (resource.RLIM_INFINITY, -1):
        try:
            with open("/proc/self/statm", encoding="ascii") as fh:
                used = int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            used = 0
        budget = min(budget, 0.5 * max(soft - used, 0))
    return budget


def time_budget() -> float:
    """Seconds of estimated work dgp allows one call (module docstring)."""
    try:
        return float(os.environ.get("DGP_TIME_BUDGET_S", "3600"))
    except ValueError:
        return 3600.0


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:.2g} GiB" if nbytes >= 2**27 else f"{nbytes / 2**20:.3g} MiB"


def check_memory(nbytes: float, *, what: str, instead: str, param: str | None = None) -> None:
    """Raise if ``nbytes`` of arrays exceed :func:`memory_budget`.

    Raises
    ------
    ValueError
        (a :class:`dgp.errors.ParameterError` naming ``param`` when given) saying what needs how
        much, the budget, and what to use instead.
    """
    budget = memory_budget()
    if nbytes <= budget:
        return
    detail = (
        f"{what} needs about {_gib(nbytes)}, above the {_gib(budget)} dgp allows itself here "
        f"(DGP_MEMORY_BUDGET_GB); {instead}"
    )
    if param is None:
        raise ValueError(detail)
    raise ParameterError(param, f"is too large: {detail}")


def check_time(flops: float, *, what: str, instead: str, param: str | None = None) -> None:
    """Raise if ``flops`` floating-point operations exceed :func:`time_budget` seconds.

    Raises
    ------
    ValueError
        As :func:`check_memory`.
    """
    seconds = flops / _FLOPS
    budget = time_budget()
    if seconds <= budget:
        return
    detail = (
        f"{what} would take about {seconds / 3600:.2g} hours, above the {budget:g} s dgp allows "
        f"one call (DGP_TIME_BUDGET_S); {instead}"
    )
    if param is None:
        raise ValueError(detail)
    raise ParameterError(param, f"is too large: {detail}")
