"""The O(N^2) block passes on several threads (:func:`dgp._linalg.map_blocks`): the validator,
the canonical log-weights, the entropies found on the way, the symmetry test and the range off
the diagonal are bit-identical whatever the number of threads, equal whole-array references,
and a bad entry is reported as a serial loop reports it (the first one of the first bad block).

The blocks are made small (``ROW_BLOCK_ELEMENTS`` patched) so that matrices of a few dozen rows
have many blocks and the threads interleave them.
"""

from __future__ import annotations

import threading
import time
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dgp._linalg as la
import dgp.engine._canonical as canonical
import dgp.engine._dense_input as dense_input
import dgp.engine.target as target
from dgp.errors import ParameterError

SMALL_BLOCK = 97  # elements per block of rows: a row or two per block for N of a few dozen


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float64).view(np.int64)


def _weights(seed: int, n: int, kind: str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    W = rng.random((n, n)) * 10.0 ** int(rng.integers(-200, 200))
    if kind == "symmetric":
        W = W + W.T
    elif kind == "zeros":
        W[rng.random((n, n)) < 0.2] = 0.0
        W[np.arange(n), (np.arange(n) + 1) % n] = 1.0  # a positive weight in every row
    elif kind == "subnormal":  # ratios below the normal range: the frexp branch
        W = np.where(rng.random((n, n)) < 0.5, 1e-310, 1.0)
    elif kind == "float32":
        W = (W / W.max()).astype(np.float32)
    return W


def _run(W: object, workers: int, block: int = SMALL_BLOCK, **kw) -> target.LogWeights:
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the row blocks of the canonical passes and of the dense reader
        mp.setattr(canonical, "ROW_BLOCK_ELEMENTS", block)
        mp.setattr(dense_input, "ROW_BLOCK_ELEMENTS", block)
        mp.setattr(la, "pass_workers", lambda: workers)
        return target.log_weights(W, **kw)


def _same(a: target.LogWeights, b: target.LogWeights) -> None:
    assert np.array_equal(_bits(a.L), _bits(b.L))
    assert (a.shift, a.symmetric, a.n_zero, a.first_zero, a.warnings) == (
        b.shift, b.symmetric, b.n_zero, b.first_zero, b.warnings)
    assert (a.entropies is None) == (b.entropies is None)
    if a.entropies is not None:
        assert np.array_equal(_bits(a.entropies), _bits(b.entropies))


KINDS = ["plain", "symmetric", "zeros", "subnormal", "float32"]


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60), kind=st.sampled_from(KINDS),
       workers=st.integers(2, 5))
def test_threaded_log_weights_equal_serial_bit_for_bit(seed, n, kind, workers):
    W = _weights(seed, n, kind)
    serial = _run(W, 1)
    _same(serial, _run(W, workers))
    # and the serial blocks are the whole-array mathematics: L = log(w / w_max) off the diagonal
    off = ~np.eye(n, dtype=bool)
    Wd = W.astype(np.float64)
    with np.errstate(divide="ignore"):
        ref = np.log(Wd / Wd[off].max())
    if kind != "subnormal":  # the frexp branch is log m + e log 2, not one rounding of log
        assert np.array_equal(serial.L[off], ref[off])
    else:
        np.testing.assert_allclose(serial.L[off], ref[off], rtol=1e-13, atol=1e-12)
    assert np.all(serial.L[~off] == -np.inf)
    assert serial.symmetric == bool(np.array_equal(serial.L, serial.L.T))
    assert serial.n_zero == int((Wd[off] == 0).sum())
    zeros = np.argwhere((Wd == 0) & off)
    assert serial.first_zero == (tuple(int(k) for k in zeros[0]) if zeros.size else None)
    if serial.entropies is not None:
        np.testing.assert_allclose(serial.entropies, target.row_entropies(serial.L),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_threaded_log_weights_with_blocks_large_enough_to_run_at_once(seed, kind):
    """Blocks of 16384 entries: numpy releases the GIL in their loops, so the threads really
    run together (a shared temporary, or a result that depends on the schedule, shows here)."""
    W = _weights(seed, 400, kind)
    serial = _run(W, 1, block=1 << 14)
    for workers in (2, 3, 4):
        for _ in range(3):
            _same(serial, _run(W, workers, block=1 << 14))


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60), workers=st.integers(2, 5))
def test_threaded_log_weights_from_logarithms(seed, n, workers):
    rng = np.random.default_rng(seed)
    L = rng.normal(size=(n, n)) * 50.0
    L[rng.random((n, n)) < 0.1] = -np.inf
    L[np.arange(n), (np.arange(n) + 1) % n] = 0.0
    serial = _run(None, 1, log_weights=L)
    _same(serial, _run(None, workers, log_weights=L))
    off = ~np.eye(n, dtype=bool)
    assert np.array_equal(serial.L[off], L[off] - L[off].max())


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(3, 60), workers=st.integers(2, 5),
       bad=st.sampled_from(["nan", "inf", "negative", "empty row"]))
def test_threaded_validator_reports_the_first_bad_entry(seed, n, workers, bad):
    rng = np.random.default_rng(seed)
    W = rng.random((n, n)) + 0.1
    value = {"nan": np.nan, "inf": np.inf, "negative": -1.0}
    cells = rng.integers(0, n, size=(3, 2))
    for i, j in cells:
        if i == j:
            j = (i + 1) % n
        if bad == "empty row":
            W[i] = 0.0
        else:
            W[i, j] = value[bad]
    messages = []
    for w in (1, workers):
        with pytest.raises(ParameterError) as info:
            _run(W, w)
        messages.append(str(info.value))
    assert messages[0] == messages[1]
    if bad == "empty row":
        assert f"row {int(cells[:, 0].min())} has no positive weight" in messages[0]
    else:
        i, j = min((int(i), int(j) if i != j else int((i + 1) % n)) for i, j in cells)
        assert f"[{i}, {j}]" in messages[0]


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 60), workers=st.integers(2, 5))
def test_threaded_offdiag_range_and_symmetry(seed, n, workers):
    rng = np.random.default_rng(seed)
    M = rng.normal(size=(n, n))
    M = M + M.T if seed % 2 else M
    diag = M.diagonal().copy()
    off = ~np.eye(n, dtype=bool)
    results = []
    for w in (1, workers):
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(canonical, "ROW_BLOCK_ELEMENTS", SMALL_BLOCK)
            mp.setattr(dense_input, "ROW_BLOCK_ELEMENTS", SMALL_BLOCK)
            mp.setattr(la, "pass_workers", lambda w=w: w)
            results.append((target.offdiag_range(M), target.canonical(M.copy()).symmetric))
        assert np.array_equal(M.diagonal(), diag)  # set aside, then restored
    assert results[0] == results[1]
    assert results[0][0] == (float(M[off].min()), float(M[off].max()))
    assert results[0][1] == bool(np.array_equal(M, M.T))


def test_map_blocks_keeps_order_finishes_every_block_and_raises_the_first_error():
    blocks = [slice(k, k + 1) for k in range(12)]
    done = []
    lock = threading.Lock()

    def fn(sl: slice) -> int:
        time.sleep(0.001 * (12 - sl.start))  # later blocks finish first
        with lock:
            done.append(sl.start)
        if sl.start in (5, 9):
            raise ParameterError("W", f"bad block {sl.start}")
        return sl.start * sl.start

    ok = la.map_blocks(lambda sl: sl.start * sl.start, blocks, workers=4)
    assert ok == [k * k for k in range(12)]
    with pytest.raises(ParameterError, match="bad block 5"):
        la.map_blocks(fn, blocks, workers=4)
    assert sorted(done) == list(range(12))  # none left running behind the exception


def test_pass_workers_follow_blas_and_deterministic_mode():
    from threadpoolctl import threadpool_limits

    from dgp.resources import deterministic

    with threadpool_limits(limits=1, user_api="blas"):
        assert la.pass_workers() == 1
    with deterministic():
        assert la.pass_workers() == 1
    assert la.pass_workers() >= 1
