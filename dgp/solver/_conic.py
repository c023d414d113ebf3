"""One conic solve for dgp's convex programs (cvxpy, imported when a program is built).

Clarabel first, SCS if Clarabel fails; the status is returned, never trusted: whatever a program
decides is decided from its numbers by the caller (eigenvalue checks, a dual point made
feasible).
"""

from __future__ import annotations

import warnings
from typing import Any

from dgp.constants import SCS_EPS
from dgp.errors import SolverError

__all__ = ["solve_conic"]


def solve_conic(problem: Any, *, tol: float, what: str) -> str:
    """Solve the cvxpy ``problem`` (Clarabel at gap and feasibility tolerance ``tol``, else
    SCS) and return its status; "solution may be inaccurate" warnings are silenced (the caller
    judges the solution).

    Raises
    ------
    SolverError
        If neither solver can solve it (``what`` names the program).
    """
    import cvxpy as cp

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        try:
            problem.solve(solver=cp.CLARABEL, tol_gap_abs=tol, tol_gap_rel=tol, tol_feas=tol)
        except cp.error.SolverError:
            try:
                problem.solve(solver=cp.SCS, eps=SCS_EPS, max_iters=200000)
            except cp.error.SolverError as exc:
                raise SolverError(f"no semidefinite solver could solve {what}: {exc}") from None
    return problem.status
