r"""Mini-batch predictions for a general weighting: the expected loss over sampled index subsets.

A uniform batch of ``B`` samples drawn without replacement contains :math:`m_c` samples of each
twin class (multivariate hypergeometric); on a subset the rows of ``W`` are renormalised over the
batch, so an anchor of class ``c`` puts target mass :math:`\propto (m_d - [d = c])\,w_{cd}` on
class ``d`` and *has positives* when that mass is positive. The expected batch loss over the
compositions ``m`` is the same row problem as for class objectives
(:mod:`dgp.solver._batch`), with the reduction and the treatment of anchors without
positives stated there. With every sample its own class (no twins), compositions are index
subsets: exact over all :math:`\binom{N}{B}` of them when few, else a seeded sample average.
"""

from __future__ import annotations

import numpy as np

from dgp.optima._structure import Quotient
from dgp.solver import BatchEstimate, BatchPrediction, BatchSpec, Compositions

__all__ = ["batch_prediction", "positive_pair_probability_from"]


def positive_pair_probability_from(comps: Compositions, weights: np.ndarray) -> np.ndarray:
    """Probability (over the compositions) that a batch holds a positive pair of each class: an
    anchor of the class together with a sample it gives positive weight to."""
    counts = comps.counts.astype(float)
    K = counts.shape[1]
    others = counts[:, None, :] - np.eye(K)[None, :, :]  # (C, c, d)
    has = (counts > 0) & ((others * (weights[None, :, :] > 0)).sum(axis=2) > 0)
    return comps.prob @ has


def batch_prediction(
    q: Quotient,
    spec: BatchSpec,
    comps: Compositions,
    G: np.ndarray,
    G_full: np.ndarray,
    *,
    loss: float,
    lower_bound: float,
    full_batch_loss: float,
) -> BatchPrediction:
    """The exact expectation's record: its compositions, the shift from the full batch and the
    positive-pair probabilities, and the expected loss of ``G`` (``loss``) with its certified
    ``lower_bound`` and the full-batch prediction's exact expected loss (``full_batch_loss``)
    in the fields every batch result reports (:class:`dgp.solver.BatchEstimate`, confidence 1,
    an interval of zero width: nothing is sampled). Beyond exact enumeration
    :func:`dgp.optimum` takes the stochastic path of :mod:`dgp.solver._expected` instead."""
    assert comps.exact, "the row problem of optimum is solved for exact expectations only"
    count = int(comps.counts.shape[0])
    estimate = BatchEstimate(
        spec=spec, expected_loss=loss, interval=(loss, loss), lower_bound=lower_bound,
        confidence=1.0, gap=loss - lower_bound, full_batch_expected_loss=full_batch_loss,
        full_batch_interval=(full_batch_loss, full_batch_loss),
        full_batch_excess=full_batch_loss - loss, full_batch_excess_se=0.0, batches=count,
        bound_batches=0, steps=0, epochs=0.0, seed=0 if comps.seed is None else comps.seed,
        expectation="exact",
    )
    return BatchPrediction(
        spec=spec, exact=True, compositions=count,
        drawn=comps.drawn, seed=comps.seed, loss_se=None, gram_se=None, replicates=0,
        full_batch_gram=G_full, shift=float(np.abs(G - G_full).max()),
        positive_pair_probability=tuple(
            float(p) for p in positive_pair_probability_from(comps, q.weights)
        ),
        estimate=estimate,
    )
