"""A dense classification does not depend on the memory layout of its input nor on the number
of BLAS threads: the verdict, rank, flags, keys, certificate kind and the sentences are the
same, the certified values agree to rounding, and ``--deterministic`` is bit-identical."""

from __future__ import annotations

import json

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

import dgp


def _weights(n: int = 300) -> np.ndarray:
    rng = np.random.default_rng(0)
    X = rng.standard_normal((n, 5))
    X /= np.linalg.norm(X, axis=1, keepdims=True)
    W = np.exp(X @ X.T / 0.5) * np.exp(1e-3 * rng.standard_normal((n, n)))
    return 0.5 * (W + W.T)


def _shape(x):
    if isinstance(x, dict):
        return {k: _shape(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_shape(v) for v in x]
    return "float" if isinstance(x, float) else x


def test_layout_and_threads_change_no_decision():
    W = _weights()
    runs = []
    for order, threads in (("C", 1), ("F", 2), ("F", 1), ("C", 2)):
        M = np.asarray(W, order=order)
        with threadpool_limits(limits=threads, user_api="blas"):
            runs.append(dgp.classify(M, tau=0.5, dim=5).to_dict())
    first = runs[0]
    assert first["verdict"] == "inconsistent"
    for other in runs[1:]:
        assert _shape(other) == _shape(first)  # keys, kinds, verdicts, ranks, the reason
        a, b = first["certificate"], other["certificate"]
        assert a["max_min_eigenvalue"] == pytest.approx(b["max_min_eigenvalue"], rel=1e-9)
        assert a["inner_A"] == pytest.approx(b["inner_A"], rel=1e-9)
        assert a["inner_A"] < 0 and b["inner_A"] < 0  # each certificate is valid
        assert first["entropic_bound"] == pytest.approx(other["entropic_bound"], rel=1e-12)


def test_deterministic_is_bit_identical_across_layouts_and_threads():
    W = _weights()
    outs = set()
    for order, threads in (("C", 1), ("F", 2)):
        with threadpool_limits(limits=threads, user_api="blas"), dgp.deterministic():
            res = dgp.classify(np.asarray(W, order=order), tau=0.5, dim=5)
        outs.add(json.dumps(res.to_dict(), sort_keys=True))
    assert len(outs) == 1
