"""The expected batch loss of embeddings fitted elsewhere, reported on batches they were not
fitted on: the held-out evaluation, the relaxation lower bound and the full-batch comparison of
:func:`dgp.solver.batch_optimum`, for a prediction that another method fitted (the ReLU head's
class factor, fitted on a sample of compositions).

The prediction is ``embeddings[0]``, chosen before any of these batches is drawn; the others
(replicate fits) are evaluated on the same batches, so their losses are paired with it and can
say which of them are near-optimal without selecting on the reporting batches.
"""

from __future__ import annotations

import math

import numpy as np

from dgp.solver._batch import BatchSpec
from dgp.solver._batch_sources import BatchWeights
from dgp.solver._expected import (
    BOUND_ITERS,
    BOUND_MIN_BATCHES,
    HALF_WIDTH,
    MAX_EVALUATION_BATCHES,
    BatchEstimate,
)
from dgp.solver._stochastic import Estimate, evaluate, relaxation_bound

__all__ = ["held_out_estimate"]


def held_out_estimate(
    embeddings: list[np.ndarray], weights: BatchWeights, sampler, spec: BatchSpec, *,
    tau: float, seed: int, full_batch: np.ndarray | None = None, bound_batches: int = 32,
    half_width: float = HALF_WIDTH, min_batches: int = 200,
    expectation: str = "sample-average",
) -> tuple[BatchEstimate, list[Estimate]]:
    """The :class:`~dgp.solver.BatchEstimate` of ``embeddings[0]`` (unit rows, one per point of
    ``weights``) on fresh batches of ``sampler`` (the evaluation stream of
    :func:`~dgp.solver.evaluate`, which no fit used), with the per-batch relaxation bound on
    the expectation's minimum over all embeddings (:func:`~dgp.solver.relaxation_bound`: every
    dimension, no sign constraint, so it bounds a ReLU head's minimum too) and, given
    ``full_batch``, the full-batch prediction's loss on the same batches (paired).

    Returns the estimate and every embedding's :class:`~dgp.solver.Estimate` on the same
    batches (``embeddings`` in order, then ``full_batch``)."""
    cands = [np.asarray(Z, dtype=float) for Z in embeddings]
    if full_batch is not None:
        cands.append(np.asarray(full_batch, dtype=float))
    est = evaluate(cands, weights, sampler, spec, tau=tau, seed=seed, half_width=half_width,
                   min_batches=min_batches, max_batches=MAX_EVALUATION_BATCHES)
    e = est[0]
    bound = relaxation_bound(cands[0], e, weights, sampler, spec, tau=tau, seed=seed,
                             batches=bound_batches, iters=BOUND_ITERS,
                             min_batches=min(bound_batches, BOUND_MIN_BATCHES))
    fb = fb_int = fb_ex = fb_se = None
    if full_batch is not None:
        f = est[-1]
        fb, fb_int, fb_ex = f.mean, f.interval, f.mean - e.mean
        diff = f.values - e.values  # paired: the same fresh batches
        fb_se = float(diff.std(ddof=1) / math.sqrt(diff.size))
    lower = min(bound.value, e.mean)
    return BatchEstimate(
        spec=spec, expected_loss=e.mean, interval=e.interval, lower_bound=lower,
        confidence=bound.confidence, gap=e.mean - lower, full_batch_expected_loss=fb,
        full_batch_interval=fb_int, full_batch_excess=fb_ex, full_batch_excess_se=fb_se,
        batches=e.batches, bound_batches=bound.batches, steps=0, epochs=0.0, seed=seed,
        expectation=expectation,
    ), est
