"""dgp._linalg.bracketed_root: brentq's root, and nothing the function holds kept alive after it.

scipy's brentq wraps the function in a closure that refers to itself, a reference cycle that only
the cyclic garbage collector frees; a spectrum passed as ``spec.lam_min`` (with its ``N x N``
reflectors) stayed allocated until a collection, one copy per classification of a scan.
"""

from __future__ import annotations

import gc
import math
import weakref

import pytest
from scipy.optimize import brentq

from dgp._linalg import bracketed_root


class _Holder:
    """Something a root's function refers to (a bound method keeps its instance alive)."""

    def __init__(self, k: float) -> None:
        self.k = k

    def f(self, x: float) -> float:
        return math.cos(x) - self.k * x


@pytest.mark.parametrize("k", [0.1, 1.0, 7.0])
def test_the_root_is_brentqs(k):
    h = _Holder(k)
    ours = bracketed_root(h.f, 0.0, 2.0, xtol=1e-15, rtol=1e-15, maxiter=200)
    assert ours == brentq(h.f, 0.0, 2.0, xtol=1e-15, rtol=1e-15, maxiter=200)
    assert abs(math.cos(ours) - k * ours) < 1e-14


def test_nothing_outlives_the_call_without_a_collection():
    gc.collect()
    gc.disable()
    try:
        h = _Holder(1.0)
        alive = weakref.ref(h)
        bracketed_root(h.f, 0.0, 2.0, xtol=1e-12, rtol=1e-12, maxiter=200)
        del h
        assert alive() is None  # freed by its reference count, no collection needed
    finally:
        gc.enable()
        gc.collect()


def test_errors_propagate():
    with pytest.raises(ValueError, match="different signs"):
        bracketed_root(lambda x: x * x + 1.0, -1.0, 1.0, xtol=1e-12, rtol=1e-12, maxiter=50)
