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
    "knn_weights",
    "objective_log_weights",
    "objective_weights",
    "row_distribution",
    "soft_supcon_weights",
    "supcon_weights",
    "xclr_weights",
]


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
    rec, lab, params = registry.validated(objective, labels, sigma=sigma, eps=eps,
                                          label_tau=label_tau)
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
    rec, lab, params = registry.validated(objective, labels, sigma=sigma, eps=eps,
                                          label_tau=label_tau)
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


#: the symmetrisations of :func:`knn_weights`
KNN_SYMMETRIZE = ("mean", "union", "mutual", "none")
#: the kernels of :func:`knn_weights`
KNN_KERNELS = ("connectivity", "gaussian")


def knn_weights(
    X: object,
    k: int,
    *,
    symmetrize: str = "mean",
    kernel: str = "connectivity",
    sigma: float | None = None,
    empty_rows: bool = False,
):
    r"""The k-nearest-neighbour weighting of neighbour-embedding objectives, as a sparse matrix.

    Row :math:`i` puts weight on its ``k`` nearest samples :math:`N_k(i)` (Euclidean distance
    in the rows of ``X``, ties broken by index) and zero weight on every other sample:

    .. math::

        v_{ij} = \kappa(\|x_i - x_j\|)\, \mathbf 1[j \in N_k(i)], \qquad
        \kappa(r) = 1 \ \text{(connectivity)} \quad \text{or} \quad
        \kappa(r) = e^{-r^2 / 2\sigma_i^2} \ \text{(gaussian)},

    with :math:`\sigma_i = \sigma` when given, else the distance from :math:`x_i` to its k-th
    neighbour (so every kept weight is at least :math:`e^{-1/2}`). Then ``symmetrize``:
    ``"mean"`` :math:`w = (v + v^\top)/2` (t-SNE), ``"union"`` :math:`\max(v, v^\top)`,
    ``"mutual"`` :math:`\min(v, v^\top)` (only pairs that are neighbours both ways; a row may be
    left without a positive weight), ``"none"`` :math:`w = v` (a directed graph: an asymmetric
    weighting).

    Parameters
    ----------
    X : array_like, shape (N, p)
        The data (finite).
    k : int
        Number of neighbours, ``1 <= k <= N - 1``.
    symmetrize : {"mean", "union", "mutual", "none"}
    kernel : {"connectivity", "gaussian"}
    sigma : float, optional
        Fixed kernel width ``> 0`` (gaussian only).
    empty_rows : bool
        Keep the samples that ``"mutual"`` leaves without a positive weight (for a mini-batch
        prediction, ``dgp.optimum(..., batch_size=B)``, which takes them as anchors without
        positives in every batch); by default they are refused, as a full-batch analysis
        refuses them.

    Returns
    -------
    scipy.sparse.csr_matrix, shape (N, N)
        The weights (zero diagonal); pass it to :func:`dgp.classify` as it is.

    Raises
    ------
    ValueError
        If ``X`` is not a finite N x p array with ``N >= 2``, ``k`` is outside ``[1, N - 1]``,
        ``symmetrize`` or ``kernel`` is unknown, ``sigma`` is given without the gaussian kernel
        or is not positive, a fixed ``sigma`` makes a kept weight underflow to zero, or
        ``"mutual"`` leaves a row without a positive weight (unless ``empty_rows``).
    TypeError
        If ``k`` is not an integer.

    Examples
    --------
    >>> W = knn_weights([[0.0], [1.0], [3.0], [6.0]], 1)
    >>> W.toarray()
    array([[0. , 1. , 0. , 0. ],
           [1. , 0. , 0.5, 0. ],
           [0. , 0.5, 0. , 0.5],
           [0. , 0. , 0.5, 0. ]])
    """
    import scipy.sparse as sp
    from scipy.spatial import cKDTree

    from dgp.errors import ParameterError, check_choice, check_flag, check_int, check_positive

    arr = np.asarray(X)
    if arr.dtype.kind not in "biuf":
        raise ParameterError("X", f"must be a real N x p array, got dtype {arr.dtype}")
    arr = np.array(arr, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 2:
        raise ParameterError("X", f"must be an N x p array with N >= 2, got shape {arr.shape}")
    if not np.isfinite(arr).all():
        raise ParameterError("X", "holds a NaN or infinite value")
    n = arr.shape[0]
    k = check_int(k, "k", minimum=1, maximum=n - 1)
    check_choice(symmetrize, KNN_SYMMETRIZE, "symmetrize")
    check_choice(kernel, KNN_KERNELS, "kernel")
    empty_rows = check_flag(empty_rows, "empty_rows")
    if sigma is not None:
        if kernel != "gaussian":
            raise ParameterError("sigma", "is the width of the gaussian kernel; give "
                                 "kernel='gaussian' or drop sigma")
        sigma = check_positive(sigma, "sigma")
    # k + 1 neighbours include the sample itself (distance 0) unless duplicates tie with it
    dist, idx = cKDTree(arr).query(arr, k=k + 1)
    rows = np.repeat(np.arange(n), k)
    cols = np.empty((n, k), dtype=np.int64)
    dd = np.empty((n, k))
    for i in range(n):  # drop i itself (wherever a duplicate put it), keep k others
        keep = idx[i] != i
        cols[i] = idx[i][keep][:k]
        dd[i] = dist[i][keep][:k]
    if kernel == "connectivity":
        vals = np.ones(n * k)
    else:
        width = np.full(n, sigma) if sigma is not None else dd[:, -1].copy()
        width[width <= 0] = 1.0  # all k neighbours duplicate x_i: every weight is 1
        vals = np.exp(-0.5 * (dd / width[:, None]) ** 2).ravel()
        if (vals == 0).any():
            raise ParameterError("sigma", f"= {sigma:g} makes some neighbour weights underflow "
                                 "to zero; use a larger sigma, or the adaptive width "
                                 "(sigma=None)")
    V = sp.csr_matrix((vals, (rows, cols.ravel())), shape=(n, n))
    if symmetrize == "none":
        W = V
    elif symmetrize == "mean":
        W = (V + V.T) * 0.5
    elif symmetrize == "union":
        W = V.maximum(V.T)
    else:
        W = V.minimum(V.T)
        empty = np.flatnonzero(np.diff(W.tocsr().indptr) == 0)
        if empty.size and not empty_rows:
            raise ParameterError("symmetrize", f"= 'mutual' leaves sample {int(empty[0])} "
                                 "without a mutual neighbour (no positive weight); use a larger "
                                 "k or symmetrize='mean', or keep it for a mini-batch "
                                 "prediction with empty_rows=True")
    W = sp.csr_matrix(W)
    W.sort_indices()
    return W
