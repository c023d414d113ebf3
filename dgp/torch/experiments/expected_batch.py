r"""Sample-level predictions for mini-batch training, and the paired losses that decide between
them (DESIGN §11, §13).

A sample-level weighting (X-CLR, y-Aware, soft labels) has no class structure to enumerate, so
the prediction for a trainer's uniform batches of size ``B`` in dimension ``d`` is the
expected-batch optimum found on fresh batches (:func:`dgp.optimum` with ``batch_size`` and
``dim``, a :class:`dgp.BatchOptimum` beyond exact enumeration). Its alternative is the
full-batch optimum in the same dimension. Every loss used to decide is measured on fresh
batches that no optimiser saw, paired: all embeddings on the same batches
(:func:`dgp.solver.evaluate`).

Held-out predictions: a held-out sample is predicted at the embedding of the training sample
with the nearest label (:func:`nearest_label_rows`), for the batch and the full-batch
prediction alike. A prediction made afresh from the held-out labels alone would be the optimum
of another problem (fewer samples than a batch, for the held-out sets used here, where batch
and full batch coincide).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.errors import InputError
from dgp.metrics import procrustes_r2

__all__ = [
    "FULL_BATCH_ITERS",
    "SamplePrediction",
    "full_batch_descent",
    "nearest_label_rows",
    "paired_losses",
    "sample_prediction",
]

#: L-BFGS iterations of the full-batch optimum computed here (above the size that
#: :func:`dgp.optimum` solves in a fixed dimension within its time budget)
FULL_BATCH_ITERS = 600
#: the full-batch optimum in ``dim`` is taken from :func:`dgp.optimum` up to this many samples,
#: computed here by a full-gradient descent above (dgp refuses its rank-d search at N = 2000)
DGP_FULL_BATCH_MAX_N = 1000
#: fresh batches of a paired evaluation: at least, and at most
EVAL_MIN_BATCHES = 200
EVAL_MAX_BATCHES = 2000


@dataclass(frozen=True, eq=False)
class SamplePrediction:
    """The expected-batch prediction, its full-batch alternative and how to score batches.

    Attributes
    ----------
    batch : ndarray, shape (n, dim)
        Unit rows: the expected-batch optimum.
    full : ndarray, shape (n, dim)
        Unit rows: the full-batch optimum in ``dim``.
    source : dgp.solver.BatchWeights
        The weighting, read one batch at a time.
    spec : dgp.solver.BatchSpec
        The trainer's batches (uniform, ``batch_size``; reduction ``mean``: nats per anchor).
    tau : float
    info : dict
        JSON: the prediction's expected loss, its 95% interval and half-width, lower bound,
        gap, the full-batch excess with its standard error (paired, on fresh batches), whether
        dgp kept the full-batch optimum (no stochastic run beat it beyond noise), the
        identifiability report and the seconds spent.
    """

    batch: np.ndarray
    full: np.ndarray
    source: Any
    spec: Any
    tau: float
    info: dict[str, Any]

    @property
    def half_width(self) -> float:
        return float(self.info["half_width"])


def _unit(Z: np.ndarray) -> np.ndarray:
    Z = np.asarray(Z, dtype=float)
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def full_batch_descent(source: Any, spec: Any, *, tau: float, starts: list[np.ndarray],
                       iters: int = FULL_BATCH_ITERS) -> tuple[np.ndarray, float]:
    """The full-batch optimum in the starts' dimension by L-BFGS on the product of spheres
    (rows normalised inside the objective), the whole set as one batch
    (:func:`dgp.solver.batch_loss`); the best of ``starts`` by the full-batch loss. Returns
    unit rows and their full-batch loss (per anchor)."""
    from dgp.solver import batch_loss, sphere_lbfgs

    n = source.n
    idx = np.arange(n)
    L = source.log_block(idx)
    ones = np.ones(n)

    def value_grad(Z: np.ndarray) -> tuple[float, np.ndarray]:
        return batch_loss(Z, ones, L, tau=tau, spec=spec)

    best: tuple[np.ndarray, float] | None = None
    for Z0 in starts:
        Z, _ = sphere_lbfgs(value_grad, _unit(Z0), maxiter=iters, gtol=1e-9, ftol=1e-14)
        Z = _unit(Z)
        f = batch_loss(Z, ones, L, tau=tau, spec=spec, gradient=False)[0]
        if best is None or f < best[1]:
            best = (Z, float(f))
    assert best is not None
    return best


def sample_prediction(problem: Any, *, dim: int, batch_size: int, seed: int) -> SamplePrediction:
    """The expected-batch prediction of ``problem`` (a :class:`dgp.Problem` built from labels)
    for uniform batches of ``batch_size`` in ``R^dim``, and its full-batch alternative.

    :func:`dgp.optimum` of the problem itself with ``batch_size`` and ``dim`` gives the
    prediction (exact where the batches can be enumerated, else found on fresh batches read
    from the labels in log space, with a held-out interval). The
    full-batch optimum in ``dim`` comes from :func:`dgp.optimum` without ``batch_size`` up to
    :data:`DGP_FULL_BATCH_MAX_N` samples; above, from :func:`full_batch_descent` started at
    the batch prediction (dgp's rank-d search refuses N = 2000 on time; a second, random
    start would double the cost and is not made: the alternative is the full-batch optimum of
    the prediction's basin). Both are evaluated on the same fresh batches
    (:func:`paired_losses`), so the full-batch excess and its standard error are measured
    here, on batches of a stream of their own, whichever path gave the prediction.
    """
    from dgp.optima import optimum
    from dgp.solver import BatchOptimum, SampleBatches, check_batch

    n = problem.n_samples
    if not 2 <= batch_size < n:
        raise InputError(f"batch_size must be in [2, {n - 1}] for a batch prediction, "
                         f"got {batch_size}")
    t0 = time.monotonic()
    # the problem itself, not its dense weights: beyond exact enumeration dgp reads each batch
    # from the labels in log space (a sharp kernel's dense weights underflow to zero, and a
    # batch whose present weights all underflowed would drop an anchor the trainer keeps)
    res = optimum(problem, dim=dim, batch_size=batch_size, seed=seed, replicates=1,
                  progress=False)
    t_batch = time.monotonic() - t0
    # a BatchOptimum of twin classes has one row per class; sample_embedding one per sample
    P = _unit(res.sample_embedding)
    source = problem.batch_source()
    batch = getattr(res, "batch", None)
    if isinstance(res, BatchOptimum):
        spec = res.batch.spec
        lo, hi = res.batch.interval
        kept_full = res.batch.steps == 0
        ident = res.identifiability
        ident_d = None if ident is None else {
            "identifiable": bool(ident.identifiable), "pinned": dict(ident.pinned),
            "spread": dict(ident.spread), "resolution": float(ident.resolution),
            "statement": ident.statement,
        }
        info: dict[str, Any] = {
            "path": "stochastic (dgp.BatchOptimum: fresh batches, held-out interval)",
            "expected_loss": float(res.batch.expected_loss), "interval": [lo, hi],
            "half_width": (hi - lo) / 2.0, "lower_bound": float(res.batch.lower_bound),
            "gap": float(res.batch.gap), "epochs": float(res.batch.epochs),
            "kept_full_batch": bool(kept_full),
            "dgp_full_batch_excess": res.batch.full_batch_excess,
            "dgp_full_batch_excess_se": res.batch.full_batch_excess_se,
            "identifiability": ident_d,
        }
    else:  # exact: every composition enumerated; the loss is the exact expectation
        spec = check_batch(np.ones(n, dtype=np.int64), batch_size=batch_size,
                           sampler="uniform", samples_per_class=None, reduction="mean",
                           anchors_without_positives="drop")
        info = {"path": "exact (every batch enumerated)", "half_width": 0.0,
                "kept_full_batch": False, "identifiability": None,
                "expected_loss": None if batch is None else float(res.loss)}
    t1 = time.monotonic()
    if n <= DGP_FULL_BATCH_MAX_N:
        A = _unit(np.asarray(optimum(problem.solver_weights(), tau=problem.tau, dim=dim,
                                     seed=seed, progress=False).embedding))
        info["full_batch_path"] = f"dgp.optimum(dim={dim}) (rank-d search)"
    else:
        full_spec = check_batch(np.ones(n, dtype=np.int64), batch_size=n, sampler="uniform",
                                samples_per_class=None, reduction="mean",
                                anchors_without_positives="drop")
        A, _ = full_batch_descent(source, full_spec, tau=problem.tau, starts=[P])
        info["full_batch_path"] = (f"L-BFGS on the full-batch loss in d = {dim} "
                                   f"({FULL_BATCH_ITERS} iterations at most), started at the "
                                   "batch prediction")
    info["seconds"] = {"batch": t_batch, "full_batch": time.monotonic() - t1}
    if info["kept_full_batch"]:  # dgp's answer is its own full-batch optimum: the same point
        A = P.copy()
    info["batch_vs_full_procrustes_r2"] = float(procrustes_r2(P, A))
    pred = SamplePrediction(P, A, source, spec, float(problem.tau), info)
    est = paired_losses([P, A], pred, SampleBatches(n, batch_size), seed=[seed, 91])
    diff = est[1].values - est[0].values
    se = float(diff.std(ddof=1) / math.sqrt(diff.size)) if diff.size > 1 else 0.0
    info["full_batch_excess"] = float(diff.mean())
    info["full_batch_excess_se"] = se
    info["evaluation_batches"] = int(diff.size)
    return pred


def paired_losses(embeddings: list[np.ndarray], pred: SamplePrediction, sampler: Any, *,
                  seed: Any) -> list[Any]:
    """Expected batch loss (nats per anchor) of each embedding on the same fresh batches
    (:func:`dgp.solver.evaluate`), at least :data:`EVAL_MIN_BATCHES`, until every 95%
    half-width is at most 0.002 nats or :data:`EVAL_MAX_BATCHES` are spent. ``seed`` names the
    stream: give each use its own."""
    from dgp.solver import evaluate

    s = int(np.random.default_rng(seed).integers(2**31 - 1))
    return evaluate([_unit(Z) for Z in embeddings], pred.source, sampler, pred.spec,
                    tau=pred.tau, seed=s, min_batches=EVAL_MIN_BATCHES,
                    max_batches=EVAL_MAX_BATCHES)


def nearest_label_rows(y_train: np.ndarray, y_test: np.ndarray) -> np.ndarray:
    """For each held-out label, the index of the training sample with the nearest label
    (Euclidean; ties to the first)."""
    yt = np.asarray(y_train, dtype=float).reshape(len(y_train), -1)
    ys = np.asarray(y_test, dtype=float).reshape(len(y_test), -1)
    d2 = np.sum(ys**2, axis=1)[:, None] + np.sum(yt**2, axis=1)[None, :] - 2.0 * ys @ yt.T
    return np.argmin(d2, axis=1)
