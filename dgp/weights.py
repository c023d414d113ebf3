r"""Weightings of w-InfoNCE: validation and the builders of the five objectives.

A weighting is a matrix :math:`W` with :math:`w_{ij} \ge 0` off the diagonal (the diagonal is
ignored); anchor :math:`i` targets the row distribution
:math:`p_{ij} = w_{ij} / \sum_{k \ne i} w_{ik}`. Builders return dense ``N x N`` matrices with a
zero diagonal; the structured engine (``dgp.structured``) never forms them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dgp.errors import (
    check_choice,
    check_labels_class,
    check_labels_continuous,
    check_positive,
    check_unit_interval,
    check_weights,
)

__all__ = [
    "OBJECTIVES",
    "Objective",
    "column_normalised_y_aware_weights",
    "gaussian_kernel_weights",
    "objective_weights",
    "row_distribution",
    "soft_supcon_weights",
    "supcon_weights",
    "xclr_weights",
]


def supcon_weights(labels: object) -> np.ndarray:
    r"""SupCon (Khosla et al. 2020, :math:`L_{out}`): :math:`w_{ij} = 1[y_i = y_j]`.

    >>> supcon_weights([0, 0, 1, 1])
    array([[0., 1., 0., 0.],
           [1., 0., 0., 0.],
           [0., 0., 0., 1.],
           [0., 0., 1., 0.]])
    """
    y = check_labels_class(labels)
    W = (y[:, None] == y[None, :]).astype(float)
    np.fill_diagonal(W, 0.0)
    return W


def soft_supcon_weights(labels: object, *, eps: float) -> np.ndarray:
    r"""Soft SupCon: :math:`w_{ij} = 1` within a class and :math:`\varepsilon` across classes."""
    y = check_labels_class(labels)
    eps = check_unit_interval(eps, "eps")
    W = np.where(y[:, None] == y[None, :], 1.0, eps)
    np.fill_diagonal(W, 0.0)
    return W


def _squared_distances(y: np.ndarray) -> np.ndarray:
    sq = np.einsum("ij,ij->i", y, y)
    D = sq[:, None] + sq[None, :] - 2.0 * (y @ y.T)
    np.maximum(D, 0.0, out=D)
    np.fill_diagonal(D, 0.0)
    return D


def gaussian_kernel_weights(labels: object, *, sigma: float) -> np.ndarray:
    r"""Gaussian label kernel :math:`w_{ij} = \exp(-\|y_i - y_j\|^2 / (2\sigma^2))`.

    y-Aware (Dufumier et al. 2021) uses it with a cosine latent, Euclidean–Euclidean with a
    Euclidean one.
    """
    y = check_labels_continuous(labels)
    sigma = check_positive(sigma, "sigma")
    W = np.exp(-_squared_distances(y) / (2.0 * sigma**2))
    np.fill_diagonal(W, 0.0)
    return W


def column_normalised_y_aware_weights(labels: object, *, sigma: float) -> np.ndarray:
    r"""The y-Aware matrix that public reimplementations really compute.

    They build the full kernel ``K`` (diagonal included) and write ``W /= W.sum(1)``; numpy
    broadcasts the row sums along the last axis, so the result is
    :math:`w_{ij} = k_{ij} / s_j` with :math:`s_j = \sum_k k_{jk}`: a column normalisation.
    """
    y = check_labels_continuous(labels)
    sigma = check_positive(sigma, "sigma")
    K = np.exp(-_squared_distances(y) / (2.0 * sigma**2))
    W = K / K.sum(1)  # the broadcast slip, reproduced on purpose
    np.fill_diagonal(W, 0.0)
    return W


def xclr_weights(labels: object, *, label_tau: float) -> np.ndarray:
    r"""X-CLR (Sobal et al. 2024): :math:`w_{ij} = \mathrm{softmax}_{k \ne i}(\langle \hat y_i,
    \hat y_k\rangle / \tau_y)_j` with :math:`\hat y` the L2-normalised label embeddings.

    Raises
    ------
    ValueError
        If a label embedding is zero (it cannot be normalised).
    """
    y = check_labels_continuous(labels)
    label_tau = check_positive(label_tau, "label_tau")
    norms = np.linalg.norm(y, axis=1)
    if (norms == 0).any():
        i = int(np.flatnonzero(norms == 0)[0])
        raise ValueError(f"label embedding {i} is zero and cannot be L2-normalised for X-CLR")
    yh = y / norms[:, None]
    S = (yh @ yh.T) / label_tau
    np.fill_diagonal(S, -np.inf)
    S -= S.max(axis=1, keepdims=True)
    W = np.exp(S)
    W /= W.sum(axis=1, keepdims=True)
    return W


def row_distribution(W: object) -> np.ndarray:
    r"""Row distribution :math:`p_{ij} = w_{ij} / \sum_{k \ne i} w_{ik}` (zero diagonal).

    Raises
    ------
    ValueError
        As :func:`dgp.errors.check_weights`.
    """
    A = check_weights(W)
    return A / A.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class Objective:
    """A named objective: its weighting builder, its latent similarity and its parameters."""

    name: str
    similarity: str
    labels: str  # "class" or "continuous"
    params: tuple[str, ...]
    build: Callable[..., np.ndarray]


OBJECTIVES: dict[str, Objective] = {
    "supcon": Objective("supcon", "cosine", "class", (), lambda y: supcon_weights(y)),
    "soft-supcon": Objective(
        "soft-supcon", "cosine", "class", ("eps",), lambda y, eps: soft_supcon_weights(y, eps=eps)
    ),
    "y-aware": Objective(
        "y-aware",
        "cosine",
        "continuous",
        ("sigma",),
        lambda y, sigma: gaussian_kernel_weights(y, sigma=sigma),
    ),
    "euclid-euclid": Objective(
        "euclid-euclid",
        "euclidean",
        "continuous",
        ("sigma",),
        lambda y, sigma: gaussian_kernel_weights(y, sigma=sigma),
    ),
    "x-clr": Objective(
        "x-clr",
        "cosine",
        "continuous",
        ("label_tau",),
        lambda y, label_tau: xclr_weights(y, label_tau=label_tau),
    ),
}


def objective_weights(
    objective: str,
    labels: object,
    *,
    sigma: float | None = None,
    eps: float | None = None,
    label_tau: float | None = None,
) -> np.ndarray:
    """Dense weight matrix of a named objective.

    Raises
    ------
    ValueError
        If ``objective`` is unknown or a parameter it needs is missing.
    """
    check_choice(objective, tuple(OBJECTIVES), "objective")
    obj = OBJECTIVES[objective]
    given = {"sigma": sigma, "eps": eps, "label_tau": label_tau}
    kwargs = {}
    for p in obj.params:
        if given[p] is None:
            raise ValueError(f"objective {objective!r} needs {p} (--{p.replace('_', '-')})")
        kwargs[p] = given[p]
    return obj.build(labels, **kwargs)
