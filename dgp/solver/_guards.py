"""The time guard: estimate the work of a solve before starting it, and refuse with a clear error.

Work is counted in floating-point operations at a conservative ``1e9`` per second and refused
above ``DGP_TIME_BUDGET_S`` seconds (default one hour). Memory is guarded by
:func:`dgp.resources.check_memory`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

from dgp.constants import SOLVER_TAU_MAX, SOLVER_TAU_RANGE
from dgp.errors import InputError, ParameterError, SolverError
from dgp.resources import time_budget  # validated: a malformed value is an error

__all__ = ["check_solver_tau", "check_time", "time_budget", "validated_tau"]

_FLOPS = 1e9


def check_time(flops: float, *, what: str, instead: str, param: str | None = None) -> None:
    """Raise if ``flops`` floating-point operations exceed :func:`time_budget` seconds.

    Raises
    ------
    ValueError
        (a :class:`dgp.errors.ParameterError` naming ``param`` when given) saying what would
        take how long, the budget, and what to use instead.

    >>> check_time(1e9, what="a small solve", instead="nothing")
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
        raise InputError(detail)
    raise ParameterError(param, f"is too large: {detail}")


@contextmanager
def validated_tau(tau: float, param: str = "tau") -> Iterator[None]:
    """Solve inside this block at temperature ``tau``: outside :data:`SOLVER_TAU_RANGE`, where the
    certified solver is not validated, a failure (it did not converge, or its floats overflowed)
    is the temperature's, a :class:`ParameterError` naming ``param`` (exit 2), and numpy's
    overflow warnings are silenced; inside the range a failure stays dgp's own
    (:class:`SolverError`, exit 1).

    >>> with validated_tau(1e-300):
    ...     raise SolverError("did not converge")
    Traceback (most recent call last):
    ...
    dgp.errors.InvalidParameterError: tau = 1e-300 is outside [0.004, 1e+09], the temperatures \
dgp's certified solver is validated on, and the solve did not converge there; use a temperature \
in that range
    """
    lo, hi = SOLVER_TAU_RANGE
    if lo <= tau <= hi:
        yield
        return
    try:
        with np.errstate(over="ignore", invalid="ignore", divide="ignore", under="ignore"):
            yield
    except (SolverError, OverflowError, FloatingPointError, ZeroDivisionError) as exc:
        how = "did not converge" if isinstance(exc, SolverError) else "overflowed"
        raise ParameterError(
            param, f"= {tau:g} is outside [{lo:g}, {hi:g}], the temperatures dgp's certified "
            f"solver is validated on, and the solve {how} there; use a temperature in that range"
        ) from None


def check_solver_tau(tau: float, param: str = "tau") -> float:
    """Refuse a temperature above :data:`dgp.constants.SOLVER_TAU_MAX` (2^53): there the loss
    is flat to double precision, ``exp(G/tau) = 1`` for every cosine ``G``, and no solver can
    resolve its minimiser.

    Raises
    ------
    ParameterError
        Naming ``param``, with the limit.

    >>> check_solver_tau(1e6)
    1000000.0
    """
    if tau > SOLVER_TAU_MAX:
        raise ParameterError(
            param, f"= {tau:.3g} is beyond what the loss resolves: above 2^53 = "
            f"{SOLVER_TAU_MAX:.3g}, exp(G / tau) = 1 to double precision for every cosine G in "
            f"[-1, 1], so the loss is flat and every Gram is optimal; use tau <= "
            f"{SOLVER_TAU_MAX:.3g}"
        )
    return tau
