"""Each label kernel has one formula (:func:`dgp.solver.gaussian_log_kernel`,
:func:`dgp.solver.inner_product_log_kernel`): the blocks a batch reads, the rows the full-batch
loss reads and the objectives' batch log-weights all come from it, and it agrees with the
kernel written from its definition."""

from __future__ import annotations

import numpy as np
import pytest

import dgp
from dgp.solver import (
    GaussianKernelWeights,
    InnerProductKernelWeights,
    gaussian_log_kernel,
    inner_product_log_kernel,
    weight_rows,
)


def _labels(seed, n=60, p=3):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, p)) * 3.0 + 1.5


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_gaussian_formula_is_its_definition_and_symmetric(seed):
    y = _labels(seed)
    a, b = y[:7], y[5:]
    direct = -((a[:, None, :] - b[None, :, :]) ** 2).sum(-1) / (2.0 * 0.8**2)
    np.testing.assert_allclose(gaussian_log_kernel(a, b, 0.8**2), direct, rtol=1e-12,
                               atol=1e-12 * np.abs(direct).max())
    block = gaussian_log_kernel(y, y, 0.5)
    assert np.array_equal(block, block.T) and (block <= 0).all()


@pytest.mark.parametrize("seed", [0, 1])
def test_rows_and_blocks_of_a_kernel_are_the_same_numbers(seed):
    """The full-batch rows (``weight_rows``) are the batch blocks' entries (to rounding: a
    block is one symmetric product, rows a general one), the own entry ``-inf``, for both
    kernels."""
    y = _labels(seed)
    f = y / np.linalg.norm(y, axis=1, keepdims=True)
    rows = np.array([0, 11, 59])
    full = np.arange(y.shape[0])
    for src in (GaussianKernelWeights(y, 0.9), InnerProductKernelWeights(f, 0.4)):
        read = weight_rows(src)
        assert read is not None
        R = read(rows)
        B = src.log_block(full)[rows]
        own = np.zeros_like(R, dtype=bool)
        own[np.arange(rows.size), rows] = True
        assert (R[own] == -np.inf).all() and (B[own] == -np.inf).all()
        np.testing.assert_allclose(R[~own], B[~own], rtol=1e-13, atol=1e-13)


def test_an_objectives_batch_log_weights_are_the_solvers_kernel():
    """y-Aware's and X-CLR's batch blocks read from their labels equal the solver's kernel
    sources' blocks (one formula), off the diagonal."""
    y = _labels(4, n=30)
    idx = np.array([1, 4, 9, 20, 29])
    off = ~np.eye(idx.size, dtype=bool)
    ya = dgp.Problem(objective="y-aware", labels=y, sigma=0.7, tau=0.5).batch_source()
    assert np.array_equal(ya.log_block(idx)[off],
                          GaussianKernelWeights(y, 0.7).log_block(idx)[off])
    xc = dgp.Problem(objective="x-clr", labels=y, label_tau=0.3, tau=0.5).batch_source()
    f = y / np.linalg.norm(y, axis=1, keepdims=True)
    np.testing.assert_allclose(xc.log_block(idx)[off],
                               InnerProductKernelWeights(f, 0.3).log_block(idx)[off],
                               rtol=1e-14)
    fi = f[idx]
    np.testing.assert_allclose(inner_product_log_kernel(fi, fi, 0.3), (fi @ fi.T) / 0.3,
                               rtol=0, atol=0)


@pytest.mark.parametrize("offset", [0.0, 1e4, 1e7])
def test_translated_labels_give_the_same_weights(offset):
    """The kernel depends on differences only: labels translated far from the origin give the
    weights of the untranslated ones to the precision of the labels themselves (inner
    products of raw labels moved them by 0.055 at 1e7), in blocks and rows alike; a
    non-contiguous or float32 block is exactly symmetric and float64."""
    y = _labels(0)
    idx = np.arange(y.shape[0])
    ref = GaussianKernelWeights(y, 0.7).log_block(idx)
    moved = GaussianKernelWeights(y + offset, 0.7)
    finite = np.isfinite(ref)
    # what the translated labels can still represent: their rounding, relative to a distance
    tol = 1e-12 + 64 * np.finfo(float).eps * offset * np.abs(y).max() / 0.7**2
    np.testing.assert_allclose(moved.log_block(idx)[finite], ref[finite], rtol=0, atol=tol)
    np.testing.assert_allclose(weight_rows(moved)(idx)[finite], ref[finite], rtol=0, atol=tol)
    for a in (y[:, ::2], y.astype(np.float32)):
        block = gaussian_log_kernel(a, a, 0.5)
        assert block.dtype == np.float64 and np.array_equal(block, block.T)
