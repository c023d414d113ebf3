r"""The numbers of :class:`dgp.torch.GeometryMonitor` from class means: Gram distances, the
spectrum, NC1 and NC2, the minority/majority split, and the loss gap of a mini-batch
prediction (the expected batch loss of the learned Gram against the prediction's, on the
same batches). Definitions: the module docstring of :mod:`dgp.torch.monitor`."""

from __future__ import annotations

import math

import numpy as np

from dgp.constants import (
    GRAM_RANK_RTOL,
    MONITOR_LOSS_BATCHES,
    MONITOR_LOSS_HALF_WIDTH,
    MONITOR_LOSS_MAX_BATCHES,
)
from dgp.solver import Z95, ClassBatches, DenseBatchWeights, evaluate

__all__ = ["BatchLossGap", "batch_loss_gap", "gram_rms", "minority_majority", "nc1", "nc2",
           "spectrum"]


def gram_rms(G: np.ndarray, T: np.ndarray) -> float:
    """Root mean square of the off-diagonal differences of two ``K x K`` Grams."""
    K = G.shape[0]
    off = ~np.eye(K, dtype=bool)
    return float(np.sqrt(np.mean((G[off] - T[off]) ** 2)))


def spectrum(G: np.ndarray, w: np.ndarray, top: int) -> np.ndarray:
    """Top ``top`` eigenvalues of the class-weighted second moment ``sum_c w_c mu_c mu_c^T``
    (those of ``D^1/2 G D^1/2``, ``D = diag(w)``), largest first."""
    r = np.sqrt(w)
    lam = np.linalg.eigvalsh(r[:, None] * G * r[None, :])[::-1]
    return lam[:top]


def minority_majority(sizes: tuple[int, ...] | None) -> tuple[np.ndarray, np.ndarray] | None:
    """Minority (below the median size) and majority (above) classes; the classes at the
    median fill an empty side; ``None`` for balanced sizes (or none)."""
    if sizes is None:
        return None
    s = np.asarray(sizes, dtype=float)
    med = float(np.median(s))
    below, above, at = s < med, s > med, s == med
    if not below.any() and not above.any():
        return None  # balanced: no minority
    if not below.any():
        below = at  # e.g. sizes 50, 10, 10: the classes at the median are the minority
    elif not above.any():
        above = at
    return np.flatnonzero(below), np.flatnonzero(above)


def nc1(n: np.ndarray, means: np.ndarray, S2: np.ndarray) -> float:
    """Papyan et al.'s NC1 from counts, class means and the second moment of the samples."""
    K = n.size
    N = float(n.sum())
    sigma_w = (S2 - (means * n[:, None]).T @ means) / N
    glob = (means * n[:, None]).sum(axis=0) / N
    C = means - glob
    sigma_b = C.T @ C / K
    lam, V = np.linalg.eigh(0.5 * (sigma_b + sigma_b.T))
    top = float(lam[-1])
    within = float(np.trace(sigma_w))
    if top <= GRAM_RANK_RTOL * max(top, within) or top <= 0:
        return math.inf if within > 0 else math.nan  # no between-class spread at all
    keep = lam > GRAM_RANK_RTOL * top
    Vk = V[:, keep]
    pinv = (Vk / lam[keep]) @ Vk.T
    return float(np.trace(sigma_w @ pinv) / K)


def nc2(n: np.ndarray, means: np.ndarray, W: np.ndarray | None) -> dict[str, float]:
    """NC2's four numbers from the centred class means, and NC3 (``nc3``) against a
    classifier weight ``W`` when given."""
    K = n.size
    M = means - (means * n[:, None]).sum(axis=0) / float(n.sum())
    norms = np.linalg.norm(M, axis=1)
    out = dict.fromkeys(("nc2_equinorm", "nc2_equiangular", "nc2_maxangle", "nc2_etf"),
                        math.nan)
    if (norms == 0).any():
        return out
    U = M / norms[:, None]
    C = U @ U.T
    off = C[~np.eye(K, dtype=bool)]
    P = M @ M.T
    etf = (np.eye(K) - 1.0 / K) / math.sqrt(K - 1)
    out.update({
        "nc2_equinorm": float(norms.std() / norms.mean()),
        "nc2_equiangular": float(off.std()),
        "nc2_maxangle": float(np.abs(off + 1.0 / (K - 1)).mean()),
        "nc2_etf": float(np.linalg.norm(P / np.linalg.norm(P) - etf)),
    })
    if W is not None and W.shape[1] == M.shape[1] and np.linalg.norm(W) > 0:
        out["nc3"] = float(np.sum((W / np.linalg.norm(W) - M / np.linalg.norm(M)) ** 2))
    return out


def _unit_factor(G: np.ndarray) -> np.ndarray:
    """Unit rows ``Z`` with ``Z Z^T = G`` (a Gram's factor; negative eigenvalues of rounding
    dropped, rows renormalised)."""
    lam, V = np.linalg.eigh(0.5 * (G + G.T))
    keep = lam > GRAM_RANK_RTOL * max(float(lam[-1]), 1e-300)  # the Gram's rank, no more
    Z = V[:, keep] * np.sqrt(lam[keep])[None, :]
    return Z / np.linalg.norm(Z, axis=1, keepdims=True)


class BatchLossGap:
    """The expected batch loss (per anchor, under the prediction's batch spec) of a learned
    Gram minus the prediction's, estimated on the same batches (paired), with its 95%
    half-width and the prediction's own loss half-width.

    Attributes
    ----------
    gap : float
        Learned minus predicted expected batch loss (nats per anchor of a batch).
    learned : float
        The learned Gram's expected batch loss (estimate).
    half_width : float
        95% half-width of the paired estimate of ``gap`` (``Z95`` times its standard error).
    uncertainty : float
        The half-width of ``gap`` combined (in quadrature) with the prediction's own 95%
        loss half-width (``Z95 * loss_se`` of a sampled prediction, 0 for an exact one).
    batches : int
        Batches the estimate used.
    """

    def __init__(self, gap: float, learned: float, half_width: float, uncertainty: float,
                 batches: int) -> None:
        self.gap = gap
        self.learned = learned
        self.half_width = half_width
        self.uncertainty = uncertainty
        self.batches = batches


def batch_loss_gap(G: np.ndarray, target: np.ndarray, sizes: tuple[int, ...], *, tau: float,
                   eps: float | None, batch: object, seed: int = 0) -> BatchLossGap:
    """The paired expected-batch loss gap of ``G`` against ``target`` under ``batch``'s spec
    (a :class:`dgp.prototypes.BatchPrediction`): both Grams' batch losses on the same
    ``MONITOR_LOSS_BATCHES`` batches of the class sampler, seeded by ``seed``, more (up to
    ``MONITOR_LOSS_MAX_BATCHES``) while the gap's 95% half-width exceeds
    ``MONITOR_LOSS_HALF_WIDTH``."""
    K = G.shape[0]
    L = np.full((K, K), -np.inf if eps is None else math.log(eps))
    np.fill_diagonal(L, 0.0)
    spec = batch.spec
    Zs = [_unit_factor(G), _unit_factor(target)]
    sampler = ClassBatches(np.asarray(sizes, dtype=np.int64), spec)
    want = MONITOR_LOSS_BATCHES
    while True:  # the paired gap's own spread decides (far below each loss's spread)
        est = evaluate(Zs, DenseBatchWeights(L), sampler, spec, tau=tau, seed=seed,
                       half_width=math.inf, min_batches=want, max_batches=want)
        diff = est[0].values - est[1].values
        half = Z95 * float(np.std(diff, ddof=1) / math.sqrt(diff.size))
        if half <= MONITOR_LOSS_HALF_WIDTH or want >= MONITOR_LOSS_MAX_BATCHES:
            break
        want = min(MONITOR_LOSS_MAX_BATCHES,
                   int(want * (half / MONITOR_LOSS_HALF_WIDTH) ** 2 * 1.1) + 1)
    own = 0.0 if batch.loss_se is None else Z95 * float(batch.loss_se)
    return BatchLossGap(float(diff.mean()), est[0].mean, half, math.hypot(half, own),
                        int(diff.size))
