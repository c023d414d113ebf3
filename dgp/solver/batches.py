r"""The expected mini-batch loss at dataset scale (DESIGN section 13): one page of the API for
the names :mod:`dgp.solver` exports from its stochastic, finite-sum and driver modules.

* :mod:`~dgp.solver._batch_sources`: the batch loss of one composition (prepared once per
  batch: :class:`RowBatch`), the weight sources read one batch at a time (the label kernels'
  one formula each, :func:`gaussian_log_kernel` and :func:`inner_product_log_kernel`, for
  their batch blocks and full-batch rows) and the samplers;
* :mod:`~dgp.solver._stochastic`: the Riemannian Adam on fresh batches, the held-out
  evaluation and the per-batch relaxation bound;
* :mod:`~dgp.solver._classlevel`: the class-block weights of collapsed classes
  (:class:`ClassBlockWeights`), whose batch loss needs no ``u x u`` target;
* :mod:`~dgp.solver._finite`: the exact expectation over every subset of a sample-level
  weighting, minimised on the spheres with its dual bound;
* :mod:`~dgp.solver._expected`: the driver (:func:`batch_optimum`), its result
  (:class:`BatchOptimum`) and the identifiability report;
* :mod:`~dgp.solver._held_out`: the same report for embeddings fitted elsewhere
  (:func:`held_out_estimate`: the ReLU head's class factor, fitted on sampled compositions);
* :mod:`~dgp.solver._sphere_lbfgs`: the one L-BFGS descent on the product of spheres that the
  finite sum and the per-batch relaxation share.

:mod:`dgp.solver` re-exports exactly this module's ``__all__`` (one list of these names).
"""

from dgp.solver import _batch_sources, _stochastic
from dgp.solver._batch_result import paired_loss_verdict
from dgp.solver._batch_sources import *  # noqa: F403  (its __all__, listed once there)
from dgp.solver._classlevel import (
    ClassBlockWeights,
    class_batch_loss,
    class_batch_terms,
    class_block_batch,
)
from dgp.solver._exact_batch import finite_batch_optimum
from dgp.solver._expected import (
    BatchCertificate,
    BatchEstimate,
    BatchIdentifiability,
    BatchOptimum,
    batch_optimum,
    bound_note,
    identifiability_report,
    interval_note,
    quotient_batch_optimum,
)
from dgp.solver._finite import (
    FINITE_MAX_ENTRIES,
    FiniteBatches,
    FiniteSolution,
    all_subsets,
    finite_batches,
    solve_finite,
)
from dgp.solver._held_out import held_out_estimate
from dgp.solver._sphere_lbfgs import sphere_lbfgs
from dgp.solver._stochastic import *  # noqa: F403  (its __all__, listed once there)

__all__ = [
    "FINITE_MAX_ENTRIES",
    "BatchCertificate",
    "BatchEstimate",
    "BatchIdentifiability",
    "BatchOptimum",
    "ClassBlockWeights",
    "FiniteBatches",
    "FiniteSolution",
    "all_subsets",
    "batch_optimum",
    "bound_note",
    "class_batch_loss",
    "class_batch_terms",
    "class_block_batch",
    "finite_batch_optimum",
    "finite_batches",
    "held_out_estimate",
    "identifiability_report",
    "interval_note",
    "paired_loss_verdict",
    "quotient_batch_optimum",
    "solve_finite",
    "sphere_lbfgs",
    *_batch_sources.__all__,
    *_stochastic.__all__,
]
