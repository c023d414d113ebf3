"""The expected batch loss of embeddings fitted elsewhere, reported on batches they were not
fitted on: the held-out evaluation, the relaxation lower bound and the full-batch comparison of
:func:`dgp.solver.batch_optimum`, for a prediction that another method fitted (the ReLU head's
class factor, fitted on a sample of compositions).

The prediction is ``embeddings[0]``, chosen before any of these batches is drawn; the others
(replicate fits) are evaluated on the same batches, so their losses are paired with it and can
say which of them are near-optimal without selecting on the reporting batches.
"""

from __future__ import annotations

import numpy as np

from dgp.solver._batch import BatchSpec
from dgp.solver._batch_result import HALF_WIDTH, MAX_EVALUATION_BATCHES, BatchEstimate
from dgp.solver._batch_sources import BatchWeights
from dgp.solver._expected import batch_estimate
from dgp.solver._stochastic import Estimate, evaluate

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
    full = est[-1] if full_batch is not None else None
    return batch_estimate(cands[0], est[0], full, weights, sampler, spec, tau=tau, seed=seed,
                          bound_batches=bound_batches, steps=0, epochs=0.0, kept_seed=seed,
                          expectation=expectation), est
