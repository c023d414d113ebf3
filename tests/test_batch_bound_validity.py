"""The relaxation bound of the expected-batch optimum (dgp.solver.relaxation_bound) is a lower
bound: on small weightings whose expected-batch optimum over every Gram matrix is computed
exactly and certified (the row problem of every subset), the bound never lies above it, at
any embedding it is computed from; and it is not vacuous: from a near-optimal embedding it
lies within a few hundredths of a nat of the optimum."""

from __future__ import annotations

import numpy as np
import pytest

import dgp
from dgp.solver import (
    BatchSpec,
    DenseBatchWeights,
    SampleBatches,
    evaluate,
    relaxation_bound,
)


def _soft(N, seed):
    y = np.random.default_rng(seed).standard_normal((N, 2))
    W = np.exp(-((y[:, None] - y[None]) ** 2).sum(-1))
    np.fill_diagonal(W, 0.0)
    return W


def _unit(X):
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@pytest.mark.slow  # three certified free optima and six bounds: a few seconds each
@pytest.mark.parametrize("N,B,tau,seed", [(8, 4, 0.5, 0), (9, 4, 0.2, 1), (10, 3, 0.1, 2)])
def test_the_bound_never_lies_above_the_exact_optimum(N, B, tau, seed):
    W = _soft(N, seed)
    spec = BatchSpec(B, "uniform", None, "mean", "drop")
    opt = dgp.optimum(W, tau=tau, batch_size=B, progress=False)  # free dimension: all Grams
    assert opt.certified_global and opt.batch.exact
    best = opt.loss
    with np.errstate(divide="ignore"):
        source = DenseBatchWeights(np.log(W))
    sampler = SampleBatches(N, B)
    w, V = np.linalg.eigh(opt.gram)
    near = _unit(V[:, -3:] * np.sqrt(np.clip(w[-3:], 0.0, None)))  # its best 3-D truncation
    far = _unit(np.random.default_rng(seed).standard_normal((N, 3)))
    gaps = []
    for Z in (near, far):
        loss = evaluate([Z], source, sampler, spec, tau=tau, seed=seed, half_width=0.002,
                        min_batches=500)[0]
        bound = relaxation_bound(Z, loss, source, sampler, spec, tau=tau, seed=seed,
                                 batches=32)
        assert bound.value <= best
        assert bound.mean_gap >= 0.0  # each batch's gap is a dual certificate
        gaps.append(best - bound.value)
    assert gaps[0] < 0.05  # from the near point the bound is not vacuous
