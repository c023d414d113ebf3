r"""Class prototypes of SupCon and Soft SupCon: closed forms, the certified solver, KKT
certificates and mini-batch predictions.

Under SupCon every class collapses to one prototype on the unit sphere and the prototype Gram
solves a ``K x K`` convex problem over the elliptope (:mod:`dgp.prototypes._api`). This package
holds

* the closed forms (:mod:`~dgp.prototypes._closed_forms`): the regular simplex of balanced
  SupCon, Soft SupCon's equiangular :math:`\rho = 1 + \tau\log\varepsilon` below
  :math:`\tau^* = K/((K-1)(-\log\varepsilon))`, the first-order small-:math:`\tau` approximation
  under imbalance and the nearest point of the elliptope; and the KKT certificate of an
  equiangular closed form from its structure at any number of classes
  (:mod:`~dgp.prototypes._equiangular_kkt`);
* the prototypes of a ReLU head (:mod:`~dgp.prototypes._nonnegative`): non-negative
  coordinates, the orthogonal frame where it is optimal, and a certified doubly non-negative
  bound otherwise;
* the rooms of the entry point :func:`supcon_prototypes` (:mod:`~dgp.prototypes._api`, the
  full batch): a fixed dimension in one place (:mod:`~dgp.prototypes._dim`), the mini-batch
  paths over enumerable compositions (:mod:`~dgp.prototypes._batched`) and beyond them, on
  fresh batches (:mod:`~dgp.prototypes._sampled`); every path builds its result once, with
  the problem's class labels, and the result settles what the loss pins as it is made
  (:mod:`~dgp.prototypes._ident`);
* the prototype problem handed to the solver floor, :mod:`dgp.solver` (the convex program in
  log space, its certified solver, KKT and lift certificates, and the batch compositions of
  uniform, class-balanced and m-per-class samplers), which :mod:`dgp.optima` uses too.
"""

from dgp.prototypes._api import kkt_certificate, prototype_loss, supcon_prototypes
from dgp.prototypes._batched import BatchTolerance, batch_size_for_tolerance
from dgp.prototypes._blocks import block_weights
from dgp.prototypes._closed_forms import (
    METHODS,
    entropic_bound_prototypes,
    equiangular_gram,
    first_order_gram,
    nearest_elliptope,
    soft_supcon_rho,
    soft_supcon_tau_star,
)
from dgp.prototypes._collapse import (
    MINORITY_COSINE_FLOOR,
    MINORITY_GROUP_SHARE,
    MINORITY_MERGED_COSINE,
    MinorityCollapse,
    minority_collapse,
)
from dgp.prototypes._ident import Identifiability
from dgp.prototypes._nonnegative import (
    NonnegativeCertificate,
    NonnegativePrototypes,
    nonnegative_prototypes,
)
from dgp.prototypes._rates import PositivePairRates, positive_pair_rates
from dgp.prototypes._result import (
    GRAM_JSON_MAX_K,
    FirstOrderApproximation,
    Prototypes,
    gram_summary,
)

# the types and option vocabularies that appear in a Prototypes result (they live on the solver
# floor, dgp.solver, which prototypes and optimum share)
from dgp.solver import (
    NO_POSITIVE,
    REDUCTIONS,
    SAMPLERS,
    BatchPrediction,
    BatchSpec,
    KKTCertificate,
    LiftCertificate,
)

__all__ = [
    "GRAM_JSON_MAX_K",
    "METHODS",
    "MINORITY_COSINE_FLOOR",
    "MINORITY_GROUP_SHARE",
    "MINORITY_MERGED_COSINE",
    "NO_POSITIVE",
    "REDUCTIONS",
    "SAMPLERS",
    "BatchPrediction",
    "BatchSpec",
    "BatchTolerance",
    "FirstOrderApproximation",
    "Identifiability",
    "KKTCertificate",
    "LiftCertificate",
    "MinorityCollapse",
    "NonnegativeCertificate",
    "NonnegativePrototypes",
    "PositivePairRates",
    "Prototypes",
    "batch_size_for_tolerance",
    "block_weights",
    "entropic_bound_prototypes",
    "equiangular_gram",
    "first_order_gram",
    "gram_summary",
    "kkt_certificate",
    "minority_collapse",
    "nearest_elliptope",
    "nonnegative_prototypes",
    "positive_pair_rates",
    "prototype_loss",
    "soft_supcon_rho",
    "soft_supcon_tau_star",
    "supcon_prototypes",
]
