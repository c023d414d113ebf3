"""The one rank-d (fixed-dimension) solver at default settings against the best configuration
that 256 independent random-start descents with class-swap moves find (issue 40, point 4).

Rerun: ``python -m benchmarks.rank_d [--quick] [--kind signed|relu|sample] [--draws N]
[--seed S] [--cache PATH]`` (``--cache`` keeps the references in a JSON file keyed by kind,
seed and draw, so that a change of the policy is judged again without recomputing them; the
references do not depend on dgp).

The draws (seeded, ``numpy.random.default_rng(seed)``): ``d`` uniform in 2..8, ``K`` uniform in
``d + 2``..30 (signed) or ``d + 1``..30 (non-negative, sample-level), ``tau`` uniform in
[0.1, 0.5], class sizes long-tailed and in random order (``2 + floor(6 * Pareto(1.2))``, at
most 300; ``--sizes flat``: uniform in 2..39, where the first measurement found the misses).
Three kinds of problem:

* signed class prototypes, K > d + 1: ``dgp.supcon_prototypes(sizes, tau=, dim=)``;
* non-negative (ReLU-head) prototypes, K > d: the factor search of
  ``dgp.supcon_prototypes(..., nonnegative=True)`` (``dgp.solver.nonnegative_factor`` at its
  default budget; the certified lower bound is not part of the search and not timed);
* a sample-level weighting (Gaussian kernel of 2-D Gaussian labels, ``sigma`` uniform in
  [0.3, 1], N = K samples): ``dgp.optimum(W, tau=, dim=)``.

The reference, written here without dgp code (numpy only, from the loss
formulas below): 256 random unit starts, each descended by a batched L-BFGS (memory 10,
Armijo backtracking) on an unconstrained parametrisation of the product of spheres (columns
normalised; for ReLU the squares of the parameters, normalised, so every point is
non-negative); the best 16 are descended to convergence (the loss stops decreasing by
1e-14 of itself for five steps), then each improved by 8 rounds of a class-swap move (two
columns exchanged, descended again, kept when lower). The reference is the lowest loss.

A draw is a **hit** when dgp's loss, evaluated from dgp's point by the formulas below (never
taken from a solver's status), is at most the reference's plus a relative ``1e-6`` of it
(:data:`RELATIVE_SLACK`; the losses are sums over anchors, so this is about ``3e-6`` nats per
anchor here, 100 times finer than ``dgp.constants.LOSS_RESOLUTION``). The rows also give the
largest shortfall per anchor.

Rows follow ``benchmarks/__init__.py``: the ratio is the hit rate, the target 0.95.

Two more modes (issue 40, "Must show"):

* ``--budget``: monotone in the budget. For seeded signed draws (K <= 10, d <= 3, seed 5;
  ``--k-max``, ``--d-max`` for larger ones),
  ``dgp.supcon_prototypes`` at ``starts`` = 1, 2, 4, 8, 16 (the random candidates; the free
  optimum's truncation is given at every budget); the ratio is the share of draws whose loss
  never rises with the budget (the target 1: candidates are nested, so a larger budget
  contains a smaller one's computation).
* ``--large``: K = 1000 classes in d = 128 (CIFAR/ImageNet-LT sizes ``n_k = max(2, round(500 *
  0.01^(k / 999)))``, tau = 0.1), the default call: the relative Riemannian gradient reached
  (the target 1e-6), the seconds, the certified gap (loss less the certified lower bound) and
  the lead over TSC-style uniform targets (``dgp.geometry.uniform_sphere_points``) it is
  compared with.
"""

from __future__ import annotations

import itertools
import json
import os
import time

import numpy as np

from dgp.geometry import uniform_sphere_points
from dgp.optima import optimum
from dgp.prototypes import block_weights, prototype_loss, supcon_prototypes
from dgp.solver import block_problem, nonnegative_factor, rank_d_starts
from dgp.weights import gaussian_kernel_weights

TARGET = 0.95
#: a hit: dgp's loss at most the reference's times (1 + RELATIVE_SLACK)
RELATIVE_SLACK = 1e-6
#: the reference: random starts, the best kept for polish and swaps, swap rounds
REF_STARTS, REF_KEEP, REF_SWAPS = 256, 16, 8
KINDS = ("signed", "relu", "sample")


def _lse(A: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """log-sum-exp over the last axis (``-inf`` entries allowed) and the softmax."""
    m = A.max(axis=-1, keepdims=True)
    E = np.exp(A - m)
    s = E.sum(axis=-1, keepdims=True)
    return (m + np.log(s))[..., 0], E / s


def class_loss(n: np.ndarray, tau: float):
    """Collapsed SupCon loss (nats), :math:`\\sum_c n_c \\log((n_c - 1) + \\sum_{c' \\ne c}
    n_{c'} e^{(G_{cc'} - 1)/\\tau})`, of unit-column factors ``X`` (B, d, K), and its gradient."""
    n = np.asarray(n, dtype=float)
    K = n.size
    off = np.log(n)[None, :].repeat(K, axis=0)
    off[np.arange(K), np.arange(K)] = np.log(n - 1.0)
    eye = np.eye(K, dtype=bool)

    def f(X: np.ndarray):
        G = np.matmul(X.transpose(0, 2, 1), X)
        A = np.where(eye, 0.0, G - 1.0) / tau + off
        lse, Q = _lse(A)
        Q = np.where(eye, 0.0, Q)
        M = n[None, :, None] * Q / tau
        return lse @ n, np.matmul(X, M + M.transpose(0, 2, 1))

    return f


def sample_loss(W: np.ndarray, tau: float):
    """The w-InfoNCE loss (cosine, summed over anchors; targets the rows of ``W`` without its
    diagonal, normalised) of unit-column factors ``X`` (B, d, N) and its gradient."""
    N = W.shape[0]
    A0 = np.array(W, dtype=float)
    np.fill_diagonal(A0, 0.0)
    P = A0 / A0.sum(axis=1, keepdims=True)
    eye = np.eye(N, dtype=bool)

    def f(X: np.ndarray):
        S = np.matmul(X.transpose(0, 2, 1), X) / tau
        lse, Q = _lse(np.where(eye, -np.inf, S))
        R = (Q - P[None]) / tau
        val = lse.sum(axis=1) - np.einsum("kl,bkl->b", P, np.where(eye, 0.0, S))
        return val, np.matmul(X, R + R.transpose(0, 2, 1))

    return f


def _lift(loss, shape: tuple[int, int], nonneg: bool):
    """The loss of the unconstrained parameters ``v`` (B, d*K): columns normalised, or (ReLU)
    their squares normalised; value and gradient."""

    def fun(v: np.ndarray):
        B = v.shape[0]
        V = v.reshape((B, *shape))
        U = V * V if nonneg else V
        nr = np.linalg.norm(U, axis=1, keepdims=True)
        X = U / nr
        f, g = loss(X)
        dU = (g - X * np.sum(X * g, axis=1, keepdims=True)) / nr
        return f, ((2.0 * V * dU) if nonneg else dU).reshape(B, -1)

    return fun


def _point(v: np.ndarray, shape: tuple[int, int], nonneg: bool) -> np.ndarray:
    V = v.reshape((v.shape[0], *shape))
    U = V * V if nonneg else V
    return U / np.linalg.norm(U, axis=1, keepdims=True)


def lbfgs_batch(fun, x: np.ndarray, iters: int, memory: int = 10):
    """Batched L-BFGS (two-loop recursion, Armijo backtracking) of ``fun`` on every row of
    ``x``; stops after ``iters`` steps or when no row's loss fell by more than 1e-14 of itself
    for five steps. Returns the rows and their losses."""
    x = x.copy()
    B, n = x.shape
    f, g = fun(x)
    S, Y, rho = np.zeros((memory, B, n)), np.zeros((memory, B, n)), np.zeros((memory, B))
    k = quiet = 0
    for _ in range(iters):
        q = g.copy()
        alpha = np.zeros((memory, B))
        order = [(k - 1 - i) % memory for i in range(min(k, memory))]
        for j in order:
            alpha[j] = rho[j] * np.sum(S[j] * q, axis=1)
            q -= alpha[j][:, None] * Y[j]
        gam = 0.1 / np.maximum(np.abs(g).max(axis=1), 1e-300)
        if order:
            j = order[0]
            yy = np.sum(Y[j] * Y[j], axis=1)
            gam = np.where(rho[j] > 0, 1.0 / np.maximum(rho[j] * yy, 1e-300), gam)
        q *= gam[:, None]
        for j in reversed(order):
            beta = rho[j] * np.sum(Y[j] * q, axis=1)
            q += S[j] * (alpha[j] - beta)[:, None]
        p = -q
        gp = np.sum(g * p, axis=1)
        bad = ~(gp < 0)
        if bad.any():  # not a descent direction: the scaled gradient, memory cleared
            p[bad] = -g[bad] * (0.1 / np.maximum(np.abs(g[bad]).max(axis=1), 1e-300))[:, None]
            gp = np.sum(g * p, axis=1)
            rho[:, bad] = 0.0
        t = np.ones(B)
        xn = x + p
        fn, gn = fun(xn)
        ok = fn <= f + 1e-4 * gp
        for _ in range(40):
            if ok.all():
                break
            r = ~ok
            t[r] *= 0.5
            xr = x[r] + t[r, None] * p[r]
            fr, gr = fun(xr)
            xn[r], fn[r], gn[r] = xr, fr, gr
            ok[r] = fr <= f[r] + 1e-4 * t[r] * gp[r]
        s = np.where(ok[:, None], xn - x, 0.0)
        yv = np.where(ok[:, None], gn - g, 0.0)
        sy = np.sum(s * yv, axis=1)
        slot = k % memory
        S[slot], Y[slot] = s, yv
        rho[slot] = np.where(sy > 0, 1.0 / np.where(sy > 0, sy, 1.0), 0.0)
        k += 1
        dec = np.where(ok, f - fn, 0.0)
        x = np.where(ok[:, None], xn, x)
        g = np.where(ok[:, None], gn, g)
        f = np.where(ok, fn, f)
        quiet = quiet + 1 if np.all(dec <= 1e-14 * np.abs(f)) else 0
        if quiet >= 5:
            break
    return x, f


def reference(loss, K: int, dim: int, *, nonneg: bool, seed: int, starts: int = REF_STARTS,
              keep: int = REF_KEEP, swaps: int = REF_SWAPS, rough: int = 150,
              fine: int = 1000) -> float:
    """The best loss of ``starts`` random-start descents (``rough`` steps), the best ``keep``
    descended to convergence and each improved by ``swaps`` class-swap moves."""
    shape = (dim, K)
    fun = _lift(loss, shape, nonneg)
    rng = np.random.default_rng(seed)
    V = rng.standard_normal((starts, *shape))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    x, f = lbfgs_batch(fun, V.reshape(starts, -1), rough)
    top = np.argsort(f)[:keep]
    x, f = lbfgs_batch(fun, x[top], fine)
    X = _point(x, shape, nonneg)
    for _ in range(swaps):
        Y = X.copy()
        for b in range(len(top)):
            i, j = rng.choice(K, size=2, replace=False)
            Y[b][:, [i, j]] = X[b][:, [j, i]]
        y, fy = lbfgs_batch(fun, (np.sqrt(Y) if nonneg else Y).reshape(len(top), -1), fine)
        ok = fy < f
        X = np.where(ok[:, None, None], _point(y, shape, nonneg), X)
        f = np.where(ok, fy, f)
    return float(f.min())


def draw(rng: np.random.Generator, kind: str, k_max: int = 30, d_max: int = 8,
         sizes: str = "long-tailed") -> dict:
    """One random case of ``kind`` (module docstring); ``sizes="flat"``: class sizes uniform
    in 2..39 (the draws of the first measurement, where the non-negative misses were)."""
    dim = int(rng.integers(2, d_max + 1))
    low = dim + 2 if kind == "signed" else dim + 1
    K = int(rng.integers(low, max(low, k_max) + 1))
    tau = float(rng.uniform(0.1, 0.5))
    case = {"kind": kind, "K": K, "d": dim, "tau": tau}
    if kind == "sample":
        case["labels"] = rng.standard_normal((K, 2)).tolist()
        case["sigma"] = float(rng.uniform(0.3, 1.0))
    else:
        if sizes == "flat":
            case["sizes"] = rng.integers(2, 40, size=K).tolist()
        else:
            n = 2 + np.floor(6.0 * rng.pareto(1.2, size=K))
            case["sizes"] = np.minimum(n, 300).astype(int).tolist()
    return case


def _loss_fn(case: dict):
    if case["kind"] == "sample":
        W = gaussian_kernel_weights(np.array(case["labels"]), sigma=case["sigma"])
        return sample_loss(W, case["tau"]), case["K"]
    n = np.array(case["sizes"], dtype=float)
    return class_loss(n, case["tau"]), float(n.sum())


def ours(case: dict) -> tuple[float, float]:
    """dgp's default call on ``case``: its loss (by this module's formulas) and seconds."""
    K, dim, tau = case["K"], case["d"], case["tau"]
    t = time.perf_counter()
    if case["kind"] == "sample":
        W = gaussian_kernel_weights(np.array(case["labels"]), sigma=case["sigma"])
        X = optimum(W, tau=tau, dim=dim).embedding.T
    elif case["kind"] == "relu":  # the factor search of supcon_prototypes(nonnegative=True)
        n = np.array(case["sizes"])
        prob = block_problem(n, block_weights(K, None), tau=tau)
        Z, _, _ = nonnegative_factor(prob, dim, starts=rank_d_starts(K, dim, given=0), seed=0)
        X = Z.T
    else:
        X = supcon_prototypes(np.array(case["sizes"]), tau=tau, dim=dim).prototypes.T
    seconds = time.perf_counter() - t
    X = X / np.linalg.norm(X, axis=0)
    loss, _ = _loss_fn(case)
    return float(loss(X[None])[0][0]), seconds


def _reference_of(case: dict, key: str, cache: dict | None, seed: int) -> tuple[float, float]:
    if cache is not None and key in cache:
        return cache[key]["reference"], cache[key]["reference_s"]
    loss, _ = _loss_fn(case)
    t = time.perf_counter()
    ref = reference(loss, case["K"], case["d"], nonneg=case["kind"] == "relu", seed=seed)
    out = (ref, time.perf_counter() - t)
    if cache is not None:
        cache[key] = {"reference": out[0], "reference_s": out[1], "case": case}
    return out


def rate(kind: str, draws: int, *, k_max: int = 30, d_max: int = 8, seed: int,
         sizes: str = "long-tailed", cache_path: str | None = None,
         verbose: bool = False) -> dict:
    """The hit rate of dgp's default over ``draws`` seeded draws of ``kind``."""
    cache = None
    if cache_path is not None:
        cache = json.load(open(cache_path)) if os.path.exists(cache_path) else {}
    rng = np.random.default_rng([seed, KINDS.index(kind)])
    table = []
    for i in range(draws):
        case = draw(rng, kind, k_max, d_max, sizes)
        key = f"{kind}/{sizes}/{seed}/{k_max}/{d_max}/{i}"
        ref, ref_s = _reference_of(case, key, cache, seed=1000 * seed + i)
        if cache is not None:
            with open(cache_path, "w") as fh:
                json.dump(cache, fh)
        mine, mine_s = ours(case)
        _, anchors = _loss_fn(case)
        row = {"K": case["K"], "d": case["d"], "tau": round(case["tau"], 4), "ours": mine,
               "reference": ref, "hit": bool(mine <= ref + RELATIVE_SLACK * abs(ref)),
               "short_per_anchor": max(mine - ref, 0.0) / anchors, "ours_s": mine_s,
               "reference_s": ref_s}
        if verbose:
            print("   ", i, row, flush=True)
        table.append(row)
    hits = sum(r["hit"] for r in table)
    what = {"signed": "signed prototypes, K > d + 1",
            "relu": "non-negative prototypes, K > d",
            "sample": "sample-level optimum (Gaussian kernel, N = K)"}[kind]
    return {
        "name": f"rank-d {what}, {draws} draws, K <= {k_max}, d <= {d_max}"
                + ("" if kind == "sample" else f", {sizes} sizes"),
        "baseline": (f"best of {REF_STARTS} random-start L-BFGS descents, the best {REF_KEEP} "
                     f"with {REF_SWAPS} class-swap moves each"),
        "ratio": hits / draws,
        "ratio_meaning": f"draws where dgp's default reaches the baseline's best (relative "
                         f"{RELATIVE_SLACK:g})",
        "target": f">= {TARGET:g}",
        "ok": bool(hits / draws >= TARGET),
        "worst_short_per_anchor": float(max(r["short_per_anchor"] for r in table)),
        "median_ours_s": float(np.median([r["ours_s"] for r in table])),
        "max_ours_s": float(max(r["ours_s"] for r in table)),
        "table": table,
    }


#: the random-candidate budgets of ``--budget``
BUDGETS = (1, 2, 4, 8, 16)


def budget_monotone(draws: int, *, k_max: int = 10, d_max: int = 3, seed: int = 5,
                    budgets: tuple[int, ...] = BUDGETS, verbose: bool = False) -> dict:
    """The share of seeded signed draws (K <= ``k_max``, d <= ``d_max``) whose default-policy
    loss never rises from one budget of ``budgets`` random candidates to the next."""
    rng = np.random.default_rng([seed, 99])
    table = []
    for i in range(draws):
        case = draw(rng, "signed", k_max, d_max)
        n = np.array(case["sizes"])
        losses = [float(supcon_prototypes(n, tau=case["tau"], dim=case["d"], starts=s).loss)
                  for s in budgets]
        row = {"K": case["K"], "d": case["d"], "tau": round(case["tau"], 4), "losses": losses,
               "monotone": all(b <= a for a, b in itertools.pairwise(losses))}
        if verbose:
            print("   ", i, row, flush=True)
        table.append(row)
    ok = sum(r["monotone"] for r in table)
    return {
        "name": f"rank-d signed prototypes, loss against the budget {list(budgets)}, {draws} "
                f"draws, K <= {k_max}, d <= {d_max}",
        "baseline": "the same call with fewer random candidates",
        "ratio": ok / draws,
        "ratio_meaning": "draws whose loss never rises with the budget",
        "target": "= 1",
        "ok": ok == draws,
        "table": table,
    }


def large_sizes(K: int = 1000) -> np.ndarray:
    """Long-tailed class sizes ``n_k = max(2, round(500 * 0.01^(k / (K - 1))))`` (ratio 100)."""
    return np.array([max(2, round(500 * 0.01 ** (k / (K - 1)))) for k in range(K)])


def large(K: int = 1000, dim: int = 128, tau: float = 0.1) -> dict:
    """The default rank-``dim`` prototypes of ``K`` long-tailed classes: stationarity reached,
    seconds, certified gap and the lead over TSC-style uniform targets."""
    import warnings

    n = large_sizes(K)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = supcon_prototypes(n, tau=tau, dim=dim)
    seconds = time.perf_counter() - t
    U = uniform_sphere_points(K, dim, seed=0)
    uniform = float(prototype_loss(U @ U.T, n, tau=tau))
    grad = float(p.rank_d.gradient_norm)
    return {
        "name": f"rank-d signed prototypes, K = {K}, d = {dim}, tau = {tau:g}, long-tailed "
                "(ratio 100)",
        "baseline": "first-order criticality: relative Riemannian gradient 1e-6",
        "ratio": grad / 1e-6,
        "ratio_meaning": "relative Riemannian gradient reached over the target 1e-6",
        "target": "<= 1",
        "ok": bool(grad <= 1e-6),
        "gradient": grad,
        "seconds": seconds,
        "loss": float(p.loss),
        "certified_gap": float(p.loss - p.lower_bound),
        "lead_over_uniform_targets": uniform - float(p.loss),
        "table": [],
    }


def run(quick: bool) -> list[dict]:
    """Benchmark rows; ``quick`` keeps to one small draw of each kind (CI: that it cannot rot;
    about 8 s, where two draws each took 16 s)."""
    if quick:
        return [rate("signed", 1, k_max=7, d_max=3, seed=1),
                rate("relu", 1, k_max=6, d_max=3, seed=2),
                rate("sample", 1, k_max=8, d_max=3, seed=3)]
    return [rate(kind, 40, seed=1) for kind in KINDS]


if __name__ == "__main__":  # pragma: no cover
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--kind", choices=KINDS, action="append")
    ap.add_argument("--draws", type=int, default=40)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sizes", choices=("long-tailed", "flat"), default="long-tailed")
    ap.add_argument("--cache", default=None)
    ap.add_argument("--k-max", type=int, default=None,
                    help="largest K of the draws (default 30; --budget: 10)")
    ap.add_argument("--d-max", type=int, default=None,
                    help="largest d of the draws (default 8; --budget: 3)")
    ap.add_argument("--budget", action="store_true", help="monotone in the budget")
    ap.add_argument("--large", action="store_true", help="K = 1000, d = 128 criticality")
    args = ap.parse_args()
    if args.quick:
        rows = run(quick=True)
    elif args.budget:
        rows = [budget_monotone(args.draws, k_max=args.k_max or 10, d_max=args.d_max or 3,
                                verbose=True)]
    elif args.large:
        rows = [large()]
    else:
        rows = [rate(kind, args.draws, k_max=args.k_max or 30, d_max=args.d_max or 8,
                     seed=args.seed, sizes=args.sizes, cache_path=args.cache, verbose=True)
                for kind in (args.kind or KINDS)]
    for row in rows:
        table = row.pop("table")
        print(row)
        for r in table:
            print("   ", r)
