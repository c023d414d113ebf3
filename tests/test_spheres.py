"""Best-fit sphere within the affine hull: exact on spheres, a residual off them."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dgp.objectives import fit_sphere


@settings(max_examples=50)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.integers(0, 2))
def test_points_on_a_sphere_in_a_flat(seed, m, extra):
    """Points on an m-sphere placed in an (m + extra)-dim space: centre, radius, dimension."""
    rng = np.random.default_rng(seed)
    p = m + extra
    n = m + 3 + int(rng.integers(0, 20))
    centre = rng.uniform(-10, 10, p)
    R = float(np.exp(rng.uniform(-2, 2)))
    u = rng.standard_normal((n, m))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    basis = np.linalg.qr(rng.standard_normal((p, p)))[0][:, :m]
    y = centre + R * u @ basis.T
    fit = fit_sphere(y)
    assert fit.affine_dim == m
    assert fit.radius == pytest.approx(R, rel=1e-8)
    assert np.allclose(fit.centre, centre, atol=1e-7 * max(1.0, R))
    assert fit.residual < 1e-9


def test_off_sphere_residual():
    rng = np.random.default_rng(0)
    t = rng.uniform(0, 2 * np.pi, 200)
    ellipse = np.c_[2.0 * np.cos(t), 1.0 * np.sin(t)]
    fit = fit_sphere(ellipse)
    assert fit.affine_dim == 2
    assert 0.05 < fit.residual < 0.5
    assert fit.max_residual >= fit.residual


def test_two_concentric_circles():
    t = np.linspace(0, 2 * np.pi, 7)[:-1]
    y = np.r_[np.c_[np.cos(t), np.sin(t)], 2 * np.c_[np.cos(t), np.sin(t)]]
    fit = fit_sphere(y)
    R = np.sqrt(2.5)  # algebraic fit: R^2 = mean |y|^2
    assert fit.radius == pytest.approx(R, rel=1e-12)
    assert fit.residual == pytest.approx(np.sqrt(((1 - R) ** 2 + (2 - R) ** 2) / 2) / R, rel=1e-9)


def test_repeated_point_and_1d():
    fit = fit_sphere(np.full((5, 3), 2.5))
    assert (fit.affine_dim, fit.radius, fit.residual) == (0, 0.0, 0.0)
    fit = fit_sphere(np.array([[1.0], [3.0], [1.0], [3.0]]))  # a 0-sphere in R: two points
    assert fit.affine_dim == 1 and fit.radius == pytest.approx(1.0)
    assert fit.centre.tolist() == pytest.approx([2.0])
    d = fit.to_dict()
    assert set(d) >= {"centre", "radius", "relative_residual", "affine_dim"}


def test_errors():
    with pytest.raises(ValueError, match="NaN"):
        fit_sphere([[0.0, np.nan], [1.0, 1.0]])
    with pytest.raises(ValueError, match="N x p"):
        fit_sphere(np.zeros((3, 2, 2)))
    with pytest.raises(TypeError):
        fit_sphere(np.array(["a", "b"]))
    with pytest.raises(ValueError):
        fit_sphere([[0.0, 1.0], [1.0, 0.0]], rtol=0.0)
