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
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import numpy as np

__all__ = ["Quotient", "quotient", "trivial_quotient"]

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
