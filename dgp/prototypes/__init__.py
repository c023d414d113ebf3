r"""Class prototypes of SupCon and Soft SupCon: closed forms, the certified solver, KKT
certificates and mini-batch predictions.

Under SupCon every class collapses to one prototype on the unit sphere and the prototype Gram
solves a ``K x K`` convex problem over the elliptope (:mod:`dgp.prototypes._api`). This package
holds

* the closed forms (:mod:`~dgp.prototypes._closed_forms`): the regular simplex of balanced
  SupCon, Soft SupCon's equiangular :math:`\rho = 1 + \tau\log\varepsilon` below
  :math:`\tau^* = K/((K-1)(-\log\varepsilon))`, the first-order small-:math:`\tau` approximation
  under imbalance and the nearest point of the elliptope;
* the convex program of every solver in dgp, a weighted sum of log-sum-exp rows in log space
  (:mod:`~dgp.prototypes._program`), its certified solver (:mod:`~dgp.prototypes._solver`:
  Burer–Monteiro with L-BFGS, a Riemannian trust region and a dual Newton polish) and KKT
  certificates computed from the solution alone (:mod:`~dgp.prototypes._kkt`,
  :mod:`~dgp.prototypes._lift`);
* mini-batch predictions: the expected loss of uniform, class-balanced and m-per-class
  samplers (:mod:`~dgp.prototypes._batch`).
"""

from dgp.display import format_nats, format_summary, html_summary
from dgp.prototypes._api import (
    BatchTolerance,
    batch_size_for_tolerance,
    block_weights,
    kkt_certificate,
    prototype_loss,
    supcon_prototypes,
)
from dgp.prototypes._batch import (
    NO_POSITIVE,
    REDUCTIONS,
    SAMPLERS,
    BatchSpec,
    Compositions,
    batch_rows,
    check_batch,
    compositions,
    positive_pair_probability,
)
from dgp.prototypes._closed_forms import (
    METHODS,
    entropic_bound_prototypes,
    equiangular_gram,
    first_order_gram,
    nearest_elliptope,
    soft_supcon_rho,
    soft_supcon_tau_star,
)
from dgp.prototypes._guards import check_time, time_budget
from dgp.prototypes._kkt import KKTCertificate, row_certificate
from dgp.prototypes._lift import LiftCertificate, face_uniqueness, lift_certificate
from dgp.prototypes._program import BlockForm, RowProblem, block_problem, scaled_softplus
from dgp.prototypes._result import (
    GRAM_JSON_MAX_K,
    BatchPrediction,
    FirstOrderApproximation,
    Identifiability,
    Prototypes,
    gram_summary,
)
from dgp.prototypes._solver import (
    SolveResult,
    bm_lbfgs,
    bm_lbfgs_linear,
    factor,
    frank_wolfe_bound,
    lbfgs,
    rtr,
    single_threaded,
    solve_rows,
)

__all__ = [
    "GRAM_JSON_MAX_K",
    "METHODS",
    "NO_POSITIVE",
    "REDUCTIONS",
    "SAMPLERS",
    "BatchPrediction",
    "BatchSpec",
    "BatchTolerance",
    "BlockForm",
    "Compositions",
    "FirstOrderApproximation",
    "Identifiability",
    "KKTCertificate",
    "LiftCertificate",
    "Prototypes",
    "RowProblem",
    "SolveResult",
    "batch_rows",
    "batch_size_for_tolerance",
    "block_problem",
    "block_weights",
    "bm_lbfgs",
    "bm_lbfgs_linear",
    "check_batch",
    "check_time",
    "compositions",
    "entropic_bound_prototypes",
    "equiangular_gram",
    "face_uniqueness",
    "factor",
    "first_order_gram",
    "format_nats",
    "format_summary",
    "frank_wolfe_bound",
    "gram_summary",
    "html_summary",
    "kkt_certificate",
    "lbfgs",
    "lift_certificate",
    "nearest_elliptope",
    "positive_pair_probability",
    "prototype_loss",
    "row_certificate",
    "rtr",
    "scaled_softplus",
    "single_threaded",
    "soft_supcon_rho",
    "soft_supcon_tau_star",
    "solve_rows",
    "supcon_prototypes",
    "time_budget",
]
