"""Weight builders and the validation of user weights."""

import numpy as np
import pytest

from dgp.engine.target import check_weights
from dgp.weights import (
    column_normalised_y_aware_weights,
    gaussian_kernel_weights,
    objective_weights,
    row_distribution,
    soft_supcon_weights,
    supcon_weights,
    xclr_weights,
)


def test_supcon_and_soft_supcon_blocks():
    y = [0, 1, 0, 2, 1, 2]
    W = supcon_weights(y)
    S = soft_supcon_weights(y, eps=0.25)
    same = np.equal.outer(y, y)
    off = ~np.eye(6, dtype=bool)
    assert np.array_equal(W[off], same[off].astype(float))
    assert np.allclose(S[off], np.where(same, 1.0, 0.25)[off])
    assert np.all(np.diag(W) == 0) and np.all(np.diag(S) == 0)


def test_gaussian_kernel_matches_definition():
    y = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 2.0]])
    W = gaussian_kernel_weights(y, sigma=0.5)
    assert W[0, 1] == pytest.approx(np.exp(-1 / (2 * 0.25)))
    assert W[1, 2] == pytest.approx(np.exp(-5 / (2 * 0.25)))
    assert np.allclose(W, W.T)


def test_column_normalised_is_the_numpy_broadcast_slip():
    rng = np.random.default_rng(3)
    y = rng.standard_normal((5, 2))
    K = np.exp(-((y[:, None, :] - y[None, :, :]) ** 2).sum(-1) / 2.0)
    W_slip = K.copy()
    W_slip /= W_slip.sum(1)  # what public code writes
    np.fill_diagonal(W_slip, 0.0)
    assert np.allclose(column_normalised_y_aware_weights(y, sigma=1.0), W_slip)
    # it is a column normalisation: w_ij s_j = k_ij
    assert np.allclose(W_slip * K.sum(1)[None, :], K - np.diag(np.diag(K)))


def test_xclr_rows_are_softmax_distributions():
    rng = np.random.default_rng(4)
    y = rng.standard_normal((6, 3))
    W = xclr_weights(y, label_tau=0.3)
    assert np.allclose(W.sum(1), 1.0) and np.all(np.diag(W) == 0)
    yh = y / np.linalg.norm(y, axis=1, keepdims=True)
    i, j, k = 0, 2, 4
    assert W[i, j] / W[i, k] == pytest.approx(np.exp((yh[i] @ yh[j] - yh[i] @ yh[k]) / 0.3))
    # invariant to the scale of each label embedding
    assert np.allclose(xclr_weights(y * np.arange(1, 7)[:, None], label_tau=0.3), W)


def test_row_distribution_rows_sum_to_one_and_ignore_diagonal():
    W = np.array([[5.0, 1.0, 3.0], [2.0, 9.0, 2.0], [1.0, 1.0, 0.0]])
    P = row_distribution(W)
    assert np.allclose(P.sum(1), 1.0) and np.all(np.diag(P) == 0)
    assert P[0, 2] == pytest.approx(0.75)


@pytest.mark.parametrize(
    ("W", "match"),
    [
        ([[0, 1], [1]], "real-valued"),
        (np.ones((2, 3)), "square"),
        (np.ones((1, 1)), "at least 2"),
        (np.zeros((0, 0)), "at least 2"),
        ([[0, np.nan], [1, 0]], r"W\[0, 1\] is nan"),
        ([[0, 1], [np.inf, 0]], r"W\[1, 0\] is inf"),
        ([[0, -1.0], [1, 0]], r"W\[0, 1\] = -1 is negative"),
        ([[0, 1, 1], [0, 0, 0], [1, 1, 0]], "W row 1 has no positive weight"),
    ],
)
def test_check_weights_names_the_problem(W, match):
    with pytest.raises((ValueError, TypeError), match=match):
        check_weights(W)


def test_the_diagonal_is_ignored_whatever_it_holds():
    W = np.ones((3, 3))
    np.fill_diagonal(W, [np.nan, np.inf, -5.0])
    A = check_weights(W)
    assert np.array_equal(A, np.ones((3, 3)) - np.eye(3))


def test_builders_reject_bad_labels_and_parameters():
    with pytest.raises(ValueError, match="labels has class 3 with 1 sample"):
        supcon_weights([0, 0, 3])
    with pytest.raises(ValueError, match="eps must lie strictly between 0 and 1"):
        soft_supcon_weights([0, 0, 1, 1], eps=1.0)
    with pytest.raises(ValueError, match="sigma must be a finite number > 0"):
        gaussian_kernel_weights([[0.0], [1.0]], sigma=0.0)
    with pytest.raises(ValueError, match="holds a NaN"):
        gaussian_kernel_weights([[0.0], [np.nan]], sigma=1.0)
    with pytest.raises(TypeError, match="must be numbers"):
        gaussian_kernel_weights(np.array(["a", "b"]), sigma=1.0)
    with pytest.raises(ValueError, match="sigma is missing"):
        objective_weights("y-aware", [[0.0], [1.0]])
    with pytest.raises(ValueError, match="eps does not apply to objective 'supcon'"):
        objective_weights("supcon", [0, 0, 1, 1], eps=0.5)
    with pytest.raises(ValueError, match="objective must be one of"):
        objective_weights("simclr", [0, 0])
