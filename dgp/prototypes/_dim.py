r"""The prototypes in a fixed dimension: the one place where ``dim`` is handled.

A full-batch or batch prediction in free dimension is turned into one on the unit sphere of
:math:`\mathbb R^{dim}` here: the free optimum when its rank fits (certified globally optimal),
else the one rank-``dim`` solver's point (:func:`dgp.solver.solve_rank_d`) with a certified
lower bound, on the row problem or, for many classes, on the factor
(:class:`~dgp.solver.BlockFactor`); and what the loss pins among the search's candidates.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from dgp.constants import LOSS_RESOLUTION, RANK_D_LARGE_SIZE, RANK_D_STARTS
from dgp.display import format_duration, stderr_progress
from dgp.errors import DgpWarning
from dgp.prototypes._blocks import NUMERIC_MAX_K, PROJECT_MAX_K, block_weights, excess_gap
from dgp.prototypes._closed_forms import entropic_bound_prototypes, equiangular_gram
from dgp.prototypes._ident import Identifiability
from dgp.prototypes._result import Prototypes
from dgp.resources import check_memory
from dgp.solver import (
    BLOCK_FACTOR_BUFFERS,
    BlockFactor,
    RowProblem,
    check_time,
    identifiability_report,
    rank_d_cost,
    rank_d_starts,
    row_certificate,
    solve_rank_d,
)
from dgp.tolerance import DEFAULT_POLICY

__all__ = [
    "DIM_DEFAULT_STARTS",
    "DIM_FACTOR_SIZE",
    "default_starts",
    "dim_identifiability",
    "free_lower",
    "guard_dim",
    "in_dim",
    "in_dim_factor",
    "on_factor",
    "pinned_identifiability",
    "rank_d_point",
]

#: above this ``K * dim`` a full-batch rank-d solve evaluates the loss on the factor
#: (:class:`~dgp.solver.BlockFactor`: no row-problem tables, reused buffers, budgets of
#: evaluations and products in seconds: the factor-path policy of
#: :func:`dgp.solver.rank_d_policy`)
DIM_FACTOR_SIZE = RANK_D_LARGE_SIZE
#: default random candidates of a rank-d (and a non-negative) solve, the one search policy's
#: (:func:`dgp.solver.rank_d_starts`)
DIM_DEFAULT_STARTS = RANK_D_STARTS


def on_factor(K: int, dim: int, size: int = DIM_FACTOR_SIZE) -> bool:
    """Whether a full-batch rank-``dim`` solve works on the factor: ``K * dim`` above ``size``,
    or more classes than the row problem (and the free solve) take."""
    return K * dim > size or K > NUMERIC_MAX_K


def default_starts(K: int, dim: int, size: int = DIM_FACTOR_SIZE) -> int:
    """The one search policy's default budget (one given start on the factor path when the free
    optimum's truncation is given, none otherwise); ``size`` as :func:`on_factor`."""
    factor_path = on_factor(K, dim, size)
    given = int(factor_path and K <= PROJECT_MAX_K)
    return rank_d_starts(K, dim, given=given, factor_path=factor_path)


#: a rank-``dim`` solve estimated at this many seconds or more says so on stderr before it
#: starts (the one solver's cost model: 236 s estimated and measured at K = 1000, d = 128; it
#: overestimates small searches with moves about fivefold, 23 s for about 4 s at K = 6, d = 2)
ANNOUNCE_AFTER_S = 60.0


def guard_dim(K: int, dim: int, starts: int, rows: int, *, factor_path: bool = False,
              progress: bool = False) -> None:
    """Refuse a rank-``dim`` solve that would not fit in memory or in the time budget, with the
    estimate of the one solver's cost model (:func:`dgp.solver.rank_d_cost`), before any work;
    with ``progress``, say the estimate on stderr when it is :data:`ANNOUNCE_AFTER_S` or more."""
    instead = "use fewer classes, a smaller dim or fewer starts"
    what = f"the rank-{dim} prototypes of K = {K} classes ({starts} random starts)"
    if factor_path:
        check_memory(BLOCK_FACTOR_BUFFERS * 8.0 * K * K + 8.0 * K * K,
                     what=f"the rank-{dim} prototypes of K = {K} classes", hint=instead)
    else:
        check_memory(12 * 8.0 * rows * K, what=f"the rank-{dim} prototypes of K = {K} classes",
                     hint=instead)
    given = 1 if (not factor_path or K <= PROJECT_MAX_K) else 0
    cost = rank_d_cost(K, dim, starts=starts, given=given, rows=rows, factor_path=factor_path)
    check_time(cost, what=what, instead=instead, param="dim")
    seconds = cost / 1e9  # check_time's unit: operations at 1e9 per second
    if progress and seconds >= ANNOUNCE_AFTER_S:
        stderr_progress(what)(f"at most about {format_duration(seconds)} (the rank-d "
                              "solver's budget; its progress lines say the time from timed "
                              "work)")


def free_lower(free: Prototypes) -> float:
    """A certified lower bound (nats) on the free-dimension optimum from its result: the loss
    itself for closed forms, the loss less the KKT gap bound for certified solves."""
    if free.method == "closed-form" or free.certificate is None:
        return free.loss
    return free.loss - free.certificate.gap_bound


def rank_d_point(prob: RowProblem | BlockFactor, dim: int, given: list[np.ndarray], *,
                 starts: int, seed: int, tol: float, free_gram: np.ndarray | None = None,
                 weights: np.ndarray | None = None, stacklevel: int = 4,
                 progress: Callable[[str], None] | None = None):
    """The best rank-``dim`` point of ``prob`` by the one rank-d solver
    (:func:`dgp.solver.solve_rank_d`: the free optimum's truncation, the weights' spectral
    start, ``given`` and ``starts`` random candidates), with its certificate; warns if it is not
    stationary (``stacklevel``: at the caller of :func:`dgp.supcon_prototypes`); ``progress``
    (e.g. :func:`dgp.display.stderr_progress`) is called with a line every few seconds of the
    search.
    Returns the factor, its certificate and the solution."""
    found = solve_rank_d(prob, dim, free_gram=free_gram, weights=weights, given=given,
                         starts=starts, seed=seed, tol=tol, progress=progress)
    cert = found.certificate
    if not cert.first_order:
        # still a feasible point: its loss bounds the optimum in R^dim from above, and the
        # lower bound (from the free optimum) holds whatever the point; the gap says it all
        warnings.warn(
            f"the rank-{dim} solver stopped before a stationary point: Riemannian gradient "
            f"{cert.gradient_norm:.2g} of the gradient scale, above {cert.first_order_tol:.2g} "
            f"({found.reason}); the loss is an upper bound on the optimum in R^{dim}, within "
            "the reported gap of the lower bound", DgpWarning, stacklevel=stacklevel,
        )
    return found.factor, cert, found


def in_dim_factor(free: Prototypes | None, n: np.ndarray, tau: float, eps: float | None,
                  dim: int, *, starts: int, seed: int, tol: float,
                  progress: Callable[[str], None] | None = None,
                  classes: tuple[Any, ...] | None = None) -> Prototypes:
    r"""The full-batch prototypes in :math:`\mathbb R^{dim}` for many classes, on the factor
    (:class:`~dgp.solver.BlockFactor`): no row-problem tables and no ``K x K``
    eigendecomposition. The lower bound is the best of the entropic bound, the free optimum's
    certified loss (``free``, when it could be computed) and the convex dual bound
    :math:`F(G) - K\max(0, -\lambda_{\min}(S))` with :math:`\lambda_{\min}(S)` certified by
    a Cholesky factorisation (theorem ``rank-d-certificate``); ``progress`` as
    :func:`rank_d_point`; ``classes``: the problem's class labels, which the result names."""
    K = n.size
    obj = BlockFactor(n, tau, eps)
    free_gram = None
    if free is not None and free.matrix is not None and K <= PROJECT_MAX_K:
        free_gram = free.gram
    X, rcert, found = rank_d_point(obj, dim, [], starts=starts, seed=seed, tol=tol,
                                   free_gram=free_gram, stacklevel=5, progress=progress)
    loss, excess, log_excess = found.loss, found.excess_loss, found.log_excess_loss
    obj.set_scale(X)
    gap_scaled = K * max(0.0, -rcert.dual_min_eig) * obj.gradient_scale(X)
    dual_low = -math.inf
    if gap_scaled > 0:
        dual_low = loss - math.exp(math.log(gap_scaled) + math.log(obj.N) + obj.log_t)
    entropy = entropic_bound_prototypes(n, eps=eps)
    free_low = -math.inf if free is None else free_lower(free)
    lower = min(max(entropy, free_low, dual_low), loss)
    lam = np.linalg.eigvalsh(X @ X.T)  # the nonzero spectrum of G = X^T X
    G = X.T @ X
    return Prototypes(
        objective="supcon" if eps is None else "soft-supcon",
        sizes=tuple(int(v) for v in n), tau=tau, eps=eps,
        method="numeric", loss=loss, entropic_bound=entropy, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=rcert.gradient_norm, certificate=rcert,
        collapse=None, rank=DEFAULT_POLICY.rank(lam), unique=None,
        stop_reason=found.reason, matrix=G,
        search_identifiability=pinned_identifiability(
            Identifiability(math.nan, None, None, None, float(n.sum()), math.nan),
            [X.T for X in found.candidate_factors], found.candidate_losses, float(n.sum()),
            seed, n),
        dim=dim, lower_bound=lower, rank_d=rcert, factor=X.T.copy(), classes=classes,
    )


def in_dim(free: Prototypes, prob: RowProblem, n: np.ndarray, dim: int, *, starts: int,
            seed: int, tol: float, given: list[np.ndarray] | None = None,
            progress: Callable[[str], None] | None = None) -> Prototypes:
    r"""The full-batch prototypes constrained to unit vectors of :math:`\mathbb R^{dim}`: the
    free optimum when its rank fits, else the one rank-d solver's point (the search
    :func:`dgp.optimum` runs on the same class weighting), with the free optimum's certified
    loss as the lower bound; ``progress`` as :func:`rank_d_point`."""
    K = n.size
    free_low = free_lower(free)
    if free.rank <= dim:
        return dataclasses.replace(free, dim=dim, lower_bound=free_low)
    guard_dim(K, dim, starts, prob.R)
    free_gram = free.gram if (free.matrix is not None or K <= PROJECT_MAX_K) else None
    X, rcert, found = rank_d_point(prob, dim, [] if given is None else list(given),
                                   starts=starts, seed=seed, tol=tol, free_gram=free_gram,
                                   weights=block_weights(K, free.eps), stacklevel=5,
                                   progress=progress)
    G = X.T @ X
    prob.set_scale(G)
    cert = row_certificate(prob, G, target=tol)
    loss, excess, log_excess = found.loss, found.excess_loss, found.log_excess_loss
    lower = min(max(prob.entropy, free_low, loss - cert.gap_bound), loss)
    return Prototypes(
        objective=free.objective, sizes=free.sizes, tau=free.tau, eps=free.eps,
        classes=free.classes,
        method="numeric", loss=loss, entropic_bound=prob.entropy, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=rcert.gradient_norm, certificate=cert,
        collapse=None, rank=DEFAULT_POLICY.rank(np.linalg.eigvalsh(G)), unique=None,
        stop_reason=found.reason, matrix=G,
        search_identifiability=pinned_identifiability(
            dim_identifiability(prob, G, dim), [X.T for X in found.candidate_factors],
            found.candidate_losses, prob.alpha_total, seed, free.sizes),
        dim=dim, lower_bound=lower, rank_d=rcert,
    )


def pinned_identifiability(ident: Identifiability | None, runs: Any, candidate_losses: Any,
                           anchors: float, seed: int, sizes: Any) -> Identifiability | None:
    """``ident`` with what the loss pins among a fixed-dimension search's candidates (``runs``:
    ``K x d`` rows each; ``candidate_losses`` in nats, over ``anchors``) within
    :data:`~dgp.constants.LOSS_RESOLUTION` nats per anchor of the best
    (:func:`dgp.solver.identifiability_report`: their cosines, spectrum and the mean of the
    classes weighted by their ``sizes``, the samples' mean embedding): the rank-``dim``
    search's and the non-negative (ReLU) one's."""
    if ident is None or not len(runs):
        return ident
    losses = [v / anchors for v in candidate_losses]
    rep = identifiability_report(runs, losses, int(np.argmin(losses)), seed=seed,
                                 resolution=LOSS_RESOLUTION,
                                 row_weights=np.asarray(sizes, dtype=float))
    return dataclasses.replace(ident, pinned=rep.pinned, spread=rep.spread,
                               resolution=rep.resolution, identifiable=rep.identifiable,
                               statement=rep.statement, solutions=rep.solutions)


def dim_identifiability(prob: RowProblem, G: np.ndarray, dim: int) -> Identifiability | None:
    """The simplex gap in dimension ``dim``: the simplex fits only when ``K <= dim + 1``; above,
    the gap is undefined (``nan``: no configuration of ``R^dim`` is the simplex)."""
    K = G.shape[0]
    if K <= dim + 1:
        gap, log_gap = excess_gap(prob, equiangular_gram(K, -1.0 / (K - 1)), G)
        return Identifiability(gap, None, None, None, prob.alpha_total, log_gap)
    return Identifiability(math.nan, None, None, None, prob.alpha_total, math.nan)

