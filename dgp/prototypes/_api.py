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

import math
from typing import Any

import numpy as np

from dgp.constants import (
    BATCH_REPLICATES,
    BATCH_TAU_MIN,
    EQUIANGULAR_ATOL,
    EXACT_MAX_DEFAULT,
    SOLVER_TOL,
)
from dgp.display import stderr_progress
from dgp.errors import (
    ParameterError,
    SolverError,
    check_choice,
    check_class_sizes,
    check_dim,
    check_flag,
    check_int,
    check_square,
    check_temperature,
    check_unit_interval,
)

# DIM_FACTOR_SIZE is read at each call (a test may lower it on dgp.prototypes._dim)
from dgp.prototypes import _dim as dim_rules
from dgp.prototypes._batched import BatchTolerance, batch_prototypes, batch_size_for_tolerance
from dgp.prototypes._blocks import (
    NUMERIC_MAX_K,
    PROJECT_MAX_K,
    block_weights,
    excess_gap,
    fits,
)
from dgp.prototypes._closed_forms import (
    METHODS,
    balanced_soft_supcon_simplex_loss,
    balanced_supcon_loss,
    class_entropic_bound,
    equiangular_gram,
    first_order_gram,
)
from dgp.prototypes._dim import (
    DIM_DEFAULT_STARTS,
    default_starts,
    guard_dim,
    in_dim,
    in_dim_factor,
    on_factor,
)
from dgp.prototypes._equiangular_kkt import equiangular_certificate
from dgp.prototypes._first_order import first_order_prototypes
from dgp.prototypes._ident import Identifiability
from dgp.prototypes._result import Prototypes
from dgp.resources import check_memory
from dgp.solver import (
    KKTCertificate,
    RowProblem,
    block_problem,
    check_batch,
    check_full_batch,
    check_time,
    face_uniqueness,
    factor,
    lift_certificate,
    row_certificate,
    single_threaded,
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
    """The validated block problem of ``sizes`` (a Soft SupCon singleton included) and the
    validated ``gram``, scaled at it."""
    n = check_class_sizes(sizes, positives_across=eps is not None, batch=False)
    tau = check_temperature(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    G = check_square(gram, "gram", size=n.size)
    G = 0.5 * (G + G.T)
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


_FIRST_ORDER = "the first-order approximation (method first-order, O(tau^2) error)"


def _guard_numeric(K: int) -> None:
    most = fits(24 * 8.0, NUMERIC_MAX_K)
    instead = f"up to about K = {most} classes fit; use {_FIRST_ORDER} or fewer classes"
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
    gap, log_gap = excess_gap(prob, equiangular_gram(K, -1.0 / (K - 1)), G)
    return Identifiability(gap, None, None, None, N, log_gap)


def _full_batch(n: np.ndarray, tau: float, eps: float | None, method: str, tol: float,
                gap: bool = True, numeric: bool = True, classes: tuple[Any, ...] | None = None):
    """The full-batch prototypes in free dimension: a closed form where one is exact, else the
    certified solver (``numeric=False``: ``None`` instead, for a caller that can do without);
    ``classes``: the problem's class labels, which the result names."""
    K = n.size
    objective = "supcon" if eps is None else "soft-supcon"
    common: dict[str, Any] = {
        "objective": objective,
        "sizes": tuple(int(v) for v in n),
        "tau": tau,
        "eps": eps,
        "classes": classes,
    }
    bound = class_entropic_bound(n, eps)
    simplex = -1.0 / (K - 1)
    # singletons: of the closed forms only the equiangular Gram that attains the entropic
    # bound is taken (certified by kkt_certificate; equiangular_certificate assumes n >= 2)
    single = bool((n < 2).any())
    if method == "auto" and eps is None and not single and (n == n[0]).all():
        loss, excess, log_excess = balanced_supcon_loss(int(n[0]), K, tau)
        return Prototypes(
            **common, method="closed-form", loss=loss, entropic_bound=bound,
            excess_loss=excess, log_excess_loss=log_excess, kkt_residual=None,
            certificate=equiangular_certificate(n, tau, eps, simplex), collapse=None,
            rank=K - 1, unique=True,
            stop_reason="regular simplex (balanced SupCon)", equiangular=simplex,
            search_identifiability=_full_identifiability(n, tau, eps, None, gap),
        )
    if method == "auto" and eps is None and not single and K == 2:
        # one free cosine, and the loss increases with it: antipodal at every tau and any sizes
        G = equiangular_gram(2, -1.0)
        prob = block_problem(n, block_weights(2, None), tau=tau)
        prob.set_scale(G)
        loss, excess, log_excess = prob.loss(G)
        return Prototypes(
            **common, method="closed-form", loss=loss, entropic_bound=bound,
            excess_loss=excess, log_excess_loss=log_excess, kkt_residual=None,
            certificate=equiangular_certificate(n, tau, eps, -1.0), collapse=None, rank=1,
            unique=face_uniqueness(G, n, rank=1)[0],
            stop_reason="antipodal (SupCon with two classes)", equiangular=-1.0,
            search_identifiability=_full_identifiability(n, tau, eps, None, gap),
        )
    if method == "auto" and eps is not None:
        rho = 1.0 + tau * math.log(eps)
        if rho < simplex - EQUIANGULAR_ATOL and not single and (n == n[0]).all():
            loss = balanced_soft_supcon_simplex_loss(int(n[0]), K, tau, eps)
            excess = max(0.0, loss - bound)
            return Prototypes(
                **common, method="closed-form", loss=loss, entropic_bound=bound,
                excess_loss=excess, log_excess_loss=math.log(excess) if excess > 0 else -math.inf,
                kkt_residual=None, certificate=equiangular_certificate(n, tau, eps, simplex),
                collapse=None, rank=K - 1, unique=True,
                stop_reason="regular simplex (balanced Soft SupCon above tau*)",
                equiangular=simplex,
                search_identifiability=_full_identifiability(n, tau, eps, None, gap),
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
                certificate=(equiangular_certificate(n, tau, eps, max(rho, simplex))
                             if not single else None if K > NUMERIC_MAX_K else kkt_certificate(
                                 equiangular_gram(K, max(rho, simplex)), n, tau=tau, eps=eps)),
                collapse=None, rank=K - 1 if at_star else K, unique=unique,
                stop_reason="equiangular rho = 1 + tau log eps, attains the entropic bound",
                equiangular=max(rho, simplex),
                search_identifiability=_full_identifiability(
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
        return first_order_prototypes(n, tau, common, bound)
    if not numeric:
        return None
    _guard_numeric(K)
    prob = block_problem(n, block_weights(K, eps), tau=tau)
    starts = [equiangular_gram(K, simplex)]
    if eps is None and not single:  # the small-tau formula's start (no singleton)
        F = factor(first_order_gram(n, tau=tau), K)
        starts.append(F.T @ F)
    res = _solve_block(prob, starts, tol)
    G, cert = res.gram, res.certificate
    loss, excess, log_excess = prob.loss(G)
    lift = lift_certificate(prob, G, n, cert)
    ident = None
    if gap:
        loss_gap, log_gap = excess_gap(prob, equiangular_gram(K, simplex), G)
        ident = Identifiability(loss_gap, None, None, None, float(n.sum()), log_gap)
    return Prototypes(
        **common, method="numeric", loss=loss, entropic_bound=bound, excess_loss=excess,
        log_excess_loss=log_excess, kkt_residual=cert.kkt_residual, certificate=cert,
        collapse=lift, rank=cert.rank, unique=lift.unique, stop_reason=res.stop_reason,
        matrix=G, search_identifiability=ident,
    )


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
    replicates: int = BATCH_REPLICATES,
    seed: int = 0,
    exact_max: int = EXACT_MAX_DEFAULT,
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
        them; from labels, the result names its classes, :attr:`Prototypes.classes`), or the
        class sizes, each ``>= 2``, at least two classes.
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
        Beyond ``exact_max``: further independent runs (at least 1; default
        :data:`dgp.constants.BATCH_REPLICATES`, 2: three runs in all), whose spread gives each
        Gram entry its 95% interval (``batch.gram_interval``; a Student quantile with one degree
        of freedom fewer than the runs that ended near the kept prototypes: 12.7 standard errors
        with two, 4.3 with three; runs that ended beyond the loss resolution above them are left
        out and said, ``batch.runs_left_out``). The runs and
        the Gram are :func:`dgp.optimum`'s for the same class problem at any value; the
        reported loss can differ within its interval (the simplex, evaluated here on the same
        reporting batches, can draw more of them). Where a closed form applies on sampled
        compositions (``method="closed-form"``) no runs are made and it is not used.
    seed : int
        Seed of the batch streams and of the random starts of a rank-``dim`` solve.
    exact_max : int
        Largest number of compositions whose expectation is computed exactly (and certified);
        :data:`~dgp.constants.EXACT_MAX_DEFAULT` (100 000) by default.
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
        Progress lines on stderr beyond ``exact_max`` (every 5 s), and a line with the time
        estimate before a rank-``dim`` solve estimated at a minute or more (default: on).
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
    classes = _class_labels(problem)
    (tau, batch_size, sampler, samples_per_class, reduction,
     anchors_without_positives) = problem_fields(
        problem, "dgp.supcon_prototypes", tau=tau, batch_size=batch_size, sampler=sampler,
        samples_per_class=samples_per_class, reduction=reduction,
        anchors_without_positives=anchors_without_positives)
    # a batch problem takes singleton classes: anchors without positives in every batch
    n = check_class_sizes(sizes, positives_across=eps is not None, batch=batch_size is not None)
    tau = check_temperature(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    check_choice(method, METHODS, "method")
    tol = check_unit_interval(tol, "tol")
    starts = None if starts is None else check_int(starts, "starts", minimum=0)
    # every setting checked once, here, whichever path runs
    seed, samples = check_int(seed, "seed", minimum=0), check_int(samples, "samples", minimum=2)
    replicates = check_int(replicates, "replicates", minimum=1)
    exact_max = check_int(exact_max, "exact_max", minimum=1)
    nonnegative = check_flag(nonnegative, "nonnegative")
    identifiability = check_flag(identifiability, "identifiability")
    progress = None if progress is None else check_flag(progress, "progress")
    if nonnegative:  # ReLU heads (imported here: the module imports this one)
        if method == "first-order":
            raise ParameterError("method", "first-order has no non-negative version; use auto")
        from dgp.prototypes._nonnegative import nonnegative_prototypes

        return nonnegative_prototypes(
            n, tau, eps=eps, dim=dim, batch_size=batch_size, sampler=sampler,
            samples_per_class=samples_per_class, reduction=reduction,
            anchors_without_positives=anchors_without_positives, samples=samples,
            replicates=replicates, seed=seed,
            exact_max=exact_max, starts=DIM_DEFAULT_STARTS if starts is None else starts,
            progress=progress, classes=classes,
        )
    if dim is not None:
        dim = check_dim(dim, "dim")
        if method == "first-order":
            raise ParameterError(
                "method", f"first-order is the free-dimension formula; drop it with dim={dim} "
                "(use method auto or numeric)"
            )
        if starts is None:
            starts = default_starts(n.size, dim, dim_rules.DIM_FACTOR_SIZE)
        if n.size > dim + 1:  # a rank-dim solve will be needed: refuse it now, before any work
            on = on_factor(n.size, dim, dim_rules.DIM_FACTOR_SIZE)
            guard_dim(n.size, dim, starts, n.size, factor_path=batch_size is None and on,
                      progress=progress is None or bool(progress))
    elif starts is None:
        starts = DIM_DEFAULT_STARTS
    if batch_size is None:
        check_full_batch(sampler=sampler, samples_per_class=samples_per_class,
                         reduction=reduction, anchors_without_positives=anchors_without_positives)
        with single_threaded(), validated_tau(tau):  # failures at extreme tau: the user's
            return _full_in_dim(n, tau, eps, method, tol, dim, starts=starts, seed=seed,
                                gap=identifiability or dim is not None, progress=progress,
                                classes=classes)
    if method == "first-order":
        raise ParameterError("method", "first-order has no mini-batch version; use auto")
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
    kwargs = {"samples": samples, "replicates": replicates, "seed": seed,
              "exact_max": exact_max, "dim": dim, "starts": starts, "progress": progress}
    with single_threaded():
        # the full-batch reference, in the same dimension
        full = _full_in_dim(n, tau, eps, "auto" if method == "auto" else "numeric", tol, dim,
                            starts=starts, seed=seed, gap=True, factor_path=False,
                            progress=progress, classes=classes)
        return batch_prototypes(n, tau, eps, method, tol, spec, full, **kwargs)


def _class_labels(problem: Any) -> tuple[Any, ...] | None:
    """The class labels (plain values, class order) of a dgp.Problem built from labels."""
    lab = getattr(problem, "labels_record", None)  # None for sizes (or no problem)
    return None if lab is None else tuple(c.item() if isinstance(c, np.generic) else c
                                          for c in lab.classes)


def _full_in_dim(n: np.ndarray, tau: float, eps: float | None, method: str, tol: float,
                 dim: int | None, *, starts: int, seed: int, gap: bool,
                 factor_path: bool = True, progress: bool | None = None,
                 classes: tuple[Any, ...] | None = None) -> Prototypes:
    """The full-batch prototypes, in free dimension or on the sphere of ``R^dim``
    (:mod:`dgp.prototypes._dim`: the free optimum when its rank fits, else the rank-``dim``
    solver's point, on the factor for many classes unless ``factor_path`` is false: the batch
    paths' reference and start is the row problem's point, certified in the free solve). The
    rank-``dim`` search reports on stderr (a line at most every few seconds) unless
    ``progress`` is false; ``classes``: the problem's class labels, which the result names."""
    free = _full_batch(n, tau, eps, method, tol, gap=gap,
                       numeric=dim is None or not factor_path or n.size <= NUMERIC_MAX_K,
                       classes=classes)
    if dim is None:
        return free
    report = (stderr_progress(f"the rank-{dim} prototypes of K = {n.size} classes")
              if progress is None or progress else None)
    if free is None or (factor_path and on_factor(n.size, dim, dim_rules.DIM_FACTOR_SIZE)
                        and free.rank > dim):
        return in_dim_factor(free, n, tau, eps, dim, starts=starts, seed=seed, tol=tol,
                             progress=report, classes=classes)
    prob = block_problem(n, block_weights(n.size, eps), tau=tau)
    return in_dim(free, prob, n, dim, starts=starts, seed=seed, tol=tol, progress=report)

