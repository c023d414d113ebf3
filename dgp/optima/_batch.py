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

import math

import numpy as np

from dgp.optima._structure import Quotient
from dgp.solver import (
    BatchPrediction,
    BatchSpec,
    Compositions,
    RowProblem,
    batch_rows,
    compositions,
    solve_rows,
)

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
    prob: RowProblem,
    comp_index: np.ndarray,
    G: np.ndarray,
    G_full: np.ndarray,
    *,
    tau: float,
    dim: int | None,
    free: object,
    replicates: int,
    seed: int,
    samples: int,
    exact_max: int,
    tol: float,
    starts: int,
) -> BatchPrediction:
    """Standard errors, the shift from the full batch and positive-pair probabilities."""
    del dim, free, starts
    loss_se = gram_se = None
    reps = 0
    if not comps.exact:
        contrib = prob.alpha * prob.row_losses(G)
        per = np.zeros(comps.prob.size)
        np.add.at(per, comp_index, contrib)
        per /= comps.prob
        mean = float(comps.prob @ per)
        var = float(comps.prob @ (per - mean) ** 2) * comps.drawn / max(comps.drawn - 1, 1)
        loss_se = math.sqrt(var / comps.drawn)
        if replicates > 0:
            grams = [G]
            for r in range(1, replicates + 1):
                c_r = compositions(q.sizes, spec, exact_max=exact_max, samples=comps.drawn,
                                   seed=seed + r)
                p_r, _ = batch_rows(c_r, q.weights, spec, tau=tau)
                grams.append(solve_rows(p_r, starts=[G], tol=tol).gram)
            gram_se = float(np.std(np.array(grams), axis=0, ddof=1).max())
            reps = replicates
    return BatchPrediction(
        spec=spec, exact=comps.exact, compositions=int(comps.counts.shape[0]),
        drawn=comps.drawn, seed=comps.seed, loss_se=loss_se, gram_se=gram_se, replicates=reps,
        full_batch_gram=G_full, shift=float(np.abs(G - G_full).max()),
        positive_pair_probability=tuple(
            float(p) for p in positive_pair_probability_from(comps, q.weights)
        ),
    )
