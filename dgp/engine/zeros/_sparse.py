"""Sparse input: a weighting with zero weights decided on its graph, never densified."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from dgp.engine.rules import Context
from dgp.engine.tolerance import Tolerance
from dgp.engine.zeros._classify import classify_pattern
from dgp.engine.zeros._pattern import ZeroPattern
from dgp.result import Classification


def sparse_pattern(W: object, name: str = "W") -> tuple[ZeroPattern, float, float,
                                                         tuple[str, ...]] | None:
    r"""A sparse weighting (``scipy.sparse`` or a networkx graph) with zero weights, validated
    and canonicalised without an ``N x N`` array: ``(pattern, entropic bound, shift,
    warnings)``; ``None`` when ``W`` is not sparse or has no zero weight off the diagonal (the
    dense path then decides it).

    The checks and the canonical log-weights are those of
    :func:`dgp.engine.target.log_weights` (missing and explicit zeros are zero weights, the
    diagonal is ignored, logarithms from mantissa and exponent).

    Raises
    ------
    ParameterError
        If the matrix is not square with at least 2 rows, an entry off the diagonal is not
        finite or is negative, or a row has no positive weight off the diagonal.
    """
    from dgp.engine.target import graph_weights, is_graph
    from dgp.errors import ParameterError, ParameterTypeError

    if is_graph(W):
        W = graph_weights(W, name)
    if not sp.issparse(W):
        return None
    shape = W.shape
    if len(shape) != 2 or shape[0] != shape[1] or shape[0] < 2:
        raise ParameterError(name, f"must be a square N x N matrix with N >= 2, got shape "
                             f"{shape}")
    coo = sp.coo_matrix(W)
    if coo.dtype.kind not in "biuf":
        raise ParameterTypeError(name, f"must hold real numbers, got dtype {coo.dtype}")
    n = int(shape[0])
    r, c = coo.row.astype(np.int64), coo.col.astype(np.int64)
    v = coo.data.astype(np.float64)
    off = r != c
    r, c, v = r[off], c[off], v[off]
    bad = ~np.isfinite(v)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise ParameterError(name, f"[{r[k]}, {c[k]}] is {v[k]}; all weights must be finite")
    if (v < 0).any():
        k = int(np.flatnonzero(v < 0)[0])
        raise ParameterError(name, f"[{r[k]}, {c[k]}] = {v[k]:g} is negative; weights must be "
                             ">= 0")
    pos = v > 0
    r, c, v = r[pos], c[pos], v[pos]
    key = r * n + c
    if np.unique(key).size != key.size:  # duplicate entries of a COO matrix add up
        csr = sp.csr_matrix((v, (r, c)), shape=(n, n))
        csr.sum_duplicates()
        coo2 = csr.tocoo()
        r, c, v = coo2.row.astype(np.int64), coo2.col.astype(np.int64), coo2.data
    counts = np.bincount(r, minlength=n)
    if (counts == 0).any():
        i = int(np.flatnonzero(counts == 0)[0])
        raise ParameterError(name, f"row {i} has no positive weight off the diagonal; every "
                             "anchor needs at least one positive weight")
    if r.size == n * (n - 1):
        return None
    notes: list[str] = []
    u = float(np.finfo(float).eps)
    if coo.dtype.kind == "f" and coo.dtype.itemsize < 8:
        u = float(np.finfo(coo.dtype).eps)
        notes.append(f"{name} is {coo.dtype}: its tolerances are those of {coo.dtype} (unit "
                     f"roundoff {u:.2g})")
    top = float(v.max())
    m_max, e_max = np.frexp(np.float64(top))
    m, e = np.frexp(v)
    logw = np.log(m) - math.log(float(m_max)) + (e - int(e_max)) * math.log(2.0)
    shift = math.log(float(m_max)) + int(e_max) * math.log(2.0)
    pattern = ZeroPattern.from_pairs(n, r, c, logw, unit_roundoff=u)
    return pattern, _pattern_bound(pattern), shift, tuple(notes)


def _pattern_bound(pattern: ZeroPattern) -> float:
    r""":math:`\sum_i H(p_i)` of a pattern, in log space (segment reductions over rows)."""
    starts = np.searchsorted(pattern.rows, np.arange(pattern.n + 1))
    seg = np.maximum.reduceat(pattern.logw, starts[:-1])
    x = pattern.logw - seg[pattern.rows]
    e = np.exp(x)
    tot = np.add.reduceat(e, starts[:-1])
    H = np.log(tot) - np.add.reduceat(e * x, starts[:-1]) / tot
    return float(H.sum())


def classify_sparse(W: object, *, similarity: str, tau: float, dim: int, tol_rtol: float,
                    method: str, dense_up_to: int = 1) -> Classification | None:
    """Classify a sparse weighting with zero weights on its graph (no ``N x N`` array);
    ``None`` when it is not one (see :func:`sparse_pattern`) or has at most ``dense_up_to``
    samples (the dense path then decides it, with what it adds for small N)."""
    import warnings

    from dgp.errors import DgpWarning

    shape = getattr(W, "shape", None)
    if shape is not None and len(shape) == 2 and shape[0] <= dense_up_to:
        return None
    if hasattr(W, "number_of_nodes") and W.number_of_nodes() <= dense_up_to:
        return None
    found = sparse_pattern(W)
    if found is None:
        return None
    pattern, bound, shift, notes = found
    for note in notes:
        warnings.warn(note, DgpWarning, stacklevel=3)
    tol = Tolerance.make(tol_rtol, n=pattern.n, unit_roundoff=pattern.unit_roundoff)
    ctx = Context(similarity=similarity, tau=tau, dim=dim, n=pattern.n, tol=tol,
                  method=method, entropic_bound=bound, shift=shift, warnings=notes)
    return classify_pattern(pattern, ctx)
