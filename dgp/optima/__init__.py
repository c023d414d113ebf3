r"""The true minimiser of a cosine w-InfoNCE loss: free dimension or ``R^d``, full batch or
mini-batches, with certificates computed from the solution.

* :func:`optimum` — the minimiser of ``W``'s loss (:mod:`~dgp.optima._api`): twins (samples
  with identical rows and columns) merged into a quotient with multiplicities
  (:mod:`~dgp.optima._structure`) and the weights brought to their canonical scale, by the
  reductions chosen in one place, each owning its inverse (:mod:`~dgp.optima._reductions`:
  the analysis runs on the reduced problem and is lifted back once), the convex program
  solved by the certified log-space solver of :mod:`dgp.prototypes`, the rank-``d`` optimum
  by Burer–Monteiro (:mod:`dgp.solver._rank`), the expected loss of uniform mini-batches
  (:mod:`~dgp.optima._batch`), exact over every composition when few, else found on fresh
  batches and reported on others (:mod:`~dgp.optima._batch_paths`, :mod:`dgp.solver._expected`,
  a :class:`BatchOptimum`); uniform or, for class labels, class-balanced batches;
* :func:`loss_floor`, :func:`block_loss_floor` — the certified loss floor (excess over the
  entropic bound) in dimension ``d`` of a dense weighting, or of a class-block weighting given
  only class sizes and within/cross weights (:mod:`~dgp.optima._floors`).
"""

from dgp.optima._api import FREE_MAX_K, optimum
from dgp.optima._batch import batch_prediction, positive_pair_probability_from
from dgp.optima._floors import block_loss_floor, loss_floor
from dgp.optima._result import GRAM_JSON_MAX_N, LossFloor, Optimum
from dgp.optima._structure import Quotient, quotient, trivial_quotient
from dgp.solver import (
    BatchEstimate,
    BatchIdentifiability,
    BatchOptimum,
    rank_d_solve,
    spectral_start,
    truncate,
)

__all__ = [
    "FREE_MAX_K",
    "GRAM_JSON_MAX_N",
    "BatchEstimate",
    "BatchIdentifiability",
    "BatchOptimum",
    "LossFloor",
    "Optimum",
    "Quotient",
    "batch_prediction",
    "block_loss_floor",
    "loss_floor",
    "optimum",
    "positive_pair_probability_from",
    "quotient",
    "rank_d_solve",
    "spectral_start",
    "trivial_quotient",
    "truncate",
]
