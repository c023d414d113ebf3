"""A full-batch comparison point over the time budget is refused from its timed evaluation
alone (a referee: the spectral start, a sparse eigensolve, was built before the refusal)."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from dgp.optima._batch_paths import chunked_full_point
from dgp.solver import sparse_spectral_start, weight_rows
from dgp.solver.batches import SparseBatchWeights


def _knn(n: int, k: int, seed: int) -> sp.csr_matrix:
    y = np.random.default_rng(seed).standard_normal((n, 2))
    D = ((y[:, None] - y[None]) ** 2).sum(-1)
    np.fill_diagonal(D, np.inf)
    nn = np.argsort(D, axis=1)[:, :k]
    W = sp.csr_matrix((np.ones(n * k), (np.repeat(np.arange(n), k), nn.ravel())), shape=(n, n))
    return ((W + W.T) > 0).astype(float).tocsr()


def test_a_refused_point_builds_no_start(monkeypatch):
    """Over the time budget the point is refused from the timed evaluation alone: the starts
    (a sparse eigensolve for the spectral one) are counted, not built, before the refusal."""
    import dgp.optima._batch_paths as paths

    def no_start(*a, **k):
        raise AssertionError("the spectral start was built for a refused point")

    monkeypatch.setattr(paths, "sparse_spectral_start", no_start)
    monkeypatch.setenv("DGP_TIME_BUDGET_S", "1e-9")
    W = _knn(200, 5, 0)
    point, why = chunked_full_point(weight_rows(SparseBatchWeights(W)), 200, tau=0.5, dim=3,
                                    seed=0, sparse=W, progress=False)
    assert point is None and why.startswith("not compared: a full-batch point of n = 200")
    # within the budget the same call builds it, once
    calls = []
    monkeypatch.setattr(paths, "sparse_spectral_start",
                        lambda *a, **k: calls.append(1) or sparse_spectral_start(*a, **k))
    monkeypatch.delenv("DGP_TIME_BUDGET_S")
    point, _ = chunked_full_point(weight_rows(SparseBatchWeights(W)), 200, tau=0.5, dim=3,
                                  seed=0, sparse=W, progress=False)
    assert point is not None and calls == [1]
