r"""The true minimiser of a cosine w-InfoNCE loss: free dimension or ``R^d``, full batch or
mini-batches, with certificates computed from the solution.

* :func:`optimum` — the minimiser of ``W``'s loss (:mod:`~dgp.optimum._api`): twins (samples
  with identical rows and columns) merged into a quotient with multiplicities
  (:mod:`~dgp.optimum._structure`), the convex program solved by the certified log-space solver
  of :mod:`dgp.prototypes`, the rank-``d`` optimum by Burer–Monteiro
  (:mod:`~dgp.optimum._rank`), the expected loss of uniform mini-batches
  (:mod:`~dgp.optimum._batch`);
* :func:`loss_floor`, :func:`block_loss_floor` — the certified loss floor (excess over the
  entropic bound) in dimension ``d`` of a dense weighting, or of a class-block weighting given
  only class sizes and within/cross weights.
"""

from dgp.optimum._api import FREE_MAX_K, block_loss_floor, loss_floor, optimum
from dgp.optimum._batch import batch_prediction, positive_pair_probability_from
from dgp.optimum._rank import rank_d_solve, spectral_start, truncate
from dgp.optimum._result import GRAM_JSON_MAX_N, LossFloor, Optimum
from dgp.optimum._structure import Quotient, quotient, trivial_quotient

__all__ = [
    "FREE_MAX_K",
    "GRAM_JSON_MAX_N",
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
