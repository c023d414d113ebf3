r"""Samples with identical rows and columns of ``W``: the quotient problem.

Samples ``i`` and ``j`` are *twins* when swapping them maps ``W`` to itself (off the diagonal):
:math:`w_{ik} = w_{jk}` and :math:`w_{ki} = w_{kj}` for every :math:`k \notin \{i, j\}`, and
:math:`w_{ij} = w_{ji}`. Twinship is an equivalence relation (the transposition ``(i k)`` is the
conjugate ``(i j)(j k)(i j)`` of two automorphisms), and on each class every permutation is an
automorphism. The loss is convex in the Gram matrix and invariant under automorphisms, so
averaging a minimiser over them gives a minimiser that is constant on the class blocks (theorem
``identical-rows-collapse``); whether the classes also collapse to points is decided by the lifted
certificate of :mod:`dgp.solver._lift`. The quotient keeps one point per class with its
multiplicity :math:`n_c` and the class-level weights :math:`w_{cd}` (:math:`w_{cc}`: the weight
between two samples of class ``c``).

The classes are found on dense weights by :func:`quotient`, and on a sparse weighting's stored
entries alone (a k-NN graph, a graph of cliques) by :func:`sparse_twins` and
:func:`sparse_quotient`, never as an ``N x N`` array.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

__all__ = [
    "Quotient", "quotient", "sparse_quotient", "sparse_twins", "split_classes",
    "split_single_class", "trivial_quotient",
]

#: largest pairwise-verification work (entries compared) spent on one group of rows with equal
#: multisets; beyond it the group is left as singletons (correct, only without the reduction)
_VERIFY_BUDGET = 4e9
_CHUNK = 256


@dataclass(frozen=True, eq=False)
class Quotient:
    """Twin classes of a weighting.

    Attributes
    ----------
    labels : ndarray of int, shape (N,)
        Class of each sample, numbered by first appearance.
    sizes : ndarray of int, shape (K,)
    weights : ndarray, shape (K, K)
        Class-level weights (``weights[c, c]``: between two samples of class ``c``; 0 for a
        single-sample class, where it is unused).
    representatives : ndarray of int, shape (K,)
        First sample of each class.
    complete : bool
        ``False`` if some group of rows was too large to verify and was left as singletons.
    """

    labels: np.ndarray
    sizes: np.ndarray
    weights: np.ndarray
    representatives: np.ndarray
    complete: bool

    @property
    def K(self) -> int:
        """Number of classes."""
        return int(self.sizes.size)


def trivial_quotient(A: np.ndarray) -> Quotient:
    """Every sample its own class."""
    N = A.shape[0]
    return Quotient(np.arange(N), np.ones(N, dtype=np.int64), A.copy(), np.arange(N), True)


def split_classes(q: Quotient, classes: tuple[int, ...]) -> Quotient:
    """``q`` with every sample of the twin ``classes`` its own class, the other classes kept
    (numbered by first appearance): each sample's weights are its former class's (twins have
    their class's row), 0 on the diagonal of a class of one sample.

    >>> from dgp.weights import supcon_weights
    >>> s = split_classes(quotient(supcon_weights([0, 1, 0, 1, 1])), (1,))
    >>> s.labels.tolist(), s.sizes.tolist(), s.weights.tolist()
    ([0, 1, 0, 2, 3], [2, 1, 1, 1], [[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0], \
[0.0, 1.0, 0.0, 1.0], [0.0, 1.0, 1.0, 0.0]])
    """
    split = np.zeros(q.K, dtype=bool)
    split[list(classes)] = True
    N = q.labels.size
    key = np.where(split[q.labels], q.K + np.arange(N), q.labels)
    _, first, inv = np.unique(key, return_index=True, return_inverse=True)
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    labels = rank[inv.reshape(-1)]
    reps = first[order]
    sizes = np.bincount(labels)
    old = q.labels[reps]
    W = q.weights[np.ix_(old, old)].copy()
    W[np.diag_indices_from(W)] = np.where(sizes >= 2, np.diag(W), 0.0)
    return Quotient(labels, sizes, W, reps, q.complete)


def split_single_class(q: Quotient) -> Quotient:
    """All samples twins (K = 1): split off one sample, a valid coarser-than-orbit partition,
    so that the quotient has two points."""
    N = int(q.sizes[0])
    w = float(q.weights[0, 0])
    labels = np.ones(N, dtype=np.int64)
    labels[0] = 0
    W = np.array([[0.0, w], [w, w]])
    return Quotient(labels, np.array([1, N - 1]), W, np.array([0, 1]), q.complete)


def _multiset_keys(A: np.ndarray) -> list[bytes]:
    """Digest of the sorted off-diagonal entries of each row, in chunks (O(chunk N) memory)."""
    N = A.shape[0]
    keys = []
    for start in range(0, N, _CHUNK):
        block = A[start : start + _CHUNK].copy()
        idx = np.arange(block.shape[0])
        block[idx, start + idx] = -1.0  # weights are >= 0: the diagonal sorts first, dropped
        block.sort(axis=1)
        keys.extend(hashlib.blake2b(row[1:].tobytes(), digest_size=16).digest() for row in block)
    return keys


def _twins(A: np.ndarray, i: int, reps: np.ndarray) -> np.ndarray:
    """Which of ``reps`` are twins of ``i`` (exact comparison)."""
    N = A.shape[0]
    out = np.zeros(reps.size, dtype=bool)
    for k, j in enumerate(reps):
        mask = np.ones(N, dtype=bool)
        mask[[i, j]] = False
        out[k] = (
            A[i, j] == A[j, i]
            and np.array_equal(A[i, mask], A[j, mask])
            and np.array_equal(A[mask, i], A[mask, j])
        )
    return out


def quotient(A: np.ndarray) -> Quotient:
    """Twin classes of a validated weighting ``A`` (zero diagonal), by exact comparison.

    Rows are first grouped by the multiset of their off-diagonal entries and of their column's
    (a necessary condition), then each sample is compared with one representative per class of
    its group.

    >>> from dgp.weights import supcon_weights
    >>> q = quotient(supcon_weights([0, 1, 0, 1, 1]))
    >>> q.labels.tolist(), q.sizes.tolist(), q.weights.tolist()
    ([0, 1, 0, 1, 1], [2, 3], [[1.0, 0.0], [0.0, 1.0]])
    """
    N = A.shape[0]
    rk, ck = _multiset_keys(A), _multiset_keys(np.ascontiguousarray(A.T))
    groups: dict[bytes, list[int]] = {}
    for i in range(N):
        groups.setdefault(rk[i] + ck[i], []).append(i)
    labels = np.full(N, -1, dtype=np.int64)
    complete = True
    next_label = 0
    order = []  # (first sample, provisional label)
    for members in groups.values():
        if len(members) == 1:
            labels[members[0]] = next_label
            order.append((members[0], next_label))
            next_label += 1
            continue
        if float(len(members)) ** 2 * N > _VERIFY_BUDGET:
            complete = False
            for i in members:
                labels[i] = next_label
                order.append((i, next_label))
                next_label += 1
            continue
        reps: list[int] = []
        rep_label: list[int] = []
        for i in members:
            hit = _twins(A, i, np.array(reps, dtype=np.int64)) if reps else np.zeros(0, bool)
            if hit.any():
                labels[i] = rep_label[int(np.argmax(hit))]
            else:
                reps.append(i)
                rep_label.append(next_label)
                labels[i] = next_label
                order.append((i, next_label))
                next_label += 1
    # renumber by first appearance
    order.sort()
    remap = np.empty(next_label, dtype=np.int64)
    for new, (_, old) in enumerate(order):
        remap[old] = new
    labels = remap[labels]
    K = next_label
    sizes = np.bincount(labels, minlength=K)
    representatives = np.array([first for first, _ in order], dtype=np.int64)
    W = A[np.ix_(representatives, representatives)].copy()
    for c in np.flatnonzero(sizes >= 2):
        members = np.flatnonzero(labels == c)
        W[c, c] = A[members[0], members[1]]
    return Quotient(labels, sizes.astype(np.int64), W, representatives, complete)


# ------------------------------------------------------------------- twins of a sparse weighting
#: splitmix64's constants (Steele, Lea and Flood 2014): the hash of one (index, weight) entry
_MIX = (np.uint64(0x9E3779B97F4A7C15), np.uint64(0xBF58476D1CE4E5B9),
        np.uint64(0x94D049BB133111EB))


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, elementwise on ``uint64`` (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + _MIX[0]
        x = (x ^ (x >> np.uint64(30))) * _MIX[1]
        x = (x ^ (x >> np.uint64(27))) * _MIX[2]
    return x ^ (x >> np.uint64(31))


def _entry_hash(index: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """A 64-bit hash of each entry ``(index, weight)`` (the weight's bits, exactly)."""
    bits = np.ascontiguousarray(weight, dtype=np.float64).view(np.uint64)
    return _mix(_mix(index.astype(np.uint64)) ^ bits)


def _line_sums(M, of: np.ndarray) -> np.ndarray:
    """Per row of the CSR matrix ``M``, the wrapping sum of ``of`` over its stored entries."""
    with np.errstate(over="ignore"):
        cs = np.concatenate([np.zeros(1, np.uint64), np.cumsum(of, dtype=np.uint64)])
        return cs[M.indptr[1:]] - cs[M.indptr[:-1]]


def _entry(M, i: int, j: int) -> float:
    """``M[i, j]`` of a CSR matrix with sorted indices (0 where not stored)."""
    cols = M.indices[M.indptr[i]:M.indptr[i + 1]]
    at = int(np.searchsorted(cols, j))
    return float(M.data[M.indptr[i] + at]) if at < cols.size and cols[at] == j else 0.0


def _transpose_values(R, C) -> np.ndarray:
    """``w_ji`` of every stored entry ``(i, j)`` of the CSR matrix ``R`` in its order (0 where
    not stored); ``C``: the transpose of ``R`` as CSR with sorted indices."""
    n = R.shape[0]
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(R.indptr))
    crows = np.repeat(np.arange(n, dtype=np.int64), np.diff(C.indptr))
    ckey = crows * n + C.indices  # row-major keys of W^T, whose entry (i, j) is w_ji
    want = rows * n + R.indices
    at = np.minimum(np.searchsorted(ckey, want), max(ckey.size - 1, 0))
    if ckey.size == 0:
        return np.zeros(want.size)
    return np.where(ckey[at] == want, C.data[at], 0.0)


def _same_outside(M, i: int, j: int) -> bool:
    """Rows ``i`` and ``j`` of the CSR matrix ``M`` agree off columns ``i`` and ``j``."""
    a, b = slice(M.indptr[i], M.indptr[i + 1]), slice(M.indptr[j], M.indptr[j + 1])
    ci, vi, cj, vj = M.indices[a], M.data[a], M.indices[b], M.data[b]
    ki, kj = (ci != i) & (ci != j), (cj != i) & (cj != j)
    return bool(np.array_equal(ci[ki], cj[kj]) and np.array_equal(vi[ki], vj[kj]))


def sparse_twins(W) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Twin classes of a sparse weighting, from its stored entries alone (no ``N x N`` array):
    ``labels`` (numbered by first appearance), ``sizes`` and ``representatives`` (first sample
    of each class), the classes :func:`quotient` finds on the dense weights.

    ``W``: a ``scipy.sparse`` matrix of validated weights (zero diagonal; only positive weights
    stored). Twins ``i``, ``j`` with :math:`a = w_{ij} = w_{ji}` have rows whose hash sums
    :math:`h_i = \sum_k f(k, w_{ik})` agree once each adds its own entry,
    :math:`h_i + f(i, a) = h_j + f(j, a)` (``a > 0``: a candidate among the stored pairs), or
    agree as they are (``a = 0``: equal open rows), and the same for columns. Candidates are
    joined into components, and every member of a component is then compared exactly with its
    first member (twinship is an equivalence): one that differs is left on its own (a finer
    partition into twins is still a valid quotient; with 64-bit hashes it does not happen)."""
    import scipy.sparse as sp
    from scipy.sparse.csgraph import connected_components

    R = sp.csr_matrix(W, dtype=float, copy=True)
    R.setdiag(0.0)
    R.eliminate_zeros()
    R.sum_duplicates()
    R.sort_indices()
    C = R.T.tocsr()
    C.sort_indices()
    n = R.shape[0]
    h_row = _line_sums(R, _entry_hash(R.indices, R.data))
    h_col = _line_sums(C, _entry_hash(C.indices, C.data))
    # a > 0: stored pairs i < j, w_ij = w_ji, whose rows and columns agree with their own entry
    i = np.repeat(np.arange(n, dtype=np.int64), np.diff(R.indptr))
    j, a = R.indices.astype(np.int64), R.data
    keep = (i < j) & (_transpose_values(R, C) == a)
    i, j, a = i[keep], j[keep], a[keep]
    with np.errstate(over="ignore"):
        fi, fj = _entry_hash(i, a), _entry_hash(j, a)
        ok = (h_row[i] + fi == h_row[j] + fj) & (h_col[i] + fi == h_col[j] + fj)
    # a = 0: equal open rows and columns, each joined to the first of its hash group
    _, first, inverse = np.unique(np.stack([h_row, h_col], axis=1), axis=0,
                                  return_index=True, return_inverse=True)
    ei = np.concatenate([i[ok], np.arange(n, dtype=np.int64)])
    ej = np.concatenate([j[ok], first[inverse.ravel()].astype(np.int64)])
    graph = sp.csr_matrix((np.ones(ei.size), (ei, ej)), shape=(n, n))
    _, comp = connected_components(graph, directed=False)
    # every member of a component against its first member, exactly
    order = np.argsort(comp, kind="stable")
    label = np.arange(n, dtype=np.int64)  # provisional: the first sample of its class
    for members in np.split(order, np.flatnonzero(np.diff(comp[order])) + 1):
        r = int(members[0])
        for m in members[1:].tolist():
            if (_entry(R, r, m) == _entry(R, m, r) and _same_outside(R, r, m)
                    and _same_outside(C, r, m)):
                label[m] = r
    firsts, labels = np.unique(label, return_inverse=True)
    labels = labels.ravel().astype(np.int64)
    sizes = np.bincount(labels, minlength=firsts.size).astype(np.int64)
    return labels, sizes, firsts.astype(np.int64)


def sparse_quotient(W, twins: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
                    ) -> Quotient:
    """The twin quotient of a sparse weighting (``twins``: its :func:`sparse_twins`, computed
    here when not given) with its ``K x K`` class-level weights read from the stored entries:
    the :class:`Quotient` that :func:`quotient` makes from the same weights densified
    (``weights[c, c]``: between two samples of class ``c``, 0 for a single sample)."""
    import scipy.sparse as sp

    labels, sizes, reps = sparse_twins(W) if twins is None else twins
    R = sp.csr_matrix(W, dtype=float)
    Wq = np.asarray(R[reps][:, reps].toarray(), dtype=float)
    np.fill_diagonal(Wq, 0.0)
    for c in np.flatnonzero(sizes >= 2):
        a, b = np.flatnonzero(labels == c)[:2]
        Wq[c, c] = float(R[a, b])
    return Quotient(labels, sizes, Wq, reps, True)
