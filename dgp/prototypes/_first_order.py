"""The first-order (small-tau) prototypes of SupCon as a result: the formula's Gram, its PSD
defect and its nearest point of the elliptope, at which loss and excess are taken (upper
bounds)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dgp.prototypes._blocks import PROJECT_MAX_K, block_weights, fits
from dgp.prototypes._closed_forms import first_order_gram, nearest_elliptope
from dgp.prototypes._result import FirstOrderApproximation, Prototypes
from dgp.resources import check_memory
from dgp.solver import block_problem, row_certificate
from dgp.tolerance import DEFAULT_POLICY

__all__ = ["first_order_prototypes"]


def first_order_prototypes(n: np.ndarray, tau: float, common: dict[str, Any],
                           bound: float) -> Prototypes:
    """The first-order prototypes of SupCon (``common``: the fields every result shares)."""
    K = n.size
    check_memory(
        6 * 8.0 * K * K,
        what=f"the first-order Gram of K = {K} classes",
        hint=f"up to about K = {fits(6 * 8.0)} classes fit; use fewer classes",
    )
    G = first_order_gram(n, tau=tau)
    lam_min = float(np.linalg.eigvalsh(G)[0]) if K <= PROJECT_MAX_K else math.nan
    note = (
        "the small-tau expansion around the simplex, exact to O(tau^2); it is not a solution "
        "of the problem"
    )
    if K > PROJECT_MAX_K:
        approx = FirstOrderApproximation(
            min_eigenvalue=lam_min, psd_defect=math.nan, projected_gram=None, distance=None,
            converged=False,
            note=note + f"; not projected on the elliptope above K = {PROJECT_MAX_K}, so no "
            "loss and no certificate are reported",
        )
        return Prototypes(
            **common, method="first-order", loss=math.nan, entropic_bound=bound,
            excess_loss=math.nan, log_excess_loss=math.nan, kkt_residual=None, certificate=None,
            collapse=None, rank=K - 1, unique=None, stop_reason="first-order formula",
            matrix=G, approximation=approx,
        )
    if lam_min >= 0:
        P, converged = G, True
    else:
        P, converged, _ = nearest_elliptope(G)
    approx = FirstOrderApproximation(
        min_eigenvalue=lam_min,
        psd_defect=max(0.0, -lam_min),
        projected_gram=P,
        distance=float(np.linalg.norm(P - G)),
        converged=converged,
        note=note + "; loss and excess are those of the projected Gram, a feasible point, "
        "hence upper bounds on the optimum; its KKT certificate says how far from optimal it is",
    )
    prob = block_problem(n, block_weights(K, None), tau=tau)
    prob.set_scale(P)
    loss, excess, log_excess = prob.loss(P)
    lam = np.linalg.eigvalsh(P)
    rank = DEFAULT_POLICY.rank(lam)
    # the KKT certificate of the projected Gram, from its numbers: not optimal in general (the
    # expansion's O(tau^2) error shows in its residual), certified only if it happens to be
    cert = row_certificate(prob, P)
    return Prototypes(
        **common, method="first-order", loss=loss, entropic_bound=bound, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=None, certificate=cert, collapse=None,
        rank=rank, unique=None, stop_reason="first-order formula", matrix=G,
        approximation=approx,
    )
