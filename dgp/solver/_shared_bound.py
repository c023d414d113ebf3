r"""A lower bound on the expected-batch optimum from batches that share one Gram matrix: the
sample-average (SAA) lower bound of Mak, Morton and Wood (1999) on the free-dimension relaxation.

For ``m`` batches :math:`b_1, \dots, b_m` drawn independently, let :math:`U` be the union of
their points and

.. math::

    \hat v_m = \min_{G \in \mathcal E_U} \frac 1m \sum_{j=1}^m L_{b_j}(G_{b_j}),

the least mean batch loss over one Gram matrix of the union (:math:`\mathcal E_U`: the
elliptope, PSD with unit diagonal). Every batch loss is convex in its principal block, so
:math:`\hat v_m` is a convex program, and
:math:`v_m = \mathbb E\,\hat v_m \le \min_{G} \mathbb E_b L_b(G_b) \le \min_Z \mathbb E_b
L_b(Z)` (the minimum of a mean is at most the mean at the expectation's minimiser; a rank-``d``
embedding is one Gram matrix). :math:`v_m` is nondecreasing in ``m`` (Mak, Morton and Wood,
Theorem 2), and ``m = 1`` is the per-batch relaxation of
:func:`dgp.solver.relaxation_bound`, whose free Gram fits each batch alone: where a batch holds
about one positive per anchor (a k-NN graph) that relaxation lies far below the loss, and a
Gram shared by many batches cannot fit them all.

Each replicate draws ``m`` fresh batches, descends the mean loss over a factor of the union's
rows from the embedding's own rows (Burer–Monteiro: any factor rank), and bounds
:math:`\hat v_m` below by weak duality over :math:`\mathcal E_U` at the point reached
(:func:`dual_bound`: :math:`\lambda_{\min}` of a ``u x u`` matrix, by a dense symmetric
eigensolver). The bound of a replicate is valid whatever the descent reached; over ``R``
independent replicates their mean less a one-sided Student quantile times its standard error is
a lower confidence limit on :math:`v_m`, hence on the optimum.

Measured (uniform batches, B = 256, d = 128, tau = 0.1, mean over anchors with positives; the
embedding returned by ``dgp.optimum``; the gap is its held-out loss less the bound, nats per
anchor; CPU seconds a replicate on the shared 2-core machine; two replicates each):

=========================  ========  ========  ========  ========
weighting                  m = 1     m = 4     m = 16    m = 64
=========================  ========  ========  ========  ========
k-NN (k = 10), N = 600     0.101     0.074     0.017     0.0044
  CPU a replicate          1.2 s     3.5 s     9.3 s     31.8 s
k-NN (k = 10), N = 2000    0.271     0.258     0.245     0.119
  CPU a replicate          1.0 s     4.8 s     15.2 s    38.6 s
=========================  ========  ========  ========  ========

Two points meet in :math:`m B^2 / N^2` batches of a replicate, and the bias of the shared bound
falls with that number (0.2 meetings: little gained; 3: 0.017; 12: 0.004), so the batches a
replicate needs grow as :math:`N^2 / B^2`: at N = 2000 a gap of 0.01 would take several hundred
batches a replicate (minutes each), and at N = 10 000 tens of thousands. The rule
(:func:`shared_batches`) therefore shares at most :data:`SHARED_MAX_M` batches, only where they
meet often enough to pay, and only where the per-batch bound is loose (:data:`SHARED_WHEN_GAP`).
On a smooth weighting (2-D soft labels, N = 2000) the per-batch bound is already within 0.0025
(300 iterations at the batch's full rank) and a shared replicate moves the batches' minimum by
2e-4 only, while its factor of rank d + 32 leaves its dual bound 0.0076 (m = 4) to 0.0099
(m = 16) below: the per-batch bound is kept there.

The linearised bound :math:`F(G_0) - \langle S, G_0\rangle + \min_{\mathcal E}\langle S,
G\rangle` (:math:`S` the expected batch gradient at the embedding, estimated from ``M``
batches) is this SAA bound of the batches' linearised losses, so it never beats it at equal
``M``; measured (``benchmarks/linearized_bound.py``, docs/benchmarks.md) its gap at ``M =
infinity`` is the Frank-Wolfe gap of the embedding, 0.305 on the k-NN graph at N = 2000 (tau =
0.1), 0.041 at tau = 0.5, 0.020 on 2-D soft labels: not adopted.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtri, stdtrit

from dgp.errors import ParameterError
from dgp.resources import memory_budget
from dgp.solver._batch import BatchSpec
from dgp.solver._batch_sources import BatchWeights, batch_function
from dgp.solver._sphere_lbfgs import row_lbfgs

__all__ = ["SHARED_COOCCURRENCE", "SHARED_EXTRA_RANK", "SHARED_LINEAR_ITERS", "SHARED_MAX_M",
           "SHARED_MIN_COOCCURRENCE", "SHARED_REPLICATES", "SHARED_STREAM", "SHARED_WHEN_GAP",
           "SharedBound", "UnionBatches", "dual_bound", "shared_batches", "shared_bound",
           "shared_gaps", "shared_replicate", "shared_seconds", "union_batches"]

#: the batch stream of replicate ``r`` of :func:`shared_bound` is ``[seed, SHARED_STREAM, r]``
#: (no stream of the stochastic driver, its evaluation, selection, timing or per-batch bound)
SHARED_STREAM = 9
#: columns of the factor beyond the embedding's own (a seeded push of size 1e-2 off its span),
#: so that the descent can leave the embedding's dimension
SHARED_EXTRA_RANK = 32
#: L-BFGS iterations of the linear problem that chooses a replicate's dual multipliers
SHARED_LINEAR_ITERS = 100
#: the shared bound is drawn only where the per-batch relaxation leaves more than this many nats
#: per anchor (the issue's target): on a smooth weighting each batch is a fair sample of an
#: anchor's targets and the per-batch bound is tight (2-D soft labels, N = 2000, B = 256,
#: tau = 0.1: 0.0025), while a shared replicate's factor of rank d + 32 leaves its own dual
#: bound looser there (0.0076 at m = 4, 0.0099 at m = 16)
SHARED_WHEN_GAP = 0.01
#: a replicate holds enough batches that two points meet in about this many of them
#: (:math:`m B^2 / N^2`) ...
SHARED_COOCCURRENCE = 8.0
#: ... but at most this many batches (CPU: about 0.5 s a batch at B = 256, d = 128) ...
SHARED_MAX_M = 32
#: ... and the shared bound is drawn only where two points meet in at least this many batches
#: of a replicate: below, sharing gained little (k-NN, N = 2000, B = 256: the gap 0.271 at
#: m = 1, 0.258 at m = 4 and 0.245 at m = 16, pairs meeting 0.26 times)
SHARED_MIN_COOCCURRENCE = 1.0
#: independent replicates of the shared bound (a Student quantile with two degrees of freedom)
SHARED_REPLICATES = 3
#: dense ``u x u`` float64 arrays a replicate holds at once over the union of its ``u`` points
#: (the Gram, the gradient, the dual matrix and the eigensolver's copies): the union nears all
#: ``N`` points where they meet often enough, so these are ``N x N``-sized (17 MB each at
#: N = 1448), and a replicate is drawn only where they fit the memory budget
SHARED_DENSE_ARRAYS = 6


@dataclass(frozen=True, eq=False)
class UnionBatches:
    r"""The mean loss of ``m`` batches as a function of the rows of their union.

    Attributes
    ----------
    functions : tuple
        Each batch's loss (:class:`dgp.solver.BatchFunction`), of its rows in batch order.
    local : tuple of ndarray
        Each batch's rows among the union's.
    u : int
        Points of the union.
    """

    functions: tuple
    local: tuple
    u: int

    def value_grad(self, X: np.ndarray,
                   gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """The mean batch loss at unit rows ``X`` (``u x r``) and its Euclidean gradient."""
        m = len(self.functions)
        f = 0.0
        g = np.zeros_like(X) if gradient else None
        for fn, loc in zip(self.functions, self.local, strict=True):
            fj, gj = fn.value_grad(X[loc], gradient)
            f += fj
            if gradient:
                g[loc] += gj
        if gradient:
            g /= m
        return f / m, g

    def terms(self, X: np.ndarray,
              gradient: bool = True) -> tuple[float, np.ndarray | None]:
        """The mean batch loss and (with ``gradient``) its derivative in the union's Gram
        entries (``u x u``, zero diagonal; :meth:`dgp.solver.BatchFunction.terms`)."""
        m = len(self.functions)
        f = 0.0
        Gam = np.zeros((self.u, self.u)) if gradient else None
        for fn, loc in zip(self.functions, self.local, strict=True):
            fj, Gj = fn.terms(X[loc], gradient)
            f += fj
            if gradient:
                Gam[np.ix_(loc, loc)] += Gj
        if gradient:
            Gam /= m
        return f / m, Gam


def dual_bound(Z: np.ndarray, f: float, fn, *,
               linear: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> float:
    r"""A lower bound on :math:`\min_{G \in \mathcal E} F(G)` (``F`` convex in the Gram matrix,
    ``fn.terms`` its value and derivative) from the point ``G = Z Z^T`` of value ``f``. With
    :math:`C` the symmetric derivative at ``G``, convexity gives :math:`F^\star \ge f -
    \langle C, G\rangle + \min_{G'} \langle C, G'\rangle`, and for any ``y``,
    :math:`\min_{G' \in \mathcal E} \langle C, G'\rangle \ge \sum y + u\,\lambda_{\min}(C -
    \operatorname{Diag} y)` (weak duality over the elliptope). ``y`` is ``diag(C G)`` (the
    point's own multipliers), and where that does not certify the point, also ``diag(C X
    X^T)`` with ``X = linear(C, Z)`` (rows that lower :math:`\langle C, X X^T\rangle`); the
    larger bound is kept, never above ``f``. Valid for any ``y``: the rows only choose one."""
    u = Z.shape[0]
    G = Z @ Z.T
    np.fill_diagonal(G, 1.0)
    _, Gam = fn.terms(Z, gradient=True)
    C = 0.5 * (Gam + Gam.T)
    lin = float(np.sum(C * G))

    def bound(y: np.ndarray) -> float:
        return (f - lin + float(y.sum())
                + u * float(np.linalg.eigvalsh(C - np.diag(y))[0]))

    best = min(f, bound(np.einsum("ij,ji->i", C, G)))
    if best < f and linear is not None:
        X = linear(C, Z)
        best = min(f, max(best, bound(np.einsum("ij,ij->i", C @ X, X))))
    return best


def union_batches(weights: BatchWeights, draws: list[tuple[np.ndarray, np.ndarray]], *,
                  tau: float, spec: BatchSpec) -> tuple[np.ndarray, UnionBatches]:
    """The union ``U`` (sorted point indices) of the batches ``draws`` (``(idx, counts)``
    each) and their mean loss as a function of its rows."""
    U = np.unique(np.concatenate([idx for idx, _ in draws]))
    fns = tuple(batch_function(weights, idx, c, tau=tau, spec=spec) for idx, c in draws)
    return U, UnionBatches(fns, tuple(np.searchsorted(U, idx) for idx, _ in draws), int(U.size))


def shared_replicate(Z: np.ndarray, weights: BatchWeights,
                     draws: list[tuple[np.ndarray, np.ndarray]], *, tau: float,
                     spec: BatchSpec, iters: int,
                     extra_rank: int = SHARED_EXTRA_RANK) -> tuple[float, float]:
    """One replicate (module docstring): ``(mean loss of Z on the batches, a certified lower
    bound on their least mean loss over one Gram matrix of their union)``. The descent is
    ``iters`` L-BFGS iterations on a factor of rank ``dim + extra_rank`` from ``Z``'s rows;
    the bound is :func:`dual_bound` at the better of the point reached and ``Z``'s rows."""
    U, fn = union_batches(weights, draws, tau=tau, spec=spec)
    Zu = np.asarray(Z, dtype=float)[U]
    f0 = fn.value_grad(Zu, False)[0]
    d = Zu.shape[1]
    r = min(U.size, d + extra_rank) if U.size > d else d
    X0 = np.zeros((U.size, r))
    X0[:, :d] = Zu
    if r > d:
        X0[:, d:] = 1e-2 * np.random.default_rng(U.size).standard_normal((U.size, r - d))
    X = row_lbfgs(fn.value_grad, X0, iters=iters)
    f = fn.value_grad(X, False)[0]
    if not f <= f0:
        X, f = Zu, f0

    def linear(C: np.ndarray, Y: np.ndarray) -> np.ndarray:
        return row_lbfgs(lambda V: (float(np.sum((C @ V) * V)), 2.0 * (C @ V)), Y,
                         iters=SHARED_LINEAR_ITERS)

    return f0, dual_bound(X, f, fn, linear=linear)


@dataclass(frozen=True)
class SharedBound:
    r"""A lower confidence limit on :math:`\min_Z \mathbb E_b L_b(Z)` from replicates of
    ``m`` batches sharing one Gram matrix (module docstring).

    Attributes
    ----------
    value : float
        The limit: the expected loss of the embedding (its held-out estimate) less the mean
        gap over the replicates, less :math:`z_{0.975}` times the loss's standard error and
        :math:`t_{0.975,\,R-1}` times the gap's (each one-sided at 97.5%, so both hold
        together at ``confidence``).
    m : int
        Batches per replicate.
    mean_gap : float
        Mean over the replicates of the embedding's mean loss on the replicate's batches less
        the replicate's certified bound.
    gap_se : float
        Its standard error (``inf`` with one replicate).
    replicates : int
    confidence : float
    """

    value: float
    m: int
    mean_gap: float
    gap_se: float
    replicates: int
    confidence: float = 0.95

    @property
    def batches(self) -> int:
        """Fresh batches drawn: ``m`` a replicate."""
        return self.m * self.replicates


def shared_bound(
    Z: np.ndarray, loss, weights: BatchWeights, sampler, spec: BatchSpec, *, tau: float,
    seed: int, m: int, replicates: int, iters: int = 200,
    progress: Callable[[str], None] | None = None,
) -> SharedBound:
    """:class:`SharedBound` of the embedding ``Z`` (``n x d`` unit rows) whose held-out
    :class:`dgp.solver.Estimate` is ``loss``: ``replicates`` independent replicates of ``m``
    fresh batches of ``sampler`` each (replicate ``r`` from the stream ``[seed,``
    :data:`SHARED_STREAM` ``, r]``), :func:`shared_replicate` with ``iters`` iterations."""
    if not (isinstance(m, int) and m >= 1):
        raise ParameterError("m", f"must be an integer >= 1, got {m!r}")
    if not (isinstance(replicates, int) and replicates >= 2):
        raise ParameterError("replicates", f"must be an integer >= 2 (a standard error), got "
                             f"{replicates!r}")
    g = shared_gaps(Z, weights, sampler, spec, tau=tau, seed=seed, m=m,
                    replicates=replicates, iters=iters, progress=progress)
    mean_gap = float(g.mean())
    gap_se = float(g.std(ddof=1) / math.sqrt(g.size))
    value = (loss.mean - mean_gap - float(ndtri(0.975)) * loss.se
             - float(stdtrit(g.size - 1, 0.975)) * gap_se)
    return SharedBound(value, m, mean_gap, gap_se, int(g.size))


def shared_gaps(
    Z: np.ndarray, weights: BatchWeights, sampler, spec: BatchSpec, *, tau: float, seed: int,
    m: int, replicates: int, iters: int = 200, progress: Callable[[str], None] | None = None,
) -> np.ndarray:
    """Each replicate's gap: the mean loss of ``Z`` on its ``m`` fresh batches (stream
    ``[seed,`` :data:`SHARED_STREAM` ``, r]``) less its certified bound
    (:func:`shared_replicate`); their mean estimates ``E L(Z) - v_m`` without bias.
    ``progress``: a line at most every five seconds."""
    gaps = []
    last_said = time.monotonic()
    for r in range(replicates):
        rng = np.random.default_rng([seed, SHARED_STREAM, r])
        draws = [sampler.draw(rng) for _ in range(m)]
        f0, low = shared_replicate(Z, weights, draws, tau=tau, spec=spec, iters=iters)
        gaps.append(f0 - low)
        if progress is not None and time.monotonic() - last_said >= 5.0:
            last_said = time.monotonic()
            progress(f"shared-Gram bound: {r + 1} of {replicates} replicates of {m} batches, "
                     f"mean gap {np.mean(gaps):.3g}")
    return np.array(gaps)


def shared_batches(n: int, batch_size: int) -> int:
    """Batches of a shared replicate (the one rule): enough for two of the ``n`` points to meet
    :data:`SHARED_COOCCURRENCE` times (:math:`m B^2 / N^2`), at most :data:`SHARED_MAX_M`; 1
    (the per-batch relaxation alone) where that many let them meet fewer than
    :data:`SHARED_MIN_COOCCURRENCE` times. At B = 256: 32 batches up to N = 1448, one from
    there on. (:func:`dgp.solver.relaxation_bound` draws them only where the per-batch bound
    leaves more than :data:`SHARED_WHEN_GAP`.) Also 1 where a replicate's
    :data:`SHARED_DENSE_ARRAYS` arrays over the union of its batches exceed the memory budget
    (:func:`dgp.resources.memory_budget`).

    >>> [shared_batches(n, 256) for n in (300, 600, 1448, 1449, 2000)]
    [11, 32, 32, 1, 1]
    """
    pairs = batch_size * batch_size / (n * n)  # meetings of two points a batch
    m = min(SHARED_MAX_M, math.ceil(SHARED_COOCCURRENCE / pairs))
    union = min(n, m * batch_size)
    budget = memory_budget()
    fits = budget is None or SHARED_DENSE_ARRAYS * 8 * union * union <= budget
    return m if m * pairs >= SHARED_MIN_COOCCURRENCE and m > 1 and fits else 1


def shared_seconds(weights: BatchWeights, sampler, spec: BatchSpec, *, tau: float, dim: int,
                   seed: int, m: int, replicates: int = SHARED_REPLICATES,
                   iters: int = 200) -> float:
    """Seconds of ``replicates`` shared replicates of ``m`` batches (:func:`shared_gaps` with
    ``iters`` iterations), for a time estimate before the work: one union of ``m`` batches of
    the stream ``[seed, 6, 1]`` (no reported number uses it) is built and its pieces timed at
    the replicate's rank (``dim +`` :data:`SHARED_EXTRA_RANK`): the mean loss and gradient (one
    an L-BFGS iteration, ``iters`` of the descent and :data:`SHARED_LINEAR_ITERS` products by
    the ``u x u`` derivative for the multipliers), the derivative itself, and two dense
    eigenvalue problems (timed at ``u = 200`` at most and scaled as ``u^3``). Measured on a
    k-NN graph (N = 600, B = 256, d = 128, tau = 0.1, m = 32, one BLAS thread on the loaded
    shared machine): 16 and 22 s said a replicate (two timings), 25 s taken (208 loss
    evaluations); the calibrated estimate multiplies in the load it measures on the first run."""
    rng = np.random.default_rng([seed, 6, 1])
    t0 = time.perf_counter()
    U, fn = union_batches(weights, [sampler.draw(rng) for _ in range(m)], tau=tau, spec=spec)
    build = time.perf_counter() - t0
    u = int(U.size)
    r = min(u, dim + SHARED_EXTRA_RANK) if u > dim else dim
    X = rng.standard_normal((u, r))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    fn.value_grad(X)  # the first call warms caches, out of the timing
    t0 = time.perf_counter()
    for _ in range(2):
        fn.value_grad(X)
    step = (time.perf_counter() - t0) / 2
    t0 = time.perf_counter()
    _, Gam = fn.terms(X)
    C = 0.5 * (Gam + Gam.T)
    terms = time.perf_counter() - t0
    t0 = time.perf_counter()
    C @ X
    product = time.perf_counter() - t0
    k = min(u, 200)
    t0 = time.perf_counter()
    np.linalg.eigvalsh(C[:k, :k])
    eig = (time.perf_counter() - t0) * (u / k) ** 3
    per = (build + (iters + 1) * step + 2 * terms + SHARED_LINEAR_ITERS * 2 * product
           + 2 * eig)
    return replicates * per
