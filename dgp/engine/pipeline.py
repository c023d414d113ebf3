"""The dense data path: canonical log-weights -> bound -> zero weights -> cycle condition ->
family -> verdict. :func:`dgp.classify` validates its arguments and hands over here; the
reductions of the problem are chosen once, here (:func:`dgp.engine._reductions.choose_reductions`:
the canonical shift, and the support components of a zero pattern)."""

from __future__ import annotations

import math
from typing import Any

from dgp.engine import rules
from dgp.engine._reductions import LogShift, choose_reductions, inverse_data
from dgp.engine.dense import dense_family
from dgp.engine.family import check_tau_inverse
from dgp.engine.rules import Context, Explanation
from dgp.engine.target import LogWeights, entropic_bound, log_target
from dgp.engine.zeros import classify_pattern, classify_zeros
from dgp.errors import ParameterError
from dgp.resources import blas_threads
from dgp.result import Classification
from dgp.tolerance import Tolerance

__all__ = ["classify_weights"]


def classify_weights(
    weights: LogWeights,
    *,
    similarity: str,
    tau: float,
    dim: int,
    tol: Tolerance,
    method: str = "spectral",
    objective: str | None = None,
    explanation: Explanation | None = None,
    suffix: str = "",
    notes: dict[str, Any] | None = None,
    floor: Any = None,
) -> Classification:
    """Classify validated log-weights (``weights`` is consumed: its matrix is overwritten).
    ``floor``: what an inconsistent cosine verdict says of the loss floor (a value, see
    :class:`~dgp.engine.rules.Context`). BLAS runs on the caller's threads
    (:func:`dgp.resources.blas_threads`): floats may differ in the last bits with the thread
    count, the decisions do not."""
    check_tau_inverse(tau)
    with blas_threads():  # every core, unless bit-identical output is asked for
        return _classify(weights, similarity=similarity, tau=tau, dim=dim, tol=tol,
                         method=method, objective=objective, explanation=explanation,
                         suffix=suffix, notes=notes, floor=floor)


def _classify(weights, *, similarity, tau, dim, tol, method, objective, explanation, suffix,
              notes, floor) -> Classification:
    reduced, inverse = choose_reductions(weights, similarity=similarity).apply(weights)
    base = {
        "similarity": similarity, "tau": tau, "dim": dim, "n": weights.n, "tol": tol,
        "method": method, "entropic_bound": entropic_bound(weights),
        # the canonical shift's inverse data: the verdict's constants go back through it
        "shift": inverse_data(inverse, LogShift).shift,
        "objective": objective, "warnings": weights.warnings, "notes": notes,
        "explanation": explanation, "suffix": suffix, "floor": floor,
    }
    if weights.has_zeros:  # the support components, or (cosine) the first zero weight
        if reduced is weights:
            return classify_zeros(weights, Context(**base))
        return classify_pattern(reduced, Context(**base))
    target = log_target(weights, tol)
    # row offsets that cancel in the target leave the rounding of the larger log-weights
    tol = base["tol"] = tol.widened(target.roundoff_factor)
    if not target.consistent:
        return rules.cycle_broken(Context(**base), cycle=(*target.cycle, target.cycle[0]),
                                  log_ratio=target.cycle_log_ratio, margin=target.margin)
    if not math.isfinite(2.0 * tau * max(1.0, target.spread)):  # tau (l_ij + c) must be a float
        raise ParameterError("tau", f"= {tau:g} times the spread of the log-weights "
                             f"({target.spread:.3g} nats) is beyond the float range (about "
                             "1.8e308), so the targets tau (log w_ij + c) cannot be formed; use "
                             "a smaller tau")
    ctx = Context(**base, margins=(target.margin,) if target.margin.near else ())
    if method == "sdp":
        from dgp.engine.sdp import sdp_family  # cvxpy is imported only when asked for

        fam = sdp_family(target, similarity=similarity, tau=tau, tol=tol)
    else:
        fam = dense_family(target, similarity=similarity, tau=tau, tol=tol)
    return rules.verdict(fam, ctx)
