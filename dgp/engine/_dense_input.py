"""Dense weightings as the validator reads them: a square real matrix and its unit roundoff,
and the row entropies found while the weights become log-ratios (helpers of
:func:`dgp.engine.target.log_weights`)."""

from __future__ import annotations

import threading

import numpy as np

from dgp._linalg import map_blocks
from dgp.engine._canonical import row_blocks
from dgp.engine._sparse_input import graph_weights, is_graph
from dgp.errors import ParameterError, ParameterTypeError
from dgp.resources import ROW_BLOCK_ELEMENTS, check_memory, dense_weighting_bytes


def as_matrix(M: object, name: str) -> tuple[np.ndarray, float]:
    """A square real matrix (a view when possible) and the unit roundoff of its dtype."""
    if is_graph(M):
        M = graph_weights(M, name)
    try:
        import scipy.sparse as sp

        if sp.issparse(M):
            shape = M.shape
            if len(shape) != 2 or shape[0] != shape[1]:
                raise ParameterError(name, f"must be a square N x N matrix, got shape {shape}")
            # the dense array, and beside it the validator's working copy made from it
            check_memory(8.0 * shape[0] * shape[1] + dense_weighting_bytes(shape[0]),
                         what=f"the dense {shape[0]} x {shape[1]} {name}",
                         hint="use a smaller N, or a structured objective (--objective)")
            M = M.toarray()
    except ImportError:  # pragma: no cover - scipy is a dependency
        pass
    try:
        arr = np.asarray(M)
    except (ValueError, TypeError) as exc:
        raise ParameterError(name, f"must be a real-valued N x N array ({exc})") from None
    if arr.dtype.kind == "O":
        raise ParameterTypeError(
            name, "must be an array of real numbers, got an object array (convert it with "
            "numpy.asarray(..., dtype=float) if it holds numbers)"
        )
    if arr.dtype.kind == "c":
        raise ParameterTypeError(name, f"must be real, got complex dtype {arr.dtype}")
    if arr.dtype.kind not in "biuf":
        raise ParameterTypeError(name, f"must be an array of real numbers, got dtype "
                                 f"{arr.dtype}")
    if arr.ndim != 2 or arr.shape[0] != arr.shape[1]:
        raise ParameterError(name, f"must be a square N x N matrix, got shape {arr.shape}")
    if arr.shape[0] < 2:
        raise ParameterError(
            name, f"must have at least 2 rows (one anchor and one other), got {arr.shape[0]}"
        )
    u = float(np.finfo(arr.dtype).eps) if arr.dtype.kind == "f" else float(np.finfo(float).eps)
    return arr, max(u, float(np.finfo(float).eps))


def log_ratios_entropies(L: np.ndarray, top: float) -> np.ndarray:
    r"""Overwrite the positive weights ``L`` (zero diagonal) with :math:`\log(w_{ij}/w_{\max})`
    (``-inf`` on the diagonal) and return the row entropies :math:`H(p_i)` found on the way,
    by blocks of rows (on every core, :func:`dgp._linalg.map_blocks`; each row's entropy is
    computed from its row alone): with the ratios :math:`r_{ij} = w_{ij}/w_{\max}` (normal
    floats) and :math:`S_i = \sum_{j \ne i} r_{ij}`, :math:`H(p_i) = \log S_i - \sum_j
    r_{ij}\log r_{ij} / S_i`, so the bound costs no exponential of its own
    (:func:`row_entropies` on ``L`` is the same number up to rounding)."""
    n = L.shape[0]
    H = np.empty(n)
    scratch = threading.local()  # one temporary block per thread, not one per block

    def block(sl: slice) -> None:
        blk = L[sl]
        tmp = getattr(scratch, "tmp", None)
        if tmp is None:
            tmp = scratch.tmp = np.empty(max(1, ROW_BLOCK_ELEMENTS // n) * n)
        r = tmp[: blk.size].reshape(blk.shape)
        np.divide(blk, top, out=r)  # the ratios, 0 on the diagonal
        k = np.arange(blk.shape[0])
        diag = (k, k + sl.start)
        r[diag] = 1.0  # log 1 = 0: the diagonal drops out of the sum of r log r
        np.log(r, out=blk)  # the logarithms land where they are kept: no copy back
        r[diag] = 0.0
        tot = r.sum(axis=1)
        H[sl] = np.log(tot) - np.einsum("ij,ij->i", r, blk) / tot
        blk[diag] = -np.inf

    map_blocks(block, list(row_blocks(n)))
    return H
