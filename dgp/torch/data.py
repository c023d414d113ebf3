"""Datasets of the verification experiments (numpy only; nothing is downloaded).

- :func:`imbalanced_digits`: scikit-learn's 8x8 digits, subsampled so that class sizes decrease
  geometrically (tenfold from the first class to the last by default).
- :func:`blob_images`: small rendered images of a Gaussian blob whose 2-D position is the label,
  with label values on a finite grid and nuisance variation (width, brightness, pixel noise).
"""

from __future__ import annotations

import numpy as np

from dgp.errors import check_dim, check_positive

__all__ = ["blob_images", "geometric_sizes", "imbalanced_digits"]


def geometric_sizes(*, classes: int, largest: int, ratio: float) -> np.ndarray:
    """Class sizes decreasing geometrically from ``largest`` to ``largest / ratio``.

    Raises
    ------
    TypeError, ValueError
        If ``classes < 2``, ``largest < 2``, ``ratio < 1``, or the smallest class would have fewer
        than 2 samples.
    """
    classes = check_dim(classes, "classes")
    largest = check_dim(largest, "largest")
    ratio = check_positive(ratio, "ratio")
    if classes < 2:
        raise ValueError(f"classes must be >= 2, got {classes}")
    if ratio < 1:
        raise ValueError(f"ratio must be >= 1 (sizes decrease), got {ratio}")
    sizes = np.round(largest * ratio ** (-np.arange(classes) / (classes - 1))).astype(np.int64)
    if sizes.min() < 2:
        raise ValueError(
            f"the smallest class would have {int(sizes.min())} sample(s); raise largest or lower "
            "ratio"
        )
    return sizes


def imbalanced_digits(
    *, classes: int = 10, ratio: float = 10.0, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """An imbalanced subset of scikit-learn's digits (ships with scikit-learn; no download).

    Class ``c`` keeps ``round(n * ratio**(-c / (classes - 1)))`` samples, ``n`` being the size of
    the smallest digit class (174), drawn at random without replacement.

    Returns
    -------
    X : ndarray, shape (N, 64)
        Pixel intensities scaled to ``[0, 1]`` (float32).
    y : ndarray, shape (N,)
        Class labels ``0..classes-1`` (int64), sorted.
    sizes : ndarray, shape (classes,)

    Raises
    ------
    ImportError
        If scikit-learn is not installed (it comes with the ``torch`` extra).
    ValueError
        If ``classes`` is not in ``2..10`` or ``ratio`` is invalid.
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError(
            'the digits data set needs scikit-learn: pip install "dgp-contrastive[torch]"'
        ) from None
    classes = check_dim(classes, "classes")
    if not 2 <= classes <= 10:
        raise ValueError(f"classes must be between 2 and 10 for digits, got {classes}")
    X, y = load_digits(return_X_y=True)
    largest = int(np.bincount(y)[:classes].min())
    sizes = geometric_sizes(classes=classes, largest=largest, ratio=ratio)
    rng = np.random.default_rng(seed)
    idx = np.concatenate(
        [
            np.sort(rng.choice(np.flatnonzero(y == c), sizes[c], replace=False))
            for c in range(classes)
        ]
    )
    return (X[idx] / 16.0).astype(np.float32), y[idx].astype(np.int64), sizes


def blob_images(
    *,
    grid: int = 8,
    copies: int = 1,
    size: int = 16,
    noise: float = 0.05,
    seed: int = 0,
) -> tuple[np.ndarray, np.ndarray]:
    """Images of a Gaussian blob whose centre is the label.

    Labels are the points of a ``grid x grid`` grid on ``[-1, 1]^2``, each used ``copies`` times
    (copies of a label differ in their nuisances). Nuisances: blob width in ``[1.2, 1.5]`` pixels,
    brightness in ``[0.8, 1.2]``, Gaussian pixel noise of standard deviation ``noise``.

    Returns
    -------
    X : ndarray, shape (N, size, size), float32
    y : ndarray, shape (N, 2), float64
        The blob positions, in label units.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive integer, ``grid < 2``, ``size < 8`` or ``noise < 0``.
    """
    grid = check_dim(grid, "grid")
    copies = check_dim(copies, "copies")
    size = check_dim(size, "size")
    if grid < 2:
        raise ValueError(f"grid must be >= 2, got {grid}")
    if size < 8:
        raise ValueError(f"size must be >= 8 pixels, got {size}")
    if not noise >= 0:
        raise ValueError(f"noise must be >= 0, got {noise!r}")
    rng = np.random.default_rng(seed)
    g = np.linspace(-1.0, 1.0, grid)
    y = np.array([(a, b) for a in g for b in g]).repeat(copies, axis=0)
    n = y.shape[0]
    centre = (y + 1.0) / 2.0 * (size - 5) + 2.0  # pixel coordinates in [2, size - 3]
    yy, xx = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
    width = 1.2 + 0.3 * rng.random(n)
    bright = 0.8 + 0.4 * rng.random(n)
    d2 = (xx[None] - centre[:, 0, None, None]) ** 2 + (yy[None] - centre[:, 1, None, None]) ** 2
    X = bright[:, None, None] * np.exp(-d2 / (2.0 * width[:, None, None] ** 2))
    X += noise * rng.standard_normal(X.shape)
    return X.astype(np.float32), y
