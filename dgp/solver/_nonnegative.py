r"""Row problems over non-negative Grams: the ReLU-head version of the solver floor.

A ReLU head gives embeddings with non-negative coordinates, so the prototype Gram is
*completely positive*, :math:`M = ZZ^\top` with :math:`Z \in \mathbb R^{K \times d}_{\ge 0}` of
unit rows. This module holds

* :func:`nonnegative_factor`: the search policy of the one rank-``d`` solver
  (:func:`dgp.solver.solve_rank_d`: nested seeded candidates, each with its own chain of
  swap, relocation and noise moves, so a larger budget is never worse) on the non-negative part
  of the oblique manifold (L-BFGS on the squared parametrisation
  :math:`Z_{ck} = V_{ck}^2 / \|V_c^2\|`, then an active-set polish on the support), and
  :func:`nonnegative_stationarity`, its first-order (KKT) residual computed from ``Z`` alone;
* :func:`dnn_lower_bound`: a certified lower bound on :math:`\min F` over completely positive
  Grams of rank ``<= d``, from the *doubly non-negative* relaxation
  :math:`\mathcal D_K = \{M \succeq 0,\ M \ge 0,\ \operatorname{diag}M = 1\}` and, when
  ``d < K``, the valid inequalities

  .. math:: w^\top M w \ge (\mathbf 1^\top w)^2 / d \qquad (w \ge 0),

  which every such Gram satisfies (:math:`w^\top M w = \|Z^\top w\|_2^2 \ge \|Z^\top w\|_1^2/d
  = (\sum_c w_c\|z_c\|_1)^2/d` and :math:`\|z_c\|_1 \ge \|z_c\|_2 = 1`; theorem
  ``relu-orthogonal-frame``).

The bound is rigorous whatever the accuracy of the semidefinite solver (cvxpy, a core
dependency): by convexity :math:`F(M^\star) \ge F(M_0) + \min_{H}\langle\nabla F(M_0), H -
M_0\rangle` for any symmetric :math:`M_0`, and the inner linear minimum is bounded below by any
dual point :math:`(y, N \ge 0, \lambda \ge 0)`, made feasible by shifting ``y`` by the smallest
eigenvalue of :math:`\nabla F - \operatorname{Diag}y - N - \sum_k \lambda_k w_k w_k^\top`
(only the dual point comes from the solver).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.optimize as so

from dgp.constants import (
    DNN_SOLVER_TOL,
    NONNEG_CHEAP_SIZE,
    NONNEG_CUT_VIOLATION,
    NONNEG_MOVE_ITERS,
    NONNEG_RELOCATE_PERIOD,
    NONNEG_RUN_ITERS,
    NONNEG_SUPPORT_TOL,
    RANK_D_EVAL_OVERHEAD,
    RANK_D_HOP_MAX_SIZE,
    RANK_D_HOP_SIZE,
    RANK_D_HOP_STALL,
    RANK_D_HOPS,
    RANK_D_SWAP_PERIOD,
    SCALE_FLOOR,
)
from dgp.records import Record
from dgp.solver._conic import solve_conic
from dgp.solver._program import RowProblem
from dgp.solver._solve import lbfgs

#: at most one progress line of the non-negative search per this many seconds
NONNEG_PROGRESS_EVERY_S = 5.0

__all__ = [
    "DNNBound",
    "dnn_lower_bound",
    "nonnegative_cost",
    "nonnegative_factor",
    "nonnegative_starts",
    "nonnegative_stationarity",
]

#: chain j of a candidate starts from start i + j * NONNEG_CHAIN_STRIDE (never another
#: candidate's start)
NONNEG_CHAIN_STRIDE = 1 << 20
#: largest number of rows whose convex relaxation is solved as a nonlinear (exponential-cone)
#: program; beyond it the bound is linearised at the given points only
DNN_MAX_ROWS = 400
#: rounds of cutting planes (valid inequalities of rank <= d) added to the relaxation
CUT_ROUNDS = 3
#: most partitions of the classes the bound branches on (Stirling numbers S(K, d))
MAX_BRANCHES = 64


def _grad_Z(prob: RowProblem, Z: np.ndarray) -> tuple[float, np.ndarray]:
    """Scaled value and Euclidean gradient :math:`2\\nabla\\hat F(ZZ^T) Z` in ``Z``."""
    st = prob.state(Z @ Z.T)
    return prob.value(st), 2.0 * (prob.gradient(st) @ Z)


def nonnegative_stationarity(prob: RowProblem, Z: np.ndarray) -> float:
    r"""First-order residual of a non-negative unit-row factor ``Z`` (dimensionless).

    KKT on :math:`\{z_c \ge 0,\ \|z_c\| = 1\}`: with :math:`\Gamma = 2\nabla\hat F Z`, the
    multipliers of the sign constraints are :math:`\nu_c = \Gamma_c - \langle\Gamma_c,
    z_c\rangle z_c`; they must vanish on the support and be non-negative off it. Returned: the
    largest violation over the size of the two parts :math:`\nabla\hat F` is the difference
    of (exponential and linear, each times ``Z``), so that a point where the gradient itself
    vanishes (a Gram attaining the entropic bound) reads 0, not rounding over rounding."""
    st = prob.state(Z @ Z.T)
    ge, gl = prob.gradient_parts(st)
    Gam = 2.0 * ((ge - gl) @ Z)
    nu = Gam - Z * np.sum(Gam * Z, axis=1, keepdims=True)
    on = Z > NONNEG_SUPPORT_TOL
    viol = np.where(on, np.abs(nu), np.maximum(-nu, 0.0))
    size = 2.0 * max(float(np.abs(ge @ Z).max()), float(np.abs(gl @ Z).max()))
    return float(viol.max()) / max(size, SCALE_FLOOR)


def _nonnegative_start(K: int, r: int, i: int, seed: int) -> np.ndarray:
    """Start ``i`` (``K x r``, positive entries, unit rows), from its own seed stream
    ``default_rng([seed, 1, i])``: even ``i`` absolute Gaussians, odd ``i`` a random assignment
    of the classes to the coordinates with a small positive spread (every coordinate used when
    ``K >= r``)."""
    rng = np.random.default_rng([seed, 1, i])
    if i % 2 == 0:
        Z = np.abs(rng.standard_normal((K, r))) + NONNEG_SUPPORT_TOL
    else:
        cols = np.concatenate([rng.permutation(r), rng.integers(0, r, size=max(K - r, 0))])
        Z = 0.1 * rng.random((K, r)) + NONNEG_SUPPORT_TOL
        Z[np.arange(K), rng.permutation(cols[:K])] += 1.0
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


def nonnegative_starts(K: int, r: int, *, starts: int, seed: int) -> list[np.ndarray]:
    """Seeded starting factors (``K x r``, positive entries, unit rows), start ``i`` from its
    own seed stream (so the first ``s`` starts do not depend on how many are asked for): half
    random (absolute Gaussians), half random assignments of the classes to the coordinates."""
    return [_nonnegative_start(K, r, i, seed) for i in range(starts)]


def _squared_descent(prob: RowProblem, Z0: np.ndarray, maxiter: int) -> np.ndarray:
    K, r = Z0.shape

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        V = v.reshape(K, r)
        U = V * V
        nr = np.linalg.norm(U, axis=1, keepdims=True)
        Z = U / nr
        f, Gam = _grad_Z(prob, Z)
        dU = (Gam - Z * np.sum(Gam * Z, axis=1, keepdims=True)) / nr
        return f, (2.0 * V * dU).ravel()

    v, _ = lbfgs(fun, np.sqrt(Z0).ravel(), maxiter=maxiter, gtol=SCALE_FLOOR)
    U = v.reshape(K, r) ** 2
    return U / np.linalg.norm(U, axis=1, keepdims=True)


def _support_polish(prob: RowProblem, Z0: np.ndarray, maxiter: int) -> np.ndarray:
    """L-BFGS on the entries of the support of ``Z0`` (rows normalised inside the objective),
    releasing the zeros whose sign multiplier is negative, a few times."""
    Z = Z0.copy()
    for _ in range(4):
        on = Z > NONNEG_SUPPORT_TOL
        _, Gam = _grad_Z(prob, Z)
        nu = Gam - Z * np.sum(Gam * Z, axis=1, keepdims=True)
        release = ~on & (nu < 0)
        on |= release
        X = np.where(on, np.maximum(Z, NONNEG_SUPPORT_TOL), 0.0)
        idx = np.nonzero(on)

        def fun(x: np.ndarray, idx=idx, shape=Z.shape) -> tuple[float, np.ndarray]:
            V = np.zeros(shape)
            V[idx] = np.abs(x)
            nr = np.linalg.norm(V, axis=1, keepdims=True)
            W = V / nr
            f, G = _grad_Z(prob, W)
            dV = (G - W * np.sum(G * W, axis=1, keepdims=True)) / nr
            return f, dV[idx] * np.sign(x + (x == 0))

        x, _ = lbfgs(fun, X[idx], maxiter=maxiter, gtol=SCALE_FLOOR)
        V = np.zeros_like(Z)
        V[idx] = np.abs(x)
        Z_new = V / np.linalg.norm(V, axis=1, keepdims=True)
        if prob.value(prob.state(Z_new @ Z_new.T)) <= prob.value(prob.state(Z @ Z.T)):
            Z = Z_new
        if not release.any():
            break
    return Z


def _nats(prob: RowProblem, Z: np.ndarray) -> tuple[float, float]:
    """The order of candidates: (log excess, loss) in nats at ``Z``, the scale set at ``Z``
    (reset first: a row problem's ``set_scale`` reads the old scale)."""
    G = Z @ Z.T
    prob.log_t = 0.0
    prob.set_scale(G)
    loss, _, log_excess = prob.loss(G)
    return (log_excess, loss)


def _relocated(Z: np.ndarray, rng: np.random.Generator, structured: bool) -> np.ndarray:
    """One class's row moved elsewhere in the non-negative orthant: a random direction, or
    (``structured``) a place where the optima of the non-negative problem put classes: onto
    another class, a coordinate axis, or the middle of two axes."""
    K, r = Z.shape
    i = int(rng.integers(K))
    Y = Z.copy()
    if not structured:
        v = np.abs(rng.standard_normal(r))
    else:
        where = int(rng.integers(3)) if K > 1 else 1 + int(rng.integers(2))
        v = np.zeros(r)
        if where == 0:
            v = Z[(i + 1 + int(rng.integers(K - 1))) % K].copy()
        elif where == 1 or r == 1:
            v[int(rng.integers(r))] = 1.0
        else:
            v[rng.choice(r, size=2, replace=False)] = 1.0
    v = v + NONNEG_SUPPORT_TOL
    Y[i] = v / np.linalg.norm(v)
    return Y


def _move(Z: np.ndarray, h: int, rng: np.random.Generator, relocate: bool = True) -> np.ndarray:
    """Move ``h`` of a chain (the policy of :func:`dgp.solver.solve_rank_d`, with a move of the
    orthant): two classes' rows exchanged, but every third move absolute Gaussian noise and
    (``relocate``) every :data:`~dgp.constants.NONNEG_RELOCATE_PERIOD`-th move one class
    relocated (to a random direction, onto another class, an axis or the middle of two axes,
    in turn). Relocations are what the orthant needs besides swaps: which classes share a
    coordinate is combinatorial, and a swap never changes it when the sizes are alike."""
    K, r = Z.shape
    if relocate and h % NONNEG_RELOCATE_PERIOD == NONNEG_RELOCATE_PERIOD - 1:
        return _relocated(Z, rng, structured=(h // NONNEG_RELOCATE_PERIOD) % 2 == 1)
    if K > 2 and h % RANK_D_SWAP_PERIOD != RANK_D_SWAP_PERIOD - 1:
        i, j = rng.choice(K, size=2, replace=False)
        Y = Z.copy()
        Y[[i, j]] = Z[[j, i]]
        return Y
    Y = np.abs(Z + RANK_D_HOP_SIZE * rng.standard_normal(Z.shape) / math.sqrt(r))
    Y += NONNEG_SUPPORT_TOL
    return Y / np.linalg.norm(Y, axis=1, keepdims=True)


def _descend(prob: RowProblem, Z0: np.ndarray, maxiter: int) -> np.ndarray:
    """Squared-parametrisation descent then the support polish, the scale set at the start."""
    prob.log_t = 0.0
    prob.set_scale(Z0 @ Z0.T)
    Z = _squared_descent(prob, Z0, maxiter)
    prob.log_t = 0.0
    prob.set_scale(Z @ Z.T)
    Zp = _support_polish(prob, Z, maxiter)
    return Zp


def _chain(prob: RowProblem, Z: np.ndarray, rng: np.random.Generator, hops: int,
           relocate: bool) -> tuple[tuple[float, float], np.ndarray]:
    """A chain of moves from the descended ``Z``: each move descended, kept when its loss is
    lower; it ends after ``hops`` moves or RANK_D_HOP_STALL failures in a row."""
    key = _nats(prob, Z)
    failed = 0
    for h in range(hops):
        Y = _descend(prob, _move(Z, h, rng, relocate), NONNEG_MOVE_ITERS)
        k = _nats(prob, Y)
        if k < key:
            Z, key, failed = Y, k, 0
        else:
            failed += 1
            if failed >= RANK_D_HOP_STALL:
                break
    return key, Z


def nonnegative_cost(K: int, r: int, *, starts: int, rows: int | None = None) -> float:
    """The guard's estimate (operations at 1e9 per second, the unit of
    :func:`~dgp.solver.check_time`) of :func:`nonnegative_factor` on a row problem of ``rows``
    rows (``None``: ``K``, the full batch): an evaluation costs ``250 rows + 3 rows K +
    0.4 r K^2`` (at least :data:`~dgp.constants.RANK_D_EVAL_OVERHEAD`), a candidate's first
    descents a quarter of their budget and each chain about
    :data:`~dgp.constants.RANK_D_HOP_STALL` moves at an eighth of theirs."""
    # measured: 220-265 ns a row at K = 6-7 over the 13 537-15 411 rows of every batch
    # composition (3 rows K alone said 0.28 of the 3.4 ms taken); 55 ms an evaluation at
    # K = 1000, r = 128; 3 800-9 000 evaluations a candidate at K = 5-7, d = 3-4 (full batch and
    # every composition), for 4 750-7 600 here, where every move to the end of a chain of
    # RANK_D_HOPS counted 31 000-47 000. Against it: K = 6, d = 4, B = 16 (15 411 rows, 8
    # candidates) about 125 s for 157 s estimated (the old model: 69 s); full batch there about
    # 7 s for 7.6 s (old: 50 s); K = 1000, r = 128, 8 candidates, no moves, 267 s on a loaded
    # core for about 7 minutes
    hops = K * r <= RANK_D_HOP_MAX_SIZE
    chains = max(1, NONNEG_CHEAP_SIZE // max(K * r, 1))
    R = K if rows is None else rows
    per_eval = max(250.0 * R + 3.0 * R * K + 0.4 * r * K * K, RANK_D_EVAL_OVERHEAD)
    first = chains * 2 * NONNEG_RUN_ITERS / 4
    moves = (1 + chains) * RANK_D_HOP_STALL * 2 * NONNEG_MOVE_ITERS / 8 if hops else 0.0
    return per_eval * max(starts, 1) * (first + moves)


def nonnegative_factor(
    prob: RowProblem, dim: int, *, starts: int, seed: int,
    maxiter: int = NONNEG_RUN_ITERS, progress: Callable[[str], None] | None = None,
) -> tuple[np.ndarray, int, tuple[tuple[float, np.ndarray], ...]]:
    """The best non-negative unit-row factor (``K x dim``) found by the policy of the one
    rank-d solver (:func:`dgp.solver.solve_rank_d`): ``starts`` candidates, candidate ``i``
    from :func:`nonnegative_starts`'s start ``i``, descended (squared parametrisation), polished
    on its support, then improved by two chains of moves seeded by ``default_rng([seed, 2, i])``
    (one of swaps and noise, one with class relocations too), each move descended and kept
    when its loss is lower; the candidate is the better chain's end. Where ``K * dim`` is below
    :data:`~dgp.constants.NONNEG_CHEAP_SIZE` it has ``NONNEG_CHEAP_SIZE // (K * dim) - 1``
    further relocation chains from their own starts and seeds ``[seed, 2, i, j]``.
    No candidate depends on another: a larger budget is never worse.

    Returns the best factor (lowest loss; ties to the earlier candidate), the number of
    candidates that reached that loss within rounding (a hint of how often the basin was
    found, not a certificate) and every candidate's ``(loss, factor)`` (loss in nats, in
    order: what the loss pins is compared over them). ``prob``'s scale is left at the best
    factor. ``progress`` hears, at most every :data:`NONNEG_PROGRESS_EVERY_S` seconds, how many
    candidates are done and the best loss so far."""
    K = prob.K
    hops = RANK_D_HOPS if K * dim <= RANK_D_HOP_MAX_SIZE else 0
    found = []  # (key, factor)
    chains = max(1, NONNEG_CHEAP_SIZE // (K * dim))
    t0 = last_said = time.monotonic()
    for i in range(max(starts, 1)):
        if progress is not None and found and (time.monotonic() - last_said
                                               >= NONNEG_PROGRESS_EVERY_S):
            last_said = time.monotonic()
            progress(f"{i} of {max(starts, 1)} candidates done, best loss "
                     f"{min(key[1] for key, _ in found):.10g} ({last_said - t0:.0f} s)")
        # candidate i: the best of its chains: from start i, one of swaps and noise and one
        # with relocations too (the same seed); on a cheap problem more with relocations, chain
        # j from start i + j * NONNEG_CHAIN_STRIDE
        Z0 = _descend(prob, _nonnegative_start(K, dim, i, seed), maxiter)
        best_chain = _chain(prob, Z0, np.random.default_rng([seed, 2, i]), hops, False)
        for j in range(chains):
            rng = np.random.default_rng([seed, 2, i] if j == 0 else [seed, 2, i, j])
            if j:
                Z0 = _descend(prob, _nonnegative_start(K, dim, i + j * NONNEG_CHAIN_STRIDE,
                                                       seed), maxiter)
            chain = _chain(prob, Z0, rng, hops, True) if hops else best_chain
            if chain[0] < best_chain[0]:
                best_chain = chain
        found.append(best_chain)
    best_key, best = found[0]
    for key, Z in found[1:]:
        if key < best_key:
            best_key, best = key, Z
    spread = max(abs(best_key[1]), 1.0) * 1e3 * np.finfo(float).eps
    hits = sum(1 for key, _ in found if key[1] <= best_key[1] + spread)
    _nats(prob, best)
    return best, hits, tuple((float(key[1]), Z) for key, Z in found)


@dataclass(frozen=True)
class DNNBound(Record):
    """A certified lower bound on the excess loss over non-negative Grams of rank ``<= d``.

    Attributes
    ----------
    excess : float
        Lower bound on the excess loss over the entropic bound (nats); the loss bound is the
        entropic bound plus it.
    dnn_excess : float
        The same from the doubly non-negative relaxation alone (no rank cuts); equal to
        ``excess`` when ``dim`` is ``None`` or ``>= K``.
    cuts : int
        Valid rank-``d`` inequalities :math:`w^\\top M w \\ge (1^\\top w)^2/d` in the relaxation.
    branches : int
        Partitions of the classes branched on (0: no branching).
    relaxation_gram : ndarray or None
        The solver's minimiser of the relaxation (``None`` when it was not solved as a
        nonlinear program).
    relaxation : str
        What was solved, in words.
    """

    excess: float
    dnn_excess: float
    cuts: int
    branches: int
    relaxation_gram: np.ndarray | None
    relaxation: str


def _cvxpy():
    import cvxpy as cp  # a core dependency, imported only when a bound is asked for

    return cp


def _solve(problem) -> None:
    # "solution may be inaccurate": the bound is rigorous whatever the solve
    solve_conic(problem, tol=DNN_SOLVER_TOL, what="the doubly non-negative relaxation")


def _relaxation(prob: RowProblem, cuts: list[np.ndarray], d: float | None,
                lower: np.ndarray | None = None) -> np.ndarray | None:
    """Minimiser of the scaled objective over the DNN set with the cuts and the entry lower
    bounds ``lower`` (zero diagonal; ``None``: 0), by exponential cones."""
    cp = _cvxpy()
    K = prob.K
    M = cp.Variable((K, K), symmetric=True)
    cons = [M >> 0, M >= (0.0 if lower is None else lower), cp.diag(M) == 1]
    cons += [cp.sum(cp.multiply(np.outer(w, w), M)) >= float(w.sum()) ** 2 / d for w in cuts]
    terms = []
    inv_t = math.exp(-prob.log_t)
    for r in range(prob.R):
        a, ref = int(prob.anchor[r]), int(prob.ref[r])
        idx = np.flatnonzero(np.isfinite(prob.lmr[r]))
        diff = (M[a, idx] - M[a, ref]) / prob.tau
        u = cp.hstack([np.zeros(1), prob.lmr[r, idx] + diff])
        lin = -(prob.Pex_s[r, idx] @ diff) if prob.Pex_s[r, idx].any() else 0.0
        terms.append(prob.alpha_hat[r] * (lin + inv_t * cp.log_sum_exp(u)))
    problem = cp.Problem(cp.Minimize(cp.sum(cp.hstack(terms))), cons)
    _solve(problem)
    if M.value is None:
        return None
    G = 0.5 * (M.value + M.value.T)
    np.fill_diagonal(G, 1.0)
    return G


def _linear_bound(g: np.ndarray, cuts: list[np.ndarray], d: float | None,
                  lower: np.ndarray | None = None) -> float:
    r"""A rigorous lower bound on :math:`\min\langle g, H\rangle` over the DNN set with the cuts
    and :math:`H \ge L` (``lower``, zero diagonal): a dual point from the solver, made feasible
    (module docstring; the multiplier ``N >= 0`` of :math:`H \ge L` adds
    :math:`\langle N, L\rangle`)."""
    L = np.zeros_like(g) if lower is None else lower
    cp = _cvxpy()
    K = g.shape[0]
    y = cp.Variable(K)
    N = cp.Variable((K, K), symmetric=True)
    lam = cp.Variable(len(cuts), nonneg=True) if cuts else None
    S = g - cp.diag(y) - N
    b = np.array([float(w.sum()) ** 2 / d for w in cuts])
    if cuts:
        S = S - sum(lam[k] * np.outer(w, w) for k, w in enumerate(cuts))
    cons = [S >> 0, N >= 0, cp.diag(N) == 0]
    obj = cp.sum(y) + (b @ lam if cuts else 0.0) + cp.sum(cp.multiply(L, N))
    _solve(cp.Problem(cp.Maximize(obj), cons))
    yv = np.zeros(K) if y.value is None else np.asarray(y.value, dtype=float)
    Nv = np.zeros((K, K)) if N.value is None else np.maximum(0.5 * (N.value + N.value.T), 0.0)
    np.fill_diagonal(Nv, 0.0)
    lv = np.zeros(len(cuts)) if lam is None or lam.value is None else np.maximum(lam.value, 0)
    Sv = g - np.diag(yv) - Nv
    for k, w in enumerate(cuts):
        Sv = Sv - lv[k] * np.outer(w, w)
    shift = float(np.linalg.eigvalsh(0.5 * (Sv + Sv.T))[0])
    return (float(yv.sum()) + K * min(shift, 0.0) + float(np.sum(Nv * L))
            + (float(b @ lv) if cuts else 0.0))


def _separate(G: np.ndarray, d: int, cuts: list[np.ndarray]) -> np.ndarray | None:
    r"""A ``w`` on the simplex with :math:`w^\top G w < 1/d` (a violated rank-``d`` inequality)
    from a few local minimisations, or ``None``."""
    K = G.shape[0]
    best, best_w = -NONNEG_CUT_VIOLATION / d, None
    starts = [np.full(K, 1.0 / K)]
    order = np.argsort(G.sum(axis=1))
    for s in range(d + 1, K + 1):  # the s classes least aligned with the rest
        w = np.zeros(K)
        w[order[:s]] = 1.0 / s
        starts.append(w)
    cons = ({"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones(K)},)
    for w0 in starts:
        res = so.minimize(lambda w: (w @ G @ w, 2.0 * (G @ w)), w0, jac=True, method="SLSQP",
                          bounds=[(0.0, 1.0)] * K, constraints=cons)
        w = np.clip(res.x, 0.0, None)
        w /= w.sum()
        v = float(w @ G @ w) - 1.0 / d
        if v < best and not any(np.allclose(w, c / c.sum()) for c in cuts):
            best, best_w = v, w
    return best_w


def set_partitions(K: int, blocks: int):
    """Every partition of ``range(K)`` into exactly ``blocks`` non-empty blocks, as block labels
    (restricted growth strings: the first element of each block opens it)."""
    labels = [0] * K

    def rec(i: int, opened: int):
        if K - i < blocks - opened:
            return
        if i == K:
            if opened == blocks:
                yield tuple(labels)
            return
        for b in range(min(opened + 1, blocks)):
            labels[i] = b
            yield from rec(i + 1, max(opened, b + 1))

    if K >= 1:
        labels[0] = 0
        yield from rec(1, 1)


def stirling2(K: int, blocks: int) -> int:
    """Number of partitions of ``K`` elements into ``blocks`` non-empty blocks."""
    S = [[0] * (blocks + 1) for _ in range(K + 1)]
    S[0][0] = 1
    for n in range(1, K + 1):
        for k in range(1, blocks + 1):
            S[n][k] = k * S[n - 1][k] + S[n - 1][k - 1]
    return S[K][blocks]


def dnn_lower_bound(
    prob: RowProblem, points: list[np.ndarray], *, dim: int | None
) -> DNNBound:
    r"""Certified lower bound on the excess loss of ``prob`` over non-negative Grams of rank
    ``<= dim`` (``None``: any rank), from the DNN relaxation and, for ``dim < K``, rank cuts and
    a branching on where each prototype's largest coordinate lies.

    The relaxation is solved (when it has at most :data:`DNN_MAX_ROWS` rows) and the bound is
    the best linearisation at its minimiser and at ``points`` (module docstring).

    Branching (``d < K``, at most :data:`MAX_BRANCHES` partitions): each unit
    :math:`z_c \ge 0` has a coordinate :math:`k(c)` with :math:`z_{c,k(c)} \ge 1/\sqrt d`, so
    :math:`G_{cc'} \ge 1/d` whenever :math:`k(c) = k(c')`. Every feasible Gram lies in one of
    the relaxations with those entry bounds for a partition of the classes into ``d`` blocks
    (a partition into fewer blocks only adds bounds), and the minimum of their bounds is a bound.
    ``prob``'s scale is left at the last point linearised.

    Raises
    ------
    dgp.errors.SolverError
        If no semidefinite solver runs.
    """
    K = prob.K
    d = None if dim is None or dim >= K else int(dim)

    def bound_at(M: np.ndarray, cuts: list[np.ndarray], lower=None) -> float:
        prob.set_scale(M)
        st = prob.state(M)
        g = prob.gradient(st)
        _, excess, _ = prob.loss(M)
        lin = _linear_bound(g, cuts, d, lower) - float(np.sum(g * M))
        return excess + lin * prob.alpha_total * math.exp(prob.log_t)

    def solve_with(cuts: list[np.ndarray], rounds: int, lower=None
                   ) -> tuple[float, np.ndarray | None]:
        G_rel = None
        if prob.R <= DNN_MAX_ROWS:
            for k in range(rounds + 1):
                prob.set_scale(points[0])
                G_rel = _relaxation(prob, cuts, d, lower)
                if G_rel is None or d is None or k == rounds:
                    break
                w = _separate(G_rel, d, cuts)
                if w is None:
                    break
                cuts.append(w)
        cands = list(points) + ([G_rel] if G_rel is not None else [])
        return max(bound_at(M, cuts, lower) for M in cands), G_rel

    cuts: list[np.ndarray] = [np.ones(K)] if d is not None else []
    dnn, G_plain = solve_with([], 0)
    if d is None:
        return DNNBound(max(dnn, 0.0), max(dnn, 0.0), 0, 0, G_plain,
                        "doubly non-negative relaxation (PSD, entrywise >= 0, unit diagonal)")
    best, G_cut = solve_with(cuts, CUT_ROUNDS)
    best = max(best, dnn, 0.0)
    cut_word = "cut" if len(cuts) == 1 else "cuts"
    what = (f"doubly non-negative relaxation with {len(cuts)} rank-{d} {cut_word} w^T M w >= "
            f"(1^T w)^2/{d}")
    branches = stirling2(K, d)
    if prob.R <= DNN_MAX_ROWS and branches <= MAX_BRANCHES:
        worst = math.inf
        for labels in set_partitions(K, d):
            lab = np.array(labels)
            L = np.where(lab[:, None] == lab[None, :], 1.0 / d, 0.0)
            np.fill_diagonal(L, 0.0)
            worst = min(worst, solve_with(list(cuts), 0, L)[0])
        best = max(best, worst)
        what += f", branched on the {branches} partitions of the classes by largest coordinate"
    else:
        branches = 0
    return DNNBound(best, max(dnn, 0.0), len(cuts), branches, G_cut, what)
