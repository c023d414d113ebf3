"""A batched problem whose compositions could all be enumerated but whose rank-d search over
them is estimated beyond EXACT_RANK_D_MAX_S takes fresh batches, and says so on stderr (a
referee's D3: 58 905 class-balanced compositions of 5 classes in d = 3 went stochastic in
silence, and are now searched exactly in two phases; 53 130 compositions of 6 classes at B = 20
are still estimated beyond); within the budget, or beyond enumeration, nothing is said."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from dgp.optima._batch_notices import say_exact_skipped
from dgp.optima._batch_paths import batch_route
from dgp.solver import (
    EXACT_RANK_D_MAX_S,
    BatchSpec,
    composition_count,
    enumerable,
    rows_rank_d_seconds,
)

_SPEC = BatchSpec(batch_size=20, sampler="class-balanced", samples_per_class=None,
                  reduction="mean", anchors_without_positives="drop")


def _q(sizes):
    sizes = np.asarray(sizes, dtype=np.int64)
    return SimpleNamespace(sizes=sizes, K=sizes.size)


def test_the_skipped_exact_path_is_said(capsys):
    q = _q([30, 20, 10, 5, 3, 3])
    starts = 9
    assert enumerable(q.sizes, _SPEC, 100_000)
    assert rows_rank_d_seconds(q.sizes, _SPEC, 3, starts) > EXACT_RANK_D_MAX_S
    assert batch_route(q.sizes, _SPEC, 3, 100_000, starts) == "stochastic"
    say_exact_skipped(q, _SPEC, 3, 100_000, starts)
    err = capsys.readouterr().err
    assert f"all {composition_count(q.sizes, _SPEC)} compositions" in err
    assert "fresh batches instead" in err


def test_nothing_is_said_where_the_exact_path_runs_or_cannot(capsys):
    q = _q([30, 20, 10, 5, 3])
    say_exact_skipped(q, _SPEC, None, 100_000, 9)  # free dimension: no rank-d search
    say_exact_skipped(q, _SPEC, 3, 1_000, 9)  # beyond enumeration: nothing was skipped
    assert capsys.readouterr().err == ""


def test_few_subsets_too_large_for_their_rows_are_said(capsys):
    """A referee's N = 300, B = 299 (300 subsets) and B = 298 (44 850): their rows exceed the
    row budget and the finite sum its time or entries, so fresh batches answer, and this is
    said with the reason (it went stochastic in silence, claiming 'other fresh batches' where
    only 300 distinct ones exist)."""
    q = _q(np.ones(300))
    for B, count, reason in ((299, 300, "is used from 501 subsets on"), (298, 44_850, "entries")):
        spec = BatchSpec(batch_size=B, sampler="uniform", samples_per_class=None,
                         reduction="mean", anchors_without_positives="drop")
        assert not enumerable(q.sizes, spec, 100_000)
        assert batch_route(q.sizes, spec, 8, 100_000, 4) == "stochastic"
        say_exact_skipped(q, spec, 8, 100_000, 4)
        err = " ".join(capsys.readouterr().err.split())
        assert f"all {count} compositions" in err and "exceed" in err and reason in err
        assert f"independent draws of those {count}" in err
        say_exact_skipped(q, spec, 8, count - 1, 4)  # beyond exact_max: nothing was skipped
        assert capsys.readouterr().err == ""


def test_a_finite_sum_over_the_memory_budget_is_said(capsys, monkeypatch):
    """A referee's n = 16, B = 8 (12 870 subsets) under DGP_MEMORY_LIMIT=60M: the finite sum
    needs about 158 MB, the rows are not taken for samples past FINITE_FROM subsets, so fresh
    batches answer; the budget that refused it is named."""
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "60M")
    q = _q(np.ones(16))
    spec = BatchSpec(batch_size=8, sampler="uniform", samples_per_class=None,
                     reduction="mean", anchors_without_positives="drop")
    assert batch_route(q.sizes, spec, 2, 100_000, 4) == "stochastic"
    say_exact_skipped(q, spec, 2, 100_000, 4)
    err = " ".join(capsys.readouterr().err.split())
    assert "all 12870 compositions" in err and "beyond the memory budget" in err
    assert "DGP_MEMORY_LIMIT" in err
    monkeypatch.delenv("DGP_MEMORY_LIMIT")
    assert batch_route(q.sizes, spec, 2, 100_000, 4) == "finite"
