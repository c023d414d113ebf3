"""K = 1000, d = 128 at tau = 0.5: the measurements behind docs/benchmarks.md's "three next ideas"
(issue 40 point 4). Not part of the default benchmark run (minutes of CPU per step).

Usage: ``python -m benchmarks.rank_d_k1000_ideas [--tau 0.5] [--K 1000] [--dim 128]
[--seconds 100] [--iters 2500]``. It runs the default factor-path descent (first descent and
restarts, :func:`dgp.solver.bm_lbfgs` with the policy's budgets) from the free optimum's
truncation for ``--seconds`` of CPU, then prints from that point: the spectrum of the factor's
``d x d`` Gram and the largest cosine (is the optimum rank-deficient, are classes merged), the
Riemannian Hessian's largest eigenvalue and two lowest by Lanczos, and ``--iters`` L-BFGS steps
(memory 30, column-curvature preconditioned) three ways: plain, after a step along the lowest
eigenvector (a saddle escape, both signs, halving line search), and with a per-class ``d x d``
block preconditioner in the initial Hessian. Each line gives CPU seconds
(:func:`time.process_time`), the relative Riemannian gradient and the loss.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import scipy.sparse.linalg as spla

from benchmarks.rank_d import large_sizes
from dgp.constants import ARMIJO, CURVATURE_FLOOR, LINE_SEARCH_MIN_STEP, RANK_D_GTOL
from dgp.solver import BlockFactor, bm_lbfgs, factor, rank_d_policy

#: L-BFGS memory of the comparisons (the factor path's restarts)
MEMORY = 30


class _Timed:
    """A factor objective that stops the descent (by raising) after ``seconds`` of CPU."""

    def __init__(self, obj: BlockFactor, seconds: float) -> None:
        self.obj, self.K, self.tau = obj, obj.K, obj.tau
        self.until = time.process_time() + seconds
        self.last: np.ndarray | None = None

    def on_factor(self) -> _Timed:
        return self

    def evaluate(self, X: np.ndarray):
        if time.process_time() > self.until:
            raise TimeoutError
        self.last = X
        return self.obj.evaluate(X)

    def __getattr__(self, name: str):
        return getattr(self.obj, name)


def descended(sizes: np.ndarray, tau: float, dim: int, seconds: float) -> np.ndarray:
    """The default factor-path descent from the free optimum's truncation, cut after
    ``seconds`` of CPU (its last evaluated point)."""
    from dgp import supcon_prototypes

    X0 = factor(supcon_prototypes(sizes, tau=tau).gram, dim)
    obj = BlockFactor(sizes, tau)
    obj.set_scale(X0)
    pol = rank_d_policy(sizes.size, dim, factor_path=True)
    timed = _Timed(obj, seconds)
    try:
        X, _ = bm_lbfgs(timed, X0, maxiter=pol.run_iters, gtol=RANK_D_GTOL, precondition=True,
                        restart_memory=pol.restart_memory, restart_iters=pol.restart_iters)
    except TimeoutError:
        X = timed.last
    return X / np.linalg.norm(X, axis=0)


def _operator(obj: BlockFactor, X: np.ndarray) -> spla.LinearOperator:
    hess = obj.hessian(X)
    r, K = X.shape

    def apply(v: np.ndarray) -> np.ndarray:
        Z = v.reshape(r, K)
        return hess(Z - X * np.sum(X * Z, axis=0)).ravel()

    return spla.LinearOperator((r * K, r * K), matvec=apply, dtype=float)


def lowest(obj: BlockFactor, X: np.ndarray, k: int = 2) -> tuple[float, np.ndarray, np.ndarray]:
    """The Riemannian Hessian's largest eigenvalue, its ``k`` lowest over it (Lanczos on the
    flipped operator, 30 restarts of 60 vectors; empty where they did not converge) and their
    eigenvectors."""
    op = _operator(obj, X)
    v0 = np.random.default_rng(0).standard_normal(op.shape[0])
    top = float(spla.eigsh(op, k=1, which="LA", v0=v0, tol=1e-5, ncv=40, maxiter=30,
                           return_eigenvectors=False)[0])
    flipped = spla.LinearOperator(op.shape, matvec=lambda v: top * v - op.matvec(v), dtype=float)
    try:
        vals, vecs = spla.eigsh(flipped, k=k, which="LA", v0=v0, tol=1e-6, ncv=60, maxiter=30)
    except spla.ArpackNoConvergence as exc:
        vals, vecs = exc.eigenvalues, exc.eigenvectors
    return top, (top - vals) / top, vecs


def escaped(obj: BlockFactor, X: np.ndarray, v: np.ndarray) -> tuple[np.ndarray, float]:
    """``X`` moved along the tangent direction ``v`` by the better sign and halving step
    (0.5 down to 2^-12; no move where none lowers the objective), and the decrease."""
    v = v - X * np.sum(X * v, axis=0)
    v /= np.linalg.norm(v)
    f0 = obj.evaluate(X)[0]
    best, step = f0, 0.0
    for sign in (1.0, -1.0):
        for a in 0.5 * 2.0 ** -np.arange(12):
            Y = X + sign * a * v
            fy = obj.evaluate(Y / np.linalg.norm(Y, axis=0))[0]
            if fy < best:
                best, step = fy, sign * a
    Y = X + step * v
    return Y / np.linalg.norm(Y, axis=0), f0 - best


def block_inverse(obj: BlockFactor, X: np.ndarray, floor: float = 0.05) -> np.ndarray:
    """Per class the inverse of ``X Diag(H_c / tau) X^T - y_c I`` (the curvature of its own
    terms with the sphere's), eigenvalues floored at ``floor`` of their mean, the radial
    direction given the mean: ``K x d x d``."""
    Gam = obj.evaluate(X)[1]
    H, y = obj._H, np.sum(X * Gam, axis=0)  # twice the exponential gradient, left in its buffer
    r, K = X.shape
    inv = np.empty((K, r, r))
    for c in range(K):
        mean = H[c].sum() / (obj.tau * r)
        B = (X * (H[c] / obj.tau)) @ X.T - y[c] * np.eye(r) + mean * np.outer(X[:, c], X[:, c])
        lam, Q = np.linalg.eigh(B)
        inv[c] = (Q / np.maximum(lam, floor * mean)) @ Q.T
    return inv


def descend(obj: BlockFactor, X: np.ndarray, iters: int,
            inv: np.ndarray | None = None) -> tuple[np.ndarray, float]:
    """``iters`` L-BFGS steps (memory :data:`MEMORY`) on the normalised columns, the initial
    Hessian the column curvature at ``X`` or the blocks ``inv``; the point and its CPU
    seconds."""
    r, K = X.shape
    start = time.process_time()
    if inv is None:
        col = np.broadcast_to(obj.column_curvature(X), (r, K)).ravel()

        def pinv(d: np.ndarray) -> np.ndarray:
            return d / col
    else:
        def pinv(d: np.ndarray) -> np.ndarray:
            out = np.matmul(inv, d.reshape(r, K).T[:, :, None])[:, :, 0].T
            return (out - X * np.sum(X * out, axis=0)).ravel()

    def fun(v: np.ndarray):
        V = v.reshape(r, K)
        norms = np.linalg.norm(V, axis=0)
        Xn = V / norms
        f, Gam = obj.evaluate(Xn)
        return f, ((Gam - Xn * np.sum(Xn * Gam, axis=0)) / norms).ravel()

    x = X.ravel().copy()
    f, g = fun(x)
    S: list[np.ndarray] = []
    Y: list[np.ndarray] = []
    for _ in range(iters):
        d, alphas = -g, []
        for s_k, y_k in zip(reversed(S), reversed(Y), strict=True):
            alphas.append(float(s_k @ d) / float(y_k @ s_k))
            d -= alphas[-1] * y_k
        if S:
            d = float(S[-1] @ Y[-1]) / float(Y[-1] @ pinv(Y[-1])) * pinv(d)
        else:
            d = pinv(d)
            d /= max(1.0, float(np.linalg.norm(d)))
        for (s_k, y_k), a_k in zip(zip(S, Y, strict=True), reversed(alphas), strict=True):
            d += (a_k - float(y_k @ d) / float(y_k @ s_k)) * s_k
        slope = float(g @ d)
        if slope >= 0:
            S.clear()
            Y.clear()
            d = -pinv(g)
            d /= max(1.0, float(np.linalg.norm(d)))
            slope = float(g @ d)
        step = 1.0
        while True:
            f_new, g_new = fun(x + step * d)
            if f_new <= f + ARMIJO * step * slope or step < LINE_SEARCH_MIN_STEP:
                break
            step *= 0.5
        s_k, y_k = step * d, g_new - g
        if float(s_k @ y_k) > CURVATURE_FLOOR * float(np.linalg.norm(s_k) * np.linalg.norm(y_k)):
            S.append(s_k)
            Y.append(y_k)
            if len(S) > MEMORY:
                S.pop(0)
                Y.pop(0)
        x, f, g = x + s_k, f_new, g_new
    V = x.reshape(r, K)
    return V / np.linalg.norm(V, axis=0), time.process_time() - start


def _line(what: str, obj: BlockFactor, X: np.ndarray, cpu: float) -> str:
    obj.set_scale(X)
    return (f"{what}: {cpu:.1f} s of CPU, relative gradient {obj.stationarity(X):.2g}, "
            f"loss {obj.loss(X)[0]:.10g}")


def main() -> None:  # pragma: no cover
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tau", type=float, default=0.5)
    ap.add_argument("--K", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--seconds", type=float, default=100.0)
    ap.add_argument("--iters", type=int, default=2500)
    args = ap.parse_args()
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        sizes = large_sizes(args.K)
        t = time.process_time()
        X = descended(sizes, args.tau, args.dim, args.seconds)
        obj = BlockFactor(sizes, args.tau)
        print(_line("default descent", obj, X, time.process_time() - t), flush=True)
        ev = np.linalg.eigvalsh(X @ X.T)
        G = X.T @ X
        np.fill_diagonal(G, -1.0)
        print(f"X X^T eigenvalues {ev[0]:.3g} to {ev[-1]:.3g}; largest cosine {G.max():.3g}",
              flush=True)
        t = time.process_time()
        obj.set_scale(X)
        top, low, vecs = lowest(obj, X)
        print(f"Hessian: largest {top:.3g}, lowest over it {np.sort(low)} "
              f"({time.process_time() - t:.0f} s)", flush=True)
        Y, cpu = descend(obj, X, args.iters)
        print(_line("plain L-BFGS", obj, Y, cpu), flush=True)
        if len(low):
            Z, drop = escaped(obj, X, vecs[:, int(np.argmin(low))].reshape(X.shape))
            obj.set_scale(Z)
            Y, cpu = descend(obj, Z, args.iters)
            print(_line(f"saddle escape (scaled drop {drop:.2g}), L-BFGS", obj, Y, cpu),
                  flush=True)
        obj.set_scale(X)
        t = time.process_time()
        inv = block_inverse(obj, X)
        Y, cpu = descend(obj, X, args.iters, inv)
        print(_line("block-preconditioned L-BFGS (its blocks included)", obj, Y,
                    time.process_time() - t),
              flush=True)


if __name__ == "__main__":  # pragma: no cover
    main()
