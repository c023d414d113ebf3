"""One test per row of the audit table (docs/audit.md): released implementations and losses
written from published formulas. A row whose package is not installed (the ``audit`` test
extra) is skipped, saying why; a row whose package is installed but cannot be audited (lightly's
``NTXentLoss`` needs torchvision, which the test line does not install) must say so in the
table, with the reason the code gives, so that the page never promises an audit that does not
run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import importlib.metadata  # noqa: E402
import pathlib  # noqa: E402

from dgp.torch.audit import audit_loss  # noqa: E402
from dgp.torch.audit_examples import (  # noqa: E402
    CASES,
    CaseUnavailable,
    run_case,
    table_row,
    unavailable_row,
)

pytestmark = pytest.mark.torch
PAGE = pathlib.Path(__file__).parent.parent / "docs" / "audit.md"


def _installed(dist: str | None) -> bool:
    if dist is None:
        return True
    try:
        importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_row(case):
    try:
        report = run_case(case)
    except CaseUnavailable as exc:
        if not _installed(case.dist):
            pytest.skip(str(exc))
        # installed, yet not auditable here: the table says "not audited" and why, not a result
        row = unavailable_row(case, str(exc))
        assert row in PAGE.read_text(encoding="utf-8").splitlines(), (
            f"{case.name}: docs/audit.md must show {row!r} (python docs/make_audit_table.py)"
        )
        return
    # the docs table shows this very row (regenerate with docs/make_audit_table.py)
    assert table_row(case, report) in PAGE.read_text(encoding="utf-8").splitlines()
    expect = case.expect
    assert report.identified == expect.get("identified", True), report.warnings
    if not report.identified:
        assert report.match is None and report.verdict is None
        return
    assert report.match is not None, report.warnings
    assert report.match["objective"] == expect["objective"]
    if "form" in expect:
        assert report.match["form"] == expect["form"]
    assert report.partition == expect["partition"]
    assert (report.anchor_spread > 1.01) == expect.get("unequal_anchors", False)
    if expect["partition"] == "negatives":
        assert report.verdict is None  # no entropic bound without the positives
    else:
        assert report.verdict in ("realizable", "degenerate", "inconsistent")
    assert report.geometry is not None and report.intended is not None
    if expect.get("form", "rows") == "rows" and expect["partition"] == "all":
        # the loss is what it claims: the same geometry as the intended objective
        assert report.intended["max_gap"] < 1e-4


def test_nidl_column_normalisation_is_flagged():
    case = next(c for c in CASES if c.name == "YAwareInfoNCE")
    try:
        loss = case.build()
    except CaseUnavailable as exc:
        pytest.skip(str(exc))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        report = audit_loss(loss, intended=case.intended, **case.audit)
    assert report.call == "pair" and report.labels_kind == "continuous"
    assert report.match["value"] == pytest.approx(0.5, rel=1e-6)  # sigma = sqrt(bandwidth)
    assert any("column normalisation" in w for w in report.warnings)
    # its effective weighting is the kernel divided by both degrees (two views: 2n rows)
    y = report.row_labels.astype(float)
    K = np.exp(-((y[:, None] - y[None, :]) ** 2) / (2 * 0.25))
    np.fill_diagonal(K, 0.0)
    s = K.sum(axis=1)
    truth = K / np.outer(s, s)
    np.testing.assert_allclose(report.effective_weights, truth / truth.max(), rtol=1e-7)
    assert 0 < report.intended["max_gap"] and report.intended["similarity_r2"] < 1


def test_pml_supcon_mean_reduction_equals_ours():
    """``reduction="mean", empty_rows="skip"`` is pytorch-metric-learning's SupConLoss."""
    case = CASES[0]
    try:
        pml = case.build()
    except CaseUnavailable as exc:
        pytest.skip(str(exc))
    from dgp.torch.losses import SupConLoss

    ours = SupConLoss(temperature=0.1, reduction="mean", empty_rows="skip")
    gen = torch.Generator().manual_seed(0)
    for labels in ([0, 0, 1, 1, 1, 2, 2, 3], [0, 0, 0, 1, 1, 2, 3, 4]):  # with singletons
        z = torch.randn(8, 5, dtype=torch.float64, generator=gen)
        y = torch.tensor(labels)
        assert ours(z, y).item() == pytest.approx(pml(z, y).item(), rel=1e-12)
