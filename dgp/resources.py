"""Memory guards: refuse an allocation that would not fit, before making it.

The budget is the smaller of half the physical memory and what the address-space limit
(``ulimit -v``) leaves to this process, and can be set with the environment variable
``DGP_MEMORY_LIMIT`` (bytes, or with a suffix ``K``, ``M``, ``G``).
"""

from __future__ import annotations

import os

from dgp.errors import ParameterError

__all__ = ["check_memory", "memory_budget"]

_SUFFIX = {"K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _parse_bytes(text: str) -> int:
    t = text.strip().upper().removesuffix("B")
    mult = _SUFFIX.get(t[-1:], 1)
    if t[-1:] in _SUFFIX:
        t = t[:-1]
    try:
        return int(float(t) * mult)
    except ValueError:
        raise ParameterError(
            "DGP_MEMORY_LIMIT", f"must be a number of bytes such as 4G or 500M, got {text!r}"
        ) from None


def _vm_size() -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except OSError:  # pragma: no cover - not Linux
        pass
    return 0


def memory_budget() -> int:
    """Bytes that one allocation of dgp may use (module docstring)."""
    env = os.environ.get("DGP_MEMORY_LIMIT")
    if env:
        return _parse_bytes(env)
    budget = None
    try:
        phys = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        budget = phys // 2
    except (ValueError, OSError, AttributeError):  # pragma: no cover - no sysconf
        pass
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
        if soft != resource.RLIM_INFINITY:
            left = int(0.8 * (soft - _vm_size()))
            budget = left if budget is None else min(budget, left)
    except (ImportError, ValueError, OSError):  # pragma: no cover - not POSIX
        pass
    return max(0, budget if budget is not None else 2**34)


def check_memory(nbytes: float, *, what: str, hint: str) -> None:
    """Refuse an allocation of ``nbytes`` above :func:`memory_budget`.

    Raises
    ------
    ParameterError
        Naming what would not fit, how much it needs, what fits, and ``hint`` (what to do
        instead).
    """
    budget = memory_budget()
    if nbytes > budget:
        raise ParameterError(
            "input", f"is too large: {what} needs about {nbytes / 2**30:.3g} GiB, more than the "
            f"{budget / 2**30:.3g} GiB this process may use (set DGP_MEMORY_LIMIT to change "
            f"it); {hint}"
        )
