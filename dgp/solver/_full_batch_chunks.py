r"""The full-batch w-InfoNCE loss of a weighting read in row chunks, never as an ``N x N`` array,
and a critical point of it in a fixed dimension (DESIGN §13: the full-batch prediction beside the
expected-batch one, at dataset scale).

The points ``c`` (samples, or twin classes of ``m_c`` samples each) have unit rows ``z_c``. An
anchor of point ``c`` sees :math:`\mu_{cd} = m_d - [d = c]` samples of point ``d`` at
similarity :math:`G_{cd}/\tau` (:math:`G_{cc} = 1`), with target
:math:`P_{cd} \propto \mu_{cd} w_{cd}`; the loss, summed over anchors, is

.. math::

    L(Z) = \sum_c m_c\,[\text{positives}] \Big(\log \sum_d \mu_{cd}\, e^{G_{cd}/\tau}
        - \frac1\tau \sum_d P_{cd} G_{cd}\Big),

the loss of one batch holding every sample (:class:`dgp.solver.RowBatch` with ``counts = m``,
``reduction="sum"``), so :func:`dgp.infonce` at sample level. :class:`ChunkedFullBatch` computes it
and its Euclidean gradient :math:`(\Gamma + \Gamma^T) Z` a block of rows at a time: ``O(chunk x
N)`` memory, ``O(N^2 d)`` work per evaluation, with the Gram blocks, the softmax and the gradient
products in float32 (accurate to about 1e-7 of the loss; float64 on request). The log-weights of a
block of rows are read from the weighting (:func:`weight_rows`): a dense array's rows, a sparse
matrix's rows, a kernel of labels evaluated between the rows and every sample, or, for any other
:class:`dgp.solver.BatchWeights`, the blocks of :meth:`~dgp.solver.BatchWeights.log_block` over
the rows and one chunk of columns at a time (four times the entries), checked first to be one
pairwise function (:func:`pairwise_weights`: weights normalised per batch are not).

:func:`chunked_full_batch` descends it with the sphere L-BFGS of :mod:`dgp.solver._sphere_lbfgs`
from a seeded random start (independent of any batch prediction) until the loss stalls
(:data:`CHUNKED_FTOL` nats per anchor over :data:`CHUNKED_WINDOW` evaluations), the relative
Riemannian gradient reaches :data:`CHUNKED_GTOL`, or after :data:`CHUNKED_MAX_EVALS` evaluations: a
critical point of the full-batch loss, not certified global, with a time estimate
(:func:`chunked_seconds`, from a timed evaluation) before the work.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dgp.display import format_duration
from dgp.errors import ParameterError
from dgp.solver._batch_sources import (
    BatchWeights,
    DenseBatchWeights,
    GaussianKernelWeights,
    InnerProductKernelWeights,
    SparseBatchWeights,
)
from dgp.solver._sphere_lbfgs import sphere_lbfgs

__all__ = [
    "CHUNKED_FTOL",
    "CHUNKED_GTOL",
    "CHUNKED_MAX_EVALS",
    "CHUNKED_TYPICAL_EVALS",
    "CHUNKED_WINDOW",
    "CHUNK_ENTRIES",
    "CHUNK_MAX_ROWS",
    "ChunkedFullBatch",
    "ChunkedFullBatchPoint",
    "chunked_full_batch",
    "chunked_seconds",
    "dense_weight_rows",
    "pairwise_weights",
    "positive_partners",
    "random_start",
    "sparse_spectral_start",
    "weight_rows",
]

#: entries (rows x points) of one chunk's arrays: about 4 MB each in float32, 8 MB in float64
CHUNK_ENTRIES = 1 << 20
#: ... and at most this many rows, so that a chunk's arrays stay ``O(N)`` at every ``N`` (at
#: N = 1500 a chunk of ``CHUNK_ENTRIES`` was 699 rows, 3 float64 chunks 25 MB: more than one
#: N x N float64 array's 18 MB); from N = 8192 on, ``CHUNK_ENTRIES`` is the smaller
CHUNK_MAX_ROWS = 128
#: target relative Riemannian gradient of the chunked descent (its norm over the Euclidean
#: gradient's, as :func:`dgp.solver.solve_finite` reports it); in float32 the descent usually
#: stops first on :data:`CHUNKED_FTOL` (at N = 2000, d = 128, tau = 0.1, 2-D Gaussian labels from
#: a random start: relative gradient 0.26 after 60 evaluations, 0.1 after 100, 0.007 after 260)
CHUNKED_GTOL = 1e-4
#: the descent stops when :data:`CHUNKED_WINDOW` evaluations lowered the loss by less than this
#: many nats per anchor: the expected-batch comparison resolves about 1e-3 (its 95% half-width
#: is 0.002). In the case above the loss was then (about 70 evaluations) within 1.5e-5 nats per
#: anchor of where a float64 descent ends after 400 (6.7306718 nats per anchor, the dense rank-d
#: solve's to 1e-9)
CHUNKED_FTOL = 1e-5
CHUNKED_WINDOW = 10
#: the most loss-and-gradient evaluations of the chunked descent (its time is at most this many
#: evaluations: in d = 2 at N = 2100 the loss was still falling by 1e-5 nats per anchor every 10
#: evaluations after 300)
CHUNKED_MAX_EVALS = 200
#: evaluations of a typical chunked descent from a random start, for its time estimate (about
#: 70 at N = 2000, d = 128, tau = 0.1)
CHUNKED_TYPICAL_EVALS = 80
#: points of the check that a weighting's batch blocks are one pairwise function
PAIRWISE_PROBE = 48
#: the deterministic perturbation of :func:`sparse_spectral_start` (no zero row), as the rank-d
#: solver's spectral start
SPARSE_SPECTRAL_PERTURBATION = 1e-3

#: the log-weights of a block of rows: ``rows -> (rows.size, n)`` (the own entry, column
#: ``rows[k]`` of row ``k``, is the weight between copies of a point)
RowReader = Callable[[np.ndarray], np.ndarray]


def _log(W: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(np.asarray(W, dtype=float))


def dense_weight_rows(W: np.ndarray) -> RowReader:
    """The row reader of a dense ``n x n`` array of weights (not log-weights; diagonal: the
    weight between copies of a point): the log of the rows asked for, nothing ``n x n``."""
    return lambda rows: _log(W[rows])


def weight_rows(weights: BatchWeights, *, chunk: int = 0) -> RowReader | None:
    """The row reader of a weighting read one batch at a time (:class:`BatchWeights`).

    The ``log_rows`` of a dense array, a sparse matrix or the Gaussian or inner-product kernel of
    labels (the rows and every sample, by the formula of their ``log_block``); for any other
    weighting, ``None`` unless
    :func:`pairwise_weights` says its batch blocks are one function of the pair (weights
    normalised over each batch are not), then its own ``log_rows(rows)`` method where it has one
    (``rows.size x n``, the own entry ``-inf``), else the blocks of ``log_block`` over the rows
    and ``chunk`` columns at a time (at least the number of rows: four times the entries)."""
    if isinstance(weights, (DenseBatchWeights, SparseBatchWeights, GaussianKernelWeights,
                            InnerProductKernelWeights)):
        return weights.log_rows  # one function of the pair by construction: no probe
    if not pairwise_weights(weights):
        return None
    own = getattr(weights, "log_rows", None)
    if own is not None:
        return own
    n = weights.n

    def blocks(rows: np.ndarray) -> np.ndarray:
        u = rows.size
        step = max(chunk, u, 1)
        out = np.empty((u, n))
        for s in range(0, n, step):
            cols = np.arange(s, min(n, s + step))
            out[:, cols] = weights.log_block(np.concatenate([rows, cols]))[:u, u:]
        out[np.arange(u), rows] = -np.inf
        return out
    return blocks


#: rows read by :func:`positive_partners` (seeded; all of them up to this many samples)
PARTNER_ROWS = 64


def positive_partners(weights: BatchWeights, *, seed: int, sizes: np.ndarray | None = None,
                      rows: int = PARTNER_ROWS) -> float:
    r"""The typical number of positive partners of a point: the median, over up to ``rows``
    seeded points that have any, of :math:`m_c\,(\sum_j w_{cj})^2 / \sum_j w_{cj}^2`, the
    participation ratio of a sample's weights to the other samples (``k`` for ``k`` equal
    weights) times the point's ``m_c`` samples. ``sizes``: the samples of each point (twin
    classes; ``None``: one each), each weight counted once per other sample of its point (the
    own entry, the weight between copies, ``m_c - 1`` times). Read in log space by
    :func:`weight_rows`, ``O(rows * n)``; ``inf`` where the weighting has no rows (weights
    normalised over each batch) or no sampled point has a positive: nothing to count. It sets
    the length of a stochastic run's rounds (:func:`dgp.solver.round_steps`): an epoch of
    batches of ``B`` among ``N`` samples meets about ``positives * (B - 1) / (N - 1)`` of
    them."""
    read = weight_rows(weights)
    n = weights.n
    if read is None or n < 2:
        return math.inf
    pick = np.sort(np.random.default_rng([seed, 7]).choice(n, size=min(rows, n),
                                                          replace=False))
    m = np.ones(n) if sizes is None else np.asarray(sizes, dtype=float)
    mult = np.tile(m, (pick.size, 1))
    mult[np.arange(pick.size), pick] -= 1.0  # the other copies of the point itself
    L = np.where(mult > 0, read(pick), -np.inf)
    top = L.max(axis=1)
    has = np.isfinite(top)
    if not has.any():
        return math.inf
    e = np.exp(L[has] - top[has, None])
    w = mult[has]
    ratio = (w * e).sum(axis=1) ** 2 / (w * e * e).sum(axis=1)
    return float(np.median(m[pick[has]] * ratio))


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    fa, fb = np.isfinite(a), np.isfinite(b)
    return bool((fa == fb).all() and (a[~fa] == b[~fb]).all()
                and np.allclose(a[fa], b[fb], rtol=1e-9, atol=1e-12))


def pairwise_weights(weights: BatchWeights, seed: int = 0) -> bool:
    """Whether the log-weights of a batch (``log_block``) are one function of the pair, the same
    in every batch: the off-diagonal block of a few seeded points is compared alone and inside
    two larger batches (weights normalised over the batch, as public y-Aware code's column
    normalisation, differ)."""
    n = int(weights.n)
    m = min(n, PAIRWISE_PROBE)
    if m < 4:
        return True
    rng = np.random.default_rng([seed, 41])
    S = rng.choice(n, size=m, replace=False)
    T = S[: m // 2]
    rest = np.setdiff1d(np.arange(n), S)
    U = np.concatenate([T, rng.choice(rest, size=min(m // 2, rest.size), replace=False)])
    off = ~np.eye(T.size, dtype=bool)
    alone = np.asarray(weights.log_block(T), dtype=float)[off]
    return all(_same(np.asarray(weights.log_block(X), dtype=float)[:T.size, :T.size][off], alone)
               for X in (S, U))


class ChunkedFullBatch:
    r"""The full-batch loss of ``n`` points and its gradient, a block of rows at a time (module
    docstring). Building it reads every row's weights once: each anchor's target normaliser
    (in log space) and whether it has positives.

    Parameters
    ----------
    read : callable
        The log-weights of a block of rows (:func:`weight_rows`, :func:`dense_weight_rows`).
    n : int
    tau : float
    counts : array_like of int, optional
        Samples per point (twin classes); ``None``: one each.
    dtype : numpy dtype
        Of the Gram blocks, the softmax and the gradient products (float32 by default); the loss
        and the gradient are accumulated in float64.
    chunk : int, optional
        Rows per block (default: :data:`CHUNK_ENTRIES` over ``n``, at most
        :data:`CHUNK_MAX_ROWS`).
    """

    def __init__(self, read: RowReader, n: int, *, tau: float, counts: np.ndarray | None = None,
                 dtype: type = np.float32, chunk: int | None = None) -> None:
        if not (isinstance(tau, float | int) and math.isfinite(tau) and tau > 0):
            raise ParameterError("tau", f"must be a number > 0, got {tau!r}")
        self.read, self.n, self.tau, self.dtype = read, int(n), float(tau), np.dtype(dtype)
        self.chunk = int(chunk) if chunk else max(1, min(self.n, CHUNK_ENTRIES // max(self.n, 1),
                                                         CHUNK_MAX_ROWS))
        if counts is None or bool((np.asarray(counts) == 1).all()):
            self.log_counts = None
            self.log_self = np.full(self.n, -np.inf)
            m = np.ones(self.n)
        else:
            m = np.asarray(counts, dtype=float)
            self.log_counts = np.log(m)
            with np.errstate(divide="ignore"):
                self.log_self = np.log(m - 1.0)
        norm = np.empty(self.n)
        for R in self.blocks():
            T = self._log_mu_weights(R)
            top = np.max(T, axis=1)
            fin = np.isfinite(top)
            with np.errstate(divide="ignore", invalid="ignore"):
                s = np.exp(T - np.where(fin, top, 0.0)[:, None]).sum(axis=1)
                norm[R] = np.where(fin, top + np.log(s), -np.inf)
        self.log_norm = norm
        self.weight = np.where(np.isfinite(norm), m, 0.0)

    def blocks(self):
        """The row blocks, in order."""
        for s in range(0, self.n, self.chunk):
            yield np.arange(s, min(self.n, s + self.chunk))

    def _log_mu_weights(self, R: np.ndarray) -> np.ndarray:
        r""":math:`\log(\mu_{cd} w_{cd})` of the rows ``R`` (``R.size x n``, float64)."""
        T = np.asarray(self.read(R), dtype=float)
        k = np.arange(R.size)
        own = T[k, R] + self.log_self[R]
        if self.log_counts is not None:
            T += self.log_counts[None, :]
        T[k, R] = own
        return T

    def value_grad(self, Z: np.ndarray, gradient: bool = True,
                   blocks: int | None = None) -> tuple[float, np.ndarray | None]:
        """The loss (nats, summed over anchors) at unit rows ``Z`` (``n x d``) and, with
        ``gradient``, its Euclidean gradient in ``Z`` (``n x d``, float64). ``blocks``: only
        the first so many row blocks (a timing; the loss and gradient are then partial)."""
        Z = np.asarray(Z, dtype=float)
        Zc = Z.astype(self.dtype, copy=False)
        g = np.zeros(Z.shape) if gradient else None
        inv_tau = 1.0 / self.tau
        loss = 0.0
        for b, R in enumerate(self.blocks()):
            if blocks is not None and b >= blocks:
                break
            k = np.arange(R.size)
            Zr = Zc[R]
            G = Zr @ Zc.T
            G[k, R] = 1.0  # the within-point cosine
            S = G * self.dtype.type(inv_tau)
            if self.log_counts is not None:
                S += self.log_counts[None, :].astype(self.dtype)
            S[k, R] = self.log_self[R] + inv_tau
            top = np.max(S, axis=1)
            S -= top[:, None]
            np.exp(S, out=S)
            tot = S.sum(axis=1, dtype=float)
            lse = top.astype(float) + np.log(tot)
            T = self._log_mu_weights(R)
            T -= np.where(np.isfinite(self.log_norm[R]), self.log_norm[R], np.inf)[:, None]
            P = T.astype(self.dtype)
            del T
            np.exp(P, out=P)
            lin = np.einsum("ij,ij->i", P, G).astype(float) * inv_tau
            w = self.weight[R]
            loss += float(w @ (lse - lin))
            if gradient:
                S /= tot.astype(self.dtype)[:, None]
                S -= P
                S *= (w * inv_tau).astype(self.dtype)[:, None]
                S[k, R] = 0.0  # the within-point cosine is fixed at 1
                g[R] += S @ Zc
                g += S.T @ Zr
        return loss, g

    def seconds_per_evaluation(self, Z: np.ndarray, blocks: int | None = None) -> float:
        """Seconds of one loss-and-gradient evaluation, from ``blocks`` timed row blocks
        (default: a sixteenth of them, at least two)."""
        nb = math.ceil(self.n / self.chunk)
        blocks = max(1, min(max(2, nb // 16) if blocks is None else blocks, nb))
        t0 = time.perf_counter()
        self.value_grad(Z, blocks=blocks)
        return (time.perf_counter() - t0) * nb / blocks


def chunked_seconds(per_evaluation: float, evaluations: int = CHUNKED_TYPICAL_EVALS) -> float:
    """The time estimate of a chunked descent from the seconds of one evaluation: ``evaluations``
    of them (default :data:`CHUNKED_TYPICAL_EVALS`) and the final one."""
    return per_evaluation * (evaluations + 1)


def sparse_spectral_start(W, dim: int) -> np.ndarray | None:
    """``n x dim`` unit rows from the top eigenvectors of the symmetrised row-normalised weights
    of a sparse weighting ``W`` (``scipy.sparse``, zero diagonal), each scaled by the square
    root of its eigenvalue: similar samples start close (the rank-d solver's spectral start,
    :func:`dgp.solver.spectral_start`, read by Lanczos, ``O(nnz)`` a product, never
    ``N x N``); ``None`` where ``dim`` is not below ``n - 1`` or Lanczos fails. Deterministic
    (the Lanczos start is the all-ones vector)."""
    import scipy.sparse as sp
    from scipy.sparse.linalg import ArpackError, eigsh

    R = sp.csr_matrix(W, dtype=float)
    n = R.shape[0]
    if not 1 <= dim < n - 1:
        return None
    rows = np.asarray(R.sum(axis=1)).ravel()
    P = sp.diags(1.0 / np.maximum(rows, np.finfo(float).tiny)) @ R
    try:
        lam, U = eigsh((0.5 * (P + P.T)).tocsr(), k=dim, which="LA", v0=np.ones(n))
    except (ArpackError, ValueError):
        return None
    order = np.argsort(lam)[::-1]
    V = U[:, order] * np.sqrt(np.abs(lam[order]))[None, :]
    V = V + SPARSE_SPECTRAL_PERTURBATION * (np.arange(V.size).reshape(V.shape) % 7 - 3)
    norms = np.linalg.norm(V, axis=1, keepdims=True)
    if not (np.isfinite(norms).all() and (norms > 0).all()):
        return None
    return V / norms


def random_start(n: int, dim: int, seed: int) -> np.ndarray:
    """The seeded random start of :func:`chunked_full_batch`: ``n`` unit rows in ``R^dim`` from
    ``default_rng([seed, 43])``."""
    X = np.random.default_rng([seed, 43]).standard_normal((n, dim))
    return X / np.linalg.norm(X, axis=1, keepdims=True)


@dataclass(frozen=True, eq=False)
class ChunkedFullBatchPoint:
    """A critical point of the full-batch loss reached by the chunked descent
    (:func:`chunked_full_batch`).

    Attributes
    ----------
    embedding : ndarray, shape (n, dim)
        Unit rows.
    loss : float
        The full-batch loss there (nats, summed over anchors).
    gradient : float
        Its relative Riemannian gradient (norm over the Euclidean gradient's norm).
    evaluations : int
        Loss-and-gradient evaluations.
    seconds : float
        Wall time of the descent.
    start : str
        Where the descent started, in words.
    stopped : str
        Why it stopped, in words.
    gtol : float
        The target relative gradient.
    """

    embedding: np.ndarray
    loss: float
    gradient: float
    evaluations: int
    seconds: float
    start: str
    stopped: str
    gtol: float

    @property
    def statement(self) -> str:
        """What the point is, in words (the summary's full-batch line)."""
        return (f"an approximate critical point of the full-batch loss (L-BFGS on row chunks, "
                f"no N x N array, from {self.start}: {self.evaluations} evaluations, "
                f"{format_duration(self.seconds)}; stopped: {self.stopped}; relative Riemannian "
                f"gradient {self.gradient:.1e}, target {self.gtol:g}), not certified global")


def _relative_gradient(Z: np.ndarray, g: np.ndarray) -> float:
    rg = g - np.sum(g * Z, axis=1, keepdims=True) * Z
    return float(np.linalg.norm(rg)) / max(float(np.linalg.norm(g)), np.finfo(float).tiny)


class _Stalled(Exception):
    """Raised inside the descent to stop it (the loss stalled, or the time ran out)."""


def chunked_full_batch(
    fb: ChunkedFullBatch, dim: int, *, seed: int = 0, gtol: float = CHUNKED_GTOL,
    ftol: float = CHUNKED_FTOL, window: int = CHUNKED_WINDOW,
    max_evals: int = CHUNKED_MAX_EVALS, deadline_s: float | None = None,
    progress: Callable[[str], None] | None = None, every_s: float = 5.0,
    start: np.ndarray | None = None, start_name: str = "a given start",
) -> ChunkedFullBatchPoint:
    """A critical point of the full-batch loss ``fb`` in ``R^dim``: the sphere L-BFGS
    (:func:`dgp.solver._sphere_lbfgs.sphere_lbfgs`) from :func:`random_start` (independent of
    any batch prediction), stopped at the first of: a relative Riemannian gradient ``gtol``
    (L-BFGS-B's projected-gradient test, set from the gradient's norm at the start), ``window``
    evaluations that lowered the loss by less than ``ftol`` nats per anchor, ``max_evals``
    evaluations, ``deadline_s`` seconds (a guard: the best point so far is kept), or L-BFGS's own
    stop.
    ``progress``: a line at most every ``every_s`` seconds (evaluations, loss per anchor,
    relative gradient, elapsed). ``start``: unit rows (``n x dim``) to start from instead, named
    ``start_name`` in :attr:`ChunkedFullBatchPoint.start` (a sparse weighting's
    :func:`sparse_spectral_start`)."""
    if not (isinstance(dim, int | np.integer) and dim >= 1):
        raise ParameterError("dim", f"must be a positive integer, got {dim!r}")
    t0 = time.monotonic()
    Z0 = random_start(fb.n, dim, seed) if start is None else np.array(start, dtype=float)
    if Z0.shape != (fb.n, dim):
        raise ParameterError("start", f"must be {fb.n} x {dim} unit rows, got shape {Z0.shape}")
    f0, g0 = fb.value_grad(Z0)
    anchors = max(float(fb.weight.sum()), 1.0)
    # L-BFGS-B stops on the largest entry of the projected gradient: the relative target on the
    # norm, spread evenly over the entries
    abs_gtol = gtol * float(np.linalg.norm(g0)) / math.sqrt(g0.size)
    history = [f0]
    best = [f0, Z0]
    last = [time.monotonic()]
    why = [""]

    def value_grad(Z: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = fb.value_grad(Z)
        history.append(f)
        if f < best[0]:
            best[0], best[1] = f, Z.copy()
        now = time.monotonic()
        if progress is not None and now - last[0] >= every_s:
            last[0] = now
            progress(f"evaluation {len(history)}: loss {f / anchors:.8f} per anchor, relative "
                     f"gradient {_relative_gradient(Z, g):.1e}, {format_duration(now - t0)} "
                     "elapsed")
        if len(history) > window and min(history[:-window]) - best[0] < ftol * anchors:
            why[0] = (f"{window} evaluations lowered the loss by less than {ftol:g} nats per "
                      "anchor")
            raise _Stalled
        if len(history) >= max_evals:
            why[0] = f"the evaluation limit ({max_evals})"
            raise _Stalled
        if deadline_s is not None and now - t0 > deadline_s:
            why[0] = f"stopped at its time limit ({format_duration(deadline_s)})"
            raise _Stalled
        return f, g

    try:
        Z, _ = sphere_lbfgs(value_grad, Z0, maxiter=max_evals, gtol=abs_gtol, ftol=1e-15,
                            maxcor=10)
    except _Stalled:
        Z = best[1]
    f, g = fb.value_grad(Z)
    evaluations = len(history) + 1
    rel = _relative_gradient(Z, g)
    if not why[0]:
        why[0] = ("the relative gradient target" if rel <= gtol else
                  "L-BFGS's own test (its line search at the loss's resolution)")
    return ChunkedFullBatchPoint(
        embedding=Z, loss=f, gradient=rel, evaluations=evaluations,
        seconds=time.monotonic() - t0,
        start=f"a seeded random start (seed {seed})" if start is None else start_name,
        stopped=why[0], gtol=gtol)
