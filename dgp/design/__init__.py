r"""Design tools: phase maps over a grid of parameters, inverse questions answered with
certificates, and the loss floors that explain a training curve's plateau.

Three questions users ask before they train, answered from the same engine as
:func:`dgp.classify`:

* :func:`phase` — the verdict (realizable, degenerate, inconsistent), the rank, the ends of the
  ``c`` interval and, where the bound cannot be attained, the excess loss of the optimum, on a
  grid of one or two parameters: :math:`(\tau, \varepsilon)` for Soft SupCon,
  :math:`(\tau, \sigma)` for y-Aware and Euclidean–Euclidean, :math:`(\tau, \tau_y)` for X-CLR,
  :math:`(\tau, \text{imbalance ratio})` for SupCon, :math:`(\tau, d)` for any weighting. Where a
  closed form exists the exact boundary (below) is computed, drawn over the grid and checked
  cell by cell (:class:`Boundary`). Cells are independent, so a sweep runs in parallel through
  joblib (``jobs``) or on a Dask cluster (``scheduler``); each cell is computed with one BLAS
  thread, so the map is the same bit for bit whichever runs it.
* :func:`recommend` — the inverse questions: the largest :math:`\tau` at which a weighting stays
  realizable in :math:`\mathbb R^d`; the :math:`\tau` (or :math:`\varepsilon`) at which Soft
  SupCon's target is the centred regular simplex; the largest :math:`\tau` keeping every
  minority-pair prototype cosine below a threshold; the smallest :math:`d` attaining the bound.
  Each answer is found by a scan and a bisection on the engine's own verdicts and comes with a
  certificate: the verdicts (or cosines) on both sides of the returned value, and the closed
  form where one exists.
* :func:`loss_floors` — for an objective and sizes, the optimal loss (the floor a training
  curve cannot cross), the loss of the collapsed configuration (every embedding at one point)
  and the expected loss of a random embedding, per anchor in the reduction conventions of
  pytorch-metric-learning's ``SupConLoss`` and of the SupContrast reference (base temperature
  included).

The closed-form boundaries:

.. math::

    \text{Soft SupCon: } \tau^* = \frac{K}{(K-1)(-\log\varepsilon)}, \qquad
    \text{y-Aware (labels on a sphere of radius } R\text{): } \tau R^2 = \sigma^2, \qquad
    \text{X-CLR: } \tau R^2 = \tau_y .

Excess loss of the optimum, where the bound is not attained in :math:`\mathbb R^d`
(:data:`EXCESS_SOURCES`): for SupCon and Soft SupCon, from the certified class prototypes of
:func:`dgp.supcon_prototypes` whenever their rank fits in :math:`d`; for other cosine weightings
from ``dgp.optimum(W, tau=..., dim=...)`` once it accepts a dimension; otherwise the cell
says it is not computed and why, rather than reporting a number that may be wrong.
"""

from dgp.design._closed_form import Boundary, balanced_soft_supcon_simplex
from dgp.design._common import imbalanced_sizes
from dgp.design._floors import LossFloors, log_mgf_cosine, loss_floors
from dgp.design._parameters import (
    CONVENTIONS,
    EXCESS_SOURCES,
    GENERAL_OPTIMUM_MAX_N,
    GRID_PARAMETERS,
    MAX_CELLS,
    PROFILES,
    PROTOTYPES_TAU_MIN,
    SUPCONTRAST_BASE_TEMPERATURE,
    WANTS,
)
from dgp.design._recommend import Recommendation, parse_want, recommend
from dgp.design._sweep import PhaseMap, dask_local_cluster, phase

__all__ = [
    "CONVENTIONS",
    "EXCESS_SOURCES",
    "GENERAL_OPTIMUM_MAX_N",
    "GRID_PARAMETERS",
    "MAX_CELLS",
    "PROFILES",
    "PROTOTYPES_TAU_MIN",
    "SUPCONTRAST_BASE_TEMPERATURE",
    "WANTS",
    "Boundary",
    "LossFloors",
    "PhaseMap",
    "Recommendation",
    "balanced_soft_supcon_simplex",
    "dask_local_cluster",
    "imbalanced_sizes",
    "log_mgf_cosine",
    "loss_floors",
    "parse_want",
    "phase",
    "recommend",
]
