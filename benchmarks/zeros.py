"""Zero-weight patterns (Euclidean): k-NN graphs decided on their sparse graph.

Rows follow ``benchmarks/__init__.py``. The baseline is one dense ``numpy.linalg.eigvalsh`` of
the ``N x N`` weight matrix: the cost of a single spectral decision on the dense matrix, the unit
every other engine is measured in. The growth row fits the time exponent of the sparse path in
N (it never forms an N x N matrix).
"""

from __future__ import annotations

import numpy as np

from benchmarks import growth_table, interleaved
from dgp.classification import classify
from dgp.weights import knn_weights


def _knn(n: int, k: int, symmetrize: str, seed: int = 0):
    X = np.random.default_rng(seed).normal(size=(n, 2))
    return knn_weights(X, k, symmetrize=symmetrize)


def vs_eigvalsh(n: int, repeat: int) -> list[dict]:
    rows = []
    cases = [("symmetrised", "mean", 2, 10), ("symmetrised", "mean", 3, 10),
             ("directed", "none", 2, 10)]
    for label, sym, dim, k in cases:
        W = _knn(n, k, sym)
        dense = W.toarray()
        res = classify(W, similarity="euclidean", tau=0.5, dim=dim)
        t_ours, t_base = interleaved(
            lambda W=W, dim=dim: classify(W, similarity="euclidean", tau=0.5, dim=dim),
            lambda dense=dense: np.linalg.eigvalsh(dense),
            repeat=repeat,
        )
        cert = res.to_dict()["certificate"]
        rows.append({
            "name": f"{label} {k}-NN graph N={n}, dim={dim}",
            "baseline": "one numpy.linalg.eigvalsh of the dense N x N weights",
            "n": n,
            "ours_s": t_ours,
            "baseline_s": t_base,
            "ratio": t_ours / t_base,
            "target": "<= 3 (one dense eigendecomposition's time or less, up to noise)",
            "ok": t_ours <= 3.0 * t_base and cert.get("decided", True),
            "verdict": res.verdict,
            "certificate": cert["kind"] + (f" ({cert['obstruction']})"
                                           if "obstruction" in cert else ""),
        })
    return rows


def _call(n: int):
    W = _knn(n, 10, "mean")
    return lambda: classify(W, similarity="euclidean", tau=0.5, dim=2)


def growth(sizes: list[int]) -> dict:
    return growth_table(
        "symmetrised 10-NN graph, dim=2, sparse path",
        sizes,
        _call,
        target="time exponent < 1.5 and memory exponent < 1.5 in N (no N x N array)",
        max_time_exponent=1.5,
        max_memory_exponent=1.5,
        fit_from=1,
    )


def run(quick: bool) -> list[dict]:
    n = 2000  # the size of the requirement
    rows = vs_eigvalsh(n, repeat=3 if quick else 5)
    rows.append(growth([2000, 8000, 32000] if quick else [2000, 8000, 32000, 128000]))
    return rows
