r"""The exact expected-batch optimum of a sample-level weighting over every ``B``-subset (the
finite sum of :mod:`dgp.solver._finite`), reported in the fields of every expected-batch
result (:class:`~dgp.solver.BatchOptimum`): the loss its exact expected value, the lower bound
certified, the full-batch optimum's exact expected loss beside it.
"""

from __future__ import annotations

import time

import numpy as np

from dgp.constants import LOSS_RESOLUTION
from dgp.solver._batch import BatchSpec
from dgp.solver._batch_result import BatchEstimate, BatchOptimum
from dgp.solver._finite import finite_batches, solve_finite
from dgp.solver._identifiability import identifiability_report

__all__ = ["finite_batch_optimum"]


def finite_batch_optimum(
    weights: np.ndarray, spec: BatchSpec, *, tau: float, dim: int, seed: int,
    full_batch: np.ndarray | None, starts: int,
) -> BatchOptimum:
    """The exact expected-batch optimum of sample-level ``weights`` (``n x n``) over every
    ``B``-subset (:func:`dgp.solver.solve_finite`): the reported loss is its exact expected
    value, the lower bound certified (confidence 1), the full-batch optimum's exact expected
    loss beside it, and the starts' solutions for the identifiability report."""
    t0 = time.monotonic()
    with np.errstate(divide="ignore"):
        L = np.log(weights)
    fb = finite_batches(L, spec.batch_size, spec, tau=tau)
    given = [] if full_batch is None else [full_batch]
    sol = solve_finite(fb, dim, starts=given, n_random=starts, seed=seed)
    fb_loss = fb_ex = None
    if full_batch is not None:
        fb_loss = fb.value_grad(full_batch, gradient=False)[0]
        fb_ex = fb_loss - sol.loss
    batch = BatchEstimate(
        spec=spec, expected_loss=sol.loss, interval=(sol.loss, sol.loss),
        lower_bound=sol.lower_bound, confidence=1.0, gap=sol.loss - sol.lower_bound,
        full_batch_expected_loss=fb_loss,
        full_batch_interval=None if fb_loss is None else (fb_loss, fb_loss),
        full_batch_excess=fb_ex, full_batch_excess_se=None if fb_ex is None else 0.0,
        batches=fb.count, bound_batches=0, steps=sol.iterations, epochs=0.0, seed=seed,
        expectation="exact",
    )
    best = int(np.argmin(sol.losses))
    # exact losses: what training resolves is the resolution (nats per anchor)
    ident = identifiability_report(list(sol.embeddings),
                                   [v * spec.per_anchor for v in sol.losses], best, seed=seed,
                                   resolution=LOSS_RESOLUTION)
    status = (f"exact over all {fb.count} batches: L-BFGS from {len(sol.losses)} starts, "
              f"Riemannian gradient {sol.gradient_norm:.2g} of its scale")
    return BatchOptimum(n=fb.n, tau=tau, dim=dim, embedding=sol.embedding, batch=batch,
                        identifiability=ident, status=status, monitor=(),
                        seconds=time.monotonic() - t0,
                        solver="L-BFGS on the product of spheres over the exact sum of every "
                        "batch; dual bound of the convex problem")
