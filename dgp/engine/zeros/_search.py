"""The numerical searches: a configuration :math:`X_0` (which proves approach when found)
and a minimisation of the loss (evidence only, for the components not decided)."""

from __future__ import annotations

import math

import numpy as np
import scipy.sparse as sp

from dgp._linalg import deterministic_blas
from dgp.engine.zeros._pattern import ComponentDecision, ZeroPattern
from dgp.engine.zeros._rigidity import (
    least_norm,
    non_edge_slack,
    polish,
    rigidity_map,
)
from dgp.engine.zeros._split import Component
from dgp.tolerance import Tolerance

#: largest component for which the numerical evidence (a loss minimisation) is computed
EVIDENCE_MAX_N = 24
#: ... its minimisations stop early once a gap below this fraction of the threshold is reached
EVIDENCE_STOP = 1e-3
#: L-BFGS options of the evidence minimisations
EVIDENCE_LBFGS = {"maxiter": 2000, "gtol": 1e-14, "ftol": 1e-16}
#: L-BFGS tolerances of the search for X0 (run to the floor of float64)
CONSTRUCT_LBFGS = {"gtol": 1e-12, "ftol": 1e-15}
#: each start of the search for X0 is jittered by this (unit-distance scale)
JITTER = 1e-3
#: a large search is abandoned when after 40 iterations its loss per positive pair exceeds this
STALL_PER_PAIR = 1e-3
#: the Gauss-Newton polish starts only from unit lengths within this (else the start is dropped)
POLISH_FROM = 1e-3


def construct(E: np.ndarray, n: int, dim: int, delta: np.ndarray, rng: np.random.Generator,
              *, tol: Tolerance, tau: float) -> np.ndarray | None:
    """Search for X0: unit positive pairs, every other pair at squared distance > 1, and the
    log-ratios in the image of its rigidity map. ``None`` when not found (nothing is proven).
    Accepted within :meth:`Tolerance.edge_atol`, above :meth:`Tolerance.slack_atol` and within
    :meth:`Tolerance.residual_atol`, the margins :func:`scaled_family` reports."""
    from scipy.optimize import minimize
    from scipy.sparse.csgraph import shortest_path

    A = sp.csr_matrix((np.ones(E.shape[0]), (E[:, 0], E[:, 1])), shape=(n, n))
    A = A + A.T
    dense_pairs = n <= 400
    if dense_pairs:
        iu = np.triu_indices(n, 1)
        adj = np.zeros((n, n), dtype=bool)
        adj[E[:, 0], E[:, 1]] = adj[E[:, 1], E[:, 0]] = True
        far = ~adj[iu]
        NE = np.stack([iu[0][far], iu[1][far]], axis=1)
    keys_e = np.sort(E, axis=1)
    key_set = keys_e[:, 0].astype(np.int64) * n + keys_e[:, 1]

    def pairs_near(X, mu):
        if dense_pairs:
            return NE
        from scipy.spatial import cKDTree

        P = cKDTree(X).query_pairs(math.sqrt(1.0 + mu), output_type="ndarray")
        if not P.size:
            return np.zeros((0, 2), dtype=np.int64)
        k = P[:, 0].astype(np.int64) * n + P[:, 1]
        return P[~np.isin(k, key_set)]

    def incidence(P: np.ndarray) -> sp.csr_matrix:
        """The n x m signed incidence matrix of the pairs P (+1 at P[:, 0], -1 at P[:, 1]):
        ``incidence(P) @ G`` adds row k of G to node P[k, 0] and subtracts it from P[k, 1],
        the scatter-add of the gradient (np.add.at took a sixth of a large search)."""
        m = P.shape[0]
        k = np.arange(m)
        return sp.csr_matrix((np.r_[np.ones(m), -np.ones(m)], (np.r_[P[:, 0], P[:, 1]],
                                                                np.r_[k, k])), shape=(n, m))

    B_e = incidence(E)
    B_dense = incidence(NE) if dense_pairs else None

    def fg(x, mu, NEc):
        X = x.reshape(n, dim)
        de = X[E[:, 0]] - X[E[:, 1]]
        le = (de * de).sum(axis=1) - 1.0
        val = float(le @ le)
        g = B_e @ (4.0 * le[:, None] * de)
        NEx = NEc if dense_pairs else pairs_near(X, mu)
        if NEx.size:
            dn = X[NEx[:, 0]] - X[NEx[:, 1]]
            ln = np.maximum(1.0 + mu - (dn * dn).sum(axis=1), 0.0)
            val += float(ln @ ln)
            B_n = B_dense if dense_pairs else incidence(NEx)
            g += B_n @ (-4.0 * ln[:, None] * dn)
        return val, np.ascontiguousarray(g).ravel()

    SP = shortest_path(A, unweighted=True, directed=False)
    J = -0.5 * (SP**2)
    J -= J.mean(axis=0, keepdims=True)
    J -= J.mean(axis=1, keepdims=True)
    if n > 400:
        from scipy.sparse.linalg import eigsh

        lam, U = eigsh(J, k=dim, which="LA", v0=rng.standard_normal(n))
        lam, U = lam[::-1], U[:, ::-1]
    else:
        lam, U = np.linalg.eigh(J)
        lam, U = lam[::-1][:dim], U[:, ::-1][:, :dim]
    starts = [U * np.sqrt(np.clip(lam, 0.0, None))]
    # effort by size: the search proves approach when it succeeds, nothing when it fails
    restarts, maxiter = (8, 4000) if n <= 60 else (2, 2000) if n <= 400 else (0, 300)
    for k in range(restarts):
        starts.append(rng.standard_normal((n, dim)) * (0.5 * n ** (1.0 / dim) + 0.5 * k))
    rhs = delta - float(delta.mean())
    for k, X0 in enumerate(starts):
        mu = 0.3 if k % 2 == 0 else 0.05
        X0 = X0 + JITTER * rng.standard_normal(X0.shape)
        seen = {"it": 0, "x": X0.ravel()}

        def stall(xk, seen=seen, mu=mu):
            # large searches stop when they are not heading to zero (nothing is claimed then)
            seen["it"] += 1
            seen["x"] = xk
            if n > 400 and seen["it"] == 40 and fg(xk, mu, None)[0] > STALL_PER_PAIR * E.shape[0]:
                raise StopIteration

        # one BLAS thread: L-BFGS-B's vector operations on n * dim variables are many times
        # slower threaded (measured 12x for 18,000 variables on 2 cores: 3.2 s -> 0.27 s for
        # 66 iterations; an N = 1797 k-NN graph in dim 10 went from 23 s to a few)
        with deterministic_blas():
            res = minimize(fg, X0.ravel(), args=(mu, NE if dense_pairs else None), jac=True,
                           method="L-BFGS-B", callback=stall,
                           options={"maxiter": maxiter, **CONSTRUCT_LBFGS})
        X = np.asarray(res.x if res.x is not None else seen["x"]).reshape(n, dim)
        dx = X[E[:, 0]] - X[E[:, 1]]
        if np.abs((dx * dx).sum(axis=1) - 1.0).max() > POLISH_FROM:
            continue  # not near a configuration with unit positive pairs: no polishing
        X = polish(X, E)
        dx = X[E[:, 0]] - X[E[:, 1]]
        if np.abs((dx * dx).sum(axis=1) - 1.0).max() > tol.edge_atol():
            continue
        slack, _ = non_edge_slack(X, E)
        if not slack > tol.slack_atol():
            continue
        R = rigidity_map(X, E)
        Y = least_norm(R, rhs)
        atol = tol.residual_atol(delta, tau)
        if np.abs(R @ Y - rhs).max() <= atol:
            return X
    return None


def undecided_component(pattern, part: Component, base, tried, *, dim, tau,
                        tol: Tolerance) -> ComponentDecision:
    """A component not decided exactly: what was tried, and the evidence of a numerical
    minimisation of the loss on the component alone (small components)."""
    members = part.members
    evidence = None
    if members.size <= EVIDENCE_MAX_N:
        evidence = _numerical_evidence(pattern, part, dim=dim, tau=tau,
                                       stop=EVIDENCE_STOP * tol.evidence_threshold)
        tried = [*tried, "numerical minimisation of the loss (evidence only)"]
    info = dict(base, tried=list(tried), evidence=evidence)
    return ComponentDecision(members, "undecided", "undecided", info, evidence=evidence,
                             tried=tuple(tried))


def _numerical_evidence(pattern: ZeroPattern, part: Component, *,
                        dim: int, tau: float, stop: float) -> float:
    """The smallest entropic gap (per sample) a few L-BFGS runs reach on the component alone
    (they stop once one is below ``stop``)."""
    from scipy.optimize import minimize
    from scipy.special import logsumexp

    n = part.members.size
    L = np.full((n, n), -np.inf)
    L[part.local] = pattern.logw[part.sel]
    logp = L - logsumexp(L, axis=1, keepdims=True)
    P = np.exp(logp)
    pos = np.isfinite(L)
    logp0 = np.where(pos, logp, 0.0)
    eye = np.eye(n, dtype=bool)

    def fg(x):
        Z = x.reshape(n, dim)
        diff = Z[:, None, :] - Z[None, :, :]
        S = -(diff**2).sum(axis=2) / (2.0 * tau)
        S[eye] = -np.inf
        logq = S - logsumexp(S, axis=1, keepdims=True)
        val = float(np.where(pos, P * (logp0 - np.where(pos, logq, 0.0)), 0.0).sum())
        Gm = np.exp(logq) - P
        Gm[eye] = 0.0
        M = Gm + Gm.T
        grad = -(M[:, :, None] * diff).sum(axis=1) / tau
        return val, grad.ravel()

    best = math.inf
    rng = np.random.default_rng(12345)
    for k in range(8):
        x0 = rng.standard_normal((n, dim)) * math.sqrt(tau) * (1.0 + 2.0 * k)
        if k % 2:  # nested scales: one random magnitude per sample
            x0 *= np.exp(rng.uniform(0.0, 4.0, size=(n, 1)))
        x0 = x0.ravel()
        with deterministic_blas():  # small problems: threads only add overhead (see above)
            res = minimize(fg, x0, jac=True, method="L-BFGS-B", options=EVIDENCE_LBFGS)
        best = min(best, max(0.0, float(res.fun)) / n)
        if best < stop:
            break
    return best
