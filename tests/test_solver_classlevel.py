"""The class-block batch loss (dgp.solver._classlevel) equals the general batch loss of the
solver on the same batches (two implementations agreeing), gradient included."""

from __future__ import annotations

import numpy as np
import pytest

from dgp.solver import BatchSpec, ClassBatches
from dgp.solver._batch_sources import batch_loss
from dgp.solver._classlevel import class_batch_loss


@pytest.mark.parametrize("eps", [None, 0.05, 0.5])
@pytest.mark.parametrize("reduction, drop", [("mean", "drop"), ("mean", "zero"), ("sum", "drop")])
@pytest.mark.parametrize("sampler", ["uniform", "class-balanced"])
def test_class_block_loss_equals_the_general_batch_loss(eps, reduction, drop, sampler):
    K, d, B, tau = 60, 16, 32, 0.2
    sizes = np.maximum(2, np.round(300 * 0.01 ** (np.arange(K) / (K - 1)))).astype(np.int64)
    spec = BatchSpec(B, sampler, None, reduction, drop)
    rng = np.random.default_rng(5)
    Z = rng.standard_normal((K, d))
    Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    W = np.eye(K) if eps is None else np.where(np.eye(K, dtype=bool), 1.0, eps)
    with np.errstate(divide="ignore"):
        L = np.log(W)
    src = ClassBatches(sizes, spec)
    for _ in range(25):
        idx, m = src.draw(rng)
        ref, g_ref = batch_loss(Z[idx], m, L[np.ix_(idx, idx)], tau=tau, spec=spec)
        got, g = class_batch_loss(Z[idx], m, tau=tau, spec=spec, eps=eps)
        assert got == pytest.approx(ref, rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(g, g_ref, rtol=1e-10, atol=1e-13)
        only, none = class_batch_loss(Z[idx], m, tau=tau, spec=spec, eps=eps, gradient=False)
        assert none is None and only == pytest.approx(ref, rel=1e-12, abs=1e-14)


def test_a_batch_without_positives_is_zero_under_supcon():
    spec = BatchSpec(3, "uniform", None, "mean", "drop")
    Zb = np.eye(3)
    loss, g = class_batch_loss(Zb, np.ones(3), tau=0.1, spec=spec)
    assert loss == 0.0 and not g.any()
