"""The compact L-BFGS direction (dgp.solver._lbfgs_compact) is the two-loop recursion's, and a
descent with it is the same descent (issue 40: the recursion cost an evaluation's time at
K = 1000, d = 128)."""

from __future__ import annotations

import numpy as np
import pytest

from dgp.solver._lbfgs_compact import CompactHistory
from dgp.solver._solve import _two_loop, lbfgs


def _pairs(rng, n, count):
    """Pairs of a convex quadratic's gradients (positive curvature) along random steps."""
    A = rng.standard_normal((n, n))
    A = A @ A.T / n + np.diag(rng.uniform(0.1, 3.0, n))
    x = rng.standard_normal(n)
    xs = [x]
    for _ in range(count):
        xs.append(xs[-1] + 0.3 * rng.standard_normal(n))
    gs = [A @ v for v in xs]
    return xs, gs


@pytest.mark.parametrize("memory", [1, 3, 8])
@pytest.mark.parametrize("pre", [False, True])
def test_the_compact_direction_is_the_two_loop_direction(memory, pre):
    rng = np.random.default_rng([40, memory, pre])
    n = 25
    P = rng.uniform(0.2, 5.0, n) if pre else None
    xs, gs = _pairs(rng, n, 12)  # more pairs than memory: the oldest are dropped
    hist = CompactHistory(n, memory, None if P is None else 1.0 / P)
    s_hist, y_hist = [], []
    hist.at(gs[0])
    for k in range(12):
        s, y = xs[k + 1] - xs[k], gs[k + 1] - gs[k]
        hist.add(s, y, gs[k + 1], keep=True)
        s_hist.append(s)
        y_hist.append(y)
        del s_hist[:-memory], y_hist[:-memory]
        ref = _two_loop(gs[k + 1], s_hist, y_hist, P)
        got = hist.direction(gs[k + 1])
        assert np.allclose(got, ref, rtol=1e-9, atol=1e-12 * np.linalg.norm(ref))
    # a pair not kept changes nothing but the gradient the next direction is taken at
    g = gs[-1] + 0.1 * rng.standard_normal(n)
    hist.add(rng.standard_normal(n), rng.standard_normal(n), g, keep=False)
    assert np.allclose(hist.direction(g), _two_loop(g, s_hist, y_hist, P), rtol=1e-9,
                       atol=1e-12)


def test_the_compact_direction_is_a_secant_direction():
    """Independent of the two-loop code: H y_k = s_k for the newest pair (the secant equation
    every BFGS update satisfies)."""
    rng = np.random.default_rng(7)
    n = 30
    xs, gs = _pairs(rng, n, 6)
    hist = CompactHistory(n, 8)
    hist.at(gs[0])
    for k in range(6):
        hist.add(xs[k + 1] - xs[k], gs[k + 1] - gs[k], gs[k + 1], keep=True)
    y, s = gs[6] - gs[5], xs[6] - xs[5]
    hist.a, hist.b = hist.S @ y, hist.DY @ y  # the products of the vector it is applied to
    assert np.allclose(-hist.direction(y), s, rtol=1e-9, atol=1e-10 * np.linalg.norm(s))


def test_a_long_descent_is_the_same_in_both_forms(monkeypatch):
    """A quadratic in 30 000 unknowns (above the threshold) minimised with the compact form and,
    with the threshold raised, the two-loop recursion: the same iterates to rounding."""
    import dgp.solver._solve as solve

    rng = np.random.default_rng(3)
    n = 30_000
    w = rng.uniform(0.5, 50.0, n)
    c = rng.standard_normal(n)

    def fun(x):
        r = x - c
        return 0.5 * float(r @ (w * r)), w * r

    x0 = np.zeros(n)
    assert n >= solve.LBFGS_COMPACT_MIN_SIZE
    xc, itc = lbfgs(fun, x0, maxiter=40, gtol=0.0, memory=5, precondition=np.sqrt(w))
    monkeypatch.setattr(solve, "LBFGS_COMPACT_MIN_SIZE", 10 * n)
    xt, itt = lbfgs(fun, x0, maxiter=40, gtol=0.0, memory=5, precondition=np.sqrt(w))
    assert itc == itt
    assert np.allclose(xc, xt, rtol=1e-8, atol=1e-10)
    assert fun(xc)[0] < 1e-3 * fun(x0)[0]
