r"""Held-out comparisons of the experiments (numpy only): how far a Gram is from a reference
up to a common shrink, the class prototypes of normalised embeddings, a label-permutation null
of a held-out statistic and the noise ceiling of a held-out prototype Gram (split halves).
Re-exported by :mod:`dgp.torch.experiments.statistics`, where the API reference documents them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["null_corrected", "permutation_null", "prototypes_of", "shrink_distance",
           "shrink_fit", "split_half"]


# ----------------------------------------------------------------------------------------------
# held-out prototype Grams: the distance, its label-permutation null and the noise ceiling


def _off(G: np.ndarray) -> np.ndarray:
    return G[~np.eye(G.shape[0], dtype=bool)]


def shrink_fit(G: np.ndarray, R: np.ndarray) -> tuple[float, float]:
    r"""Distance of ``G`` to the reference ``R`` with its cosines pulled towards 1 by a common
    factor: :math:`\min_{0 \le k \le 1} \mathrm{RMS}(g - (1 - k(1 - r)))` over the off-diagonal
    entries, and the ``k`` that attains it.

    Held-out class means are pulled towards one another (towards the mean of all embeddings:
    the encoder has not seen those images), which raises every cosine; embeddings that carry no
    information about the labels have all class means alike (cosines near 1, ``k`` near 0).
    A reference with higher cosines (the imbalanced prediction against the simplex) would look
    closer to such a Gram in plain RMS; up to a common pull towards 1 it does not, and two
    references that both fit after some pull (two equiangular levels below the observed one)
    tie.

    >>> S = np.full((3, 3), -0.5); np.fill_diagonal(S, 1.0)
    >>> d, k = shrink_fit(1 - 0.4 * (1 - S), S)
    >>> round(d, 12), round(k, 12)
    (0.0, 0.4)
    """
    g, r = 1.0 - _off(G), 1.0 - _off(R)
    rr = float(r @ r)
    k = float(np.clip(g @ r / rr, 0.0, 1.0)) if rr > 0 else 0.0
    return float(np.sqrt(np.mean((g - k * r) ** 2))), k


def shrink_distance(G: np.ndarray, R: np.ndarray) -> float:
    """The distance of :func:`shrink_fit`."""
    return shrink_fit(G, R)[0]


def prototypes_of(Zn: np.ndarray, y: np.ndarray, K: int) -> tuple[np.ndarray, np.ndarray]:
    """Unit class prototypes (normalised means of the unit embeddings ``Zn`` of each class
    ``0..K-1``) and the norms of the class means (1 for a class collapsed on one point)."""
    sums = np.zeros((K, Zn.shape[1]))
    np.add.at(sums, y, Zn)
    counts = np.bincount(y, minlength=K)[:, None]
    norms = np.linalg.norm(sums, axis=1, keepdims=True)
    return sums / np.where(norms > 0, norms, 1.0), (norms / np.maximum(counts, 1)).ravel()


def _prototype_gram(Zn: np.ndarray, y: np.ndarray, K: int) -> np.ndarray:
    P, _ = prototypes_of(Zn, y, K)
    return P @ P.T


def null_corrected(Zn: np.ndarray, y: np.ndarray, P: np.ndarray, A: np.ndarray, *,
                   permutations: int, seed: int) -> dict[str, Any]:
    r"""Held-out advantage of the prediction ``P`` over the alternative ``A``, corrected by a
    label-permutation null.

    ``Zn`` are unit embeddings of held-out samples with classes ``y``. The statistic is
    :math:`s = d(G, A) - d(G, P)` (positive: closer to ``P``) for the held-out prototype Gram
    ``G``, with ``d`` the distance of :func:`shrink_fit` (``pull_*`` are its factors ``k``).
    Shuffling the labels keeps every
    property of the embeddings but their relation to the labels; the mean of ``s`` over
    ``permutations`` shuffles is what uninformative embeddings would score, and
    ``advantage = s - null_mean`` is what the labels add. Embeddings that carry no information
    about the labels have ``advantage`` of mean zero, whatever the bias of held-out cosines.
    """
    K = P.shape[0]
    dist = shrink_distance

    def statistic(labels: np.ndarray) -> float:
        Gl = _prototype_gram(Zn, labels, K)
        return dist(Gl, A) - dist(Gl, P)

    G = _prototype_gram(Zn, y, K)
    rng = np.random.default_rng(seed)
    return {
        **permutation_null(statistic(y), [statistic(rng.permutation(y))
                                          for _ in range(permutations)]),
        "distance": "RMS up to a common pull of the cosines towards 1",
        "dist_prediction": float(dist(G, P)),
        "dist_alternative": float(dist(G, A)),
        "pull_prediction": shrink_fit(G, P)[1],
        "pull_alternative": shrink_fit(G, A)[1],
    }


def permutation_null(statistic: float, null: Sequence[float]) -> dict[str, float]:
    """A statistic beside its values under shuffled labels: ``advantage`` is the statistic
    minus their mean (what the labels add), ``p_value`` the one-sided permutation p-value."""
    v = np.asarray(null, dtype=float)
    return {
        "statistic": float(statistic),
        "null_mean": float(v.mean()),
        "null_sd": float(v.std(ddof=1)) if v.size > 1 else float("nan"),
        "advantage": float(statistic - v.mean()),
        "p_value": float((1 + np.sum(v >= statistic)) / (1 + v.size)),
    }


def split_half(Zn: np.ndarray, y: np.ndarray, K: int, *, splits: int, seed: int
               ) -> dict[str, float]:
    """Noise ceiling of a held-out prototype Gram: split every class's held-out samples into two
    random halves and compare the two halves' prototype Grams.

    ``noise_rms`` estimates the sampling noise of one off-diagonal entry of the full held-out Gram
    (half the RMS difference of the halves: each half has twice the variance of the whole);
    distances to a reference below it are within sampling noise. ``reliability`` is the
    Spearman–Brown corrected correlation of the two halves' off-diagonal cosines (the share of
    the pattern that replicates; near 0 when there is no pattern, e.g. a simplex, or no signal).
    """
    rng = np.random.default_rng(seed)
    rms, corr = [], []
    for _ in range(splits):
        a = np.zeros(y.size, dtype=bool)
        for c in range(K):
            idx = rng.permutation(np.flatnonzero(y == c))
            a[idx[: idx.size // 2]] = True
        Ga = _prototype_gram(Zn[a], y[a], K)
        Gb = _prototype_gram(Zn[~a], y[~a], K)
        rms.append(float(np.sqrt(np.mean((_off(Ga) - _off(Gb)) ** 2))))
        oa, ob = _off(Ga), _off(Gb)
        if oa.std() > 0 and ob.std() > 0:
            corr.append(float(np.corrcoef(oa, ob)[0, 1]))
    r = float(np.mean(corr)) if corr else 0.0
    return {
        "noise_rms": float(np.mean(rms)) / 2.0,
        "reliability": 2 * r / (1 + r) if r > -1 else float("nan"),
        "splits": splits,
    }
