r"""``optimum``: the true minimiser of a cosine w-InfoNCE, free or in dimension ``d``, full batch
or for mini-batches; ``loss_floor`` and ``block_loss_floor``: the certified loss floor in
dimension ``d``.

With cosine similarity :math:`s_{ij} = G_{ij}/\tau` the loss summed over anchors,

.. math::

    L(G) = \sum_i \Big[-\sum_{j \ne i} p_{ij}\,\frac{G_{ij}}{\tau}
        + \log\sum_{k \ne i} e^{G_{ik}/\tau}\Big],

is convex in :math:`G` (log-sum-exp of linear maps), so
:math:`\min L(G)` s.t. :math:`G \succeq 0`, :math:`\operatorname{diag} G = 1` is a convex
program; a minimiser of rank ``r`` is optimal in every dimension ``d >= r``. Samples with
identical rows and columns of ``W`` (twins) are first merged into classes with multiplicities
(:mod:`dgp.optima._structure`), and the quotient is solved by the certified log-space solver of
:mod:`dgp.prototypes`; the collapse of every class, the rank (strict complementarity) and the
uniqueness of the ``N x N`` minimiser are certified from the solution
(:mod:`dgp.solver._lift`), never from a solver status or a face width. In a fixed dimension
the problem is solved by Burer–Monteiro at rank ``d`` (:mod:`dgp.solver._rank`).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass

import numpy as np

from dgp._linalg import simplex_gram
from dgp.constants import LOSS_RESOLUTION, SOLVER_TOL
from dgp.engine.target import check_weights
from dgp.errors import (
    ParameterError,
    SolverError,
    check_choice,
    check_dim,
    check_positive,
    check_sizes,
    check_unit_interval,
)
from dgp.optima._batch import batch_prediction
from dgp.optima._result import LossFloor, Optimum
from dgp.optima._structure import Quotient, quotient, trivial_quotient
from dgp.resources import check_memory
from dgp.solver import (
    FINITE_MAX_ENTRIES,
    NO_POSITIVE,
    REDUCTIONS,
    BatchIdentifiability,
    BatchOptimum,
    BatchSpec,
    RowProblem,
    batch_optimum,
    batch_rows,
    block_problem,
    check_batch,
    check_time,
    composition_count,
    compositions,
    enumerable,
    factor,
    finite_batch_optimum,
    frank_wolfe_bound,
    identifiability_report,
    lift_certificate,
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

__all__ = ["FREE_MAX_K", "block_loss_floor", "loss_floor", "optimum"]

#: largest number of (twin) classes whose free-dimension optimum is computed (K^3 per iteration)
FREE_MAX_K = 500
#: in a fixed dimension, the free optimum is also computed (as a start and a lower bound) up to
FREE_START_MAX_K = 200
#: the expected-batch optimum beyond enumeration is compared with the full-batch optimum in the
#: same dimension up to this many (twin) classes
STOCHASTIC_FULL_BATCH_MAX_K = 1000
#: sample-level batches in a fixed dimension: the row problem up to this many subsets (its KKT
#: and lift certificates), the finite sum of every batch above (N / B times cheaper)
FINITE_FROM = 500
#: seeded random starts of the finite sum, besides the full-batch optimum
FINITE_RANDOM_STARTS = 4
#: dual residual below which a point counts as globally optimal
GLOBAL_TOL = 1e-8
#: the samplers of :func:`optimum` (``class-balanced`` for problems with class labels)
OPTIMUM_SAMPLERS = ("uniform", "class-balanced")


@dataclass(frozen=True, eq=False)
class _Solved:
    prob: RowProblem
    gram: np.ndarray
    certificate: object
    stop_reason: str
    starts: int
    identifiability: BatchIdentifiability | None = None


def _guard(K: int, N: int, dim: int | None, rows: int, starts: int) -> None:
    if dim is None:
        if K > FREE_MAX_K:
            raise ParameterError(
                "W",
                f"has {K} distinct samples (twin classes), above the {FREE_MAX_K} whose "
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
        check_time(20 * 500 * 8.0 * rows * K * (dim + 4),
                   what=f"the rank-{dim} optimum of {K} classes",
                   instead="use a smaller N, fewer starts or a weighting with class structure",
                   param="W")
        # every candidate of the one rank-d search (dgp.solver.solve_rank_d): its descent,
        # moves, polish and rounds, by the solver's own cost model
        check_time(rank_d_cost(K, dim, starts=starts, given=2, rows=rows),
                   what=f"{starts} Burer-Monteiro starts of the rank-{dim} optimum of {K} classes",
                   instead="ask for fewer starts", param="starts")


def _free(prob: RowProblem, starts: list[np.ndarray], tol: float) -> _Solved:
    res = solve_rows(prob, starts=starts, tol=tol)
    if not DEFAULT_POLICY.accepts(res.certificate.kkt_residual, tol):
        raise SolverError(
            f"the certified solver did not converge: KKT residual "
            f"{res.certificate.kkt_residual:.2g} ({res.stop_reason}); please report it"
        )
    return _Solved(prob, res.gram, res.certificate, res.stop_reason, 0)


def _fixed_dim(
    prob: RowProblem, dim: int, free: _Solved | None, weights: np.ndarray, *,
    starts: int, seed: int, tol: float,
) -> _Solved:
    """The free optimum when its rank fits, else the one rank-d solver
    (:func:`dgp.solver.solve_rank_d`, the policy shared with :func:`dgp.supcon_prototypes`:
    the free optimum's truncation and the weights' spectral start given, ``starts`` random
    candidates); its certificate is the rank-d one."""
    if free is not None and free.certificate.rank <= dim:
        return _Solved(prob, free.gram, free.certificate,
                       f"the free optimum has rank {free.certificate.rank} <= dim = {dim}", 0)
    sol = solve_rank_d(prob, dim, free_gram=None if free is None else free.gram,
                       weights=weights, starts=starts, seed=seed, tol=tol)
    losses = [v / prob.alpha_total for v in sol.candidate_losses]
    ident = identifiability_report([X.T for X in sol.candidate_factors], losses,
                                   int(np.argmin(losses)), seed=seed,
                                   resolution=LOSS_RESOLUTION)
    return _Solved(prob, sol.gram, sol.certificate, sol.reason, sol.starts, ident)


class _NoCollapse(Exception):
    """The collapsed quotient is not optimal for the N x N problem (some class spreads)."""


def _solve(
    q: Quotient, *, tau: float, dim: int | None, spec: BatchSpec | None, samples: int,
    replicates: int, seed: int, exact_max: int, starts: int, tol: float,
):
    """Solve the quotient problem; returns everything an Optimum needs.

    Raises ``_NoCollapse`` when the free optimum of the collapsed quotient fails its lifted
    certificate (then only the N x N problem is right)."""
    n, Wq, K = q.sizes, q.weights, q.K
    N = int(n.sum())
    full = block_problem(n, Wq, tau=tau)
    rows = K
    comps = None
    if spec is not None:
        n_samp = row_budget_samples(K, samples)
        comps = compositions(n, spec, exact_max=exact_max, samples=n_samp, seed=seed)
        rows = int(min(comps.counts.shape[0], n_samp) * min(K, spec.batch_size))
    _guard(K, N, dim, rows, starts)
    equi = [simplex_gram(K), np.eye(K)]
    # the free optimum: the answer in free dimension; in a fixed dimension a start, a lower
    # bound, and (with twins) the proof that the collapsed quotient is the right problem
    need_free = dim is None or K <= FREE_START_MAX_K or (K < N and K <= FREE_MAX_K)

    def certified_free(prob, starts_):
        sol = _free(prob, starts_, tol)
        prob.set_scale(sol.gram)
        if K < N and not lift_certificate(prob, sol.gram, n, sol.certificate).collapsed:
            raise _NoCollapse
        return sol

    free_full = certified_free(full, equi) if need_free else None
    if spec is None:
        prob, free_prob = full, free_full
    else:
        prob, _ = batch_rows(comps, Wq, spec, tau=tau)
        free_prob = certified_free(prob, [free_full.gram, *equi]) if need_free else None
    if dim is None:
        sol = free_prob
        full_sol = free_full
    else:
        sol = _fixed_dim(prob, dim, free_prob, Wq, starts=starts, seed=seed, tol=tol)
        full_sol = (_fixed_dim(full, dim, free_full, Wq, starts=starts, seed=seed, tol=tol)
                    if spec is not None else sol)
    assert sol is not None
    G = sol.gram
    prob.set_scale(G)
    cert = row_certificate(prob, G)
    lift = lift_certificate(prob, G, n, cert)
    loss, excess, log_excess = prob.loss(G)
    if K < N and free_prob is None:
        # without the free optimum the collapse of the N x N optimum is unproven: only the
        # entropic bound is a certified lower bound
        lower = prob.entropy
    else:
        lower = loss - cert.gap_bound
        if dim is not None and not (cert.dual_residual <= GLOBAL_TOL):
            lower = max(lower, frank_wolfe_bound(prob, G))
        if free_prob is not None:
            fl = prob.loss(free_prob.gram)[0] - free_prob.certificate.gap_bound
            lower = max(lower, fl)
    lower = min(max(lower, prob.entropy), loss)
    global_ = cert.dual_residual <= GLOBAL_TOL and lift.collapsed
    batch = None
    if spec is not None:
        batch = batch_prediction(q, spec, comps, G, full_sol.gram)
    return dict(
        prob=prob, gram=G, cert=cert, lift=lift, loss=loss, excess=excess,
        log_excess=log_excess, lower=lower, certified_global=global_,
        stop_reason=sol.stop_reason, starts=sol.starts, free=free_prob, batch=batch,
        identifiability=sol.identifiability,
    )


def _split_single_class(q: Quotient) -> Quotient:
    """All samples twins (K = 1): split off one sample, a valid coarser-than-orbit partition,
    so that the quotient has two points."""
    N = int(q.sizes[0])
    w = float(q.weights[0, 0])
    labels = np.ones(N, dtype=np.int64)
    labels[0] = 0
    W = np.array([[0.0, w], [w, w]])
    return Quotient(labels, np.array([1, N - 1]), W, np.array([0, 1]), q.complete)


def _check_starts(starts: object) -> int | None:
    """``starts`` checked (``None``: the default budget, :func:`_budget`)."""
    return None if starts is None else _check_int(starts, "starts", 0)


def _budget(starts: int | None, K: int, dim: int | None) -> int:
    """``starts``, or the one rank-d solver's default budget for ``K`` points in ``dim``."""
    if starts is not None:
        return starts
    return rank_d_starts(K, 1 if dim is None else dim, given=2)


def _check_int(value: object, name: str, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or int(value) < low:
        raise ParameterError(name, f"must be an integer >= {low}, got {value!r}")
    return int(value)


def _batch_spec(sizes, batch_size, sampler, reduction, anchors_without_positives):
    if batch_size is None:
        for name, value, default in (
            ("sampler", sampler, "uniform"), ("reduction", reduction, "mean"),
            ("anchors_without_positives", anchors_without_positives, "drop"),
        ):
            if value != default:
                raise ParameterError(name, "applies to mini-batch predictions only; give "
                                           f"batch_size as well (got {name}={value!r})")
        return None
    check_choice(sampler, OPTIMUM_SAMPLERS, "sampler")
    check_choice(reduction, REDUCTIONS, "reduction")
    check_choice(anchors_without_positives, NO_POSITIVE, "anchors_without_positives")
    return check_batch(
        sizes, batch_size=batch_size, sampler=sampler, samples_per_class=None,
        reduction=reduction, anchors_without_positives=anchors_without_positives,
    )


def optimum(
    W: object,
    *,
    tau: float | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
    sampler: str | None = None,
    reduction: str | None = None,
    anchors_without_positives: str | None = None,
    samples: int = 2000,
    replicates: int = 0,
    seed: int = 0,
    exact_max: int = 20_000,
    starts: int | None = None,
    tol: float = SOLVER_TOL,
    progress: bool | None = None,
) -> Optimum | BatchOptimum:
    r"""The minimiser of the cosine w-InfoNCE loss of weighting ``W`` (module docstring).

    Parameters
    ----------
    W : dgp.Problem, array_like, shape (N, N), scipy.sparse matrix or networkx graph
        A :class:`dgp.Problem` (cosine; its ``tau`` and sampling fields are used, a keyword
        may repeat them but not contradict them; an objective's weights are built densely), or
        weights, validated by the one validator (:func:`dgp.engine.target.check_weights`,
        diagonal ignored): a dense array, a sparse matrix such as a saved k-NN graph
        (asymmetric, missing entries are zero weights) or a networkx graph (edge attribute
        ``weight``). The program is dense: a sparse input is densified after a memory check.
    tau : float
        Temperature ``> 0``.
    dim : int, optional
        Embedding dimension: the best embedding in :math:`\mathbb R^{dim}` (Burer–Monteiro),
        certified globally optimal when its dual matrix is PSD, else with its gap to the convex
        lower bound. ``None``: free dimension. A ``dim`` above ``N`` is ``N`` (``N`` points
        span at most ``N`` dimensions), and the result says ``dim = N``.
    batch_size : int, optional
        Predict for the expected loss of uniform batches of this size (without replacement):
        exact over every index subset when there are at most ``exact_max`` compositions of the
        twin classes (and their rows fit in memory); beyond, the expected-batch optimum in
        ``dim`` (required) found on fresh batches and reported on others: a
        :class:`~dgp.optima.BatchOptimum` (:mod:`dgp.solver._expected`). A
        :class:`dgp.Problem` built from labels is then read one batch at a time, never as an
        ``N x N`` array.
    sampler : {"uniform", "class-balanced"}
        ``uniform``: batches of ``B`` distinct samples. ``class-balanced`` (a
        :class:`dgp.Problem` with class labels only: SupCon, Soft SupCon): each of the ``B``
        draws picks a class uniformly, then a sample of it, with replacement (PyTorch's
        ``WeightedRandomSampler`` with weights :math:`1/n_c`; a sample drawn twice is its own
        positive, as in the loss on those rows); the classes are collapsed, and the
        expectation is exact over the class compositions (multinomial) up to ``exact_max``,
        else found on fresh batches.
    reduction : {"sum", "mean"}
    anchors_without_positives : {"drop", "zero"}
        As :func:`dgp.supcon_prototypes`.
    samples, replicates, seed, exact_max : int
        Beyond enumeration: ``samples`` is the least number of held-out batches of the
        reported expected loss, ``replicates`` the further seeded runs of the identifiability
        report (at least 1), ``seed`` the seed of every stream; ``exact_max`` the largest
        number of compositions enumerated.
    starts : int, optional
        Random candidates of the rank-``dim`` search (besides the free optimum's truncation
        and a spectral start), each descended and improved by its own chain of moves
        (:func:`dgp.solver.solve_rank_d`, the solver of :func:`dgp.supcon_prototypes` too);
        a larger budget never gives a worse loss. ``None``: the default budget
        (:func:`dgp.solver.rank_d_starts`).
    tol : float
        Target KKT residual of the certified solver.
    progress : bool, optional
        Progress lines on stderr of a stochastic solve (every 5 s; default: on).

    Returns
    -------
    Optimum or BatchOptimum
        ``BatchOptimum`` for the expected-batch optimum beyond exact enumeration (a different
        solver kind: stochastic, with held-out intervals and a confidence bound instead of a
        KKT certificate).

    Raises
    ------
    ValueError, TypeError
        On invalid weights or arguments, or a problem too large for memory or time (the message
        says what fits and what to use instead: ``dim``, class structure, a smaller ``N``).
    dgp.errors.SolverError
        If the certified solver does not converge.

    Examples
    --------
    >>> from dgp.weights import supcon_weights
    >>> opt = optimum(supcon_weights([0, 0, 1, 1]), tau=0.5)
    >>> opt.rank, bool(np.allclose(opt.gram[0, 1], 1, atol=1e-12)), opt.unique
    (1, True, True)
    >>> opt.structure, opt.sizes
    ('quotient', (2, 2))
    """
    from dgp.spec import ProblemSpec, problem_fields  # a dgp.Problem, read by its protocol

    problem = W if isinstance(W, ProblemSpec) else None
    tau, batch_size, sampler, reduction, anchors_without_positives = problem_fields(
        problem, "dgp.optimum", tau=tau, batch_size=batch_size, sampler=sampler,
        reduction=reduction, anchors_without_positives=anchors_without_positives)
    if batch_size is not None and sampler == "class-balanced":
        # class-balanced batches of the samples of each class: the classes of the labels,
        # collapsed (the K x K class problem; never N x N)
        q = _label_quotient(problem)
        spec = _batch_spec(q.sizes, batch_size, sampler, reduction, anchors_without_positives)
        tau = check_positive(tau, "tau")
        dim = None if dim is None else min(check_dim(dim, "dim"), int(q.sizes.sum()))
        kwargs = dict(
            tau=tau, dim=dim, spec=spec, samples=_check_int(samples, "samples", 2),
            replicates=_check_int(replicates, "replicates", 0), seed=_check_int(seed, "seed", 0),
            exact_max=_check_int(exact_max, "exact_max", 1),
            starts=_budget(_check_starts(starts), q.K, dim),
            tol=check_unit_interval(tol, "tol"),
        )
        if not enumerable(q.sizes, spec, kwargs["exact_max"]):
            return _stochastic(q, spec, kwargs, progress)
        with single_threaded(), validated_tau(tau):
            try:
                out = _solve(q, **kwargs)
            except _NoCollapse:
                raise ParameterError(
                    "sampler", "= 'class-balanced' predicts for collapsed classes, and these "
                    "classes do not all collapse at the full-batch optimum (its lifted "
                    "certificate fails); use sampler='uniform'") from None
        return _wrap(q, out, tau=tau, dim=dim, structure="quotient")
    if problem is not None and problem.objective is not None and problem.sizes is None:
        # labels of a sample-level objective: beyond exact enumeration, the batches are read
        # from the labels, never as an N x N array
        N = problem.n_samples
        spec = _batch_spec(np.ones(N, dtype=np.int64), batch_size, sampler, reduction,
                           anchors_without_positives)
        if spec is not None and not enumerable(np.ones(N, dtype=np.int64), spec,
                                               _check_int(exact_max, "exact_max", 1)):
            return _labels_stochastic(problem, spec, tau=check_positive(tau, "tau"), dim=dim,
                                      seed=_check_int(seed, "seed", 0),
                                      replicates=_check_int(replicates, "replicates", 0),
                                      samples=_check_int(samples, "samples", 2),
                                      starts=_check_starts(starts), tol=tol,
                                      exact_max=exact_max, progress=progress)
    if problem is not None:
        W = problem.solver_weights()
    A = check_weights(W)
    tau = check_positive(tau, "tau")
    if dim is not None:
        dim = check_dim(dim, "dim")
    tol = check_unit_interval(tol, "tol")
    starts = _check_starts(starts)
    N = A.shape[0]
    if dim is not None:
        dim = min(dim, N)  # N points span at most N dimensions: a larger dim changes nothing
    check_memory(4 * 8.0 * N * N, what=f"an N = {N} weighting", hint="use a smaller N")
    q = quotient(A)
    spec = _batch_spec(q.sizes, batch_size, sampler, reduction, anchors_without_positives)
    kwargs = dict(
        tau=tau, dim=dim, spec=spec, samples=_check_int(samples, "samples", 2),
        replicates=_check_int(replicates, "replicates", 0), seed=_check_int(seed, "seed", 0),
        exact_max=_check_int(exact_max, "exact_max", 1), starts=_budget(starts, q.K, dim),
        tol=tol,
    )
    if spec is not None and not enumerable(q.sizes, spec, kwargs["exact_max"]):
        return _stochastic(q, spec, kwargs, progress)
    if spec is not None and _finite_fits(q, spec, dim, kwargs["exact_max"]):
        return _finite(q, spec, kwargs)
    if q.K == 1:
        q = _split_single_class(q)
    structure = "quotient" if q.K < N else "dense"
    with single_threaded(), validated_tau(tau):  # failures at extreme tau are the user's
        try:
            out = _solve(q, **kwargs)
        except _NoCollapse:
            # a twin class that does not collapse: solve the N x N problem itself
            q, structure = trivial_quotient(A), "dense"
            out = _solve(q, **kwargs)
    return _wrap(q, out, tau=tau, dim=dim, structure=structure)


def _stochastic(q: Quotient, spec: BatchSpec, kwargs: dict,
                progress: bool | None) -> BatchOptimum:
    """The expected-batch optimum beyond exact enumeration: optimised on fresh batches, reported
    on others (:mod:`dgp.solver._expected`), beside the full-batch optimum in the same
    dimension (up to :data:`STOCHASTIC_FULL_BATCH_MAX_K` points)."""
    dim, tau = kwargs["dim"], kwargs["tau"]
    if dim is None:
        raise ParameterError(
            "dim", f"is needed for a mini-batch prediction of {composition_count(q.sizes, spec)}"
            f" compositions (above exact_max = {kwargs['exact_max']}, or above the memory of "
            "exact enumeration): give the embedding dimension you train in"
        )
    full = (_full_batch_embedding(q, kwargs) if q.K <= STOCHASTIC_FULL_BATCH_MAX_K
            else None)
    res = quotient_batch_optimum(
        q.sizes, q.weights, spec, tau=tau, dim=dim, seed=kwargs["seed"],
        replicates=max(1, kwargs["replicates"]), min_batches=kwargs["samples"],
        full_batch=full, progress=progress,
    )
    return res if q.K == int(q.sizes.sum()) else dataclasses.replace(res, labels=q.labels)


def _finite_fits(q: Quotient, spec: BatchSpec, dim: int | None, exact_max: int) -> bool:
    """Whether the expectation over every batch is taken by the finite sum (sample-level
    batches, no twins, in a fixed dimension, more than :data:`FINITE_FROM` subsets and within
    ``exact_max`` and the memory of the sum)."""
    if dim is None or spec.sampler != "uniform" or (q.sizes != 1).any():
        return False
    C = math.comb(q.K, spec.batch_size)
    return FINITE_FROM < C <= exact_max and C * spec.batch_size**2 <= FINITE_MAX_ENTRIES


def _finite(q: Quotient, spec: BatchSpec, kwargs: dict) -> BatchOptimum:
    """The exact expected-batch optimum over every subset (:mod:`dgp.solver._finite`), from
    the full-batch optimum and seeded random starts, with its certificates."""
    full = (_full_batch_embedding(q, kwargs) if q.K <= STOCHASTIC_FULL_BATCH_MAX_K
            else None)
    return finite_batch_optimum(q.weights, spec, tau=kwargs["tau"], dim=kwargs["dim"],
                                seed=kwargs["seed"], full_batch=full,
                                starts=min(kwargs["starts"], FINITE_RANDOM_STARTS))


def _labels_stochastic(problem, spec: BatchSpec, *, tau: float, dim: object, seed: int,
                       replicates: int, samples: int, starts: int | None, tol: float,
                       exact_max: int, progress: bool | None) -> BatchOptimum:
    """:func:`_stochastic` for a problem built from labels: the batches read from the labels;
    the full-batch optimum (dense) only up to :data:`STOCHASTIC_FULL_BATCH_MAX_K` samples."""
    N = problem.n_samples
    if dim is None:
        raise ParameterError(
            "dim", f"is needed for a mini-batch prediction of {N} samples in batches of "
            f"{spec.batch_size} (beyond exact enumeration): give the embedding dimension you "
            "train in")
    dim = min(check_dim(dim, "dim"), N)
    full = None
    if N <= STOCHASTIC_FULL_BATCH_MAX_K:
        q = quotient(check_weights(problem.solver_weights()))
        full = _full_batch_embedding(q, dict(tau=tau, dim=dim, spec=None, samples=samples,
                                             replicates=0, seed=seed, exact_max=exact_max,
                                             starts=_budget(starts, q.K, dim),
                                             tol=check_unit_interval(tol, "tol")))
        full = full[q.labels]
    return batch_optimum(problem.batch_source(), spec, tau=tau, dim=dim, seed=seed,
                         full_batch=full, replicates=max(1, replicates), min_batches=samples,
                         progress=progress)


def _label_quotient(problem) -> Quotient:
    """The classes of a problem with class labels as a quotient (class-level weights: 1 within
    a class, the objective's cross weight across), for class-balanced batches.

    Raises
    ------
    ParameterError
        Naming ``sampler``: without class labels (a weight matrix, continuous labels) or with
        fewer than two classes, there are no classes to balance.
    """
    record = None if problem is None else problem.record
    if record is None or record.labels != "class":
        what = ("a weight matrix" if record is None else
                f"objective {record.name!r}, whose labels are continuous")
        raise ParameterError(
            "sampler", f"= 'class-balanced' needs class labels, and the problem is {what}: give "
            "dgp.Problem(objective='supcon' or 'soft-supcon', labels=...), or "
            "sampler='uniform'")
    lab = problem.labels_for_solver()
    sizes = np.asarray(lab.sizes, dtype=np.int64)
    if sizes.size < 2:
        raise ParameterError("sampler", "= 'class-balanced' needs at least two classes; the "
                             f"labels have {sizes.size}")
    within, cross = record.block_log_weights(problem.objective_params(), int(sizes.size))
    Wq = np.full((sizes.size, sizes.size), math.exp(cross) if np.isfinite(cross) else 0.0)
    np.fill_diagonal(Wq, np.exp(within))
    codes = np.asarray(lab.values, dtype=np.int64)
    first = np.unique(codes, return_index=True)[1]
    return Quotient(codes, sizes, Wq, first, True)


def _full_batch_embedding(q: Quotient, kwargs: dict) -> np.ndarray:
    """Unit rows (one per class of ``q``) of the full-batch optimum in ``kwargs["dim"]`` (the
    one rank-d solver, its default budget)."""
    with single_threaded(), validated_tau(kwargs["tau"]):
        out = _solve(q if q.K > 1 else _split_single_class(q),
                     **{**kwargs, "spec": None})
    X = factor(out["gram"], kwargs["dim"])
    return X.T / np.linalg.norm(X.T, axis=1, keepdims=True)


def _wrap(q: Quotient, out: dict, *, tau: float, dim: int | None, structure: str) -> Optimum:
    cert, lift = out["cert"], out["lift"]
    if dim is None:
        unique, why = lift.unique, lift.reason
    elif (out["certified_global"] and out["free"] is not None
          and out["free"].certificate.rank <= dim):
        unique, why = lift.unique, lift.reason + " (the free optimum fits in this dimension)"
    else:
        unique, why = None, "not decided in a fixed dimension below the free optimum's rank"
    loss = out["loss"]
    return Optimum(
        n=int(q.sizes.sum()), tau=tau, dim=dim, labels=q.labels,
        sizes=tuple(int(v) for v in q.sizes), quotient_gram=out["gram"], loss=loss,
        entropic_bound=out["prob"].entropy, excess_loss=out["excess"],
        log_excess_loss=out["log_excess"], lower_bound=out["lower"],
        duality_gap=max(0.0, loss - out["lower"]), dual_min_eig=cert.min_eig_dual,
        certified_global=out["certified_global"], rank=cert.rank, rank_tol=cert.rank_tol,
        unique=unique, uniqueness=why, certificate=cert, collapse=lift, structure=structure,
        stop_reason=out["stop_reason"], starts=out["starts"], batch=out["batch"],
        free_rank=None if out["free"] is None else out["free"].certificate.rank,
        identifiability=(out["identifiability"] if out["identifiability"] is not None
                         else _unique_report(unique, why) if dim is not None or
                         out["batch"] is not None else None),
    )


def _unique_report(unique: bool | None, why: str) -> BatchIdentifiability:
    """What the loss pins when the optimum is the convex one: everything when it is unique up
    to rotation (certified), not the arrangement on a face of minimisers."""
    pinned = {"pairwise cosines": bool(unique), "spectrum": bool(unique),
              "mean_norm": bool(unique)}
    statement = ("yes: the optimum is unique up to rotation (" + why + ")" if unique else
                 "not identifiable: " + why if unique is False else "undecided: " + why)
    return BatchIdentifiability(pinned=pinned, spread={}, resolution=0.0,
                                identifiable=bool(unique), solutions=1, statement=statement)


def _floor(opt: Optimum) -> LossFloor:
    lower = max(0.0, opt.lower_bound - opt.entropic_bound)
    upper = max(opt.excess_loss, lower)
    return LossFloor(
        lower=lower, upper=upper, gap=upper - lower, certified=opt.certified_global,
        dim=int(opt.dim), rank=opt.rank, free_rank=opt.free_rank,
        entropic_bound=opt.entropic_bound, log_upper=opt.log_excess_loss,
    )


def loss_floor(W: object, *, tau: float, dim: int, starts: int | None = None,
               seed: int = 0) -> LossFloor:
    r"""The loss floor of a cosine weighting in dimension ``dim``: the excess of the best
    embedding in :math:`\mathbb R^{dim}` over the entropic bound, as a certified interval
    ``[lower, upper]`` (nats, summed over anchors).

    ``upper`` is attained by an embedding found by Burer–Monteiro (so the floor is at most
    ``upper``); ``lower`` is a convex lower bound (the floor is at least ``lower``); they agree,
    ``certified=True``, when the embedding's dual matrix is PSD.

    Parameters
    ----------
    W : array_like, shape (N, N)
    tau : float
    dim : int
    starts : int, optional
        Random candidates of the rank-``dim`` search, as :func:`optimum` (``None``: its
        default budget).
    seed : int

    Returns
    -------
    LossFloor

    Raises
    ------
    ValueError, TypeError
        As :func:`optimum`.

    Examples
    --------
    >>> from dgp.weights import supcon_weights
    >>> f = loss_floor(supcon_weights([0, 0, 1, 1, 2, 2]), tau=0.5, dim=2)
    >>> f.certified, f.rank, bool(f.lower <= f.upper)
    (True, 2, True)
    """
    return _floor(optimum(W, tau=tau, dim=check_dim(dim, "dim"), starts=starts, seed=seed))


def block_loss_floor(
    sizes: object,
    *,
    within: object,
    cross: object,
    tau: float,
    dim: int,
    starts: int | None = None,
    seed: int = 0,
) -> LossFloor:
    r"""The loss floor in dimension ``dim`` of a class-block weighting, without any ``N x N``
    matrix: :math:`w_{ij}` = ``within[c]`` for two samples of class ``c``, ``cross[c, d]`` for a
    sample of class ``c`` and one of class ``d``.

    SupCon is ``within=1, cross=0``; Soft SupCon ``within=1, cross=eps``. Labels give the sizes
    as ``np.unique(labels, return_counts=True)[1]``. Solved on the ``K x K`` quotient with the
    classes collapsed; the interval is certified as in :func:`loss_floor` (``upper``: the best
    collapsed embedding in :math:`\mathbb R^{dim}`, an upper bound on the floor whether or not
    collapse is optimal in that dimension; ``lower``: the convex lower bound, valid for every
    embedding).

    Parameters
    ----------
    sizes : sequence of int
        Class sizes (each ``>= 2``, at least two classes).
    within : float or array_like, shape (K,)
        Within-class weights ``> 0``.
    cross : float or array_like, shape (K, K)
        Cross-class weights ``>= 0`` (the diagonal is ignored).
    tau : float
    dim : int
    starts : int, optional
        Random candidates of the rank-``dim`` search, as :func:`optimum` (``None``: its
        default budget).
    seed : int

    Returns
    -------
    LossFloor

    Raises
    ------
    ValueError, TypeError
        On invalid sizes or weights, or a problem too large for memory or time.

    Examples
    --------
    >>> f = block_loss_floor([5, 3, 2], within=1.0, cross=0.0, tau=0.1, dim=1)
    >>> f.certified, f.free_rank, bool(f.lower > 0)
    (False, 2, True)
    >>> block_loss_floor([5, 3, 2], within=1.0, cross=0.0, tau=0.1, dim=2).certified
    True
    """
    n = check_sizes(sizes)
    K = n.size
    tau = check_positive(tau, "tau")
    dim = check_dim(dim, "dim")
    w_in = np.broadcast_to(np.asarray(within, dtype=float), (K,)).copy()
    w_x = np.broadcast_to(np.asarray(cross, dtype=float), (K, K)).copy()
    if not (np.isfinite(w_in).all() and (w_in > 0).all()):
        raise ParameterError("within", "must be finite weights > 0, one or one per class")
    np.fill_diagonal(w_x, 0.0)
    if not (np.isfinite(w_x).all() and (w_x >= 0).all()):
        raise ParameterError("cross", "must be finite weights >= 0, one or K x K")
    Wq = w_x + np.diag(w_in)
    labels = np.repeat(np.arange(K), n)
    q = Quotient(labels, n, Wq, np.concatenate([[0], np.cumsum(n)[:-1]]), True)
    try:
        with single_threaded():
            out = _solve(q, tau=tau, dim=dim, spec=None, samples=2, replicates=0, seed=seed,
                         exact_max=1, starts=_budget(_check_starts(starts), K, dim),
                         tol=SOLVER_TOL)
    except _NoCollapse:
        raise ParameterError(
            "within",
            "and cross give a weighting whose classes do not all collapse at the optimum (its "
            "lifted certificate fails); its floor needs the N x N problem: call loss_floor with "
            "the N x N weights",
        ) from None
    return _floor(_wrap(q, out, tau=tau, dim=dim, structure="quotient"))

