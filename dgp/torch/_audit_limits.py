"""Sizes of an audit, checked before anything runs (no torch needed: ``dgp audit`` checks
them before it imports the audited module)."""

from __future__ import annotations

import math

from dgp.errors import check_int
from dgp.tolerance import check_rtol

__all__ = ["GEOMETRY_MAX_N", "MAX_N", "check_arguments", "check_probe_memory", "probe_memory"]

# memory of one probe, in N x N float64 matrices: Z, its gradient, the loss's own similarity,
# exponentials, log-softmax and masks (about 8), and per probe the softmax and T of the fit
_PROBE_MATRICES = 12
_PER_PROBE_MATRICES = 6
#: largest N for which the predicted geometry (a minimisation over N x N embeddings) is computed
GEOMETRY_MAX_N = 96
#: largest N audited: the fits are dense (a few dozen samples identify a loss)
MAX_N = 2048


def probe_memory(n: int, probes: int) -> int:
    """Estimated peak bytes of an audit at ``n`` embeddings with ``probes`` probe points."""
    return 8 * n * n * (_PROBE_MATRICES + _PER_PROBE_MATRICES * probes)


def check_probe_memory(n: int, probes: int) -> None:
    """Refuse an audit whose probes would not fit in memory, saying what ``n`` fits.

    Raises
    ------
    dgp.resources.MemoryLimitError
        A :class:`ValueError`.
    """
    from dgp.resources import check_memory, memory_budget

    budget = memory_budget()
    hint = None
    if budget is not None:
        fit = int(math.sqrt(budget / (8 * (_PROBE_MATRICES + _PER_PROBE_MATRICES * probes))))
        hint = f"N <= {fit} samples fit (--n on the command line)"
    check_memory(probe_memory(n, probes), what=f"the audit probes at N = {n} (N x N embeddings)",
                 hint=hint)


def check_arguments(*, n: int, probes: int, match_rtol: float) -> tuple[int, int, float]:
    """Validate the size of an audit before anything runs: memory first (saying what fits),
    then ``4 <= n <=`` :data:`MAX_N`, ``2 <= probes <= 16``, ``0 < match_rtol < 1``.

    Raises
    ------
    ValueError, TypeError
        Naming the argument; :class:`dgp.resources.MemoryLimitError` if the probes would not
        fit in memory.
    """
    n = check_int(n, "n", minimum=4)
    probes = check_int(probes, "probes", minimum=2, maximum=16)
    check_probe_memory(n, probes)
    n = check_int(n, "n", minimum=4, maximum=MAX_N)
    return n, probes, check_rtol(match_rtol, "match_rtol")
