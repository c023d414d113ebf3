r"""Hypothesis strategies for property-testing weightings, labels and temperatures.

Use them to test your own weightings against the theorems of :mod:`dgp.proofs`, e.g.

>>> from hypothesis import given
>>> from dgp.strategies import symmetric_weights
>>> @given(symmetric_weights(n=4))
... def test_rows_have_mass(W):
...     assert (W.sum(axis=1) > 0).all()

Every weight strategy returns a dense ``N x N`` float array with a zero diagonal and positive
row mass (a valid weighting for :func:`dgp.classify`). Geometric strategies (labels, embeddings)
draw an integer seed and build points with :func:`numpy.random.default_rng`, so configurations
are in general position (as in practice) and reproducible from the drawn values; nothing random
happens at import or collection time.

Families
--------
- weights: :func:`symmetric_weights`, :func:`symmetrizable_weights` (a row rescaling
  :math:`\operatorname{diag}(a) S` of a symmetric :math:`S`), :func:`cycle_breaking_weights`
  (a triangle with :math:`\prod w_{ij} \ne \prod w_{ji}`), :func:`weights_with_zeros`,
  :func:`block_weights` (positive weights within blocks only);
- class sizes: :func:`balanced_sizes`, :func:`long_tailed_sizes`,
  :func:`sizes_with_near_singletons` (classes of size 2), :func:`class_sizes` (any of them),
  :func:`class_labels`;
- labels: :func:`sphere_labels` (any centre and radius, optionally centred on the sphere's
  centre), :func:`off_sphere_labels` (provably on no common sphere), :func:`embeddings`;
- temperatures: :func:`temperatures_near` a critical value, and the critical values of the
  paper's objectives: :func:`soft_supcon_near_critical` (:math:`\tau^*`),
  :func:`y_aware_near_critical` (:math:`\tau R^2 = \sigma^2`), :func:`xclr_near_critical`
  (:math:`\tau = \tau_y`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from dgp.constants import NEAR_CRITICAL_MIN_REL, OFF_SPHERE_MIN_RESIDUAL, SOFT_SUPCON_EPS_RANGE
from dgp.errors import InputError

__all__ = [
    "CriticalCase",
    "SphereLabels",
    "balanced_sizes",
    "block_weights",
    "class_labels",
    "class_sizes",
    "cycle_breaking_weights",
    "embeddings",
    "long_tailed_sizes",
    "off_sphere_labels",
    "seeds",
    "sizes_with_near_singletons",
    "soft_supcon_near_critical",
    "sphere_labels",
    "symmetric_weights",
    "symmetrizable_weights",
    "temperatures",
    "temperatures_near",
    "weights_with_zeros",
    "xclr_near_critical",
    "y_aware_near_critical",
]

#: an int (a constant), a ``(lo, hi)`` range (inclusive) or a strategy of ints
IntLike = int | tuple[int, int] | st.SearchStrategy


def _ints(value: IntLike) -> st.SearchStrategy:
    """An integer strategy from an int, a ``(lo, hi)`` range or a strategy (as is)."""
    if isinstance(value, int):
        return st.just(int(value))
    if isinstance(value, tuple):
        return st.integers(*value)
    return value


def seeds() -> st.SearchStrategy[int]:
    """Seeds for :func:`numpy.random.default_rng` (shrinks towards 0)."""
    return st.integers(min_value=0, max_value=2**32 - 1)


def _log_weights(n: int, log_range: float) -> st.SearchStrategy[np.ndarray]:
    return hnp.arrays(
        np.float64,
        (n, n),
        elements=st.floats(-log_range, log_range, allow_nan=False, allow_infinity=False),
    )


@st.composite
def symmetric_weights(draw, n: IntLike = (3, 7), *, log_range: float = 3.0) -> np.ndarray:
    r"""Symmetric positive weights :math:`w_{ij} = w_{ji} = e^{x_{ij}}`, :math:`|x| \le`
    ``log_range``, zero diagonal.

    Parameters
    ----------
    n : int, (lo, hi) or strategy of int
        Number of samples (``>= 2``).
    log_range : float
        Bound on :math:`|\log w_{ij}|`.
    """
    m = draw(_ints(n))
    X = draw(_log_weights(m, log_range))
    X = np.triu(X, 1)
    W = np.exp(X + X.T)
    np.fill_diagonal(W, 0.0)
    return W


@st.composite
def symmetrizable_weights(
    draw, n: IntLike = (3, 7), *, log_range: float = 3.0, scale_range: float = 2.0
) -> np.ndarray:
    r"""Row-rescaled symmetric weights :math:`W = \operatorname{diag}(a)\,S`, ``S`` symmetric.

    They satisfy the cycle condition (every cycle has :math:`\prod w_{ij} = \prod w_{ji}`) and
    are not symmetric unless the drawn :math:`a` is constant.
    """
    S = draw(symmetric_weights(n, log_range=log_range))
    m = S.shape[0]
    log_a = draw(hnp.arrays(np.float64, (m,), elements=st.floats(-scale_range, scale_range)))
    return np.exp(log_a)[:, None] * S


@st.composite
def cycle_breaking_weights(
    draw,
    n: IntLike = (3, 7),
    *,
    log_range: float = 2.0,
    min_log_ratio: float = 0.1,
    max_log_ratio: float = 3.0,
) -> np.ndarray:
    r"""Weights that break the cycle condition by at least ``min_log_ratio`` on a triangle.

    Start from a symmetrizable matrix and multiply one weight :math:`w_{ij}` (with
    :math:`i \ne j`, both drawn) by :math:`e^{\delta}`, :math:`|\delta| \in` [``min_log_ratio``,
    ``max_log_ratio``]: every triangle through the edge ``(i, j)`` then has log-ratio
    :math:`\pm\delta`.
    """
    W = draw(symmetrizable_weights(n, log_range=log_range))
    m = W.shape[0]
    i = draw(st.integers(0, m - 1))
    j = draw(st.integers(0, m - 2))
    j = j + 1 if j >= i else j
    delta = draw(st.floats(min_log_ratio, max_log_ratio)) * draw(st.sampled_from([-1.0, 1.0]))
    W = W.copy()
    W[i, j] *= math.exp(delta)
    return W


@st.composite
def weights_with_zeros(
    draw, n: IntLike = (3, 7), *, log_range: float = 3.0, symmetric: bool = True
) -> np.ndarray:
    """Weights with at least one zero off the diagonal and positive mass in every row.

    Parameters
    ----------
    symmetric : bool
        Zero ``w_ij`` and ``w_ji`` together (default), or single entries.
    """
    W = draw(symmetric_weights(n, log_range=log_range))
    m = W.shape[0]
    pairs = [(i, j) for i in range(m) for j in range(m) if i != j]
    if symmetric:
        pairs = [(i, j) for i, j in pairs if i < j]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    W = W.copy()
    for i, j in chosen:
        keep_i = np.count_nonzero(W[i]) > 1
        keep_j = not symmetric or np.count_nonzero(W[j]) > 1
        if keep_i and keep_j:
            W[i, j] = 0.0
            if symmetric:
                W[j, i] = 0.0
    if np.count_nonzero(W[~np.eye(m, dtype=bool)] == 0) == 0:  # every choice was refused
        i, j = chosen[0]
        k = next(k for k in range(m) if k not in (i, j))
        W[i, j] = 0.0  # rows i and j keep their weight on k
        if symmetric:
            W[j, i] = 0.0
        W[i, k] = W[i, k] or 1.0
        W[j, k] = W[j, k] or 1.0
    return W


@st.composite
def block_weights(
    draw, sizes: st.SearchStrategy | None = None, *, log_range: float = 2.0
) -> tuple[np.ndarray, np.ndarray]:
    """Symmetric weights positive within blocks and zero across (a class-block support).

    Returns
    -------
    (W, labels) : tuple of ndarray
        The weights and the block label of each sample.
    """
    n_per = draw(sizes if sizes is not None else class_sizes(max_classes=3, max_size=4))
    labels = np.repeat(np.arange(len(n_per)), n_per)
    m = labels.size
    W = draw(symmetric_weights(m, log_range=log_range))
    W = np.where(labels[:, None] == labels[None, :], W, 0.0)
    return W, labels


# ----------------------------------------------------------------------------------------------
# class sizes and labels
# ----------------------------------------------------------------------------------------------


def balanced_sizes(
    min_classes: int = 2, max_classes: int = 5, min_size: int = 2, max_size: int = 6
) -> st.SearchStrategy[list[int]]:
    """``K`` classes of one common size ``n >= 2``."""
    return st.builds(
        lambda k, n: [n] * k,
        st.integers(min_classes, max_classes),
        st.integers(max(2, min_size), max_size),
    )


@st.composite
def long_tailed_sizes(
    draw, min_classes: int = 2, max_classes: int = 5, max_size: int = 12
) -> list[int]:
    r"""Geometrically decaying sizes :math:`n_k \approx n_1 r^{k}` (at least 2, not all equal)."""
    k = draw(st.integers(min_classes, max_classes))
    head = draw(st.integers(4, max(4, max_size)))
    ratio = draw(st.floats(0.2, 0.8))
    sizes = [max(2, round(head * ratio**i)) for i in range(k)]
    if len(set(sizes)) == 1:
        sizes[0] += 1
    return sizes


@st.composite
def sizes_with_near_singletons(
    draw, min_classes: int = 2, max_classes: int = 5, max_size: int = 8
) -> list[int]:
    """Sizes where at least one class has the smallest allowed size, 2 (one positive each)."""
    k = draw(st.integers(min_classes, max_classes))
    rest = draw(st.lists(st.integers(2, max_size), min_size=k - 1, max_size=k - 1))
    pos = draw(st.integers(0, k - 1))
    return [*rest[:pos], 2, *rest[pos:]]


def class_sizes(
    min_classes: int = 2, max_classes: int = 5, max_size: int = 8
) -> st.SearchStrategy[list[int]]:
    """Any of :func:`balanced_sizes`, :func:`long_tailed_sizes` and
    :func:`sizes_with_near_singletons`."""
    return st.one_of(
        balanced_sizes(min_classes, max_classes, max_size=max_size),
        long_tailed_sizes(min_classes, max_classes, max_size=max_size),
        sizes_with_near_singletons(min_classes, max_classes, max_size=max_size),
    )


@st.composite
def class_labels(draw, sizes: st.SearchStrategy | None = None, *, shuffle: bool = True):
    """Integer labels with the drawn class sizes, optionally in a drawn order.

    Returns
    -------
    (labels, sizes) : tuple
        An ``int64`` array of length ``sum(sizes)`` and the list of sizes (class ``k`` has
        ``sizes[k]`` samples).
    """
    n_per = draw(sizes if sizes is not None else class_sizes())
    labels = np.repeat(np.arange(len(n_per)), n_per)
    if shuffle:
        perm = draw(st.permutations(range(labels.size)))
        labels = labels[np.asarray(perm, dtype=int)]
    return labels, list(n_per)


# ----------------------------------------------------------------------------------------------
# labels and embeddings
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SphereLabels:
    """Labels :math:`y_i = m + R u_i` on a sphere, with the directions :math:`u_i` (unit rows)."""

    labels: np.ndarray
    centre: np.ndarray
    radius: float
    directions: np.ndarray


@st.composite
def sphere_labels(
    draw,
    n: IntLike = (4, 9),
    dim: IntLike = (2, 3),
    *,
    centred: bool = False,
    min_radius: float = 0.1,
    max_radius: float = 10.0,
    centre_range: float = 10.0,
) -> SphereLabels:
    r"""Labels on a sphere of any centre and radius.

    Parameters
    ----------
    n, dim : int or strategy of int
        Number of labels and their dimension ``p``.
    centred : bool
        Make the directions sum to zero (antipodal pairs, plus three directions at 120 degrees
        for odd ``n``), so that the labels are centred on the sphere's centre.
    """
    m, p = draw(_ints(n)), draw(_ints(dim))
    rng = np.random.default_rng(draw(seeds()))
    if centred:
        if p == 1 and m % 2:  # a 0-sphere holds only antipodal pairs
            m -= 1
        pairs = m // 2 if m % 2 == 0 else (m - 3) // 2
        half = rng.standard_normal((pairs, p))
        U = np.vstack([half, -half])
        if m % 2:  # odd n: three directions summing to zero
            U = np.vstack([U, _three_balanced(rng, p)])
    else:
        U = rng.standard_normal((m, p))
    U /= np.linalg.norm(U, axis=1, keepdims=True)
    radius = draw(st.floats(min_radius, max_radius))
    centre = np.asarray(
        draw(st.lists(st.floats(-centre_range, centre_range), min_size=p, max_size=p)), float
    )
    return SphereLabels(centre + radius * U, centre, radius, U)


def _three_balanced(rng: np.random.Generator, p: int) -> np.ndarray:
    """Three unit vectors summing to zero (an equilateral triangle in a random plane)."""
    Q = np.linalg.qr(rng.standard_normal((p, 2)))[0]
    angles = np.array([0.0, 2 * np.pi / 3, 4 * np.pi / 3]) + rng.uniform(0, 2 * np.pi)
    return np.c_[np.cos(angles), np.sin(angles)] @ Q.T


@st.composite
def off_sphere_labels(
    draw, n: IntLike = (5, 9), dim: IntLike = (1, 3), *, scale: float = 5.0
) -> np.ndarray:
    r"""Labels in general position that lie on no common sphere (nor hyperplane).

    Points lie on a common sphere or hyperplane iff :math:`\|y_i\|^2` is an affine function of
    :math:`y_i`; the strategy keeps only draws whose least-squares residual of that fit is at
    least 1% of :math:`\|\,\|y\|^2\|` (at least ``p + 3`` points are needed, more are drawn).
    """
    p = draw(_ints(dim))
    m = max(draw(_ints(n)), p + 3)
    rng = np.random.default_rng(draw(seeds()))
    scale_ = draw(st.floats(0.2, scale))
    for _ in range(20):
        Y = scale_ * rng.standard_normal((m, p))
        Y[0] *= 2.5  # one point well outside the others' sphere
        sq = np.einsum("ij,ij->i", Y, Y)
        A = np.c_[Y, np.ones(m)]
        resid = sq - A @ np.linalg.lstsq(A, sq, rcond=None)[0]
        if np.linalg.norm(resid) >= OFF_SPHERE_MIN_RESIDUAL * np.linalg.norm(sq):
            return Y
    raise AssertionError("could not draw labels off every sphere")  # pragma: no cover


@st.composite
def embeddings(
    draw, n: IntLike = (3, 8), dim: IntLike = (1, 4), *, unit: bool = False
) -> np.ndarray:
    """Gaussian embeddings ``Z`` (``N x d``), rows normalised when ``unit``."""
    m, d = draw(_ints(n)), draw(_ints(dim))
    Z = np.random.default_rng(draw(seeds())).standard_normal((m, d))
    if unit:
        Z /= np.linalg.norm(Z, axis=1, keepdims=True)
    return Z


# ----------------------------------------------------------------------------------------------
# temperatures
# ----------------------------------------------------------------------------------------------


def temperatures(min_value: float = 0.05, max_value: float = 2.0) -> st.SearchStrategy[float]:
    """Temperatures in ``[min_value, max_value]``."""
    return st.floats(min_value, max_value, allow_nan=False, allow_infinity=False)


def temperatures_near(
    critical: float, *, rel: float = 0.05, min_rel: float = NEAR_CRITICAL_MIN_REL
) -> st.SearchStrategy[float]:
    r"""Temperatures :math:`\tau^*(1 + \delta)`: exactly :math:`\tau^*` (``delta = 0``) or with
    :math:`\min_{rel} \le |\delta| \le rel` on either side.

    Shrinks towards the critical value itself.
    """
    if not (critical > 0 and math.isfinite(critical)):
        raise InputError(f"critical must be a finite number > 0, got {critical!r}")
    return _delta(rel, min_rel).map(lambda d: critical * (1.0 + d))


@dataclass(frozen=True)
class CriticalCase:
    """A drawn case near a critical temperature.

    Attributes
    ----------
    tau : float
        The temperature.
    tau_critical : float
        The critical value it is drawn near.
    delta : float
        ``tau / tau_critical - 1`` (``0.0`` exactly at the critical value).
    params : dict
        The objective's data: ``sizes``/``labels``/``eps`` (Soft SupCon), ``labels``/``sigma``/
        ``sphere`` (y-Aware), ``labels``/``label_tau`` (X-CLR).
    """

    tau: float
    tau_critical: float
    delta: float
    params: dict


def _delta(rel: float, min_rel: float) -> st.SearchStrategy[float]:
    # exactly 0 or min_rel <= |delta| <= rel on either side; shrinks towards 0
    return st.one_of(st.just(0.0), st.floats(min_rel, rel), st.floats(-rel, -min_rel))


def _near(draw, critical: float, rel: float, min_rel: float, params: dict) -> CriticalCase:
    """The case at ``critical * (1 + delta)``, ``delta`` drawn by :func:`_delta`."""
    d = draw(_delta(rel, min_rel))
    return CriticalCase(critical * (1 + d), critical, d, params)


@st.composite
def soft_supcon_near_critical(
    draw,
    sizes: st.SearchStrategy | None = None,
    *,
    rel: float = 0.1,
    min_rel: float = NEAR_CRITICAL_MIN_REL,
) -> CriticalCase:
    r"""Soft SupCon near :math:`\tau^* = K/((K-1)(-\log\varepsilon))` (independent of sizes)."""
    n_per = draw(sizes if sizes is not None else class_sizes(max_classes=4, max_size=5))
    eps = draw(st.floats(*SOFT_SUPCON_EPS_RANGE))
    K = len(n_per)
    tau_star = K / ((K - 1) * (-math.log(eps)))
    return _near(draw, tau_star, rel, min_rel, {"sizes": n_per, "eps": eps})


@st.composite
def y_aware_near_critical(
    draw,
    *,
    n: IntLike = (4, 9),
    dim: IntLike = (2, 3),
    centred: bool = True,
    rel: float = 0.1,
    min_rel: float = NEAR_CRITICAL_MIN_REL,
) -> CriticalCase:
    r"""y-Aware with labels on a sphere of radius ``R``, near :math:`\tau R^2 = \sigma^2`.

    The critical temperature is drawn in ``[0.05, 2]`` and :math:`\sigma = R\sqrt{\tau_c}`.
    """
    sph = draw(sphere_labels(n, dim, centred=centred))
    tau_c = draw(temperatures(0.05, 2.0))
    sigma = sph.radius * math.sqrt(tau_c)
    return _near(draw, tau_c, rel, min_rel, {"labels": sph.labels, "sigma": sigma, "sphere": sph})


@st.composite
def xclr_near_critical(
    draw,
    *,
    n: IntLike = (4, 9),
    dim: IntLike = (2, 3),
    centred: bool = True,
    rel: float = 0.1,
    min_rel: float = NEAR_CRITICAL_MIN_REL,
) -> CriticalCase:
    r"""X-CLR near :math:`\tau = \tau_y`; labels are arbitrary non-zero vectors (normalised by
    X-CLR), centred directions when ``centred``."""
    sph = draw(sphere_labels(n, dim, centred=centred, centre_range=0.0))
    label_tau = draw(temperatures(0.05, 2.0))
    # any positive rescaling of each label leaves X-CLR unchanged
    rng = np.random.default_rng(draw(seeds()))
    labels = sph.directions * rng.uniform(0.2, 5.0, size=(sph.labels.shape[0], 1))
    return _near(draw, label_tau, rel, min_rel,
                 {"labels": labels, "label_tau": label_tau, "directions": sph.directions})
