"""Sparse weightings: ``scipy.sparse`` matrices and networkx graphs, validated and
canonicalised without an ``N x N`` array (the sparse branch of
:func:`dgp.engine.target.log_weights`)."""

from __future__ import annotations

import math
import warnings

import numpy as np

from dgp.engine._canonical import LogWeights, Pairs
from dgp.errors import DgpWarning, ParameterError, ParameterTypeError
from dgp.resources import check_memory


def is_graph(M: object) -> bool:
    """Whether ``M`` is a networkx graph (checked without importing networkx)."""
    return any(c.__module__.split(".")[0] == "networkx" and c.__name__ in ("Graph", "DiGraph")
               for c in type(M).__mro__)


def graph_weights(G: object, name: str = "W"):
    r"""The weight matrix of a networkx graph, as a ``scipy.sparse`` CSR matrix.

    Row and column ``k`` are the ``k``-th node of ``G.nodes``; an edge ``u - v`` of a
    :class:`networkx.Graph` gives :math:`w_{uv} = w_{vu}` = its ``weight`` attribute (1 when
    absent), an edge ``u -> v`` of a :class:`networkx.DiGraph` gives :math:`w_{uv}` only (an
    asymmetric weighting); missing edges are zero weights; self-loops are ignored (the diagonal
    is). Every other check (finite, non-negative weights, a positive weight in every row, or
    in some row where empty rows are accepted) is that of :func:`log_weights`.

    Raises
    ------
    ParameterTypeError
        If ``G`` is a multigraph (parallel edges have no single weight).
    ParameterError
        If the graph has fewer than 2 nodes, the sparse matrix would not fit in memory, or a
        weight attribute is not a number.

    Examples
    --------
    >>> import networkx as nx
    >>> graph_weights(nx.path_graph(3)).toarray()
    array([[0., 1., 0.],
           [1., 0., 1.],
           [0., 1., 0.]])
    """
    import networkx as nx

    if G.is_multigraph():
        raise ParameterTypeError(name, "is a networkx multigraph; parallel edges have no single "
                                 "weight (merge them into a Graph or DiGraph first)")
    n = G.number_of_nodes()
    if n < 2:  # networkx refuses an empty graph with its own error
        raise ParameterError(name, f"is a networkx graph with {n} node{'s' * (n != 1)}; a "
                             "weighting needs at least 2 samples (nodes)")
    check_memory(24.0 * (G.number_of_edges() * (1 if G.is_directed() else 2) + n),
                 what=f"the sparse weights of a graph with {G.number_of_edges()} edges",
                 hint="use a smaller graph")
    try:
        M = nx.to_scipy_sparse_array(G, nodelist=list(G.nodes), weight="weight", dtype=float,
                                     format="csr")
    except (TypeError, ValueError) as exc:
        raise ParameterError(name, f"has an edge weight that is not a number ({exc})") from None
    import scipy.sparse as sp

    return sp.csr_matrix(M)


def sparse_size(W: object) -> int:
    """The number of samples of a sparse matrix or graph (0 when ``W`` is neither)."""
    if is_graph(W):
        return int(W.number_of_nodes())
    import scipy.sparse as sp

    return int(W.shape[0]) if sp.issparse(W) and len(W.shape) == 2 else 0


def first_zero_pair(key: np.ndarray, cols: np.ndarray, n: int) -> tuple[int, int]:
    """The first zero weight off the diagonal, in row-major order, of ``n x n`` weights whose
    positive pairs ``(i, j)`` have the sorted keys ``i * n + j`` and the columns ``cols``
    (``(0, 0)`` when there is none): the first row with a zero, then its first zero column."""
    for i in range(n):
        lo, hi = np.searchsorted(key, [i * n, (i + 1) * n])
        if hi - lo < n - 1:
            present = set(cols[lo:hi].tolist()) | {i}
            return i, next(j for j in range(n) if j not in present)
    return 0, 0


def no_positive_weight_error(name: str, hint: str = "") -> ParameterError:
    """The refusal of a weighting whose every row is empty, where empty rows are accepted (the
    batch paths: anchors without positives), for the dense and the sparse validator."""
    return ParameterError(name, "has no positive weight off the diagonal: no anchor has a "
                          f"positive{hint}")


def empty_row_error(name: str, i: int, hint: str = "") -> ParameterError:
    """The one refusal of a row without a positive weight off the diagonal (row ``i``, the
    first), for the dense and the sparse validator and for validated log-weights made for a
    batch path (:attr:`LogWeights.first_empty_row`)."""
    return ParameterError(name, f"row {i} has no positive weight off the diagonal, and every "
                          f"anchor of a full-batch analysis needs one{hint}; the optimum's "
                          "mini-batch prediction (given a batch size) takes such a sample as an "
                          "anchor without positives in every batch")


def sparse_log_weights(W: object, name: str = "W", *, empty_rows: bool = False
                       ) -> LogWeights | None:
    r"""The sparse branch of :func:`log_weights`: a ``scipy.sparse`` matrix or networkx graph,
    validated and canonicalised without an ``N x N`` array.

    Returns the :class:`LogWeights` with its positive :class:`Pairs` (``L`` is ``None``) when
    ``W`` has zero weights off the diagonal; ``None`` when ``W`` is not sparse or has no zero
    weight (:func:`log_weights` then builds the dense form).
    The checks are those of the dense form (missing and explicit zeros are zero weights, the
    diagonal is ignored, logarithms from mantissa and exponent), the bad entry the first in
    row-major order.

    Raises
    ------
    ParameterError
        If the matrix is not square with at least 2 rows, an entry off the diagonal is not
        finite or is negative, or a row has no positive weight off the diagonal (unless
        ``empty_rows``: then only if every row has none).
    """
    import scipy.sparse as sp

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

    def first(bad: np.ndarray) -> int:  # the first bad entry in row-major order
        k = np.flatnonzero(bad)
        return int(k[np.argmin(r[k] * n + c[k])])

    bad = ~np.isfinite(v)
    if bad.any():
        k = first(bad)
        raise ParameterError(name, f"[{r[k]}, {c[k]}] is {v[k]}; all weights must be finite")
    if (v < 0).any():
        k = first(v < 0)
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
    first_empty = int(np.flatnonzero(counts == 0)[0]) if (counts == 0).any() else None
    if first_empty is not None and not empty_rows:
        raise empty_row_error(name, first_empty)
    if r.size == 0:  # every row empty (empty_rows=True)
        raise no_positive_weight_error(name)
    notes: list[str] = []
    u = float(np.finfo(float).eps)
    if coo.dtype.kind == "f" and coo.dtype.itemsize < 8:
        u = float(np.finfo(coo.dtype).eps)
        notes.append(f"{name} is {coo.dtype}: its tolerances are those of {coo.dtype} (unit "
                     f"roundoff {u:.2g})")
    if r.size == n * (n - 1):  # no zero weight: the dense form decides it
        return None
    top = float(v.max())
    m_max, e_max = np.frexp(np.float64(top))
    m, e = np.frexp(v)
    logw = np.log(m) - math.log(float(m_max)) + (e - int(e_max)) * math.log(2.0)
    shift = math.log(float(m_max)) + int(e_max) * math.log(2.0)
    order = np.lexsort((c, r))
    r, c, logw = r[order], c[order], logw[order]
    key = r * n + c
    n_zero = n * (n - 1) - int(r.size)
    first_zero = first_zero_pair(key, c, n)
    back = np.lexsort((r, c))  # the transposed pairs in row-major order
    symmetric = bool(np.array_equal(key, c[back] * n + r[back])
                     and np.array_equal(logw, logw[back]))
    for note in notes:
        warnings.warn(note, DgpWarning, stacklevel=3)
    return LogWeights(None, float(shift), symmetric, n_zero, first_zero, u, tuple(notes),
                      Pairs(n, r, c, logw), first_empty_row=first_empty)
