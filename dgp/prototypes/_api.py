r"""``supcon_prototypes``: optimal class prototypes of SupCon and Soft SupCon, full batch or the
expected loss of a mini-batch sampler.

Under SupCon every class collapses to one prototype :math:`\mu_c` on the unit sphere (theorem
``supcon-collapse``; for every other weighting the collapse is certified from the solution, see
:mod:`dgp.solver._lift`), and the prototype Gram
:math:`G_{cc'} = \langle\mu_c, \mu_{c'}\rangle` solves the ``K x K`` problem over the elliptope
:math:`\mathcal{E}_K = \{G \succeq 0,\ \operatorname{diag} G = 1\}`

.. math::

    \min_{G \in \mathcal{E}_K} F(G), \qquad
    F(G) = \sum_c n_c\Big[\beta_c \sum_{c' \ne c} n_{c'}(1 - G_{cc'})
        + \log\Big((n_c - 1) + \sum_{c' \ne c} n_{c'}\, e^{(G_{cc'} - 1)/\tau}\Big)\Big],

with :math:`\beta_c = 0` for SupCon and, for Soft SupCon (weight 1 within a class,
:math:`\varepsilon` across), :math:`\beta_c = \varepsilon / (\tau Z_c)`,
:math:`Z_c = (n_c - 1) + \varepsilon (N - n_c)`. ``F`` is the w-InfoNCE loss summed over all
``N`` anchors, in nats. With a batch size, ``F`` is replaced by the expected batch loss of
:mod:`dgp.solver._batch`, still convex in ``G``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.constants import (
    BATCH_GRAM_TOL,
    BATCH_TAU_MIN,
    EQUIANGULAR_ATOL,
    LOG1P_SERIES_BELOW,
    LOSS_RESOLUTION,
    RANK_D_LARGE_SIZE,
    RANK_D_STARTS,
    SOLVER_TOL,
)
from dgp.errors import (
    DgpWarning,
    ParameterError,
    ParameterTypeError,
    SolverError,
    check_choice,
    check_dim,
    check_positive,
    check_sizes,
    check_unit_interval,
)
from dgp.prototypes._closed_forms import (
    METHODS,
    entropic_bound_prototypes,
    equiangular_gram,
    first_order_gram,
    nearest_elliptope,
)
from dgp.prototypes._result import (
    FirstOrderApproximation,
    Identifiability,
    Prototypes,
)
from dgp.records import Record
from dgp.resources import check_memory, memory_budget
from dgp.solver import (
    BLOCK_FACTOR_BUFFERS,
    Z95,
    BatchPrediction,
    BatchSpec,
    BlockFactor,
    ClassBatches,
    DenseBatchWeights,
    KKTCertificate,
    RowProblem,
    batch_rows,
    block_problem,
    check_batch,
    check_time,
    composition_count,
    compositions,
    enumerable,
    evaluate,
    face_uniqueness,
    factor,
    identifiability_report,
    lift_certificate,
    positive_pair_probability,
    quotient_batch_optimum,
    rank_d_cost,
    rank_d_starts,
    row_budget_samples,
    row_certificate,
    single_threaded,
    solve_rank_d,
    solve_rows,
    validated_tau,
)
from dgp.tolerance import DEFAULT_POLICY

__all__ = [
    "BatchTolerance",
    "batch_size_for_tolerance",
    "block_weights",
    "kkt_certificate",
    "prototype_loss",
    "supcon_prototypes",
]

#: largest K the certified solver takes on (its time grows as K^3 per iteration)
NUMERIC_MAX_K = 3000
#: largest K whose first-order Gram is projected on the elliptope (eigendecompositions)
PROJECT_MAX_K = 1500


def block_weights(K: int, eps: float | None) -> np.ndarray:
    """Class-block weights of SupCon (``eps=None``: the identity) or Soft SupCon (1 within a
    class, ``eps`` across).

    >>> block_weights(2, 0.5).tolist()
    [[1.0, 0.5], [0.5, 1.0]]
    """
    return np.eye(K) if eps is None else np.where(np.eye(K, dtype=bool), 1.0, eps)


def _validate_gram(gram: object, K: int) -> np.ndarray:
    G = np.asarray(gram, dtype=float)
    if G.shape != (K, K) or not np.isfinite(G).all():
        raise ParameterError("gram", f"must be a finite {K} x {K} matrix, got shape {G.shape}")
    return 0.5 * (G + G.T)


def prototype_loss(gram: object, sizes: object, *, tau: float, eps: float | None = None) -> float:
    r"""The prototype objective :math:`F(G)` in nats: the w-InfoNCE loss of the collapsed
    configuration with prototype Gram ``gram``, summed over all ``N`` anchors.

    Raises
    ------
    ValueError, TypeError
        If ``gram`` is not a finite ``K x K`` matrix matching ``sizes``, or an argument is invalid.

    >>> round(prototype_loss([[1, -1], [-1, 1]], [2, 2], tau=1.0), 10) == round(
    ...     4 * math.log(1 + 2 * math.exp(-2)), 10)
    True
    """
    prob, G = _gram_problem(gram, sizes, tau, eps)
    return prob.loss(G)[0]


def _gram_problem(gram: object, sizes: object, tau: float, eps: float | None):
    """The validated block problem of ``sizes`` and the validated ``gram``, scaled at it."""
    n = check_sizes(sizes)
    tau = check_positive(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    G = _validate_gram(gram, n.size)
    prob = block_problem(n, block_weights(n.size, eps), tau=tau)
    prob.set_scale(G)
    return prob, G


def kkt_certificate(
    gram: object, sizes: object, *, tau: float, eps: float | None = None
) -> KKTCertificate:
    r"""KKT certificate of a prototype Gram for :math:`\min_{G\in\mathcal E_K} F(G)`.

    With :math:`\hat g = \nabla\hat F(G)` (the gradient of the scaled objective), the multiplier
    of :math:`\operatorname{diag} G = 1` is :math:`y = \operatorname{diag}(G\hat g)` and
    :math:`S = \hat g - \operatorname{Diag}(y)`; ``G`` is optimal iff :math:`G \in \mathcal E_K`,
    :math:`S \succeq 0` and :math:`GS = 0`. ``gap_bound`` bounds :math:`F(G) - \min F` in nats.
    See :class:`dgp.prototypes.KKTCertificate` for every field.

    Raises
    ------
    ValueError, TypeError
        If ``gram`` is not a finite ``K x K`` matrix or an argument is invalid.

    >>> c = kkt_certificate([[1, -0.5, -0.5], [-0.5, 1, -0.5], [-0.5, -0.5, 1]], [4, 4, 4],
    ...     tau=0.2)
    >>> c.kkt_residual < 1e-12, c.rank
    (True, 2)
    """
    prob, G = _gram_problem(gram, sizes, tau, eps)
    return row_certificate(prob, G)


def _balanced_supcon_loss(n0: int, K: int, tau: float) -> tuple[float, float, float]:
    """Loss, excess and log-excess at the simplex, balanced SupCon, without any K x K array."""
    N = n0 * K
    kappa = K / (K - 1.0)
    log_x = math.log(n0 * (K - 1.0) / (n0 - 1.0)) - kappa / tau
    x = math.exp(log_x) if log_x > -745 else 0.0
    l1p = math.log1p(x) if x > 0 else 0.0
    log_l1p = log_x + math.log(l1p / x) if x > LOG1P_SERIES_BELOW else log_x + math.log1p(-0.5 * x)
    excess = N * l1p
    return N * math.log(n0 - 1.0) + excess, excess, math.log(N) + log_l1p


_FIRST_ORDER = "the first-order approximation (method first-order, O(tau^2) error)"


def _fits(bytes_per_k2: float, cap: int | None = None) -> int | None:
    """The largest K whose K x K arrays fit the memory budget (``None``: no limit)."""
    budget = memory_budget()
    k = None if budget is None else int(math.sqrt(budget / bytes_per_k2))
    if cap is not None:
        k = cap if k is None else min(k, cap)
    return k


def _balanced_soft_supcon_simplex_loss(n0: int, K: int, tau: float, eps: float) -> float:
    r"""Soft SupCon's loss at the regular simplex, ``K`` classes of ``n0`` samples (no K x K
    array): each anchor sees :math:`n_0 - 1` samples at cosine 1 with target :math:`1/Z` and
    :math:`n_0(K-1)` at cosine :math:`-1/(K-1)` with target :math:`arepsilon/Z`,
    :math:`Z = (n_0 - 1) + arepsilon n_0 (K - 1)`."""
    s = -1.0 / (K - 1)
    Z = (n0 - 1) + eps * n0 * (K - 1)
    lin = ((n0 - 1) + eps * n0 * (K - 1) * s) / (tau * Z)
    lse = 1.0 / tau + math.log((n0 - 1) + n0 * (K - 1) * math.exp((s - 1.0) / tau))
    return n0 * K * (lse - lin)


def _guard_numeric(K: int) -> None:
    fits = _fits(24 * 8.0, NUMERIC_MAX_K)
    instead = f"up to about K = {fits} classes fit; use {_FIRST_ORDER} or fewer classes"
    if K > NUMERIC_MAX_K:
        raise ParameterError(
            "sizes",
            f"has K = {K} classes, above the {NUMERIC_MAX_K} the certified solver takes on "
            f"(its time grows as K^3 per iteration); use {_FIRST_ORDER} or fewer classes",
        )
    check_memory(24 * 8.0 * K * K, what=f"the certified solver for K = {K} classes",
                 hint=instead)
    # measured: K = 1000 takes ~12 s on 2 cores (~2e11 flops); 40 K^3 at 1e9 flops/s is a
    # 3-30x margin that still admits every K <= NUMERIC_MAX_K within the default hour
    check_time(40.0 * K**3, what=f"the certified solver for K = {K} classes",
               instead=instead, param="sizes")


#: L-BFGS rounds of the class-block solves: the dual Newton polish after each round converges
#: quadratically from a rough point, so a short first round is 2-3.5x faster than (60, 400,
#: 4000) at K = 40 to 1000 with the same loss (measured; the certificate is unchanged)
BLOCK_ROUNDS = (5, 30, 400, 4000)


def _solve_block(prob: RowProblem, starts: list[np.ndarray], tol: float):
    res = solve_rows(prob, starts=starts, tol=tol, rounds=BLOCK_ROUNDS)
    if not DEFAULT_POLICY.accepts(res.certificate.kkt_residual, tol):
        raise SolverError(
            f"the certified solver did not converge: KKT residual "
            f"{res.certificate.kkt_residual:.2g} ({res.stop_reason}); please report it"
        )
    return res


def _excess_gap(prob: RowProblem, G_alt: np.ndarray, G: np.ndarray) -> tuple[float, float]:
    """``F(G_alt) - F(G)`` per anchor of ``prob`` and its natural log, from the excesses over
    the entropic bound and their logs (no cancellation of the two losses, finite logs where the
    gap underflows); ``prob`` is left scaled at ``G``."""
    prob.set_scale(G_alt)
    _, alt, log_alt = prob.loss(G_alt)
    prob.set_scale(G)
    _, ex, log_ex = prob.loss(G)
    per = math.log(prob.alpha_total)
    if not log_alt > log_ex:  # the alternative is no worse (rounding at a tie)
        return 0.0, -math.inf
    log_gap = log_alt + math.log1p(-math.exp(log_ex - log_alt)) - per
    return max(0.0, (alt - ex) / prob.alpha_total), log_gap


def _full_identifiability(n: np.ndarray, tau: float, eps: float | None,
                          G: np.ndarray | None, gap: bool = True) -> Identifiability | None:
    """Loss gap of the simplex over the full-batch prediction ``G`` (``None``: the prediction
    is the simplex), per anchor; ``None`` above :data:`PROJECT_MAX_K` classes or when ``gap``
    is not asked for."""
    if not gap:
        return None
    N = float(n.sum())
    if G is None:
        return Identifiability(0.0, None, None, None, N, -math.inf)
    K = n.size
    if K > PROJECT_MAX_K:
        return None
    prob = block_problem(n, block_weights(K, eps), tau=tau)
    gap, log_gap = _excess_gap(prob, equiangular_gram(K, -1.0 / (K - 1)), G)
    return Identifiability(gap, None, None, None, N, log_gap)


def _full_batch(n: np.ndarray, tau: float, eps: float | None, method: str, tol: float,
                gap: bool = True, numeric: bool = True):
    """The full-batch prototypes in free dimension: a closed form where one is exact, else the
    certified solver (``numeric=False``: ``None`` instead, for a caller that can do without)."""
    K = n.size
    objective = "supcon" if eps is None else "soft-supcon"
    common: dict[str, Any] = {
        "objective": objective,
        "sizes": tuple(int(v) for v in n),
        "tau": tau,
        "eps": eps,
    }
    bound = entropic_bound_prototypes(n, eps=eps)
    simplex = -1.0 / (K - 1)
    if method == "auto" and eps is None and (n == n[0]).all():
        loss, excess, log_excess = _balanced_supcon_loss(int(n[0]), K, tau)
        return Prototypes(
            **common, method="closed-form", loss=loss, entropic_bound=bound,
            excess_loss=excess, log_excess_loss=log_excess, kkt_residual=None,
            certificate=None, collapse=None, rank=K - 1, unique=True,
            stop_reason="regular simplex (balanced SupCon)", equiangular=simplex,
            identifiability=_full_identifiability(n, tau, eps, None, gap),
        )
    if method == "auto" and eps is None and K == 2:
        # one free cosine, and the loss increases with it: antipodal at every tau and any sizes
        G = equiangular_gram(2, -1.0)
        prob = block_problem(n, block_weights(2, None), tau=tau)
        prob.set_scale(G)
        loss, excess, log_excess = prob.loss(G)
        return Prototypes(
            **common, method="closed-form", loss=loss, entropic_bound=bound,
            excess_loss=excess, log_excess_loss=log_excess, kkt_residual=None,
            certificate=None, collapse=None, rank=1,
            unique=face_uniqueness(G, n, rank=1)[0],
            stop_reason="antipodal (SupCon with two classes)", equiangular=-1.0,
            identifiability=_full_identifiability(n, tau, eps, None, gap),
        )
    if method == "auto" and eps is not None:
        rho = 1.0 + tau * math.log(eps)
        if rho < simplex - EQUIANGULAR_ATOL and (n == n[0]).all():
            loss = _balanced_soft_supcon_simplex_loss(int(n[0]), K, tau, eps)
            excess = max(0.0, loss - bound)
            return Prototypes(
                **common, method="closed-form", loss=loss, entropic_bound=bound,
                excess_loss=excess, log_excess_loss=math.log(excess) if excess > 0 else -math.inf,
                kkt_residual=None, certificate=None, collapse=None, rank=K - 1, unique=True,
                stop_reason="regular simplex (balanced Soft SupCon above tau*)",
                equiangular=simplex,
                identifiability=_full_identifiability(n, tau, eps, None, gap),
            )
        if rho >= simplex - EQUIANGULAR_ATOL:
            at_star = abs(rho - simplex) <= EQUIANGULAR_ATOL
            unique: bool | None = False
            if at_star:
                unique = (
                    face_uniqueness(equiangular_gram(K, simplex), n, rank=K - 1)[0]
                    if K <= PROJECT_MAX_K else None
                )
            return Prototypes(
                **common, method="closed-form", loss=bound, entropic_bound=bound,
                excess_loss=0.0, log_excess_loss=-math.inf, kkt_residual=None,
                certificate=None, collapse=None, rank=K - 1 if at_star else K, unique=unique,
                stop_reason="equiangular rho = 1 + tau log eps, attains the entropic bound",
                equiangular=max(rho, simplex),
                identifiability=_full_identifiability(
                    n, tau, eps, None if at_star else equiangular_gram(K, rho), gap
                ) if K <= PROJECT_MAX_K else None,
            )
    if method == "first-order":
        if eps is not None:
            raise ParameterError(
                "method",
                f"first-order is the small-tau formula of SupCon; drop eps (got {eps}) or use "
                "method auto",
            )
        return _first_order(n, tau, common, bound)
    if not numeric:
        return None
    _guard_numeric(K)
    prob = block_problem(n, block_weights(K, eps), tau=tau)
    starts = [equiangular_gram(K, simplex)]
    if eps is None:
        F = factor(first_order_gram(n, tau=tau), K)
        starts.append(F.T @ F)
    res = _solve_block(prob, starts, tol)
    G, cert = res.gram, res.certificate
    loss, excess, log_excess = prob.loss(G)
    lift = lift_certificate(prob, G, n, cert)
    ident = None
    if gap:
        loss_gap, log_gap = _excess_gap(prob, equiangular_gram(K, simplex), G)
        ident = Identifiability(loss_gap, None, None, None, float(n.sum()), log_gap)
    return Prototypes(
        **common, method="numeric", loss=loss, entropic_bound=bound, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=cert.kkt_residual, certificate=cert,
        collapse=lift, rank=cert.rank, unique=lift.unique, stop_reason=res.stop_reason,
        matrix=G, identifiability=ident,
    )


def _first_order(n: np.ndarray, tau: float, common: dict[str, Any], bound: float) -> Prototypes:
    K = n.size
    check_memory(
        6 * 8.0 * K * K,
        what=f"the first-order Gram of K = {K} classes",
        hint=f"up to about K = {_fits(6 * 8.0)} classes fit; use fewer classes",
    )
    G = first_order_gram(n, tau=tau)
    lam_min = float(np.linalg.eigvalsh(G)[0]) if K <= PROJECT_MAX_K else math.nan
    note = (
        "the small-tau expansion around the simplex, exact to O(tau^2); it is not a solution "
        "of the problem and carries no certificate"
    )
    if K > PROJECT_MAX_K:
        approx = FirstOrderApproximation(
            min_eigenvalue=lam_min, psd_defect=math.nan, projected_gram=None, distance=None,
            converged=False,
            note=note + f"; not projected on the elliptope above K = {PROJECT_MAX_K}, so no "
            "loss is reported",
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
        "hence upper bounds on the optimum",
    )
    prob = block_problem(n, block_weights(K, None), tau=tau)
    prob.set_scale(P)
    loss, excess, log_excess = prob.loss(P)
    lam = np.linalg.eigvalsh(P)
    rank = DEFAULT_POLICY.rank(lam)
    return Prototypes(
        **common, method="first-order", loss=loss, entropic_bound=bound, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=None, certificate=None, collapse=None,
        rank=rank, unique=None, stop_reason="first-order formula", matrix=G,
        approximation=approx,
    )


#: above this ``K * dim`` a full-batch rank-d solve evaluates the loss on the factor
#: (:class:`~dgp.solver.BlockFactor`: no row-problem tables, reused buffers, budgets of
#: evaluations and products in seconds: the factor-path policy of
#: :func:`dgp.solver.rank_d_policy`)
DIM_FACTOR_SIZE = RANK_D_LARGE_SIZE
#: default random candidates of a rank-d (and a non-negative) solve, the one search policy's
#: (:func:`dgp.solver.rank_d_starts`)
DIM_DEFAULT_STARTS = RANK_D_STARTS


def _on_factor(K: int, dim: int) -> bool:
    """Whether a full-batch rank-``dim`` solve works on the factor: a large ``K * dim``, or more
    classes than the row problem (and the free solve) take."""
    return K * dim > DIM_FACTOR_SIZE or K > NUMERIC_MAX_K


def _default_starts(K: int, dim: int) -> int:
    """The one search policy's default budget (one given start on the factor path when the free
    optimum's truncation is given, none otherwise)."""
    factor_path = _on_factor(K, dim)
    given = int(factor_path and K <= PROJECT_MAX_K)
    return rank_d_starts(K, dim, given=given, factor_path=factor_path)


def _guard_dim(K: int, dim: int, starts: int, rows: int, *, factor_path: bool = False) -> None:
    """Refuse a rank-``dim`` solve that would not fit in memory or in the time budget, with the
    estimate of the one solver's cost model (:func:`dgp.solver.rank_d_cost`), before any work."""
    instead = "use fewer classes, a smaller dim or fewer starts"
    what = f"the rank-{dim} prototypes of K = {K} classes ({starts} random starts)"
    if factor_path:
        check_memory(BLOCK_FACTOR_BUFFERS * 8.0 * K * K + 8.0 * K * K,
                     what=f"the rank-{dim} prototypes of K = {K} classes", hint=instead)
    else:
        check_memory(12 * 8.0 * rows * K, what=f"the rank-{dim} prototypes of K = {K} classes",
                     hint=instead)
    given = 1 if (not factor_path or K <= PROJECT_MAX_K) else 0
    check_time(rank_d_cost(K, dim, starts=starts, given=given, rows=rows,
                           factor_path=factor_path),
               what=what, instead=instead, param="dim")


def _check_starts(starts: object) -> int:
    return _check_int(starts, "starts", 0)


def _free_lower(free: Prototypes) -> float:
    """A certified lower bound (nats) on the free-dimension optimum from its result: the loss
    itself for closed forms, the loss less the KKT gap bound for certified solves."""
    if free.method == "closed-form" or free.certificate is None:
        return free.loss
    return free.loss - free.certificate.gap_bound


def _rank_d_point(prob: RowProblem | BlockFactor, dim: int, given: list[np.ndarray], *,
                  starts: int, seed: int, tol: float, free_gram: np.ndarray | None = None,
                  weights: np.ndarray | None = None):
    """The best rank-``dim`` point of ``prob`` by the one rank-d solver
    (:func:`dgp.solver.solve_rank_d`: the free optimum's truncation, the weights' spectral
    start, ``given`` and ``starts`` random candidates), with its certificate; warns if it is not
    stationary. Returns the factor, its certificate and the solution."""
    found = solve_rank_d(prob, dim, free_gram=free_gram, weights=weights, given=given,
                         starts=starts, seed=seed, tol=tol)
    cert = found.certificate
    if not cert.first_order:
        # still a feasible point: its loss bounds the optimum in R^dim from above, and the
        # lower bound (from the free optimum) holds whatever the point; the gap says it all
        warnings.warn(
            f"the rank-{dim} solver stopped before a stationary point: Riemannian gradient "
            f"{cert.gradient_norm:.2g} of the gradient scale, above {cert.first_order_tol:.2g} "
            f"({found.reason}); the loss is an upper bound on the optimum in R^{dim}, within "
            "the reported gap of the lower bound", DgpWarning, stacklevel=4,
        )
    return found.factor, cert, found


def _in_dim_factor(free: Prototypes | None, n: np.ndarray, tau: float, eps: float | None,
                   dim: int, *, starts: int, seed: int, tol: float) -> Prototypes:
    r"""The full-batch prototypes in :math:`\mathbb R^{dim}` for many classes, on the factor
    (:class:`~dgp.solver.BlockFactor`): no row-problem tables and no ``K x K``
    eigendecomposition. The lower bound is the best of the entropic bound, the free optimum's
    certified loss (``free``, when it could be computed) and the convex dual bound
    :math:`F(G) - K\max(0, -\lambda_{\min}(S))` with :math:`\lambda_{\min}(S)` certified by
    a Cholesky factorisation (theorem ``rank-d-certificate``)."""
    K = n.size
    obj = BlockFactor(n, tau, eps)
    free_gram = None
    if free is not None and free.matrix is not None and K <= PROJECT_MAX_K:
        free_gram = free.gram
    X, rcert, found = _rank_d_point(obj, dim, [], starts=starts, seed=seed, tol=tol,
                                    free_gram=free_gram)
    loss, excess, log_excess = found.loss, found.excess_loss, found.log_excess_loss
    obj.set_scale(X)
    gap_scaled = K * max(0.0, -rcert.dual_min_eig) * obj.gradient_scale(X)
    dual_low = -math.inf
    if gap_scaled > 0:
        dual_low = loss - math.exp(math.log(gap_scaled) + math.log(obj.N) + obj.log_t)
    entropy = entropic_bound_prototypes(n, eps=eps)
    free_low = -math.inf if free is None else _free_lower(free)
    lower = min(max(entropy, free_low, dual_low), loss)
    lam = np.linalg.eigvalsh(X @ X.T)  # the nonzero spectrum of G = X^T X
    G = X.T @ X
    return Prototypes(
        objective="supcon" if eps is None else "soft-supcon",
        sizes=tuple(int(v) for v in n), tau=tau, eps=eps,
        method="numeric", loss=loss, entropic_bound=entropy, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=rcert.gradient_norm, certificate=None,
        collapse=None, rank=DEFAULT_POLICY.rank(lam), unique=None,
        stop_reason=found.reason, matrix=G,
        identifiability=_pinned(Identifiability(math.nan, None, None, None, float(n.sum()),
                                                math.nan), found, float(n.sum()), seed),
        dim=dim, lower_bound=lower, rank_d=rcert, factor=X.T.copy(),
    )


def _in_dim(free: Prototypes, prob: RowProblem, n: np.ndarray, dim: int, *, starts: int,
            seed: int, tol: float, given: list[np.ndarray] | None = None) -> Prototypes:
    r"""The full-batch prototypes constrained to unit vectors of :math:`\mathbb R^{dim}`: the
    free optimum when its rank fits, else the one rank-d solver's point (the search
    :func:`dgp.optimum` runs on the same class weighting), with the free optimum's certified
    loss as the lower bound."""
    K = n.size
    free_low = _free_lower(free)
    if free.rank <= dim:
        return dataclasses.replace(free, dim=dim, lower_bound=free_low)
    _guard_dim(K, dim, starts, prob.R)
    free_gram = free.gram if (free.matrix is not None or K <= PROJECT_MAX_K) else None
    X, rcert, found = _rank_d_point(prob, dim, [] if given is None else list(given),
                                    starts=starts, seed=seed, tol=tol, free_gram=free_gram,
                                    weights=block_weights(K, free.eps))
    G = X.T @ X
    prob.set_scale(G)
    cert = row_certificate(prob, G)
    loss, excess, log_excess = found.loss, found.excess_loss, found.log_excess_loss
    lower = min(max(prob.entropy, free_low, loss - cert.gap_bound), loss)
    return Prototypes(
        objective=free.objective, sizes=free.sizes, tau=free.tau, eps=free.eps,
        method="numeric", loss=loss, entropic_bound=prob.entropy, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=rcert.gradient_norm, certificate=cert,
        collapse=None, rank=DEFAULT_POLICY.rank(np.linalg.eigvalsh(G)), unique=None,
        stop_reason=found.reason, matrix=G,
        identifiability=_pinned(_dim_identifiability(prob, G, dim), found,
                                prob.alpha_total, seed),
        dim=dim, lower_bound=lower, rank_d=rcert,
    )


def _pinned(ident: Identifiability | None, found: Any, anchors: float,
            seed: int) -> Identifiability | None:
    """``ident`` with what the loss pins among the rank-``dim`` search's candidates within
    :data:`~dgp.constants.LOSS_RESOLUTION` nats per anchor of the best
    (:func:`dgp.solver.identifiability_report`: their cosines, spectrum and mean)."""
    if ident is None or not found.candidate_factors:
        return ident
    runs = [X.T for X in found.candidate_factors]
    losses = [v / anchors for v in found.candidate_losses]
    rep = identifiability_report(runs, losses, int(np.argmin(losses)), seed=seed,
                                 resolution=LOSS_RESOLUTION)
    return dataclasses.replace(ident, pinned=rep.pinned, spread=rep.spread,
                               resolution=rep.resolution, identifiable=rep.identifiable,
                               statement=rep.statement)


def _dim_identifiability(prob: RowProblem, G: np.ndarray, dim: int) -> Identifiability | None:
    """The simplex gap in dimension ``dim``: the simplex fits only when ``K <= dim + 1``; above,
    the gap is undefined (``nan``: no configuration of ``R^dim`` is the simplex)."""
    K = G.shape[0]
    if K <= dim + 1:
        gap, log_gap = _excess_gap(prob, equiangular_gram(K, -1.0 / (K - 1)), G)
        return Identifiability(gap, None, None, None, prob.alpha_total, log_gap)
    return Identifiability(math.nan, None, None, None, prob.alpha_total, math.nan)


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < low:
        raise ParameterError(name, f"must be an integer >= {low}, got {value!r}")
    return int(value)


def _composition_losses(prob: RowProblem, G: np.ndarray, comp_index: np.ndarray,
                        prob_of: np.ndarray) -> np.ndarray:
    """Each composition's own loss (rows weighted without the composition's probability)."""
    contrib = prob.alpha * prob.row_losses(G)
    per = np.zeros(prob_of.size)
    np.add.at(per, comp_index, contrib)
    return per / prob_of


def _batched(
    n: np.ndarray, tau: float, eps: float | None, method: str, tol: float, spec: BatchSpec,
    *, samples: int, replicates: int, seed: int, exact_max: int, dim: int | None = None,
    starts: int = 0, progress: bool | None = None,
) -> Prototypes:
    K = n.size
    full = _full_batch(n, tau, eps, "auto" if method == "auto" else "numeric", tol)
    if dim is not None:  # the full-batch reference in the same dimension
        full = _in_dim(full, block_problem(n, block_weights(K, eps), tau=tau), n, dim,
                       starts=starts, seed=seed, tol=tol)
    exchangeable = spec.sampler != "uniform" or bool((n == n[0]).all())
    closed = method == "auto" and eps is None and exchangeable  # the regular simplex
    if not enumerable(n, spec, exact_max) and not closed:
        return _stochastic_batched(n, tau, eps, spec, full, dim=dim, seed=seed,
                                   replicates=replicates, samples=samples, progress=progress)
    check_memory(
        24 * 8.0 * K * K, what=f"a batch prediction for K = {K} classes",
        hint=f"up to about K = {_fits(24 * 8.0)} classes fit; use fewer classes",
    )
    G_full = full.gram
    n_samp = row_budget_samples(K, samples)
    weights = block_weights(K, eps)

    def build(s: int):
        comps = compositions(n, spec, exact_max=exact_max, samples=n_samp, seed=s)
        prob, ci = batch_rows(comps, weights, spec, tau=tau)
        return comps, prob, ci

    comps, prob, ci = build(seed)
    simplex = equiangular_gram(K, -1.0 / (K - 1))
    if closed:
        prob.set_scale(simplex)
        G, cert = simplex, row_certificate(prob, simplex)
        meth, reason, kkt = "closed-form", "regular simplex: the sampler treats classes alike", None
    else:
        res = solve_rows(prob, starts=[G_full, simplex], tol=tol)
        G, cert, reason = res.gram, res.certificate, res.stop_reason
        if not DEFAULT_POLICY.accepts(cert.kkt_residual, tol):
            raise SolverError(
                f"the certified solver did not converge on the batch problem: KKT residual "
                f"{cert.kkt_residual:.2g} ({reason}); please report it"
            )
        meth, kkt = "numeric", cert.kkt_residual
    rcert, lower = None, None
    if dim is not None and cert.rank > dim:
        prob.set_scale(G)
        free_low = prob.loss(G)[0] - cert.gap_bound
        _guard_dim(K, dim, starts, prob.R)
        X, rcert, found = _rank_d_point(prob, dim, [factor(G_full, dim), factor(G, dim)],
                                        starts=starts, seed=seed, tol=tol)
        G = X.T @ X
        prob.set_scale(G)
        cert = row_certificate(prob, G)
        meth, kkt, reason = "numeric", rcert.gradient_norm, found.reason
        loss = prob.loss(G)[0]
        lower = min(max(prob.entropy, free_low, loss - cert.gap_bound), loss)
    elif dim is not None:
        prob.set_scale(G)
        lower = prob.loss(G)[0] - cert.gap_bound
    loss, excess, log_excess = prob.loss(G)
    loss_se = gram_se = None
    reps = 0
    if not comps.exact:
        per = _composition_losses(prob, G, ci, comps.prob)
        mean = float(comps.prob @ per)
        var = float(comps.prob @ (per - mean) ** 2) * comps.drawn / max(comps.drawn - 1, 1)
        loss_se = math.sqrt(var / comps.drawn)
        if meth == "numeric" and replicates > 0 and rcert is None:
            grams = [G]
            for r in range(1, replicates + 1):
                _, prob_r, _ = build(seed + r)
                grams.append(solve_rows(prob_r, starts=[G], tol=tol).gram)
            gram_se = float(np.std(np.array(grams), axis=0, ddof=1).max())
            reps = replicates
        elif meth == "closed-form":
            gram_se = 0.0
    # the lift certifies the collapse of a free-dimension optimum; a rank-d point has none
    lift = lift_certificate(prob, G, n, cert) if rcert is None else None
    ident = _batch_identifiability(prob, comps, ci, simplex, G_full, G)
    if dim is not None and K > dim + 1:  # no simplex in R^dim
        ident = dataclasses.replace(ident, simplex_gap=math.nan, simplex_gap_se=None,
                                    log_simplex_gap=math.nan)
    batch = BatchPrediction(
        spec=spec, exact=comps.exact, compositions=int(comps.counts.shape[0]),
        drawn=comps.drawn, seed=comps.seed, loss_se=loss_se, gram_se=gram_se, replicates=reps,
        full_batch_gram=G_full, shift=float(np.abs(G - G_full).max()),
        positive_pair_probability=tuple(float(p) for p in positive_pair_probability(n, spec)),
    )
    return Prototypes(
        objective="supcon" if eps is None else "soft-supcon",
        sizes=tuple(int(v) for v in n), tau=tau, eps=eps, method=meth, loss=loss,
        entropic_bound=prob.entropy, excess_loss=excess, log_excess_loss=log_excess,
        kkt_residual=kkt, certificate=cert, collapse=lift,
        rank=cert.rank if rcert is None else DEFAULT_POLICY.rank(np.linalg.eigvalsh(G)),
        unique=None if lift is None else lift.unique,
        stop_reason=reason, matrix=G, batch=batch, identifiability=ident,
        dim=dim, lower_bound=lower, rank_d=rcert,
    )


def _stochastic_batched(n: np.ndarray, tau: float, eps: float | None, spec: BatchSpec,
                        full: Prototypes, *, dim: int | None, seed: int, replicates: int,
                        samples: int, progress: bool | None) -> Prototypes:
    r"""The class-level expected-batch prototypes beyond exact enumeration: optimised on fresh
    compositions from the full-batch prototypes and seeded random starts
    (:func:`dgp.solver.quotient_batch_optimum`), reported on others. Every Gram entry carries
    its 95% interval over the ``1 + replicates`` independent runs (``t`` quantile of their
    spread: the prediction is one run, not their mean); free dimension is dimension ``K``."""
    from scipy.stats import t as student_t  # imported on use: scipy.stats is slow to import

    K = n.size
    d = K if dim is None else dim
    X = factor(full.gram, d)
    start = (X / np.linalg.norm(X, axis=0)).T
    res = quotient_batch_optimum(n, block_weights(K, eps), spec, tau=tau, dim=d, seed=seed,
                                 replicates=max(2, replicates), min_batches=samples,
                                 full_batch=start, progress=progress)
    G = res.gram
    grams = np.array([Z @ Z.T for Z in res.runs])
    half = student_t.ppf(0.975, grams.shape[0] - 1) * grams.std(axis=0, ddof=1)
    np.fill_diagonal(half, 0.0)
    lo, hi = np.clip(G - half, -1.0, 1.0), np.clip(G + half, -1.0, 1.0)  # cosines
    b = res.batch
    batch = BatchPrediction(
        spec=spec, exact=False, compositions=composition_count(n, spec), drawn=b.batches,
        seed=b.seed, loss_se=(b.interval[1] - b.expected_loss) / Z95,
        gram_se=float(grams.std(axis=0, ddof=1).max()), replicates=grams.shape[0] - 1,
        full_batch_gram=full.gram, shift=float(np.abs(G - full.gram).max()),
        positive_pair_probability=tuple(float(p) for p in positive_pair_probability(n, spec)),
        estimate=b, gram_interval=(lo, hi),
    )
    anchors = float(spec.batch_size)
    # gaps per anchor: a summed batch loss is over the batch's B anchors
    per_anchor = 1.0 / spec.batch_size if spec.reduction == "sum" else 1.0
    simplex_gap = simplex_se = math.nan
    if K <= d + 1:  # the simplex's expected loss on the same fresh batches, paired
        Xs = factor(equiangular_gram(K, -1.0 / (K - 1)), d)
        with np.errstate(divide="ignore"):
            source = DenseBatchWeights(np.log(block_weights(K, eps)))
        est = evaluate([res.embedding, (Xs / np.linalg.norm(Xs, axis=0)).T], source,
                       ClassBatches(n, spec), spec, tau=tau, seed=seed, stream=9,
                       min_batches=samples)
        diff = (est[1].values - est[0].values) * per_anchor
        simplex_gap = float(diff.mean())
        simplex_se = float(diff.std(ddof=1) / math.sqrt(diff.size))
    log_gap = math.log(simplex_gap) if simplex_gap > 0 else -math.inf
    rep = res.identifiability
    fb_gap = None if b.full_batch_excess is None else b.full_batch_excess * per_anchor
    fb_se = None if b.full_batch_excess_se is None else b.full_batch_excess_se * per_anchor
    ident = Identifiability(simplex_gap, None if math.isnan(simplex_se) else simplex_se,
                            fb_gap, fb_se, anchors,
                            log_gap if not math.isnan(simplex_gap) else math.nan,
                            pinned=rep.pinned, spread=rep.spread, resolution=rep.resolution,
                            identifiable=rep.identifiable, statement=rep.statement)
    entropy = math.nan  # the expected batch entropic bound is not estimated on this path
    return Prototypes(
        objective="supcon" if eps is None else "soft-supcon",
        sizes=tuple(int(v) for v in n), tau=tau, eps=eps, method="stochastic",
        loss=b.expected_loss, entropic_bound=entropy, excess_loss=math.nan,
        log_excess_loss=math.nan, kkt_residual=None, certificate=None, collapse=None,
        rank=DEFAULT_POLICY.rank(np.linalg.eigvalsh(G)), unique=None,
        stop_reason=res.status, matrix=G, batch=batch, identifiability=ident,
        dim=dim, lower_bound=b.lower_bound,
    )


def _batch_identifiability(prob: RowProblem, comps: Any, ci: np.ndarray, simplex: np.ndarray,
                           G_full: np.ndarray, G: np.ndarray) -> Identifiability:
    """Expected batch loss gaps of the simplex and of the full-batch prediction over the batch
    prediction ``G``, per expected anchor, with paired standard errors over the sampled
    compositions (none when the expectation is exact)."""

    def se(G_alt: np.ndarray) -> float | None:
        if comps.exact:
            return None
        d = (_composition_losses(prob, G_alt, ci, comps.prob)
             - _composition_losses(prob, G, ci, comps.prob))
        mean = float(comps.prob @ d)
        var = float(comps.prob @ (d - mean) ** 2) * comps.drawn / max(comps.drawn - 1, 1)
        return math.sqrt(var / comps.drawn) / prob.alpha_total

    gap_s, log_s = _excess_gap(prob, simplex, G)
    gap_f, _ = _excess_gap(prob, G_full, G)
    return Identifiability(gap_s, se(simplex), gap_f, se(G_full), prob.alpha_total, log_s)


def supcon_prototypes(
    sizes: object,
    *,
    tau: float | None = None,
    eps: float | None = None,
    method: str = "auto",
    batch_size: int | None = None,
    sampler: str | None = None,
    samples_per_class: int | None = None,
    reduction: str | None = None,
    anchors_without_positives: str | None = None,
    samples: int = 2000,
    replicates: int = 2,
    seed: int = 0,
    exact_max: int = 20_000,
    tol: float = SOLVER_TOL,
    dim: int | None = None,
    starts: int | None = None,
    progress: bool | None = None,
    nonnegative: bool = False,
    identifiability: bool = True,
) -> Prototypes:
    r"""Optimal class-prototype Gram of SupCon (``eps=None``) or Soft SupCon, for full-batch
    training or for the expected loss of mini-batches.

    Solves :math:`\min_{G \succeq 0,\ \operatorname{diag}G = 1} F(G)` (module docstring).

    Parameters
    ----------
    sizes : dgp.Problem or sequence of int
        A :class:`dgp.Problem` of SupCon or Soft SupCon (with labels or sizes; its ``tau``,
        ``eps`` and sampling fields are used, a keyword may repeat them but not contradict
        them), or the class sizes, each ``>= 2``, at least two classes.
    tau : float
        Temperature ``> 0``.
    eps : float, optional
        Soft SupCon cross-class weight in ``(0, 1)``; ``None`` for SupCon.
    method : {"auto", "numeric", "first-order"}
        ``auto``: the closed form where it is exact (balanced SupCon; realizable Soft SupCon;
        balanced Soft SupCon above :math:`\tau^*`, the regular simplex; a sampler that treats
        classes alike under SupCon), else the certified solver.
        ``numeric``: always the certified solver. ``first-order``: the small-:math:`\tau`
        approximation of :func:`first_order_gram` (SupCon, full batch only), reported with its
        PSD defect and its nearest point of the elliptope, at which loss and excess are taken
        (upper bounds).
    batch_size : int, optional
        Predict for mini-batches of this size (``>= 3``) instead of the full batch.
    sampler : {"uniform", "class-balanced", "m-per-class"}
        How batches are drawn (see :mod:`dgp.solver._batch`).
    samples_per_class : int, optional
        ``m`` of the ``m-per-class`` sampler.
    reduction : {"sum", "mean"}
        How a batch's anchor losses are combined.
    anchors_without_positives : {"drop", "zero"}
        For ``reduction="mean"``: left out of the mean (pytorch-metric-learning, and
        ``dgp.torch`` losses with ``reduction="mean"``) or counted as zeros (SupContrast).
    samples : int
        Beyond ``exact_max`` compositions: the least number of held-out batches of the reported
        expected loss (the prototypes are optimised on fresh compositions by
        :func:`dgp.solver.quotient_batch_optimum` and reported on others; ``method`` is then
        ``"stochastic"``).
    replicates : int
        Beyond ``exact_max``: further independent runs (at least 2, default 2: three runs in
        all), whose spread gives each Gram entry its 95% interval (``batch.gram_interval``).
    seed : int
        Seed of the batch streams and of the random starts of a rank-``dim`` solve.
    exact_max : int
        Largest number of compositions whose expectation is computed exactly (and certified).
    tol : float
        Target ``kkt_residual`` of the certified solver (reported, not assumed).
    dim : int, optional
        Constrain the prototypes to unit vectors of :math:`\mathbb R^{dim}` (the sphere
        :math:`S^{dim-1}`), for any number of classes, ``K > dim + 1`` included. When the free
        optimum's rank fits, it is returned (certified globally optimal). Otherwise the
        rank-``dim`` Burer–Monteiro problem (non-convex) is solved by the one rank-d solver
        (:func:`dgp.solver.solve_rank_d`, the search :func:`dgp.optimum` runs too) from the
        free optimum's top-``dim`` factor and ``starts`` seeded random candidates (seed
        ``seed``), each improved by its own moves; the result
        carries :attr:`Prototypes.rank_d` (Riemannian gradient and Hessian: first- and
        second-order certificates), :attr:`Prototypes.lower_bound` (the free-dimension
        optimum's certified loss, or better) and ``kkt_residual`` is the Riemannian gradient
        norm. ``None``: free dimension.
    starts : int, optional
        Random candidates of a rank-``dim`` solve (``>= 0``; with ``dim`` only), or of the
        non-negative factor search; a larger budget never gives a worse loss. ``None``: the
        one policy's default (:func:`dgp.solver.rank_d_starts`): 8 up to ``K * dim = 400``,
        above it the given start (the free optimum's factor) alone, or one random candidate.
        A full-batch rank-``dim`` solve with ``K * dim`` above 50 000 works on the factor
        (:class:`~dgp.solver.BlockFactor`, ``K = 10^4``, ``dim = 128`` in minutes on one
        core). There the lower bound is the best of the free optimum (when it is a closed form or
        ``K <= 3000``) and the convex dual bound at the point, certified by a Cholesky
        factorisation.
    nonnegative : bool
        Prototypes of a ReLU head: non-negative unit vectors (a completely positive Gram), by
        :func:`~dgp.prototypes.nonnegative_prototypes` (the orthogonal frame, certified, when
        it fits; else seeded descents with a certified lower bound). Its result is a
        :class:`~dgp.prototypes.NonnegativePrototypes`.
    progress : bool, optional
        Progress lines on stderr beyond ``exact_max`` (every 5 s; default: on).
    identifiability : bool
        Also compute :attr:`Prototypes.identifiability` (the simplex's loss gap over the
        prediction: one more evaluation of the loss). ``False`` leaves it ``None`` for a full
        batch in free dimension (a phase map, which reports no gap, asks for that).

    Returns
    -------
    Prototypes

    Raises
    ------
    ValueError, TypeError
        On invalid sizes, ``tau <= 0``, ``eps`` outside ``(0, 1)``, an unknown option,
        ``first-order`` with ``eps`` or a batch size, invalid batch arguments (see
        :func:`dgp.prototypes.check_batch`), ``dim`` not a positive integer or given with
        ``first-order``, or a problem too large for memory or time (the message says what fits,
        how long it would take and what to use instead).
    dgp.errors.SolverError
        If the certified solver does not converge.

    Warns
    -----
    dgp.errors.DgpWarning
        With ``dim``, when the rank-``dim`` point is not first-order critical within the
        iteration budget (large ``K * dim`` at small ``tau``): it is still returned, a feasible
        point whose loss bounds the optimum in ``R^dim`` from above, with
        :attr:`Prototypes.lower_bound` below and ``rank_d.first_order`` false.

    Examples
    --------
    >>> p = supcon_prototypes([5, 5, 5], tau=0.1)
    >>> p.method, float(p.gram[0, 1].round(12))
    ('closed-form', -0.5)
    >>> q = supcon_prototypes([2, 5, 20], tau=0.1)
    >>> q.method, q.kkt_residual < 1e-8, bool(q.gram[0, 1] > q.gram[1, 2])
    ('numeric', True, True)
    >>> b = supcon_prototypes([2, 5, 20], tau=0.1, batch_size=8)
    >>> b.batch.exact, bool(b.batch.shift > 0.01)
    (True, True)
    """
    from dgp.spec import ProblemSpec, problem_fields  # a dgp.Problem, read by its protocol

    problem = sizes if isinstance(sizes, ProblemSpec) else None
    if problem is not None:
        sizes, eps = problem.prototype_input("dgp.supcon_prototypes", eps)
    (tau, batch_size, sampler, samples_per_class, reduction,
     anchors_without_positives) = problem_fields(
        problem, "dgp.supcon_prototypes", tau=tau, batch_size=batch_size, sampler=sampler,
        samples_per_class=samples_per_class, reduction=reduction,
        anchors_without_positives=anchors_without_positives)
    n = check_sizes(sizes)
    tau = check_positive(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    check_choice(method, METHODS, "method")
    tol = check_unit_interval(tol, "tol")
    if starts is not None:
        starts = _check_starts(starts)
    for flag, value in (("nonnegative", nonnegative), ("identifiability", identifiability)):
        if not isinstance(value, bool):
            raise ParameterTypeError(flag, f"must be True or False, got {value!r}")
    if nonnegative:  # ReLU heads (imported here: the module imports this one)
        if method == "first-order":
            raise ParameterError("method", "first-order has no non-negative version; use auto")
        from dgp.prototypes._nonnegative import nonnegative_prototypes

        return nonnegative_prototypes(
            n, tau, eps=eps, dim=dim, batch_size=batch_size, sampler=sampler,
            samples_per_class=samples_per_class, reduction=reduction,
            anchors_without_positives=anchors_without_positives, samples=samples, seed=seed,
            exact_max=exact_max, starts=DIM_DEFAULT_STARTS if starts is None else starts,
        )
    if dim is not None:
        dim = check_dim(dim, "dim")
        if method == "first-order":
            raise ParameterError(
                "method", f"first-order is the free-dimension formula; drop it with dim={dim} "
                "(use method auto or numeric)"
            )
        if starts is None:
            starts = _default_starts(n.size, dim)
        if n.size > dim + 1:  # a rank-dim solve will be needed: refuse it now, before any work
            _guard_dim(n.size, dim, starts, n.size,
                       factor_path=batch_size is None and _on_factor(n.size, dim))
    elif starts is None:
        starts = DIM_DEFAULT_STARTS
    if batch_size is None:
        for name, value, default in (
            ("sampler", sampler, "uniform"), ("samples_per_class", samples_per_class, None),
            ("reduction", reduction, "mean"),
            ("anchors_without_positives", anchors_without_positives, "drop"),
        ):
            if value != default:
                raise ParameterError(name, f"applies to mini-batch predictions only; give "
                                           f"batch_size as well (got {name}={value!r})")
        with single_threaded(), validated_tau(tau):  # failures at extreme tau: the user's
            free = _full_batch(n, tau, eps, method, tol, gap=identifiability or dim is not None,
                               numeric=dim is None or n.size <= NUMERIC_MAX_K)
            if dim is None:
                return free
            if free is None or (_on_factor(n.size, dim) and free.rank > dim):
                return _in_dim_factor(free, n, tau, eps, dim, starts=starts, seed=seed, tol=tol)
            prob = block_problem(n, block_weights(n.size, eps), tau=tau)
            return _in_dim(free, prob, n, dim, starts=starts, seed=seed, tol=tol)
    if method == "first-order":
        raise ParameterError(
            "method", "first-order has no mini-batch version; use method auto or numeric"
        )
    spec = check_batch(
        n, batch_size=batch_size, sampler=sampler, samples_per_class=samples_per_class,
        reduction=reduction, anchors_without_positives=anchors_without_positives,
    )
    if tau < BATCH_TAU_MIN:
        raise ParameterError(
            "tau", f"= {tau:.3g} is below {BATCH_TAU_MIN:g}, the smallest temperature of the "
            "mini-batch prediction (its certified solver's scaled objective overflows below "
            f"about 2.5e-3); use tau >= {BATCH_TAU_MIN:g}, or the full batch (without a batch size)"
        )
    kwargs = {
        "samples": _check_int(samples, "samples", 2),
        "replicates": _check_int(replicates, "replicates", 0),
        "seed": _check_int(seed, "seed", 0),
        "exact_max": _check_int(exact_max, "exact_max", 1),
        "dim": dim,
        "starts": starts,
        "progress": progress,
    }
    with single_threaded():
        return _batched(n, tau, eps, method, tol, spec, **kwargs)


@dataclass(frozen=True)
class BatchTolerance(Record):
    """The batch size from which the full-batch prediction is within a tolerance.

    Attributes
    ----------
    batch_size : int or None
        Smallest batch size ``B`` found with ``max |G_B - G_full| <= tol`` at ``B`` and at every
        larger size tried; ``None`` if even the largest size tried is off.
    tol : float
    table : tuple of (int, float, float or None)
        ``(B, shift, gram_se)`` for every size evaluated, increasing.
    note : str
        How the sizes were searched.
    """

    batch_size: int | None
    tol: float
    table: tuple[tuple[int, float, float | None], ...]
    note: str

    def json_items(self, options):
        yield from (("batch_size", self.batch_size), ("tol", self.tol))
        yield "table", [{"batch_size": b, "shift": s, "gram_se": e} for b, s, e in self.table]
        yield "note", self.note


def batch_size_for_tolerance(
    sizes: object,
    *,
    tau: float,
    tol: float = BATCH_GRAM_TOL,
    eps: float | None = None,
    sampler: str = "uniform",
    samples_per_class: int | None = None,
    reduction: str = "mean",
    anchors_without_positives: str = "drop",
    samples: int = 1000,
    seed: int = 0,
    max_batch_size: int | None = None,
) -> BatchTolerance:
    """The smallest batch size from which the full-batch prediction is within ``tol`` (max
    absolute difference of the prototype Grams).

    Batch sizes are tried on a doubling grid from the smallest valid one up to ``N`` (or
    ``max_batch_size``), then bisected between the last size off and the first within
    ``tol`` — which assumes the shift decreases with ``B`` between grid points (stated in
    ``note``; the table shows every size tried).

    Raises
    ------
    ValueError, TypeError
        As :func:`supcon_prototypes`, and if ``tol`` is not positive.

    >>> r = batch_size_for_tolerance([2, 5, 20], tau=0.5, tol=0.05)
    >>> r.batch_size is not None and r.batch_size <= 27
    True
    """
    n = check_sizes(sizes)
    tol = check_positive(tol, "tol")
    N, K = int(n.sum()), n.size
    m = samples_per_class if sampler == "m-per-class" else None
    low = 2 * int(m) if m else 3
    high = N if max_batch_size is None else check_dim(max_batch_size, "max_batch_size")
    if sampler == "m-per-class":
        high = min(high, int(m) * K)
    if high < low:
        raise ParameterError("max_batch_size", f"must be at least {low}, got {high}")
    step = int(m) if m else 1
    cache: dict[int, tuple[float, float | None]] = {}

    def shift(B: int) -> float:
        if B not in cache:
            p = supcon_prototypes(
                n, tau=tau, eps=eps, batch_size=B, sampler=sampler,
                samples_per_class=samples_per_class, reduction=reduction,
                anchors_without_positives=anchors_without_positives, samples=samples,
                replicates=1, seed=seed,
            )
            cache[B] = (p.batch.shift, p.batch.gram_se)
        return cache[B][0]

    grid = []
    B = low
    while B < high:
        grid.append(B)
        B = max(B * 2 // step * step, B + step)
    grid.append(high)
    shifts = [shift(B) for B in grid]
    ok = [s <= tol for s in shifts]
    if not ok[-1]:
        found = None
    else:
        first = len(ok) - 1
        while first > 0 and ok[first - 1]:
            first -= 1
        found = grid[first]
        if first > 0:
            lo, hi = grid[first - 1], grid[first]
            while hi - lo > step:
                mid = (lo + hi) // 2 // step * step
                if mid <= lo:
                    break
                if shift(mid) <= tol:
                    hi = mid
                else:
                    lo = mid
            found = hi
    table = tuple((b, cache[b][0], cache[b][1]) for b in sorted(cache))
    return BatchTolerance(
        batch_size=found, tol=tol, table=table,
        note="doubling grid then bisection (assumes the shift decreases between grid points); "
        f"sampler {sampler}, reduction {reduction}",
    )
