r"""Shared numerics: squared distances from differences, embeddings with fixed signs, the
regular simplex and Soft SupCon's closed forms, tall QR factors, bracketed roots, the
threads of the :math:`O(N^2)` block passes (:func:`map_blocks`), and long LAPACK work that a
signal can interrupt (:func:`interruptible`).

Every module that needs one of these imports it from here, so that each is written once.
"""

from __future__ import annotations

import contextvars
import math
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from contextlib import contextmanager
from typing import TypeVar

import numpy as np
from threadpoolctl import ThreadpoolController, threadpool_limits

from dgp.constants import SIGN_FIX_SLACK
from dgp.errors import InvalidParameterError

__all__ = [
    "CLUSTER_RTOL",
    "INTERRUPTIBLE_MIN_N",
    "INTERRUPT_POLL_S",
    "bracketed_root",
    "centre_points",
    "deterministic_blas",
    "dsytrd",
    "embedding_from_eigh",
    "fix_embedding",
    "fix_signs",
    "helmert",
    "interruptible",
    "join_left_running",
    "map_blocks",
    "pass_workers",
    "simplex_gram",
    "soft_supcon_rho",
    "soft_supcon_tau_star",
    "squared_distances",
    "tall_r",
    "work_left_running",
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
    runs on, never more than the cores this process may use
    (:func:`dgp.resources.available_cores`: its affinity and its cgroup's CPU quota), one when
    bit-identical output is asked for (:func:`dgp.resources.deterministic_requested`; the
    passes are bit-identical whatever the count, this only keeps the promise of running on one
    core)."""
    from dgp.resources import available_cores, deterministic_requested

    if deterministic_requested():
        return 1
    with _LOCK:
        if not _CONTROLLER:  # finding the libraries costs milliseconds: once per process
            _CONTROLLER.append(ThreadpoolController())
    counts = [lib.num_threads for lib in _CONTROLLER[0].lib_controllers
              if lib.user_api == "blas"]
    return max(1, min([available_cores(), *counts]))


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


#: the smallest ``N`` whose dense ``N x N`` work runs in :func:`interruptible`'s worker thread
#: (a reduction of about 0.1 s on one core: below it, starting a thread costs more than
#: the wait it saves, about 0.2 ms a call)
INTERRUPTIBLE_MIN_N = 1000
#: seconds between two looks of the waiting main thread at its pending signals in
#: :func:`interruptible`: the longest a signal that another thread received waits
INTERRUPT_POLL_S = 0.05
# worker threads of interruptible() whose caller was interrupted: still running their LAPACK
# call, which nothing can stop (the command line exits without waiting for them)
_LEFT_RUNNING: list[threading.Thread] = []


def interruptible(fn: Callable[..., _T], /, *args: object, **kwargs: object) -> _T:
    """``fn(*args, **kwargs)``, run so that a signal stops the caller within a fraction of a
    second even while ``fn`` is inside one long LAPACK call.

    Python runs a signal's handler (Ctrl-C's :class:`KeyboardInterrupt`, the command line's
    SIGTERM) only between two bytecodes of the main thread, so a dense ``N x N`` reduction
    (one ``dsytrd``: about a minute at ``N = 4000`` on one core) would make Ctrl-C wait for
    the end of it. Called from the main thread, ``fn`` runs in a worker thread (numpy and scipy
    release the GIL inside LAPACK) in a copy of the caller's context (so
    :func:`dgp.resources.deterministic`, the memory scope of a command and numpy's error state
    hold inside it), while the main thread waits in slices of :data:`INTERRUPT_POLL_S` seconds,
    between which its signal handlers run. The result, or the exception ``fn`` raised, is
    returned or raised as a direct call would: the arrays are the caller's (nothing is copied)
    and the numbers are bit-identical (the same code on the same BLAS threads). Called from
    any other thread (a worker of a pool, or ``fn``'s own thread), it is a direct call.

    When the wait is interrupted, the exception (``KeyboardInterrupt``, ...) is raised at once
    and ``fn`` keeps running to its end in its daemon thread, holding its arrays, since LAPACK
    cannot be stopped from outside. The command line then exits at once without waiting for
    it (:func:`work_left_running`); a Python session gets its prompt back at once, with the
    work using its cores until it ends; a Python program that ends waits for it at exit
    (:func:`join_left_running`), since the interpreter's exit would free what it still uses.
    """
    if threading.current_thread() is not threading.main_thread():
        return fn(*args, **kwargs)
    context = contextvars.copy_context()
    box: dict[str, object] = {}
    done = threading.Event()

    def work() -> None:
        try:
            box["value"] = context.run(fn, *args, **kwargs)
        except BaseException as exc:  # handed to the caller, never printed by the thread
            box["error"] = exc
        finally:
            done.set()

    worker = threading.Thread(target=work, name="dgp-lapack", daemon=True)
    worker.start()
    try:
        while not done.wait(INTERRUPT_POLL_S):
            pass
    except BaseException:
        with _LOCK:
            if not _LEFT_RUNNING:  # once per batch of left work: atexit keeps one entry
                import atexit

                atexit.unregister(join_left_running)
                atexit.register(join_left_running)
            _LEFT_RUNNING.append(worker)
        raise
    worker.join()
    if "error" in box:
        error = box.pop("error")
        try:
            raise error  # type: ignore[misc]
        finally:
            del error
    return box.pop("value")  # type: ignore[return-value]


_DSYTRD: list[Callable[..., None]] = []


def _lapack_dsytrd() -> Callable[..., None]:
    """LAPACK's ``dsytrd`` (the one scipy links, as :mod:`scipy.linalg.cython_lapack` exports
    it) as a :mod:`ctypes` function, which releases the GIL while it runs."""
    with _LOCK:
        if not _DSYTRD:
            import ctypes

            from scipy.linalg import cython_lapack

            capsule = ctypes.py_object(cython_lapack.__pyx_capi__["dsytrd"])
            get_name = ctypes.pythonapi.PyCapsule_GetName
            get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
            get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
            get_pointer.restype = ctypes.c_void_p
            get_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]
            address = get_pointer(capsule, get_name(capsule))
            _DSYTRD.append(ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * 10)(address))
        return _DSYTRD[0]


def dsytrd(a: np.ndarray, lower: int = 0, lwork: int | None = None, overwrite_a: int = 0):
    r"""LAPACK ``dsytrd`` (:math:`A = QTQ^\top`, ``T`` tridiagonal), called as
    :func:`scipy.linalg.lapack.dsytrd` is and returning what it returns, ``(c, d, e, tau,
    info)``, bit for bit, but interruptible from ``N =`` :data:`INTERRUPTIBLE_MIN_N` on
    (:func:`interruptible`; shorter reductions are called directly): scipy's wrapper keeps the
    GIL for the whole reduction (tens of seconds at ``N = 4000`` on one core), so no other
    thread, and no signal handler, could run until it ends; this one calls the same LAPACK
    routine (the pointer :mod:`scipy.linalg.cython_lapack` exports) through :mod:`ctypes`,
    which releases the GIL. Where that pointer cannot be had (another scipy), scipy's wrapper
    runs instead: the same numbers, not interruptible.

    ``a`` is read in its ``lower`` (or upper) triangle and overwritten in place by the
    reflectors when ``overwrite_a`` is set and it is a Fortran-ordered, writable float64 array
    (as scipy's wrapper does; otherwise a Fortran copy is); ``lwork`` defaults to LAPACK's
    optimal size (:func:`scipy.linalg.lapack.dsytrd_lwork`).
    """
    import ctypes

    from scipy.linalg.lapack import dsytrd_lwork

    a = np.asarray(a)
    if a.ndim != 2 or a.shape[0] != a.shape[1]:
        raise InvalidParameterError("a", f"must be a square matrix, got shape {a.shape}")
    n = a.shape[0]
    if not (overwrite_a and a.dtype == np.float64 and a.flags.f_contiguous
            and a.flags.writeable):
        a = np.array(a, dtype=np.float64, order="F", copy=True)
    if lwork is None:
        query, info = dsytrd_lwork(n, lower=lower)
        if info != 0:  # pragma: no cover - LAPACK argument error
            return a, np.zeros(n), np.zeros(max(n - 1, 0)), np.zeros(max(n - 1, 0)), int(info)
        lwork = int(query)
    lwork = max(int(lwork), 1)
    d = np.empty(n)
    e = np.empty(max(n - 1, 0))
    tau = np.empty(max(n - 1, 0))
    work = np.empty(lwork)
    uplo = ctypes.c_char(b"L" if lower else b"U")
    size, lda = ctypes.c_int(n), ctypes.c_int(max(n, 1))
    lw, info_out = ctypes.c_int(lwork), ctypes.c_int(0)
    try:
        routine = _lapack_dsytrd()
    except (AttributeError, KeyError, TypeError, ValueError, OSError):  # pragma: no cover
        from scipy.linalg.lapack import dsytrd as scipy_dsytrd

        return scipy_dsytrd(a, lower=lower, lwork=lwork, overwrite_a=1)
    held = (uplo, size, a, lda, d, e, tau, work, lw, info_out)

    def call() -> None:
        # the arrays and numbers are this closure's: alive until LAPACK returns, even after
        # the caller was interrupted and dropped its own references
        routine(*[x.ctypes.data if isinstance(x, np.ndarray) else ctypes.addressof(x)
                  for x in held])

    if n >= INTERRUPTIBLE_MIN_N:
        interruptible(call)
    elif n > 0:  # a short reduction: starting a thread would cost more than the wait it saves
        call()
    return a, d, e, tau, int(info_out.value)


def work_left_running() -> bool:
    """Whether work of an interrupted :func:`interruptible` call is still running in its
    thread. A process that ends before it does must end with :func:`os._exit` (after its exit
    handlers, less :func:`join_left_running`, and a flush of its streams), or wait for it: the
    interpreter's and the BLAS library's exit would free memory that LAPACK is still using
    (a segmentation fault)."""
    with _LOCK:
        _LEFT_RUNNING[:] = [t for t in _LEFT_RUNNING if t.is_alive()]
        return bool(_LEFT_RUNNING)


def join_left_running() -> None:
    """Wait until the work of every interrupted :func:`interruptible` call has ended.
    Registered with :mod:`atexit` by the first interruption, so that a Python program that
    ends after one exits cleanly (the command line unregisters it and exits at once,
    :func:`work_left_running`)."""
    with _LOCK:
        left = list(_LEFT_RUNNING)
    for thread in left:
        thread.join()
    work_left_running()


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
