r"""``optimum``: the true minimiser of a cosine w-InfoNCE, free or in dimension ``d``, full batch
or for mini-batches (the paths beyond the row problem of exact compositions are
:mod:`dgp.optima._batch_paths`; the loss floors built on this optimum,
:mod:`dgp.optima._floors`).

With cosine similarity :math:`s_{ij} = G_{ij}/\tau` the loss summed over anchors,

.. math::

    L(G) = \sum_i \Big[-\sum_{j \ne i} p_{ij}\,\frac{G_{ij}}{\tau}
        + \log\sum_{k \ne i} e^{G_{ik}/\tau}\Big],

is convex in :math:`G` (log-sum-exp of linear maps), so
:math:`\min L(G)` s.t. :math:`G \succeq 0`, :math:`\operatorname{diag} G = 1` is a convex
program; a minimiser of rank ``r`` is optimal in every dimension ``d >= r``. Samples with
identical rows and columns of ``W`` (twins) are first merged into classes with multiplicities
(:mod:`dgp.optima._structure`) by the reductions that :mod:`dgp.optima._reductions` chooses in
one place (each owns its inverse: the result is lifted back once), and the quotient is
solved by the certified log-space solver of :mod:`dgp.prototypes`; the collapse of every
class, the rank (strict complementarity) and the uniqueness of the ``N x N`` minimiser are
certified from the solution (:mod:`dgp.solver._lift`), never from a solver status or a face
width. In a fixed dimension the problem is solved by Burer–Monteiro at rank ``d``
(:mod:`dgp.solver._rank`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from dgp._linalg import simplex_gram
from dgp.constants import BATCH_REPLICATES, EXACT_MAX_DEFAULT, LOSS_RESOLUTION, SOLVER_TOL
from dgp.display import stderr_progress
from dgp.engine.target import check_weights
from dgp.errors import (
    ParameterError,
    SolverError,
    check_dim,
    check_flag,
    check_int,
    check_positive,
    check_unit_interval,
)
from dgp.geometry import embedding_from_gram
from dgp.optima._batch import batch_prediction
from dgp.optima._batch_notices import say_exact_skipped, say_rows_estimate
from dgp.optima._batch_paths import (
    BATCH_PATHS,
    batch_route,
    batch_spec,
    check_starts,
    finite_seconds,
    label_quotient,
    start_budget,
    streamed_path,
)
from dgp.optima._budget import check_solve_budget
from dgp.optima._reductions import (
    Chain,
    PointSolution,
    choose_reductions,
    samples_problem,
    without_twins,
)
from dgp.optima._result import Optimum
from dgp.optima._structure import Quotient, split_single_class
from dgp.resources import check_memory
from dgp.solver import (
    BatchIdentifiability,
    BatchOptimum,
    BatchSpec,
    RankDCertificate,
    RowProblem,
    batch_rows,
    block_problem,
    compositions,
    factor,
    frank_wolfe_bound,
    identifiability_report,
    lift_certificate,
    row_budget_samples,
    row_certificate,
    rows_rank_d_seconds,
    single_threaded,
    solve_rank_d,
    solve_rows,
    validated_tau,
)
from dgp.solver._identifiability import DeferredProbe, uniqueness_report
from dgp.solver._sublevel_probe import BATCH_NOT_PROBED, factor_loss, probe_refusal
from dgp.tolerance import DEFAULT_POLICY

__all__ = ["FREE_MAX_K", "NoCollapse", "collapsed_optimum", "optimum"]

#: largest number of (twin) classes whose free-dimension optimum is computed (K^3 per iteration)
FREE_MAX_K = 500
#: in a fixed dimension, the free optimum is also computed (as a start and a lower bound) up to
FREE_START_MAX_K = 200
#: dual residual below which a point counts as globally optimal
GLOBAL_TOL = 1e-8
@dataclass(frozen=True, eq=False)
class _Solved:
    prob: RowProblem
    gram: np.ndarray
    certificate: object
    stop_reason: str
    starts: int
    identifiability: BatchIdentifiability | None = None
    rank_d: RankDCertificate | None = None
    probe: DeferredProbe | None = None


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
    sizes: np.ndarray, starts: int, seed: int, tol: float,
    progress: Callable[[str], None] | None = None, probed: bool = True,
) -> _Solved:
    """The free optimum when its rank fits, else the one rank-d solver
    (:func:`dgp.solver.solve_rank_d`, the policy shared with :func:`dgp.supcon_prototypes`:
    the free optimum's truncation and the weights' spectral start given, ``starts`` random
    candidates); its certificate is the rank-d one. What the loss pins is compared over the
    candidates (:func:`dgp.solver.identifiability_report`; the mean of the points weighted by
    their ``sizes``, the samples' mean embedding) and, where the problem is small, probed
    within the loss resolution around the best when the result's ``identifiability`` is first
    read (the :class:`~dgp.solver._identifiability.DeferredProbe` kept)."""
    w = np.asarray(sizes, dtype=float)
    if free is not None and free.certificate.rank <= dim:
        # no search, one solution: what the loss pins within the resolution is probed around
        # it where small enough (as supcon_prototypes does), else the certificate's uniqueness
        probe = None
        if probed and not probe_refusal(len(sizes), dim):
            rows = embedding_from_gram(free.gram, rank=min(dim, len(sizes)))
            rows = rows / np.linalg.norm(rows, axis=1, keepdims=True)
            probe = DeferredProbe(rows, factor_loss(prob.on_factor(), rows), w, seed)
        return _Solved(prob, free.gram, free.certificate,
                       f"the free optimum has rank {free.certificate.rank} <= dim = {dim}", 0,
                       probe=probe)
    sol = solve_rank_d(prob, dim, free_gram=None if free is None else free.gram,
                       weights=weights, starts=starts, seed=seed, tol=tol, progress=progress)
    losses = [v / prob.alpha_total for v in sol.candidate_losses]
    best = int(np.argmin(losses))
    rows = sol.candidate_factors[best].T
    ident = identifiability_report([X.T for X in sol.candidate_factors], losses, best,
                                   seed=seed, resolution=LOSS_RESOLUTION, row_weights=w)
    probe = DeferredProbe(rows, factor_loss(prob.on_factor(), rows), w, seed) if probed else None
    return _Solved(prob, sol.gram, sol.certificate, sol.reason, sol.starts, ident,
                   rank_d=sol.certificate, probe=probe)


class NoCollapse(Exception):
    """The collapsed quotient is not optimal for the N x N problem: ``classes`` spread (their
    within-class eigenvalue of the lifted dual is negative)."""

    def __init__(self, classes: tuple[int, ...] = ()) -> None:
        super().__init__(classes)
        self.classes = classes


def _no_collapse_refusal() -> ParameterError:
    """The refusal of class-balanced batches whose classes do not collapse."""
    return ParameterError(
        "sampler", "= 'class-balanced' predicts for collapsed classes, and these classes do "
        "not all collapse at the full-batch optimum (its lifted certificate fails); use "
        "sampler='uniform'")


def _solve(
    q: Quotient, *, tau: float, dim: int | None, spec: BatchSpec | None, samples: int,
    replicates: int, seed: int, exact_max: int, starts: int, tol: float,
    progress: Callable[[str], None] | None = None,
):
    """Solve the quotient problem; returns everything an Optimum needs (``progress``: the
    rank-d search's progress lines).

    Raises ``NoCollapse`` when the free optimum of the collapsed quotient fails its lifted
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
    check_solve_budget(K, dim, rows, starts, free_max_k=FREE_MAX_K)
    equi = [simplex_gram(K), np.eye(K)]
    # the free optimum: the answer in free dimension; in a fixed dimension a start, a lower
    # bound, and (with twins) the proof that the collapsed quotient is the right problem
    need_free = dim is None or K <= FREE_START_MAX_K or (K < N and K <= FREE_MAX_K)

    def certified_free(prob, starts_):
        sol = _free(prob, starts_, tol)
        prob.set_scale(sol.gram)
        # the collapse is decided on a certificate at this scale: the solver's multipliers,
        # read beside a gradient at another scale, called a spreading class collapsed (REF8)
        lifted = (lift_certificate(prob, sol.gram, n, row_certificate(prob, sol.gram, target=tol))
                  if K < N else None)
        if lifted is not None and not lifted.collapsed:
            raise NoCollapse(tuple(c for c, v in enumerate(lifted.within_margins)
                                   if v < -lifted.collapse_tol))
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
        # a batch loss is probed at full batch only, as supcon_prototypes does
        sol = _fixed_dim(prob, dim, free_prob, Wq, sizes=n, starts=starts, seed=seed,
                         tol=tol, progress=progress, probed=spec is None)
        full_sol = (_fixed_dim(full, dim, free_full, Wq, sizes=n, starts=starts, seed=seed,
                               tol=tol, progress=progress)
                    if spec is not None else sol)
    assert sol is not None
    G = sol.gram
    prob.set_scale(G)
    cert = row_certificate(prob, G, target=tol)
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
        batch = batch_prediction(q, spec, comps, G, full_sol.gram, loss=loss, lower_bound=lower,
                                 full_batch_loss=prob.loss(full_sol.gram)[0])
    return dict(
        prob=prob, gram=G, cert=cert, lift=lift, loss=loss, excess=excess,
        log_excess=log_excess, lower=lower, certified_global=global_,
        stop_reason=sol.stop_reason, starts=sol.starts, free=free_prob, batch=batch,
        identifiability=sol.identifiability, rank_d=sol.rank_d, probe=sol.probe,
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
    replicates: int = BATCH_REPLICATES,
    seed: int = 0,
    exact_max: int = EXACT_MAX_DEFAULT,
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
        ``weight``). The program is dense: a sparse input is densified after a memory check,
        except with ``batch_size`` beyond the exact paths of its samples, where its batches are
        read from its pairs and its twins found from them (an exact path of its twin classes
        solves their ``K x K`` quotient), never as an ``N x N`` array
        (:func:`~dgp.optima._batch_paths.streamed_path`). Every row needs a positive weight,
        except with ``batch_size``: a sample without one (an isolated node of a graph) is an
        anchor without positives in every batch, and a negative of the anchors it meets.
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
        report and of each Gram entry's interval (at least 1; default
        :data:`dgp.constants.BATCH_REPLICATES`, 2, that of :func:`dgp.supcon_prototypes`: the
        same runs and Gram for the same class problem),
        ``seed`` the seed of every stream; ``exact_max`` the largest
        number of compositions (or subsets) enumerated (default
        :data:`dgp.constants.EXACT_MAX_DEFAULT`, 100 000).
    starts : int, optional
        Random candidates of the rank-``dim`` search (besides the free optimum's truncation
        and a spectral start), each descended and improved by its own chain of moves
        (:func:`dgp.solver.solve_rank_d`, the solver of :func:`dgp.supcon_prototypes` too);
        a larger budget never gives a worse loss. ``None``: the default budget
        (:func:`dgp.solver.rank_d_starts`).
    tol : float
        Target KKT residual of the certified solver.
    progress : bool, optional
        Progress lines on stderr of a stochastic solve and of the rank-``dim`` search (at most
        one every 5 s, also when stderr is not a terminal; default: on; ``False``: none).

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
    # every setting is checked once, here; the paths below take them as given
    kwargs = dict(
        tau=check_positive(tau, "tau"), dim=None if dim is None else check_dim(dim, "dim"),
        samples=check_int(samples, "samples", minimum=2),
        replicates=check_int(replicates, "replicates", minimum=1),
        seed=check_int(seed, "seed", minimum=0),
        exact_max=check_int(exact_max, "exact_max", minimum=1),
        tol=check_unit_interval(tol, "tol"),
    )
    starts = check_starts(starts)
    if progress is not None:
        progress = check_flag(progress, "progress")
    batch = dict(batch_size=batch_size, sampler=sampler, reduction=reduction,
                 anchors_without_positives=anchors_without_positives)
    if batch_size is not None and sampler == "class-balanced":
        # class-balanced batches of the samples of each class: the classes of the labels,
        # collapsed (the K x K class problem; never N x N)
        return _quotient_optimum(label_quotient(problem), None, batch, kwargs, starts,
                                 progress)
    labels_full = (None if problem is None else
                   partial(_labels_full_batch, problem, checked=kwargs, starts=starts,
                           progress=progress))
    streamed = streamed_path(problem, W, batch, kwargs, starts, progress, labels_full,
                             partial(_quotient_optimum, A=None, batch=batch, kwargs=kwargs,
                                     starts=starts, progress=progress))
    if streamed is not None:
        return streamed
    # with batch_size, a sample without positive weight is an anchor without positives in
    # every batch (dropped or counted as zero, as the spec says): accepted there
    A = check_weights(W if problem is None else problem.solver_weights(),
                      empty_rows=batch_size is not None)
    check_memory(4 * 8.0 * A.shape[0] ** 2, what=f"an N = {A.shape[0]} weighting",
                 hint="use a smaller N")
    return _quotient_optimum(None, A, batch, kwargs, starts, progress)


def _quotient_optimum(q: Quotient | None, A: np.ndarray | None, batch: dict, kwargs: dict,
                      starts: int | None, progress: bool | None,
                      spread: Callable[[], BatchOptimum] | None = None
                      ) -> Optimum | BatchOptimum:
    """The optimum of a dense weighting ``A`` (reduced by the one choice of reductions of
    :mod:`dgp.optima._reductions`, its result lifted back once) or of the quotient ``q`` (the
    problem itself: the classes of class-balanced batches, or the twin classes of a sparse
    weighting, whose samples ``spread()`` answers for where a class does not collapse): the
    batch paths beyond the row problem of exact compositions
    (:data:`~dgp.optima._batch_paths.BATCH_PATHS`), else the certified solve, free or in
    ``dim``."""
    chain, inverse = None, []  # the class-balanced quotient is the problem itself
    if A is not None:
        chain = choose_reductions(samples_problem(A), batched=batch["batch_size"] is not None)
        q, inverse = chain.apply(samples_problem(A))
    N = int(q.sizes.sum())
    dim = kwargs["dim"]
    if dim is not None:
        dim = min(dim, N)  # N points span at most N dimensions: a larger dim changes nothing
    spec = batch_spec(q.sizes, **batch)
    kwargs = {**kwargs, "dim": dim, "spec": spec, "starts": start_budget(starts, q.K, dim)}
    route = (None if spec is None else
             batch_route(q.sizes, spec, dim, kwargs["exact_max"], kwargs["starts"]))
    if (route in ("stochastic", "rows") and A is not None and q.K < N
            and batch_route(np.ones(N, dtype=np.int64), spec, dim, kwargs["exact_max"],
                            kwargs["starts"]) == "finite"
            and (route == "stochastic" or finite_seconds(N, spec, dim, kwargs["starts"])
                 < rows_rank_d_seconds(q.sizes, spec, dim, kwargs["starts"]))):
        # twins merged into classes leave the finite sum over every subset unusable, which
        # the samples themselves fit: exact beats fresh batches, and beats the row problem of
        # every composition where it is estimated faster (a 3-NN graph of 25 points with two
        # twin pairs: 8 minutes of rows against 10 s of the finite sum)
        chain, q, inverse, route = *without_twins(A, chain), "finite"
    if route == "stochastic" and progress is not False:
        say_exact_skipped(q, spec, dim, kwargs["exact_max"], kwargs["starts"])
    try:
        return _routed(q, A, chain, inverse, route, kwargs, progress)
    except NoCollapse as exc:
        if A is None and spread is not None:  # twin classes of a sparse weighting
            return spread()
        if A is None:  # class-balanced: the classes are the labels'
            raise _no_collapse_refusal() from None
        spreading = exc.classes
    # twin classes that do not collapse at the full-batch optimum: their samples as their own
    # points, the other classes merged (their collapse proved again); failing that, the N x N
    # problem itself, on the path of its samples (whose subsets need not enumerate where the
    # classes' did)
    def routed(chain: Chain, q: Quotient, inverse: list) -> Optimum | BatchOptimum:
        route = (None if spec is None else
                 batch_route(q.sizes, spec, dim, kwargs["exact_max"], kwargs["starts"]))
        return _routed(q, A, chain, inverse, route, kwargs, progress)

    return _unmerged(A, chain, spreading, q.K, routed, progress)


def _unmerged(A: np.ndarray, chain: Chain | None, spreading: tuple[int, ...], K: int,
              solve: Callable, progress: bool | None):
    """``solve(chain, q, inverse)`` where twin classes do not collapse (``spreading``, of the
    ``K``): with the samples of those classes as their own points, the others merged (their
    collapse proved again), and failing that every sample its own point; each saying so on
    stderr unless ``progress`` is false."""
    for split in ((spreading,) if 0 < len(spreading) < K else ()) + ((),):
        chain_, q, inverse = without_twins(A, chain, split)
        if progress is not False:
            stderr_progress()(
                f"{len(split)} of {K} twin classes {'does' if len(split) == 1 else 'do'} not "
                "collapse at the full-batch optimum: their samples are solved as their own "
                f"points ({q.K} points)" if split else "twin classes do not collapse at the "
                f"full-batch optimum: solving the {q.K} samples")
        try:
            return solve(chain_, q, inverse)
        except NoCollapse:  # the last split, every sample its own point, never raises it
            if not split:
                raise


def _routed(q: Quotient, A: np.ndarray | None, chain: Chain | None, inverse: list,
            route: str | None, kwargs: dict, progress: bool | None) -> Optimum | BatchOptimum:
    """The batch path of ``route`` (:data:`~dgp.optima._batch_paths.BATCH_PATHS`), else the
    certified solve of ``q``, free or in ``kwargs["dim"]``, lifted back through ``chain``.

    Raises ``NoCollapse`` as :func:`_solve` (its caller answers with the samples)."""
    spec, dim = kwargs["spec"], kwargs["dim"]
    if route in BATCH_PATHS:
        return BATCH_PATHS[route](q, spec, kwargs, full_batch=_full_batch_embedding,
                                  progress=progress)
    if q.K == 1 and A is not None:  # a batched solve of one twin class (full batch: split)
        chain = choose_reductions(samples_problem(A), batched=True, split_single=True)
        q, inverse = chain.apply(samples_problem(A))
    elif q.K == 1:  # class-balanced: label_quotient refuses fewer than two classes
        q, chain = split_single_class(q), None
    structure = "quotient" if q.K < int(q.sizes.sum()) else "dense"
    if route == "rows" and progress is not False:
        say_rows_estimate(q, spec, dim, kwargs["starts"])
    # the rank-d search's lines (at most one every few seconds: a short solve prints none)
    report = (stderr_progress(f"the rank-{dim} optimum of {q.K} points")
              if dim is not None and progress is not False else None)
    tau = kwargs["tau"]
    with single_threaded(), validated_tau(tau):  # failures at extreme tau are the user's
        out = _solve(q, progress=report, **kwargs)
    return _wrap(q, out, tau=tau, dim=dim, structure=structure, chain=chain, inverse=inverse)


def _labels_full_batch(problem, dim: int, checked: dict, starts: int | None,
                       progress: bool | None = False) -> np.ndarray:
    """The full-batch optimum of a labels problem in ``dim``, one row per sample (dense;
    ``checked``: :func:`optimum`'s checked settings), saying on stderr that it is being solved,
    and how it goes, unless ``progress`` is false."""
    A = check_weights(problem.solver_weights())
    chain = choose_reductions(samples_problem(A))
    q, _ = chain.apply(samples_problem(A))
    kwargs = dict(tau=checked["tau"], dim=dim, spec=None, samples=2, replicates=0,
                  seed=checked["seed"], exact_max=1, starts=start_budget(starts, q.K, dim),
                  tol=checked["tol"])
    report = None
    if progress is None or progress:
        report = stderr_progress(f"the full-batch optimum of n = {q.K} in d = {dim}")
        report("solving it first (a candidate and the start of one expected-batch run)")
    try:
        return _full_batch_embedding(q, kwargs, report)[q.labels]
    except NoCollapse as exc:  # as _quotient_optimum: the spreading classes, then every sample
        spreading = exc.classes
    return _unmerged(A, chain, spreading, q.K,
                     lambda _, q, __: _full_batch_embedding(q, kwargs, report)[q.labels], False)


def _full_batch_embedding(q: Quotient, kwargs: dict,
                          progress: Callable[[str], None] | None = None) -> np.ndarray:
    """Unit rows (one per class of ``q``) of the full-batch optimum in ``kwargs["dim"]`` (the
    one rank-d solver, its default budget; ``progress``: its lines)."""
    with single_threaded(), validated_tau(kwargs["tau"]):
        out = _solve(q if q.K > 1 else split_single_class(q),
                     **{**kwargs, "spec": None}, progress=progress)
    X = factor(out["gram"], kwargs["dim"])
    return X.T / np.linalg.norm(X.T, axis=1, keepdims=True)


def _wrap(q: Quotient, out: dict, *, tau: float, dim: int | None, structure: str,
          chain: Chain | None = None, inverse: list | None = None) -> Optimum:
    """The Optimum of the solved problem ``q``, lifted back once through the inverse of the
    reductions that made ``q`` (``chain``, ``inverse``; none: ``q`` is the problem)."""
    cert, lift = out["cert"], out["lift"]
    reduced = PointSolution.of_points(out["gram"], out["loss"])
    lifted = (Chain() if chain is None else chain).invert(reduced, inverse or [])
    if chain is None:
        lifted = PointSolution(lifted.gram, lifted.loss, q.labels)
    if dim is None:
        unique, why = lift.unique, lift.reason
    elif (out["certified_global"] and out["free"] is not None
          and out["free"].certificate.rank <= dim):
        unique, why = lift.unique, lift.reason + " (the free optimum fits in this dimension)"
    else:
        unique, why = None, "not decided in a fixed dimension below the free optimum's rank"
    loss = lifted.loss
    lower = out["lower"] + (lifted.loss - reduced.loss)  # the loss's constant, if any
    return Optimum(
        n=int(q.sizes.sum()), tau=tau, dim=dim, labels=lifted.labels,
        sizes=tuple(int(v) for v in q.sizes), quotient_gram=lifted.gram, loss=loss,
        entropic_bound=out["prob"].entropy, excess_loss=out["excess"],
        log_excess_loss=out["log_excess"], lower_bound=lower,
        gap=max(0.0, loss - lower), dual_min_eig=cert.min_eig_dual,
        certified_global=out["certified_global"], rank=cert.rank, rank_tol=cert.rank_tol,
        unique=unique, uniqueness=why, certificate=cert, collapse=lift, structure=structure,
        stop_reason=out["stop_reason"], starts=out["starts"], batch=out["batch"],
        free_rank=None if out["free"] is None else out["free"].certificate.rank,
        search_identifiability=(out["identifiability"] if out["identifiability"] is not None
                                else uniqueness_report(unique, why, not_probed=(
                                    BATCH_NOT_PROBED if out["batch"] is not None else
                                    probe_refusal(q.K, dim)))
                                if dim is not None or out["batch"] is not None else None),
        rank_d=out["rank_d"], probe=out["probe"],
    )


def collapsed_optimum(q: Quotient, *, tau: float, dim: int | None, starts: int | None,
                      seed: int) -> Optimum:
    """The optimum of the class-level problem ``q`` with every class collapsed (validated
    ``tau`` and ``dim``; ``starts``: the rank-d budget, ``None`` for the default).

    Raises
    ------
    NoCollapse
        When collapse is not optimal (the lifted certificate of the free optimum fails).
    """
    with single_threaded():
        out = _solve(q, tau=tau, dim=dim, spec=None, samples=2, replicates=0, seed=seed,
                     exact_max=1, starts=start_budget(check_starts(starts), q.K, dim),
                     tol=SOLVER_TOL)
    return _wrap(q, out, tau=tau, dim=dim, structure="quotient")
