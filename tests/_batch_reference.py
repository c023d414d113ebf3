"""The expected mini-batch loss of a weighting, written from the definitions independently of
dgp's batch losses: every B-subset of the samples, each anchor's target row normalised within
the batch, the log-softmax over the other members; anchors without a positive in the batch are
dropped from the mean or counted as zero. And its brute-force minimum over free unit
embeddings (random-start L-BFGS)."""

from __future__ import annotations

import itertools

import numpy as np
from scipy.optimize import minimize


def batch_losses(Z, W, sub, tau, no_positive="drop"):
    """The loss of each batch (rows of ``sub``): the mean over the anchors with a positive in
    the batch, or over all B with 0 for the others; a batch with no such anchor counts 0."""
    B = sub.shape[1]
    G = np.einsum("cid,cjd->cij", Z[sub], Z[sub]) / tau
    eye = np.eye(B, dtype=bool)
    Wb = np.where(eye, 0.0, W[sub[:, :, None], sub[:, None, :]])
    mass = Wb.sum(axis=2)
    S = np.where(eye, -np.inf, G)
    top = S.max(axis=2, keepdims=True)
    lse = top[..., 0] + np.log(np.exp(S - top).sum(axis=2))
    has = mass > 0
    per_anchor = np.where(has, lse - (Wb * G).sum(axis=2) / np.where(has, mass, 1.0), 0.0)
    count = has.sum(axis=1) if no_positive == "drop" else np.full(len(sub), B)
    return np.where(count > 0, per_anchor.sum(axis=1) / np.maximum(count, 1), 0.0)


def expected(Z, W, B, tau, no_positive="drop"):
    """Mean over every B-subset of the batch loss."""
    sub = np.array(list(itertools.combinations(range(len(W)), B)))
    return float(batch_losses(Z, W, sub, tau, no_positive).mean())


def brute_force(W, B, tau, d, no_positive, starts=12, seed=0):
    """The least expected loss that random-start L-BFGS descents over free embeddings reach."""
    N = W.shape[0]
    rng = np.random.default_rng(seed)

    def f(x):
        X = x.reshape(N, d)
        return expected(X / np.linalg.norm(X, axis=1, keepdims=True), W, B, tau, no_positive)

    return min(minimize(f, rng.standard_normal(N * d), method="L-BFGS-B").fun
               for _ in range(starts))
