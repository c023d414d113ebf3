r"""Weight matrices of w-InfoNCE for the named objectives, and the row distribution.

A weighting is a matrix :math:`W` with :math:`w_{ij} \ge 0` off the diagonal (the diagonal is
ignored); anchor :math:`i` targets the row distribution
:math:`p_{ij} = w_{ij} / \sum_{k \ne i} w_{ik}`. The builders read the objective registry
(:mod:`dgp.objectives.registry`) and return dense ``N x N`` matrices with a zero diagonal;
:func:`objective_log_weights` returns the logarithms, which do not underflow for narrow kernels
(pass them to :func:`dgp.classify` as ``log_weights=``). The structured engine never forms
either.
"""

from __future__ import annotations

import numpy as np

from dgp.objectives import registry

__all__ = [
    "column_normalised_y_aware_weights",
    "gaussian_kernel_weights",
    "objective_log_weights",
    "objective_weights",
    "row_distribution",
    "soft_supcon_weights",
    "supcon_weights",
    "xclr_weights",
]


def _validated(objective, labels, sigma, eps, label_tau):
    rec = registry.get(objective)
    params = rec.check_params(sigma=sigma, eps=eps, label_tau=label_tau)
    return rec, rec.check_labels(labels), params


def objective_log_weights(
    objective: str,
    labels: object,
    *,
    sigma: float | None = None,
    eps: float | None = None,
    label_tau: float | None = None,
) -> np.ndarray:
    r"""Dense log-weights :math:`\log w_{ij}` of a named objective (``-inf`` for zero weights and
    on the diagonal).

    Raises
    ------
    ValueError
        If the objective is unknown, a parameter it needs is missing or invalid, one it does
        not take is given, or the labels are invalid for it.

    >>> L = objective_log_weights("y-aware", [[0.0], [1.0], [3.0]], sigma=0.01)
    >>> round(float(L[0, 2]), 6)   # exp(-45000) underflows; its logarithm does not
    -45000.0
    """
    rec, lab, params = _validated(objective, labels, sigma, eps, label_tau)
    L = rec.log_weights(lab, params)
    np.fill_diagonal(L, -np.inf)
    return L


def objective_weights(
    objective: str,
    labels: object,
    *,
    sigma: float | None = None,
    eps: float | None = None,
    label_tau: float | None = None,
) -> np.ndarray:
    """Dense weight matrix of a named objective (zero diagonal); see
    :func:`objective_log_weights`.

    Raises
    ------
    ValueError
        As :func:`objective_log_weights`.
    """
    rec, lab, params = _validated(objective, labels, sigma, eps, label_tau)
    return rec.weights(lab, params)


def supcon_weights(labels: object) -> np.ndarray:
    r"""SupCon (Khosla et al. 2020, :math:`L_{out}`): :math:`w_{ij} = 1[y_i = y_j]`.

    >>> supcon_weights([0, 0, 1, 1])
    array([[0., 1., 0., 0.],
           [1., 0., 0., 0.],
           [0., 0., 0., 1.],
           [0., 0., 1., 0.]])
    """
    return objective_weights("supcon", labels)


def soft_supcon_weights(labels: object, *, eps: float) -> np.ndarray:
    r"""Soft SupCon: :math:`w_{ij} = 1` within a class and :math:`\varepsilon` across classes
    (a class may have a single sample: its anchor still has mass :math:`\varepsilon`)."""
    return objective_weights("soft-supcon", labels, eps=eps)


def gaussian_kernel_weights(labels: object, *, sigma: float) -> np.ndarray:
    r"""Gaussian label kernel :math:`w_{ij} = \exp(-\|y_i - y_j\|^2 / (2\sigma^2))`, from exact
    label differences (no cancellation for labels far from the origin).

    y-Aware (Dufumier et al. 2021) uses it with a cosine latent, Euclidean–Euclidean with a
    Euclidean one.
    """
    return objective_weights("y-aware", labels, sigma=sigma)


def column_normalised_y_aware_weights(labels: object, *, sigma: float) -> np.ndarray:
    r"""The y-Aware matrix that public reimplementations really compute.

    They build the full kernel ``K`` (diagonal included) and write ``W /= W.sum(1)``; numpy
    broadcasts the row sums along the last axis, so the result is
    :math:`w_{ij} = k_{ij} / s_j` with :math:`s_j = \sum_k k_{jk}`: a column normalisation.
    """
    return objective_weights("y-aware-colnorm", labels, sigma=sigma)


def xclr_weights(labels: object, *, label_tau: float) -> np.ndarray:
    r"""X-CLR (Sobal et al. 2024): :math:`w_{ij} = \mathrm{softmax}_{k \ne i}(\langle \hat y_i,
    \hat y_k\rangle / \tau_y)_j` with :math:`\hat y` the L2-normalised label embeddings.

    Raises
    ------
    ValueError
        If a label embedding is zero (it cannot be normalised).
    """
    return objective_weights("x-clr", labels, label_tau=label_tau)


def row_distribution(W: object) -> np.ndarray:
    r"""Row distribution :math:`p_{ij} = w_{ij} / \sum_{k \ne i} w_{ik}` (zero diagonal), from
    log-weights (no overflow for weights near the largest float).

    Raises
    ------
    ValueError
        As :func:`dgp.engine.target.log_weights`.
    """
    from dgp.engine.target import log_weights, row_log_distribution

    return np.exp(row_log_distribution(log_weights(W).L))
