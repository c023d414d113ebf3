r"""Shared numerics: squared distances from differences, embeddings with fixed signs, the
regular simplex and Soft SupCon's closed forms, tall QR factors, bracketed roots, and the
threads of the :math:`O(N^2)` block passes (:func:`map_blocks`).

Every module that needs one of these imports it from here, so that each is written once.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController, threadpool_limits

from dgp.constants import SIGN_FIX_SLACK

__all__ = [
    "CLUSTER_RTOL",
    "bracketed_root",
    "centre_points",
    "deterministic_blas",
    "embedding_from_eigh",
    "fix_embedding",
    "fix_signs",
    "helmert",
    "map_blocks",
    "pass_workers",
    "simplex_gram",
    "soft_supcon_rho",
    "soft_supcon_tau_star",
    "squared_distances",
    "tall_r",
]


@contextmanager
def deterministic_blas():
    """Run BLAS on one thread: multi-threaded reductions round differently with the thread count,
    so identical input would not always give identical output (eigenvalues in the last digits,
    and the basis of a repeated eigenvalue's eigenspace)."""
    with threadpool_limits(limits=1, user_api="blas"):
        yield


_T = TypeVar("_T")
_POOLS: dict[int, ThreadPoolExecutor] = {}
_CONTROLLER: list[ThreadpoolController] = []
_LOCK = threading.Lock()


def pass_workers() -> int:
    """Threads for the elementwise :math:`O(N^2)` passes (:func:`map_blocks`): as many as BLAS
    runs on (by default every core), one when bit-identical output is asked for
    (:func:`dgp.resources.deterministic_requested`; the passes are bit-identical whatever the
    count, this only keeps the promise of running on one core)."""
    from dgp.resources import deterministic_requested

    if deterministic_requested():
        return 1
    with _LOCK:
        if not _CONTROLLER:  # finding the libraries costs milliseconds: once per process
            _CONTROLLER.append(ThreadpoolController())
    counts = [lib.num_threads for lib in _CONTROLLER[0].lib_controllers
              if lib.user_api == "blas"]
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return max(1, min([cores or 1, *counts]))


def map_blocks(fn: Callable[[slice], _T], blocks: Sequence[slice],
               workers: int | None = None) -> list[_T]:
    """``[fn(b) for b in blocks]``, the blocks shared among ``workers`` threads
    (:func:`pass_workers` by default).

    numpy releases the GIL inside its loops over large arrays, so elementwise passes over
    disjoint blocks of rows run on every core. The blocks are the caller's, fixed by the size of
    the problem, never by the number of threads, and each result is computed from its block
    alone: the results (and whatever ``fn`` writes into its block) are bit-identical whatever
    the number of threads; the caller combines them in block order. Every block is finished
    before this returns; if some raise, the exception of the first such block (in order) is
    raised, as a serial loop would raise it. numpy's error state is per thread: ``fn`` sets
    its own.
    """
    workers = pass_workers() if workers is None else workers
    if workers <= 1 or len(blocks) <= 1:
        return [fn(b) for b in blocks]
    workers = min(workers, len(blocks))
    with _LOCK:
        pool = _POOLS.get(workers)
        if pool is None:
            pool = _POOLS[workers] = ThreadPoolExecutor(workers, thread_name_prefix="dgp-pass")
    futures = [pool.submit(fn, b) for b in blocks]
    wait(futures)
    return [f.result() for f in futures]


def fix_signs(U: np.ndarray) -> np.ndarray:
    """Flip each column so that its first entry of (nearly) largest magnitude is positive.

    "Nearly": within a relative ``1e-6`` of the largest, so that rounding differences between
    two equal-magnitude entries of opposite sign (``(1, -1)/sqrt 2``) cannot flip the choice.
    """
    U = np.asarray(U, dtype=float)
    if U.size == 0:
        return U
    mag = np.abs(U)
    top = mag.max(axis=0)
    idx = np.argmax(mag >= (1.0 - SIGN_FIX_SLACK) * top, axis=0)
    signs = np.sign(U[idx, np.arange(U.shape[1])])
    signs[signs == 0] = 1.0
    return U * signs


#: eigenvalues of an embedding closer than this, relative to the largest, form one cluster in
#: :func:`fix_embedding` (one eigenspace, whose basis rounding would otherwise choose)
CLUSTER_RTOL = 1e-6
#: seed of the fixed directions that :func:`fix_embedding` projects onto a cluster
BASIS_SEED = 20260


def fix_embedding(X: np.ndarray, lam: np.ndarray) -> np.ndarray:
    r"""The columns of an embedding ``X`` (``N x r``, column ``k`` an eigenvector scaled by
    :math:`\sqrt{\lambda_k}`, ``lam`` descending) in a form that depends on its Gram matrix
    only, not on how rounding chose the eigenvectors.

    A simple eigenvalue fixes its column up to sign: :func:`fix_signs` chooses it. A repeated
    eigenvalue (a cluster of eigenvalues within :data:`CLUSTER_RTOL` times the largest) fixes
    only the span: LAPACK returns some orthonormal basis of it, which changes with the last bits
    of the input and with the number of BLAS threads. The cluster's columns :math:`X_c` are
    replaced by :math:`X_c Q`, with :math:`Q` the orthogonal factor (positive diagonal ``R``) of
    the QR decomposition of :math:`X_c^\top g` for fixed seeded Gaussian directions ``g``: for
    any orthogonal :math:`O`, :math:`X_cO` gives the same :math:`X_cOQ'`, so the result depends
    on :math:`X_cX_c^\top` alone, and the Gram matrix of ``X`` is unchanged.
    """
    X = np.array(X, dtype=float, copy=True)
    lam = np.asarray(lam, dtype=float)
    r = X.shape[1]
    if r == 0:
        return X
    width = CLUSTER_RTOL * max(float(np.abs(lam).max()), np.finfo(float).tiny)
    start = 0
    for k in range(1, r + 1):
        if k < r and lam[k - 1] - lam[k] <= width:
            continue
        if k - start == 1:
            X[:, start:k] = fix_signs(X[:, start:k])
        else:
            g = np.random.default_rng(BASIS_SEED).standard_normal((X.shape[0], k - start))
            Q, R = np.linalg.qr(X[:, start:k].T @ g)
            signs = np.sign(np.diag(R))
            signs[signs == 0] = 1.0
            X[:, start:k] = X[:, start:k] @ (Q * signs)
        start = k
    return X


def embedding_from_eigh(lam: np.ndarray, U: np.ndarray, r: int) -> np.ndarray:
    """Points ``U sqrt(lam)`` from the ``r`` largest eigenpairs (eigenvalues clipped at zero
    before the square root, signs fixed by :func:`fix_signs`)."""
    order = np.argsort(lam, kind="stable")[::-1][:r]
    return fix_signs(U[:, order]) * np.sqrt(np.clip(lam[order], 0.0, None))


def centre_points(y: np.ndarray) -> np.ndarray:
    """Points centred at their mean, computed as ``(y - y_0) - mean(y - y_0)``.

    Differences to the first point are exact for nearby labels (Sterbenz), so labels far from
    the origin (an offset of ``1e7``) keep their geometry, and identical labels give exactly
    zero (a plain ``y - mean(y)`` leaves rounding noise that relative tolerances read as
    structure).
    """
    x = np.asarray(y, dtype=float) - np.asarray(y, dtype=float)[0]
    x -= x.mean(axis=0)
    return x


def squared_distances(y: np.ndarray, *, block_elements: int = 1 << 22) -> np.ndarray:
    r"""Squared distances :math:`|y_i - y_j|^2` (``N x N``, zero diagonal), summed coordinate by
    coordinate over exact differences: no cancellation from
    :math:`|y_i|^2 + |y_j|^2 - 2 y_i\cdot y_j`, whatever the offset of the labels or the ratio of
    their distances.
    """
    x = centre_points(y)
    n, p = x.shape
    D = np.zeros((n, n))
    step = max(1, block_elements // max(1, n))
    for s in range(0, n, step):
        blk = D[s : s + step]
        for k in range(p):
            diff = x[s : s + step, k, None] - x[None, :, k]
            diff *= diff
            blk += diff
    np.fill_diagonal(D, 0.0)
    return D


def simplex_gram(K: int) -> np.ndarray:
    r"""Gram matrix of the centred regular simplex on the unit sphere:
    :math:`G_{cc'} = -1/(K-1)` off the diagonal, 1 on it."""
    G = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(G, 1.0)
    return G


def soft_supcon_rho(tau: float, eps: float) -> float:
    r"""Soft SupCon's equiangular target cosine :math:`\rho = 1 + \tau\log\varepsilon`."""
    return 1.0 + tau * math.log(eps)


def soft_supcon_tau_star(K: int, eps: float) -> float:
    r"""Soft SupCon's critical temperature :math:`\tau^* = K/((K-1)(-\log\varepsilon))`, where
    its target is the centred regular simplex (realizable iff :math:`\tau \le \tau^*` when
    every class has at least 2 samples)."""
    return K / ((K - 1) * (-math.log(eps)))


def helmert(n: int) -> np.ndarray:
    """Orthonormal basis (``n x (n-1)``) of the zero-sum vectors of :math:`\\mathbb R^n`."""
    H = np.zeros((n, n - 1))
    for j in range(1, n):
        H[:j, j - 1] = 1.0 / np.sqrt(j * (j + 1))
        H[j, j - 1] = -j / np.sqrt(j * (j + 1))
    return H


def tall_r(M: np.ndarray, *, block: int = 65536) -> np.ndarray:
    r"""The triangular factor :math:`R` of a Householder QR of a tall matrix, by blocks (TSQR).

    :math:`R` of the stacked block factors is an :math:`R` of ``M`` (``M = QR`` with orthonormal
    ``Q``, exact even when ``M`` is rank deficient); ``Q`` is never formed. :math:`O(Nk^2)` time,
    :math:`O(\text{block}\cdot k)` extra memory. Shape ``(min(N, k), k)``.
    """
    n = M.shape[0]
    if n <= block:
        return np.linalg.qr(M, mode="r")
    parts = [np.linalg.qr(M[s : s + block], mode="r") for s in range(0, n, block)]
    return tall_r(np.vstack(parts), block=block)


def bracketed_root(f: Callable[[float], float], a: float, b: float, *, xtol: float, rtol: float,
                   maxiter: int) -> float:
    """The root of ``f`` in ``[a, b]`` (``f(a)``, ``f(b)`` of opposite signs) by
    :func:`scipy.optimize.brentq`, without keeping ``f`` alive after it returns.

    scipy wraps ``f`` in a closure that refers to itself (a reference cycle, freed only by the
    cyclic garbage collector), so whatever ``f`` holds (a spectrum and its ``N x N``
    reflectors, a weighting) would stay allocated until a collection: a scan of a few dozen
    classifications kept a dozen ``N x N`` copies alive. Here the wrapper reaches ``f`` through
    a box that is emptied on return.
    """
    from scipy.optimize import brentq

    box = [f]

    def call(x: float) -> float:
        return box[0](x)

    try:
        return float(brentq(call, a, b, xtol=xtol, rtol=rtol, maxiter=maxiter))
    finally:
        box.clear()
