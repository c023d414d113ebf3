"""A twin class that does not collapse at the optimum (issue 39: one handler of ``NoCollapse``
for the batch paths and the certified solve): the merged problem fails its lifted certificate,
and the samples themselves are solved instead, on whichever route. Two methods agree: the
twins merged then spread, and the same weighting with the twins broken by 1e-9 (no merging)."""

from __future__ import annotations

import numpy as np
import pytest

import dgp
import dgp.optima._api as api


def _weights() -> tuple[np.ndarray, np.ndarray]:
    W = np.ones((4, 4))
    W[0, 1] = W[1, 0] = 1e-3  # samples 0 and 1 are twins, pushed apart by their cross weight
    V = W.copy()
    V[0, 2] = V[2, 0] = 1 + 1e-9  # no twins left (0 and 1 differ towards 2; 2 and 3 towards 0)
    return W, V


@pytest.mark.parametrize("call", [
    dict(), dict(batch_size=3),
    pytest.param(dict(dim=2), marks=pytest.mark.slow),  # about 2 s each, in R^2
    pytest.param(dict(batch_size=3, dim=2), marks=pytest.mark.slow),
], ids=["free", "batch", "dim", "batch-dim"])
def test_a_twin_class_that_spreads_is_solved_on_its_samples(call, monkeypatch):
    raised = []
    solve = api._solve

    def spy(*args, **kwargs):
        try:
            return solve(*args, **kwargs)
        except api.NoCollapse:
            raised.append(True)
            raise

    monkeypatch.setattr(api, "_solve", spy)
    W, V = _weights()
    merged = dgp.optimum(W, tau=0.5, progress=False, **call)
    assert raised, "the merged twins should have failed their lifted certificate"
    raised.clear()
    apart = dgp.optimum(V, tau=0.5, progress=False, **call)
    assert not raised
    assert merged.structure == "dense" and merged.n == 4
    assert merged.loss == pytest.approx(apart.loss, rel=1e-8)
    assert merged.gram[0, 1] < 0.5  # the twins 0 and 1 do not collapse
    np.testing.assert_allclose(merged.gram, apart.gram, atol=1e-4)

