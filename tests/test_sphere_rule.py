"""One rule decides whether labels lie on a sphere (dgp.objectives.spheres.on_label_sphere).

The closed-form explanation of a label kernel (`gaussian_explanation`'s `on_sphere`), the
registry's critical temperatures (what `dgp recommend` tries) and the closed-form boundary of a
phase map used three different thresholds; labels off the sphere by a little were on it for one
and off it for another. Here the three agree for labels on a circle with radial noise of every
size around the threshold, at several tolerances.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.design._common import closed_form_boundary, make_problem
from dgp.objectives import registry
from dgp.objectives.conditions import gaussian_explanation
from dgp.objectives.spheres import sphere_tolerance


def _noisy_circle(n: int, noise: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 2.0 * np.pi, n))
    r = 1.7 * (1.0 + noise * rng.standard_normal(n))
    return np.c_[np.cos(t), np.sin(t)] * r[:, None] + [0.3, -2.0]


@settings(max_examples=40, deadline=None)
@given(log_noise=st.floats(-11.0, -1.0), log_rtol=st.sampled_from([-12.0, -9.0, -6.0]),
       seed=st.integers(0, 2**16))
def test_three_callers_one_decision(log_noise, log_rtol, seed):
    y = _noisy_circle(16, 10.0**log_noise, seed)
    rtol = 10.0**log_rtol
    rec = registry.get("y-aware")
    lab = rec.check_labels(y)
    params = {"sigma": 1.0}
    ex = gaussian_explanation(rec.weighting.points(lab), width2=1.0, tau=0.5, dim=3,
                              similarity="cosine", rtol=rtol, objective="y-aware")
    on = ex.details["on_sphere"]
    assert bool(rec.critical_temperatures(lab, params, rtol=rtol)) == on
    problem = make_problem("y-aware", y, W=None, sizes=None, similarity=None, rtol=rtol)
    fixed = {"dim": 3, "sigma": 1.0}
    assert (closed_form_boundary(problem, fixed, {"tau": 0.5}) is not None) == on
    # and the rule is the documented one
    assert on == (ex.details["sphere"]["relative_residual"] <= sphere_tolerance(rtol))


def test_exact_circle_is_on_and_a_visible_bump_is_off():
    for noise, expected in ((0.0, True), (1e-2, False)):
        y = _noisy_circle(20, noise, 1)
        rec = registry.get("y-aware")
        ts = rec.critical_temperatures(rec.check_labels(y), {"sigma": 1.3})
        assert bool(ts) is expected
        if expected:  # tau R^2 = sigma^2
            assert ts[0] * 1.7**2 == pytest.approx(1.3**2, rel=1e-10)
