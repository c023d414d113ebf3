"""A mini-batch option given without a batch size is refused in each interface's own words: the
library names ``batch_size=B``, the command line ``--batch-size B`` (it said the Python name,
"give batch_size as well", on the command line)."""

from __future__ import annotations

import numpy as np
import pytest

import dgp


def test_the_library_and_the_command_line_each_name_their_own_batch_size(tmp_path, capsys):
    W = np.ones((6, 6)) - np.eye(6)
    with pytest.raises(dgp.InvalidParameterError, match="give batch_size=B as well"):
        dgp.optimum(W, tau=0.5, dim=2, sampler="class-balanced")
    from dgp.cli import main

    path = tmp_path / "w.npy"
    np.save(path, W)
    assert main(["optimum", str(path), "--tau", "0.5", "--dim", "2", "--sampler",
                 "class-balanced"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: --sampler") and err.count("\n") == 1
    assert "--batch-size B" in err and "batch_size" not in err
