"""The memory and time guard of :func:`dgp.optimum`'s solves, before any work."""

from __future__ import annotations

from dgp.errors import ParameterError
from dgp.resources import check_memory
from dgp.solver import check_time, rank_d_cost

__all__ = ["check_solve_budget"]


def check_solve_budget(K: int, dim: int | None, rows: int, starts: int, *,
                       free_max_k: int) -> None:
    """Refuse a solve of ``K`` points (``rows`` rows) that would not fit: the free-dimension
    optimum above ``free_max_k`` points (:data:`dgp.optima.FREE_MAX_K`) or beyond the memory
    or time guards; in ``dim``, the one rank-d search's memory and time (its cost model).

    Raises
    ------
    ParameterError
        Naming ``W`` or ``starts``, with what to do instead.
    """
    if dim is None:
        if K > free_max_k:
            raise ParameterError(
                "W",
                f"has {K} distinct samples (twin classes), above the {free_max_k} whose "
                "free-dimension optimum dgp computes (its cost grows as K^3 per iteration); ask "
                "for the optimum in a fixed dimension instead (dim=D: O(K^2 D) per "
                "iteration), or use a weighting with class structure",
            )
        # measured with tracemalloc: about 43 K x K float64 arrays at the peak of a dense solve
        check_memory(40 * 8.0 * K * K + 6 * 8.0 * rows * K,
                     what=f"the free-dimension optimum of {K} classes",
                     hint="give dim=D or a smaller N")
        check_time(1500 * 4.0 * K**3, what=f"the free-dimension optimum of {K} classes",
                   instead="give dim=D or a smaller N", param="W")
    else:
        # the free optimum is solved first (its bound and starts): its peak, about 43 K x K
        # float64 arrays measured with tracemalloc, is the peak of the rank-d solve too
        check_memory(40 * 8.0 * K * K + 8 * 8.0 * rows * K,
                     what=f"the rank-{dim} optimum of {K} classes",
                     hint="use a smaller N or a weighting with class structure")
        # the time: every candidate of the one rank-d search (dgp.solver.solve_rank_d): its
        # descent, moves, polish and rounds, by the solver's own cost model (one model: a
        # second, cruder one here refused N = 2000 in d = 16 as "1.8 hours", about 100 times
        # what the solve takes)
        check_time(rank_d_cost(K, dim, starts=starts, given=2, rows=rows),
                   what=f"{starts} Burer-Monteiro starts of the rank-{dim} optimum of {K} classes",
                   instead="ask for fewer starts", param="starts")
