"""The factor-level class-block objective (``dgp.solver.BlockFactor``) behind rank-d prototypes of
many classes, and the factor path of ``supcon_prototypes(..., dim=d)``.

Independent references: the row problem of ``block_problem`` (dgp's general evaluator, which
builds its K x K tables), the collapsed SupCon loss written here from its formula, central finite
differences, ``numpy.linalg.eigvalsh`` of the dual matrix, the certified free-dimension optimum
(which every convex dual bound must stay below) and scipy L-BFGS descents over free unit
vectors (which every lower bound must stay below).
"""

from __future__ import annotations

import numpy as np
import pytest
from test_prototypes_dim import SIZES_24, scipy_descents, supcon_loss

import dgp.prototypes._dim as dim_rules
from dgp.errors import ParameterError
from dgp.prototypes import block_weights, supcon_prototypes
from dgp.prototypes._dim import default_starts, guard_dim
from dgp.solver import (
    BlockFactor,
    block_problem,
    oblique_hessian,
    row_certificate,
    rtr,
    stationarity,
)


def _unit(rng, d, K):
    X = rng.standard_normal((d, K))
    return X / np.linalg.norm(X, axis=0)


@pytest.mark.parametrize("eps", [None, 0.3])
@pytest.mark.parametrize("tau", [0.5, 0.05])
def test_agrees_with_the_row_problem(eps, tau):
    rng = np.random.default_rng(11)
    n = rng.integers(2, 40, 15)
    X = _unit(rng, 3, 15)
    prob = block_problem(n, block_weights(15, eps), tau=tau)
    obj = BlockFactor(n, tau, eps)
    assert obj.set_scale(X) == pytest.approx(prob.set_scale(X.T @ X), abs=1e-12)
    st = prob.state(X.T @ X)
    g = prob.gradient(st)
    f, Gam = obj.evaluate(X)
    assert f == pytest.approx(prob.value(st), rel=1e-12)
    np.testing.assert_allclose(Gam, 2 * X @ g, atol=1e-12 * np.abs(Gam).max())
    assert obj.stationarity(X) == pytest.approx(stationarity(prob, X), rel=1e-10)
    xi = rng.standard_normal(X.shape)
    xi -= X * np.sum(X * xi, axis=0)
    y = np.sum(X * (X @ g), axis=0)
    ref = oblique_hessian(prob, X, st, g, y)(xi)
    np.testing.assert_allclose(obj.hessian(X)(xi), ref, atol=1e-11 * np.abs(ref).max())
    for a, b in zip(obj.loss(X), prob.loss(X.T @ X), strict=True):
        assert a == pytest.approx(b, rel=1e-11)
    assert obj.entropy == pytest.approx(prob.entropy, rel=1e-12)


def test_loss_and_gradient_match_the_formula():
    """The loss in nats is the collapsed SupCon loss written from its formula, and the gradient
    is its derivative (central differences along a tangent direction)."""
    rng = np.random.default_rng(3)
    n = [5, 2, 9, 3, 3, 7, 12]
    X = _unit(rng, 3, 7)
    obj = BlockFactor(n, 0.3)
    obj.set_scale(X)
    assert obj.loss(X)[0] == pytest.approx(supcon_loss(X.T, n, 0.3), rel=1e-12)
    E = rng.standard_normal(X.shape)
    E -= X * np.sum(X * E, axis=0)
    h = 1e-6

    def f(Y):
        return obj.evaluate(Y / np.linalg.norm(Y, axis=0))[0]

    num = (f(X + h * E) - f(X - h * E)) / (2 * h)
    assert num == pytest.approx(float(np.sum(obj.riemannian_gradient(X) * E)), rel=1e-6)


@pytest.mark.parametrize("eps", [None, 0.2])
def test_certified_dual_floor_is_below_the_lowest_eigenvalue(eps):
    rng = np.random.default_rng(4)
    n = rng.integers(2, 30, 40)
    X = _unit(rng, 4, 40)
    prob = block_problem(n, block_weights(40, eps), tau=0.2)
    obj = BlockFactor(n, 0.2, eps)
    prob.set_scale(X.T @ X)
    obj.set_scale(X)
    exact = row_certificate(prob, X.T @ X).min_eig_dual
    floor, estimate = obj.dual_min_eig(X)
    assert floor <= exact <= estimate + 1e-9
    assert exact - floor <= 1e-3 * max(1.0, abs(exact))  # certified, and tight (not Gershgorin)


def test_dual_bound_stays_below_the_free_optimum():
    """F(G) - K max(0, -lambda_min(S)) bounds the convex (free-dimension) optimum from below,
    wherever the rank-d point is."""
    rng = np.random.default_rng(8)
    free = supcon_prototypes(SIZES_24, tau=0.2)
    obj = BlockFactor(SIZES_24, 0.2)
    for _ in range(3):
        X = _unit(rng, 4, 24)
        obj.set_scale(X)
        loss = obj.loss(X)[0]
        floor, _ = obj.dual_min_eig(X)
        low = loss - 24 * max(0.0, -floor) * obj.gradient_scale(X) * obj.N * np.exp(obj.log_t)
        assert low <= free.loss + 1e-9 * abs(free.loss)


@pytest.fixture
def factor_path(monkeypatch):
    """The factor path at a small size (its threshold lowered), where references are cheap."""
    monkeypatch.setattr(dim_rules, "DIM_FACTOR_SIZE", 50)


def test_factor_path_point_is_critical_and_its_bound_valid(factor_path):
    p = supcon_prototypes(SIZES_24, tau=0.2, dim=4)
    # on the factor, the result's certificate is its rank-d certificate (no K x K tables)
    assert p.factor is not None and p.certificate is p.rank_d
    c = p.to_dict()["certificate"]
    assert c["kind"] == "rank-d" and c["statement"] and isinstance(c["certified"], bool)
    Z = p.prototypes
    np.testing.assert_allclose(Z @ Z.T, p.gram, atol=1e-10)
    assert supcon_loss(Z, SIZES_24, 0.2) == pytest.approx(p.loss, rel=1e-10)
    assert p.rank_d.first_order and p.rank_d.second_order
    losses = scipy_descents(SIZES_24, 0.2, 4, runs=6, seed=2000)
    assert p.lower_bound <= losses.min() and p.lower_bound <= p.loss
    free = supcon_prototypes(SIZES_24, tau=0.2)
    assert p.lower_bound >= free.loss - free.certificate.gap_bound - 1e-9
    # the independent descents find nothing much better than the one kept start
    assert p.loss <= losses.min() * (1 + 2e-2)


@pytest.mark.slow  # more than about 3 s (README test line <= 4 min)
def test_factor_path_is_invariant_under_permuting_the_classes(factor_path):
    sizes = [30, 3, 12, 7, 2, 19, 5, 8, 4, 11, 6, 9]
    perm = np.random.default_rng(1).permutation(12)
    a = supcon_prototypes(sizes, tau=0.3, dim=3, starts=3)
    b = supcon_prototypes([sizes[i] for i in perm], tau=0.3, dim=3, starts=3)
    # a seeded search from other starts: the same local optimum class is not guaranteed, but the
    # loss of each is that of its Gram, and the bounds are valid for both
    for p, s in ((a, sizes), (b, [sizes[i] for i in perm])):
        assert supcon_loss(p.prototypes, s, 0.3) == pytest.approx(p.loss, rel=1e-10)
    assert max(a.lower_bound, b.lower_bound) <= min(a.loss, b.loss) + 1e-9


def test_guard_admits_ten_thousand_classes_and_refuses_far_more():
    guard_dim(10_000, 128, default_starts(10_000, 128), 10_000, factor_path=True)
    with pytest.raises(ParameterError, match="hours") as e:
        guard_dim(15_000, 2048, 1, 15_000, factor_path=True)
    assert "dim" in str(e.value)


def _tangent(rng, X):
    E = rng.standard_normal(X.shape)
    E -= X * np.sum(X * E, axis=0)
    return E / np.linalg.norm(E)


def _retract(X, E, h):
    """The metric-projection retraction of the product of spheres (columns renormalised): a
    second-order retraction, so the second derivative of f along it is the Riemannian Hessian's
    quadratic form at any point, critical or not."""
    Y = X + h * E
    return Y / np.linalg.norm(Y, axis=0)


@pytest.mark.parametrize("eps", [None, 0.3])
@pytest.mark.parametrize("tau", [0.4, 0.1])
def test_riemannian_gradient_and_hessian_match_finite_differences(eps, tau):
    """At a random (non-critical) point: the Riemannian gradient is the first derivative of the
    objective along the retraction, the Riemannian Hessian's form is its second derivative, and
    the Hessian-vector product is the projected derivative of the gradient field along the curve
    (the Levi-Civita connection of the embedded product of spheres). Central differences."""
    rng = np.random.default_rng(21)
    n = rng.integers(2, 40, 11)
    X = _unit(rng, 3, 11)
    obj = BlockFactor(n, tau, eps)
    obj.set_scale(X)
    f0 = obj.evaluate(X)[0]
    grad = obj.riemannian_gradient(X).copy()
    assert np.abs(np.sum(X * grad, axis=0)).max() <= 1e-14 * np.abs(grad).max()  # tangent
    hess = obj.hessian(X)
    for _ in range(3):
        E = _tangent(rng, X)
        HE = hess(E)
        assert np.abs(np.sum(X * HE, axis=0)).max() <= 1e-13 * np.abs(HE).max()
        h1, h2 = 1e-6, 1e-3

        def f(h, E=E):
            return obj.evaluate(_retract(X, E, h))[0]

        slope = (f(h1) - f(-h1)) / (2 * h1)
        assert slope == pytest.approx(float(np.sum(grad * E)), rel=1e-6, abs=1e-9 * abs(f0))
        curv = (f(h2) - 2 * f0 + f(-h2)) / h2**2
        form = float(np.sum(E * HE))
        assert curv == pytest.approx(form, rel=1e-4, abs=1e-6 * np.linalg.norm(HE))

        def g(h, E=E):
            return obj.riemannian_gradient(_retract(X, E, h)).copy()

        dg = (g(h1) - g(-h1)) / (2 * h1)
        dg -= X * np.sum(X * dg, axis=0)
        np.testing.assert_allclose(dg, HE, rtol=0, atol=1e-6 * np.abs(HE).max())
    # self-adjoint on the tangent space
    A, B = _tangent(rng, X), _tangent(rng, X)
    assert float(np.sum(A * hess(B))) == pytest.approx(float(np.sum(B * hess(A))), rel=1e-10)


@pytest.mark.parametrize("eps", [None, 0.3])
def test_row_problem_and_block_factor_implement_one_factor_protocol(eps):
    """The factor objective of a row problem (``on_factor``: a RowFactor through the Gram) and the
    BlockFactor of the same sizes agree method by method, and the row factor's kept state follows
    the problem's scale (a stale state would give the old scale's value)."""
    rng = np.random.default_rng(5)
    n = rng.integers(2, 30, 13)
    X = _unit(rng, 4, 13)
    row = block_problem(n, block_weights(13, eps), tau=0.1).on_factor()
    blk = BlockFactor(n, 0.1, eps)
    assert blk.on_factor() is blk and row.on_factor() is row
    assert row.set_scale(X) == pytest.approx(blk.set_scale(X), abs=1e-12)
    fr, Gr = row.evaluate(X)
    fb, Gb = blk.evaluate(X)
    assert fr == pytest.approx(fb, rel=1e-12)
    np.testing.assert_allclose(Gr, Gb, atol=1e-12 * np.abs(Gb).max())
    np.testing.assert_allclose(row.riemannian_gradient(X), blk.riemannian_gradient(X),
                               atol=1e-12 * np.abs(Gb).max())
    assert row.gradient_scale(X) == pytest.approx(blk.gradient_scale(X), rel=1e-12)
    assert row.stationarity(X) == pytest.approx(blk.stationarity(X), rel=1e-10)
    E = _tangent(rng, X)
    ref = blk.hessian(X)(E)
    np.testing.assert_allclose(row.hessian(X)(E), ref, atol=1e-11 * np.abs(ref).max())
    exact = row.dual_min_eig(X)[0]
    floor, _ = blk.dual_min_eig(X)
    assert floor <= exact + 1e-12 and exact - floor <= 1e-3 * max(1.0, abs(exact))
    assert row.column_curvature(X) is None and blk.column_curvature(X).min() > 0


def test_row_factor_state_follows_the_problem_scale():
    """The row factor keeps the state of the last factor; a new scale (fixed at another point)
    must not reuse it: the gradient at the same factor object is the new scale's."""
    rng = np.random.default_rng(6)
    n = rng.integers(2, 30, 13)
    X, Y = _unit(rng, 13, 13), np.eye(13)  # Y: orthogonal prototypes, a smaller scale
    row = block_problem(n, block_weights(13, None), tau=0.1).on_factor()
    blk = BlockFactor(n, 0.1)
    row.set_scale(X)
    row.evaluate(X)  # the state of X at the scale of X
    row.set_scale(Y)
    blk.set_scale(Y)
    assert row.prob.log_t == pytest.approx(blk.log_t, abs=1e-12)
    assert abs(blk.log_t - BlockFactor(n, 0.1).set_scale(X)) > 1e-3  # the scale did move
    fr, Gr = row.evaluate(X)
    fb, Gb = blk.evaluate(X)
    assert fr == pytest.approx(fb, rel=1e-12)
    np.testing.assert_allclose(Gr, Gb, atol=1e-12 * np.abs(Gb).max())


class _CountingFactor(BlockFactor):
    """A BlockFactor that counts its Hessian-vector products."""

    products = 0

    def hessian(self, X):
        hess = super().hessian(X)

        def counted(xi):
            self.products += 1
            return hess(xi)

        return counted


def test_trust_region_keeps_its_product_budget_and_converges_without_the_stall_rule():
    """rtr takes at most ``products`` Hessian-vector products in all; without the stall rule and
    with the budget it needs, it reaches a first-order point of the one-start factor path (a
    certified stationarity, re-measured here, below the certificate's tolerance)."""
    rng = np.random.default_rng(9)
    X0 = _unit(rng, 4, 24)
    for budget in (7, 50):
        obj = _CountingFactor(SIZES_24, 0.2)
        obj.set_scale(X0)
        rtr(obj, X0, maxiter=1000, maxinner=1000, stall=None, products=budget)
        assert 0 < obj.products <= budget
    obj = _CountingFactor(SIZES_24, 0.2)
    obj.set_scale(X0)
    X, _ = rtr(obj, X0, maxiter=1000, maxinner=1000, stall=None, gtol=1e-9)
    assert np.allclose(np.linalg.norm(X, axis=0), 1.0)
    assert stationarity(obj, X) <= 1e-8 < stationarity(obj, X0)
