r"""``nonnegative_prototypes``: optimal class prototypes of SupCon and Soft SupCon for a ReLU
head, whose embeddings have non-negative coordinates.

The prototype Gram is then *completely positive*, :math:`G = ZZ^\top` with
:math:`Z \in \mathbb R^{K \times d}_{\ge 0}` of unit rows, and the class-level problem is

.. math::

    \min\{F(G) : G = ZZ^\top,\ Z \ge 0,\ \|z_c\| = 1,\ Z \in \mathbb R^{K\times d}\},

with :math:`F` the objective of :mod:`dgp.prototypes._api` (the full-batch loss over all ``N``
anchors, or the expected loss of a mini-batch sampler). What is known and how it is certified:

* **Orthogonal frame.** Where :math:`\nabla F(I)` is non-negative off the diagonal (SupCon at
  any class sizes, full batch or any sampler; Soft SupCon exactly when
  :math:`\varepsilon \le e^{-1/\tau}`, i.e. :math:`\rho = 1 + \tau\log\varepsilon \le 0`), the
  identity is optimal over every Gram with non-negative entries and unit diagonal, so with
  ``K <= d`` the prototypes are an orthogonal frame (theorem ``relu-orthogonal-frame``; Kini et
  al., ICLR 2024). The certificate is that gradient: :math:`F(H) \ge F(I) + \langle\nabla F(I),
  H - I\rangle \ge F(I)` for every such ``H``.
* **Soft SupCon with** :math:`\rho \ge 0`: the equiangular target :math:`(1-\rho)I + \rho J`
  attains the entropic bound and is completely positive (factor
  :math:`[\sqrt{1-\rho}\,I,\ \sqrt\rho\,\mathbf 1]`, ``d >= K + 1``).
* **Otherwise** (``K > d``, or no closed form): the search policy of the one rank-``d``
  solver over non-negative factors (:func:`dgp.solver.nonnegative_factor`: nested seeded
  candidates with swap and noise moves, never worse with a larger budget) with its
  first-order residual, and a certified lower bound from the doubly non-negative relaxation
  plus, for ``K > d``, the valid rank-``d``
  inequalities :math:`w^\top G w \ge (\mathbf 1^\top w)^2/d` (:func:`dgp.solver.dnn_lower_bound`).
  The result is certified optimal only when the loss meets that bound; for ``K > d`` it usually
  does not (the non-convex rank constraint is what the relaxation loses) and the gap is stated.

Everything is for collapsed classes (one prototype per class), the class-level model of
:func:`dgp.supcon_prototypes`. For SupCon the collapsed frame is also a minimiser over every
non-negative embedding of the samples, full batch or batched (theorem
``relu-orthogonal-frame``); with mini-batches Kini et al. show that other, non-collapsed
minimisers can exist when the batches do not bind all classes, which the class-level Gram
predicted here does not see.

With mini-batches whose compositions are too many to enumerate (``exact_max``): a closed form
decided on a sample of compositions is reported on fresh batches
(:func:`dgp.solver.held_out_estimate`); otherwise the prototypes are optimised on fresh
compositions with non-negative rows by the stochastic driver of the signed prototypes
(:func:`dgp.solver.batch_optimum`, warm from the full-batch ReLU prototypes and from random
non-negative starts) and reported on others. Either way: the expected loss with its 95%
interval, a lower bound on the expectation's minimum at 95% confidence (the per-batch convex
relaxation, which no sign constraint weakens, so it holds for a ReLU head), the full-batch ReLU
prototypes' loss on the same batches, and each Gram entry's interval over the runs. Nothing on
that path is certified; exact enumeration stays certified as above.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from dgp.constants import BATCH_REPLICATES, EXACT_MAX_DEFAULT
from dgp.display import format_duration, stderr_progress
from dgp.errors import (
    check_class_sizes,
    check_dim,
    check_int,
    check_positive,
    check_unit_interval,
)
from dgp.prototypes._blocks import block_weights
from dgp.prototypes._closed_forms import equiangular_gram, soft_supcon_rho
from dgp.prototypes._dim import ANNOUNCE_AFTER_S, DIM_DEFAULT_STARTS, pinned_identifiability
from dgp.prototypes._ident import Identifiability
from dgp.prototypes._nonnegative_result import (
    NonnegativeCertificate,
    NonnegativePrototypes,
    nonnegative_certificate,
)
from dgp.prototypes._rates import pair_probability
from dgp.prototypes._sampled import held_out_report, stochastic_fields
from dgp.resources import check_memory
from dgp.solver import (
    EXACT_RANK_D_MAX_S,
    BatchIdentifiability,
    BatchPrediction,
    BatchSpec,
    ClassBatches,
    ClassBlockWeights,
    RowProblem,
    batch_rows,
    block_problem,
    check_batch,
    check_full_batch,
    check_time,
    compositions,
    dnn_lower_bound,
    enumerable,
    frank_wolfe_bound,
    held_out_estimate,
    nonnegative_cost,
    nonnegative_factor,
    nonnegative_stationarity,
    row_budget_samples,
    single_threaded,
)
from dgp.solver._batch_result import BatchCertificate
from dgp.solver._identifiability import uniqueness_report
from dgp.tolerance import DEFAULT_POLICY

__all__ = ["DNN_MAX_K", "NonnegativeCertificate", "NonnegativePrototypes",
           "nonnegative_prototypes"]

#: largest K whose doubly non-negative relaxation is built (a K x K semidefinite program with
#: K^2 sign constraints); above it the lower bound is the elliptope's (no sign constraint)
DNN_MAX_K = 60

def _loss_parts(prob: RowProblem, G: np.ndarray) -> tuple[float, float, float]:
    prob.set_scale(G)
    return prob.loss(G)


def _gradient_nats(prob: RowProblem, G: np.ndarray) -> tuple[np.ndarray, float]:
    """:math:`\\nabla F(G)` in nats (symmetric, zero diagonal) and the size of its parts."""
    prob.set_scale(G)
    st = prob.state(G)
    unit = prob.alpha_total * math.exp(prob.log_t)
    ge, gl = prob.gradient_parts(st)
    scale = max(float(np.abs(ge).max()), float(np.abs(gl).max())) * unit
    return (ge - gl) * unit, scale


def equiangular_factor(K: int, rho: float) -> np.ndarray:
    r"""A non-negative ``K x K`` factor of the equiangular Gram :math:`(1-\rho)I + \rho J`,
    :math:`0 \le \rho \le 1`: :math:`Z = \alpha I + \beta J` with :math:`\alpha =
    \sqrt{1-\rho}` and :math:`\beta \ge 0` the root of :math:`K\beta^2 + 2\alpha\beta =
    \rho` (then :math:`ZZ^\top = \alpha^2 I + (2\alpha\beta + K\beta^2)J`), so ``d = K``
    suffices (the Gram has rank ``K`` for :math:`\rho < 1`, so ``d < K`` cannot)."""
    alpha = math.sqrt(1.0 - rho)
    beta = rho / (alpha + math.sqrt(alpha * alpha + K * rho)) if rho > 0 else 0.0
    return alpha * np.eye(K) + beta * np.ones((K, K))


def _frame(K: int, width: int) -> np.ndarray:
    Z = np.zeros((K, width))
    Z[np.arange(K), np.arange(K)] = 1.0
    return Z


def _fit(prob: RowProblem, K: int, dim: int | None, starts: int,
         seed: int, progress: bool = False
         ) -> tuple[np.ndarray, int, tuple[tuple[float, np.ndarray], ...]]:
    """The numeric non-negative factor (``K x d``, free dimension ``d = K + 1``) of ``prob``
    and how many candidates reached its loss, and every candidate's ``(loss, factor)``, behind
    the time guard; with ``progress``, the
    estimate on stderr first where it is :data:`~dgp.prototypes._dim.ANNOUNCE_AFTER_S` or
    more."""
    width = K + 1 if dim is None else dim
    what = f"{starts} non-negative factor descents for K = {K} classes in d = {width}" + (
        f" over {prob.R} rows (every batch composition's)" if prob.R > K else "")
    cost = nonnegative_cost(K, width, starts=starts, rows=prob.R)
    check_time(cost, what=what, instead="use fewer starts or classes", param="starts")
    seconds = cost / 1e9  # check_time's unit: operations at 1e9 per second
    say = stderr_progress(what) if progress else None
    if say is not None and seconds >= ANNOUNCE_AFTER_S:
        say(f"about {format_duration(seconds)} (the non-negative search's cost model)")
    return nonnegative_factor(prob, width, starts=starts, seed=seed, progress=say)


def _closed_form(prob: RowProblem, n: np.ndarray, tau: float, eps: float | None,
                 dim: int | None) -> dict[str, Any] | None:
    """The fields of a closed-form answer of ``prob`` with its certificate (the orthogonal
    frame where the gradient at ``I`` proves it, the equiangular Gram where it is completely
    positive), or ``None`` where none applies."""
    K = n.size
    entropy = prob.entropy
    I = np.eye(K)
    if dim is None or dim >= K:
        g, scale = _gradient_nats(prob, I)
        min_grad = float(g[~np.eye(K, dtype=bool)].min())
        atol = DEFAULT_POLICY.atol(scale)
        if min_grad >= -atol:
            loss, excess, log_excess = _loss_parts(prob, I)
            cert = nonnegative_certificate(
                excess, excess, excess, stationarity=None, G=I, min_grad=min_grad,
                grad_atol=atol, cuts=0, entropy=entropy,
                relaxation="gradient at I: F(H) >= F(I) + <grad F(I), H - I> for every H >= 0 "
                "with unit diagonal")
            return dict(method="closed-form", kkt_residual=None, loss=loss,
                        excess_loss=excess, log_excess_loss=log_excess, certificate=cert,
                        rank=K, unique=min_grad > atol,
                        stop_reason="orthogonal frame: grad F(I) >= 0 off the diagonal",
                        equiangular=0.0, matrix=None, factor=_frame(K, K if dim is None else dim),
                        starts=0, hits=0)
    if eps is not None and prob.block is not None:
        rho = soft_supcon_rho(tau=tau, eps=eps)
        if rho >= 0 and (dim is None or dim >= K):
            G = equiangular_gram(K, rho)
            Z = equiangular_factor(K, rho)
            if dim is not None:
                Z = np.hstack([Z, np.zeros((K, dim - K))])
            loss, excess, log_excess = _loss_parts(prob, G)
            cert = nonnegative_certificate(
                excess, 0.0, 0.0, stationarity=None, G=G, min_grad=None, grad_atol=0.0, cuts=0,
                entropy=entropy, relaxation="the entropic bound (Gibbs), attained")
            return dict(method="closed-form", kkt_residual=None, loss=loss,
                        excess_loss=excess, log_excess_loss=log_excess, certificate=cert,
                        rank=K, unique=False,
                        stop_reason="equiangular rho = 1 + tau log eps >= 0: completely "
                        "positive, attains the entropic bound", equiangular=rho, matrix=None,
                        factor=Z, starts=0, hits=0)
    return None


def _solve(prob: RowProblem, n: np.ndarray, tau: float, eps: float | None, dim: int | None,
           starts: int, seed: int, progress: bool = False) -> dict[str, Any]:
    """The fields of the result that depend on the problem ``prob`` (full batch or exact
    batches): a closed form, else the numeric factor with its certified bound."""
    closed = _closed_form(prob, n, tau, eps, dim)
    if closed is not None:
        if dim is not None:  # what the loss pins: the closed form's own uniqueness proof
            rep = _closed_form_report(bool(closed["unique"]), "not probed in a closed form")
            closed["search_identifiability"] = Identifiability(
                math.nan, None, None, None, prob.alpha_total, math.nan, pinned=rep.pinned,
                spread=rep.spread, resolution=rep.resolution, identifiable=rep.identifiable,
                probed=(), solutions=1, statement=rep.statement)
        return closed
    K, entropy = n.size, prob.entropy
    Z, hits, candidates = _fit(prob, K, dim, starts, seed, progress)
    G = Z @ Z.T
    stationarity = nonnegative_stationarity(prob, Z)
    loss, excess, log_excess = _loss_parts(prob, G)
    if K <= DNN_MAX_K:
        b = dnn_lower_bound(prob, [G], dim=dim)
        bound, dnn, cuts, relaxation = b.excess, b.dnn_excess, b.cuts, b.relaxation
        branches = b.branches
    else:
        prob.set_scale(G)
        bound = dnn = max(0.0, frank_wolfe_bound(prob, G) - entropy)
        branches = 0
        cuts, relaxation = 0, (f"the elliptope (no sign constraint): the doubly non-negative "
                               f"relaxation is not built above K = {DNN_MAX_K}")
    cert = nonnegative_certificate(excess, bound, dnn, stationarity=stationarity, G=G,
                                   min_grad=None, grad_atol=0.0, cuts=cuts,
                                   relaxation=relaxation, entropy=entropy, branches=branches)
    return dict(method="numeric", kkt_residual=stationarity, loss=loss, excess_loss=excess,
                log_excess_loss=log_excess,
                certificate=cert, rank=DEFAULT_POLICY.rank(np.linalg.eigvalsh(G)), unique=None,
                stop_reason=(f"best of {starts} seeded non-negative candidates, each improved "
                             "by its own moves (the policy of the rank-d solver)" if starts > 1
                             else "one seeded non-negative candidate, improved by its own moves"),
                equiangular=None, matrix=G, factor=Z, starts=starts, hits=hits,
                search_identifiability=None if dim is None else pinned_identifiability(
                    Identifiability(math.nan, None, None, None, prob.alpha_total, math.nan),
                    [F for _, F in candidates], [v for v, _ in candidates], prob.alpha_total,
                    seed, n))


def _common_fields(n: np.ndarray, tau: float, eps: float | None, dim: int | None,
                   classes: tuple[Any, ...] | None) -> dict[str, Any]:
    return dict(objective="supcon" if eps is None else "soft-supcon",
                sizes=tuple(int(v) for v in n), tau=tau, eps=eps, collapse=None, dim=dim,
                classes=classes)


def _full_batch(n: np.ndarray, tau: float, eps: float | None, dim: int | None, starts: int,
                seed: int, progress: bool | None, classes: tuple[Any, ...] | None
                ) -> NonnegativePrototypes:
    """The full-batch non-negative prototypes of validated arguments (a batch problem's
    reference: its singleton classes have no row, as :func:`dgp.solver.block_problem` says)."""
    with single_threaded():
        prob = block_problem(n, block_weights(n.size, eps), tau=tau)
        fields = _solve(prob, n, tau, eps, dim, starts, seed,
                        progress=progress is None or bool(progress))
    return _result(_common_fields(n, tau, eps, dim, classes), prob.entropy, fields, batch=None)


def nonnegative_prototypes(
    sizes: object,
    tau: float,
    *,
    eps: float | None = None,
    dim: int | None = None,
    batch_size: int | None = None,
    sampler: str = "uniform",
    samples_per_class: int | None = None,
    reduction: str = "mean",
    anchors_without_positives: str = "drop",
    samples: int = 2000,
    replicates: int = BATCH_REPLICATES,
    seed: int = 0,
    exact_max: int = EXACT_MAX_DEFAULT,
    starts: int = DIM_DEFAULT_STARTS,
    progress: bool | None = None,
    classes: tuple[Any, ...] | None = None,
) -> NonnegativePrototypes:
    r"""Optimal class prototypes of SupCon (``eps=None``) or Soft SupCon for a ReLU head:
    non-negative unit vectors in :math:`\mathbb R^d` (module docstring).

    Parameters
    ----------
    sizes : sequence of int
        Class sizes, each ``>= 2``, at least two classes.
    tau : float
        Temperature ``> 0``.
    eps : float, optional
        Soft SupCon cross-class weight in ``(0, 1)``; ``None`` for SupCon.
    dim : int, optional
        Embedding dimension ``d >= 1`` (``None``: free; the orthogonal frame needs ``d >= K``).
    batch_size, sampler, samples_per_class, reduction, anchors_without_positives, samples,
    replicates, exact_max
        The mini-batch model, as in :func:`dgp.supcon_prototypes` (``replicates``: further
        independent runs beyond enumeration, random non-negative starts, whose spread gives
        each Gram entry its interval; at least 1).
    seed : int
        Seed of the factor starts and of the composition samples.
    starts : int
        Seeded starts of the non-negative factor descent (where no closed form applies; 8 by
        default, as for ``supcon_prototypes(dim=...)``).
    progress : bool, optional
        Progress lines on stderr (``False``: none): a long non-negative search's estimate
        first, and the stochastic path's lines beyond exact enumeration.
    classes : tuple, optional
        The class labels in class order, which the result names (:attr:`Prototypes.classes`;
        :func:`dgp.supcon_prototypes` passes those of a problem built from labels).

    Returns
    -------
    NonnegativePrototypes
        ``certified`` says whether the loss meets the certified ``lower_bound``. Beyond exact
        enumeration of the compositions: ``loss`` is the held-out estimate
        (``batch.estimate``), ``lower_bound`` holds at 95% confidence, ``certificate`` is
        ``None`` and ``certified`` is false (module docstring).

    Raises
    ------
    dgp.errors.ParameterError
        On invalid arguments, or a problem too large for the time budget.
    dgp.errors.SolverError
        If no semidefinite solver runs for the bound.

    Examples
    --------
    >>> p = nonnegative_prototypes([50, 20, 5, 3], tau=0.2)
    >>> p.method, p.certified, p.gram.tolist() == np.eye(4).tolist()
    ('closed-form', True, True)
    >>> q = nonnegative_prototypes([50, 20, 5, 3], tau=0.2, dim=3, starts=8)
    >>> q.method, bool(q.embedding.min() >= 0), bool(q.lower_bound <= q.loss)
    ('numeric', True, True)
    """
    # a batch problem takes singleton classes: anchors without positives in every batch
    n = check_class_sizes(sizes, positives_across=eps is not None, batch=batch_size is not None)
    tau = check_positive(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    if dim is not None:
        dim = check_dim(dim, "dim")
    starts = check_int(starts, "starts", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    K = n.size
    check_memory(8.0 * K * K * 24, what=f"non-negative prototypes for K = {K} classes",
                 hint="use fewer classes")
    weights = block_weights(K, eps)
    common = _common_fields(n, tau, eps, dim, classes)
    if batch_size is None:
        check_full_batch(sampler=sampler, samples_per_class=samples_per_class,
                         reduction=reduction,
                         anchors_without_positives=anchors_without_positives)
        return _full_batch(n, tau, eps, dim, starts, seed, progress, classes)
    spec = check_batch(
        n, batch_size=batch_size, sampler=sampler, samples_per_class=samples_per_class,
        reduction=reduction, anchors_without_positives=anchors_without_positives,
    )
    samples = check_int(samples, "samples", minimum=2)
    replicates = check_int(replicates, "replicates", minimum=1)
    exact_max = check_int(exact_max, "exact_max", minimum=1)
    full = _full_batch(n, tau, eps, dim, starts, seed, progress, classes)
    searched = dim is not None and dim < K  # no closed form fits in R^dim
    stochastic = partial(_stochastic, n, tau, eps, dim, spec, full, seed=seed, samples=samples,
                         replicates=replicates, progress=progress)
    if searched and not enumerable(n, spec, exact_max):
        return stochastic()  # beyond enumeration (no sampled compositions needed)
    with single_threaded():
        comps = compositions(n, spec, exact_max=exact_max,
                             samples=row_budget_samples(K, samples), seed=seed)
        prob, _ = batch_rows(comps, weights, spec, tau=tau)
        if searched and (nonnegative_cost(K, dim, starts=starts, rows=prob.R) / 1e9
                         > EXACT_RANK_D_MAX_S):
            # the search over every composition's rows (counted as built) would take longer
            # than fresh batches
            return stochastic()
        if not comps.exact:
            closed = _closed_form(prob, n, tau, eps, dim)
            if closed is None:
                return stochastic()
            return _held_out(common, n, tau, eps, spec, prob, comps, closed, full, seed=seed,
                             samples=samples)
        fields = _solve(prob, n, tau, eps, dim, starts, seed,
                        progress=progress is None or bool(progress))
    G = fields["matrix"] if fields["matrix"] is not None else None
    shift_gram = G if G is not None else equiangular_gram(K, float(fields["equiangular"]))
    batch = BatchPrediction(
        spec=spec, exact=comps.exact, compositions=int(comps.counts.shape[0]),
        drawn=comps.drawn, seed=comps.seed, loss_se=None, gram_se=None, replicates=0,
        full_batch_gram=full.gram, shift=float(np.abs(shift_gram - full.gram).max()),
        positive_pair_probability=pair_probability(n, spec),
    )
    return _result(common, prob.entropy, fields, batch=batch)


def _stochastic(n: np.ndarray, tau: float, eps: float | None, dim: int | None,
                spec: BatchSpec, full: NonnegativePrototypes, *, seed: int, samples: int,
                replicates: int, progress: bool | None) -> NonnegativePrototypes:
    """Beyond exact enumeration, where no closed form applies: the expected-batch prototypes
    optimised on fresh compositions with non-negative rows (the stochastic driver of the
    signed prototypes, :func:`dgp.prototypes._sampled.stochastic_fields`, warm from the
    full-batch ReLU prototypes and from ``replicates`` random non-negative starts)
    and reported on others: the expected loss with its 95% interval, the relaxation bound
    (valid for a ReLU head: it has no sign constraint), the full-batch ReLU prototypes on the
    same batches, and every Gram entry's interval over the runs."""
    fields, Z = stochastic_fields(n, tau, eps, spec, full.gram, full.factor, seed=seed,
                                  replicates=replicates, samples=samples,
                                  progress=progress, nonnegative=True)
    return NonnegativePrototypes(**fields, dim=dim, factor=Z, certified=False,
                                 classes=full.classes)


def _held_out(common: dict[str, Any], n: np.ndarray, tau: float, eps: float | None,
              spec: BatchSpec, prob: RowProblem, comps: Any, closed: dict[str, Any],
              full: NonnegativePrototypes, *, seed: int, samples: int) -> NonnegativePrototypes:
    """Beyond exact enumeration, the closed form decided on the sampled compositions
    ``comps`` (``prob``), reported on fresh batches (:func:`dgp.solver.held_out_estimate`:
    the expected loss with its 95% interval, the per-batch relaxation bound, which no sign
    constraint weakens, and the full-batch ReLU prototypes on the same batches). A closed form
    has no sampling error: its Gram entries' intervals have width 0."""
    K = n.size
    unique = closed["unique"]
    Z = closed["factor"]
    est, _ = held_out_estimate([Z], ClassBlockWeights(K, eps), ClassBatches(n, spec), spec,
                               tau=tau, seed=seed, full_batch=full.factor, min_batches=samples)
    rep = _closed_form_report(bool(unique), "the expected loss is estimated from sampled "
                              "batches")
    G = Z @ Z.T
    batch, ident, minority = held_out_report(n, spec, full.gram, G, [G], est, rep,
                                             drawn=comps.drawn, seed=comps.seed,
                                             from_runs=False)
    return NonnegativePrototypes(
        **common, method="closed-form", kkt_residual=None, loss=est.expected_loss,
        entropic_bound=math.nan, excess_loss=math.nan, log_excess_loss=math.nan,
        certificate=BatchCertificate.of(est), rank=DEFAULT_POLICY.rank(np.linalg.eigvalsh(G)),
        unique=unique, stop_reason=closed["stop_reason"] + " (on the sampled compositions)",
        equiangular=closed["equiangular"], matrix=G, factor=Z, starts=0, hits=0,
        lower_bound=est.lower_bound, certified=False, batch=batch, search_identifiability=ident,
        minority=minority,
    )


def _closed_form_report(unique: bool, not_probed: str) -> BatchIdentifiability:
    """What the loss pins at the ReLU closed form (the orthogonal frame), in the one wording of
    a certified solution (:func:`dgp.solver._identifiability.uniqueness_report`): pinned where
    its proof shows it unique, undecided where that proof fails."""
    return uniqueness_report(
        True if unique else None,
        "the orthogonal frame is the unique optimum: the gradient at I is positive off the "
        "diagonal" if unique else "a closed form whose uniqueness is not shown (the gradient "
        "at I is zero somewhere off the diagonal), so other Grams may be as good",
        not_probed=not_probed)


def _result(common: dict[str, Any], entropy: float, fields: dict[str, Any],
            batch: BatchPrediction | None) -> NonnegativePrototypes:
    cert = fields["certificate"]
    return NonnegativePrototypes(
        **common, **fields, entropic_bound=entropy, lower_bound=cert.lower_bound,
        certified=cert.certified, batch=batch,
    )
