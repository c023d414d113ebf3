"""``dgp optimum``'s printed Gram says where it comes from: exact (every batch enumerated, or
full batch) is "optimal Gram"; found on sampled batches, it is one near-optimal solution and
the caption says how far the other seeds' solutions move (issue 40: no sampled entry printed as
if it were exact)."""

from __future__ import annotations

import numpy as np
import pytest

_LABELS = np.repeat(np.arange(4), [6, 5, 4, 3])


@pytest.fixture(scope="module")
def labels(tmp_path_factory):
    path = tmp_path_factory.mktemp("caption") / "labels.npy"
    np.save(path, _LABELS)
    return path


@pytest.mark.slow  # every batch of 5 points enumerated in R^2 (about 3-7 s)
def test_exact_batches_print_the_optimal_gram(cli, tmp_path):
    W = np.array([[0, 2, 1, 1, 1], [2, 0, 1, 1, 1], [1, 1, 0, 3, 1], [1, 1, 3, 0, 1],
                  [1, 1, 1, 1, 0]], dtype=float)
    np.save(tmp_path / "w.npy", W)
    run = cli("optimum", tmp_path / "w.npy", "--tau", "0.5", "--dim", "2", "--batch-size", "3",
              "--quiet")
    assert run.code == 0, run.err
    assert "\noptimal Gram:\n" in run.out and "sampled batches" not in run.out


@pytest.mark.slow  # a stochastic run with its held-out evaluation (about 15 s)
def test_sampled_batches_caption_the_gram(cli, labels):
    run = cli("optimum", "--objective", "supcon", "--labels", labels, "--tau", "0.3", "--dim",
              "2", "--batch-size", "8", "--sampler", "class-balanced", "--exact-max", "10",
              "--quiet")
    assert run.code == 0, run.err
    assert "optimal Gram:" not in run.out
    caption = " ".join(run.out.split("Gram of the returned embedding")[1].split("):")[0].split())
    assert "found on sampled batches" in caption and "near-optimal solutions" in caption
    assert all(len(line) <= 80 for line in run.out.splitlines())
