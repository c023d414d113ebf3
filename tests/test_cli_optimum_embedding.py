"""``dgp optimum --embedding`` without ``--json`` prints the embedding (it printed only a hint
to add ``--json``): unit rows whose Gram is the optimum's, or, where they do not fit a
terminal, how to write them."""

from __future__ import annotations

import numpy as np
import pytest

import dgp


def _rows(text: str) -> np.ndarray:
    block = text.split("\nembedding (", 1)[1].split("\n-  ", 1)[1].splitlines()[1:]
    return np.array([[float(v) for v in line.split()[1:]] for line in block if line.strip()])


def _gram(text: str) -> np.ndarray:
    """The printed Gram's values (the part of each cell before its half-width)."""
    block = text.split("\nembedding (", 1)[0].split("\n-  ", 1)[1].splitlines()[1:]
    return np.array([[float(v.split("±")[0]) for v in line.split()[1:]]
                     for line in block if line.strip()])


def test_the_embedding_is_printed_and_is_the_optimum(cli, tmp_path):
    y = np.arange(6.0)
    W = np.exp(-np.subtract.outer(y, y) ** 2)
    np.save(tmp_path / "W.npy", W)
    r = cli("optimum", tmp_path / "W.npy", "--tau", "0.5", "--dim", "2", "--embedding",
            "--quiet")
    assert r.code == 0 and r.err == ""
    Z = _rows(r.out)
    assert Z.shape == (6, 2)
    np.testing.assert_allclose(np.linalg.norm(Z, axis=1), 1.0, atol=1e-4)
    # the printed rows (4 decimals) give the library's Gram, an independent reading of it
    ref = dgp.optimum(W, tau=0.5, dim=2, progress=False)
    np.testing.assert_allclose(Z @ Z.T, ref.gram, atol=1e-3)
    assert "-0.0000" not in r.out
    # without the flag, no embedding
    plain = cli("optimum", tmp_path / "W.npy", "--tau", "0.5", "--dim", "2", "--quiet")
    assert "embedding (" not in plain.out


@pytest.mark.slow  # a stochastic solve: about 6 s
def test_twin_samples_share_the_row_of_the_printed_gram(cli, tmp_path):
    """The printed rows are the printed Gram's (one per point solved; where twin samples are
    solved as one point, one per point, not per sample: the two tables' row labels named
    different things), and their inner products are its entries."""
    y = np.array([0.0, 0.0, 1.0, 1.0, 2.5, 2.5])
    np.save(tmp_path / "W.npy", np.exp(-np.subtract.outer(y, y) ** 2))
    r = cli("optimum", tmp_path / "W.npy", "--tau", "0.5", "--dim", "2", "--batch-size", "3",
            "--exact-max", "2", "--samples", "100", "--embedding", "--quiet")
    assert r.code == 0, r.err
    Z, G = _rows(r.out), _gram(r.out)
    assert Z.shape[0] == G.shape[0] and Z.shape[1] == 2
    np.testing.assert_allclose(Z @ Z.T, G, atol=2e-3)


def test_too_large_an_embedding_says_how_to_write_it(cli, tmp_path):
    y = np.linspace(0.0, 3.0, 20)
    np.save(tmp_path / "W.npy", np.exp(-np.subtract.outer(y, y) ** 2))
    r = cli("optimum", tmp_path / "W.npy", "--tau", "0.5", "--dim", "2", "--embedding",
            "--quiet")
    assert r.code == 0
    assert "the embedding (20 x 2) is too large to print: --save-embedding FILE" in r.out
    assert "use --gram to print the Gram, --embedding for the embedding" not in r.out
