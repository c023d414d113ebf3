"""What the batch paths of :func:`dgp.optimum` say on stderr before their work: the row
problem's time estimate (:func:`say_rows_estimate`) and why an enumerable problem takes fresh
batches (:func:`say_exact_skipped`)."""

from __future__ import annotations

from dgp.display import format_duration, stderr_progress
from dgp.optima._batch_paths import FINITE_FROM, finite_refusal
from dgp.optima._structure import Quotient
from dgp.solver import (
    EXACT_RANK_D_MAX_S,
    ROW_BUDGET,
    BatchSpec,
    composition_count,
    enumerable,
    rows_rank_d_seconds,
)

__all__ = ["ROWS_ESTIMATE_FROM_S", "say_exact_skipped", "say_rows_estimate"]

#: seconds from which a row problem over every composition says its time estimate first
ROWS_ESTIMATE_FROM_S = 5.0


def say_rows_estimate(q: Quotient, spec: BatchSpec, dim: int | None, starts: int) -> None:
    """The time estimate of the row problem over every composition on stderr, when it is
    :data:`ROWS_ESTIMATE_FROM_S` or more (:func:`dgp.solver.rows_rank_d_seconds`: the guard's
    budget, which counts every descent to its iteration limit, so an upper estimate: 6 s for
    26 s said on three points in d = 2)."""
    seconds = rows_rank_d_seconds(q.sizes, spec, dim, starts)
    if seconds >= ROWS_ESTIMATE_FROM_S:
        stderr_progress()(
            f"exact expected-batch optimum over all {composition_count(q.sizes, spec)} "
            f"compositions of {q.K} points in d = {dim}: about {format_duration(seconds)} or "
            "less (the rank-d search over every composition's rows; its descents often stop "
            "early)")


def say_exact_skipped(q: Quotient, spec: BatchSpec, dim: int | None, exact_max: int,
                      starts: int) -> None:
    """On stderr, why a problem of at most ``exact_max`` compositions takes fresh batches: the
    rows' rank-``dim`` search beyond :data:`~dgp.solver.EXACT_RANK_D_MAX_S` or the rows beyond
    :data:`~dgp.solver.ROW_BUDGET`, and for samples in a fixed dimension why the finite sum does
    not answer (:func:`finite_refusal`; each was skipped in silence once)."""
    count = composition_count(q.sizes, spec)
    if count > exact_max:
        return
    samples = dim is not None and spec.sampler == "uniform" and bool((q.sizes == 1).all())
    if not enumerable(q.sizes, spec, exact_max):
        why = [f"their rows ({count} compositions of up to {min(q.K, spec.batch_size)} anchors "
               f"among {q.K} points) exceed {ROW_BUDGET:,} entries"]
    elif (seconds := rows_rank_d_seconds(q.sizes, spec, dim, starts)) > EXACT_RANK_D_MAX_S:
        why = [f"the rank-{dim} search over them is estimated at about "
               f"{format_duration(seconds)} (more than {format_duration(EXACT_RANK_D_MAX_S)})"]
    elif samples and count > FINITE_FROM:
        why = []  # the rows answer; samples past FINITE_FROM subsets take the finite sum
    else:
        return
    if samples:
        why.append(finite_refusal(q.K, spec.batch_size, dim, starts, count))
    stderr_progress()(
        f"all {count} compositions of {q.K} points could be enumerated, but "
        f"{' and '.join(w for w in why if w)}: the expected-batch optimum is found on fresh "
        f"batches instead (independent draws of those {count}), and reported with its interval "
        "and bound")
