"""The class-level expected-batch prototypes beyond exact enumeration (K = 100 or 1000 classes,
B = 256): optimised on fresh class compositions of the sampler by the solver's stochastic
driver (:func:`dgp.solver.batch_optimum`: the class-collapsed problem of
:func:`dgp.solver.quotient_batch_optimum`, its block weights read per batch), reported on
held-out ones, every Gram entry with its 95% interval over independent runs."""

from __future__ import annotations

import math

import numpy as np

from dgp.prototypes._closed_forms import equiangular_gram
from dgp.prototypes._collapse import MinorityCollapse, minority_collapse
from dgp.prototypes._ident import Identifiability
from dgp.prototypes._rates import pair_probability
from dgp.prototypes._result import Prototypes
from dgp.resources import check_memory
from dgp.solver import (
    Z95,
    BatchEstimate,
    BatchIdentifiability,
    BatchPrediction,
    BatchSpec,
    ClassBlockWeights,
    batch_optimum,
    composition_count,
    factor,
)
from dgp.solver._gram_spread import gram_spread
from dgp.tolerance import DEFAULT_POLICY

__all__ = ["ClassBlockWeights", "held_out_report", "stochastic_fields", "stochastic_prototypes"]


def stochastic_prototypes(n: np.ndarray, tau: float, eps: float | None, spec: BatchSpec,
                          full: Prototypes, *, dim: int | None, seed: int, replicates: int,
                          samples: int, progress: bool | None) -> Prototypes:
    r"""The class-level expected-batch prototypes beyond exact enumeration: optimised on fresh
    compositions from the full-batch prototypes and seeded random starts
    (:func:`dgp.solver.batch_optimum` on :class:`ClassBlockWeights`), reported on others.
    Every Gram entry carries its 95% interval over the ``1 + replicates`` independent runs
    (``t`` quantile of their spread: the prediction is one run, not their mean); free
    dimension is dimension ``K``."""
    K = n.size
    d = K if dim is None else dim
    X = factor(full.gram, d)
    start = (X / np.linalg.norm(X, axis=0)).T
    simplex = ()
    if K <= d + 1:  # the simplex's expected loss on the reporting batches, paired
        Xs = factor(equiangular_gram(K, -1.0 / (K - 1)), d)
        simplex = ((Xs / np.linalg.norm(Xs, axis=0)).T,)
    fields, _ = stochastic_fields(n, tau, eps, spec, full.gram, start, seed=seed,
                                  replicates=replicates, samples=samples, progress=progress,
                                  simplex=simplex)
    return Prototypes(**fields, dim=dim, classes=full.classes)


def stochastic_fields(
    n: np.ndarray, tau: float, eps: float | None, spec: BatchSpec, full_gram: np.ndarray,
    start: np.ndarray, *, seed: int, replicates: int, samples: int, progress: bool | None,
    simplex: tuple[np.ndarray, ...] = (), nonnegative: bool = False,
) -> tuple[dict, np.ndarray]:
    """The fields of a stochastic class-level prediction (all but ``dim``) and its embedding:
    :func:`dgp.solver.batch_optimum` on :class:`ClassBlockWeights` in the dimension of
    ``start`` (the full-batch prototypes, ``K x d`` unit rows), the ``simplex`` compared on the
    reporting batches, ``nonnegative`` rows for a ReLU head."""
    source = ClassBlockWeights(n.size, eps)
    res = batch_optimum(source, spec, tau=tau, dim=start.shape[1], seed=seed, sizes=n,
                        replicates=replicates, min_batches=samples, full_batch=start,
                        progress=progress, compare=simplex, nonnegative=nonnegative)
    K = n.size
    check_memory(8.0 * K * K * (len(res.runs) + 4),
                 what=f"the {len(res.runs)} runs' {K} x {K} Grams (each entry's interval)",
                 hint="use fewer classes")
    batch, ident, minority = held_out_report(
        n, spec, full_gram, res.gram, [Z @ Z.T for Z in res.runs] or [res.gram], res.batch,
        res.identifiability, drawn=res.batch.batches, seed=res.batch.seed,
        simplex=res.comparisons[0] if simplex else None, left_out=res.runs_left_out,
        restarts=res.restarts, restarts_left_out=res.restarts_left_out,
        kept_full_batch=res.kept_full_batch)
    G, b = res.gram, res.batch
    entropy = math.nan  # the expected batch entropic bound is not estimated on this path
    fields = dict(
        objective="supcon" if eps is None else "soft-supcon",
        sizes=tuple(int(v) for v in n), tau=tau, eps=eps, method="stochastic",
        loss=b.expected_loss, entropic_bound=entropy, excess_loss=math.nan,
        log_excess_loss=math.nan, kkt_residual=None, certificate=res.certificate,
        collapse=None, rank=DEFAULT_POLICY.rank(np.linalg.eigvalsh(G)), unique=None,
        stop_reason=res.status, matrix=G, batch=batch, search_identifiability=ident,
        lower_bound=b.lower_bound, minority=minority,
    )
    return fields, res.embedding


def held_out_report(
    n: np.ndarray, spec: BatchSpec, full_gram: np.ndarray, G: np.ndarray, grams: list,
    b: BatchEstimate, rep: BatchIdentifiability | None, *, drawn: int, seed: int | None,
    simplex: tuple[float, float] | None = None, left_out: int = 0, restarts: int = 0,
    from_runs: bool = True, restarts_left_out: int = 0, kept_full_batch: bool = False,
) -> tuple[BatchPrediction, Identifiability, MinorityCollapse]:
    """What a class-level prediction reported on held-out batches says: the batch record
    (``b``, the prediction's :class:`~dgp.solver.BatchEstimate`; each Gram entry's 95%
    interval and standard error from the ``grams`` of independent runs, ``t`` quantile of
    their spread: the prediction ``G`` is one run, not their mean;
    :func:`dgp.solver._gram_spread.gram_spread`), the identifiability (the full-batch gap, and
    the simplex's paired gap ``simplex`` where one was evaluated) and the minority verdict.
    ``drawn``: the batches or compositions the prediction was fitted on; ``left_out``: the
    runs that ended beyond the loss resolution above ``G`` (not among ``grams``);
    ``restarts``: the last of ``grams`` that are ``G``'s lineage (its run and restarts of it on
    other batch streams), not independent runs (``restarts_left_out``: those made but not
    among them); ``kept_full_batch``: ``G`` is the full-batch optimum, none of the ``grams``
    (each interval the runs' own, widened to hold it); ``from_runs=False``: ``G`` is a closed form
    decided on sampled compositions, not optimised by runs. One Gram
    alone is a closed form, which no sample moves (intervals of width 0), unless runs were
    left out (one sampled run: not measured)."""
    # each entry's standard error: one run's spread over the runs (the prediction is one run)
    se, interval = gram_spread(G, grams, runs=len(grams), sampled=from_runs,
                               kept_full_batch=kept_full_batch)
    # where the full-batch optimum is kept, the runs' own intervals say whether batching moves
    # its entries beyond noise (the widened ones hold it by construction)
    runs_interval = (gram_spread(np.mean(grams, axis=0), grams, runs=len(grams))[1]
                     if kept_full_batch and len(grams) > 1 else None)
    batch = BatchPrediction(
        spec=spec, exact=False, compositions=composition_count(n, spec), drawn=drawn,
        seed=seed, loss_se=(b.interval[1] - b.expected_loss) / Z95,
        gram_se=float(se.max()), replicates=len(grams) - 1,
        full_batch_gram=full_gram, shift=float(np.abs(G - full_gram).max()),
        positive_pair_probability=pair_probability(n, spec),
        estimate=b, gram_interval=interval, gram_entry_se=se, runs_left_out=left_out,
        restarts=restarts, from_runs=from_runs, restarts_left_out=restarts_left_out,
        kept_full_batch=kept_full_batch, runs_interval=runs_interval,
    )
    # gaps per anchor: a summed batch loss is over the batch's B anchors
    per_anchor = spec.per_anchor
    simplex_gap = simplex_se = math.nan
    if simplex is not None:
        simplex_gap, simplex_se = (v * per_anchor for v in simplex)
    log_gap = math.log(simplex_gap) if simplex_gap > 0 else -math.inf
    # where the full-batch prototypes are kept, the paired gap is theirs against themselves
    # (0 +- 0 by construction): not a measurement, so none is reported
    fb_gap = (None if b.full_batch_excess is None or kept_full_batch else
              b.full_batch_excess * per_anchor)
    fb_se = (None if b.full_batch_excess_se is None or kept_full_batch else
             b.full_batch_excess_se * per_anchor)
    rep_fields = ({} if rep is None else
                  dict(pinned=rep.pinned, spread=rep.spread, resolution=rep.resolution,
                       identifiable=rep.identifiable, statement=rep.statement,
                       solutions=rep.solutions, probed=rep.probed))
    ident = Identifiability(simplex_gap, None if math.isnan(simplex_se) else simplex_se,
                            fb_gap, fb_se, float(spec.batch_size),
                            log_gap if not math.isnan(simplex_gap) else math.nan,
                            **rep_fields)
    # paired over the runs: each run's tail-pair cosine against its own head mean; the runs'
    # spread is the noise, what the loss leaves free among them included. Where the report
    # finds the cosines free, only a collapse every run agrees on is a finding
    pinned = rep.pinned.get("pairwise cosines") if rep is not None and rep.pinned else None
    # restarts share the kept arrangement: their spread speaks for the cosines only where the
    # loss pins them; elsewhere only independent runs do, and fewer than two decide nothing
    runs, unmeasured = grams, batch.unmeasured
    if restarts and pinned is not True:
        runs = grams[:len(grams) - restarts]
        if len(runs) < 2 and unmeasured is None:
            unmeasured = ("the entries' spread comes from restarts of these prototypes in their "
                          "own arrangement, and whether other near-optimal arrangements agree "
                          "is not known")
    minority = minority_collapse(G, n, runs=runs, pinned=None if pinned is None else bool(pinned),
                                 unmeasured=unmeasured)
    return batch, ident, minority
