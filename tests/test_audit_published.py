"""One test per row of the audit table (docs/audit.md): released implementations and losses
written from published formulas. A row whose package is not installed (the ``audit`` test
extra) is skipped, saying why; a row whose package is installed but cannot be audited (the class
is missing from the released version, or the loss needs a package the test line does not
install) must say so in the table, with the reason the code gives, so that the page never
promises an audit that does not run."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import importlib.metadata  # noqa: E402
import pathlib  # noqa: E402
import sys  # noqa: E402

from dgp.torch.audit import audit_loss  # noqa: E402
from dgp.torch.audit.vocabulary import FIRST_VIEW_ANCHORS  # noqa: E402
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
        named = report.named_form and report.named_form["form"]
        assert named == expect.get("named")
        if named:  # the table's temperature, 0.1, recovered from the probes of its own form
            assert report.tau_estimate == pytest.approx(0.1, rel=1e-6)
        return
    assert report.match is not None, report.warnings
    assert report.match["objective"] == expect["objective"]
    if "form" in expect:
        assert report.match["form"] == expect["form"]
    assert report.partition == expect["partition"]
    assert (report.anchor_spread > 1.01) == expect.get("unequal_anchors", False)
    if "tau" in expect:  # no temperature given: estimated from the probes
        assert report.tau_estimate == pytest.approx(expect["tau"], rel=1e-6)
    assert (report.learned_temperature is not None) == expect.get("learned", False)
    if expect["partition"] == "negatives":
        assert report.verdict is None  # no entropic bound without the positives
    elif expect["partition"] in FIRST_VIEW_ANCHORS:
        assert report.verdict is None  # pairs within the second view are in no term
        assert (report.anchor_weights[report.n // 2:] == 0).all()
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


@pytest.mark.slow
def test_the_docs_table_is_what_a_fresh_run_writes():
    """`docs/make_audit_table.py --check` (every row, unavailable ones included)."""
    import subprocess

    script = PAGE.parent / "make_audit_table.py"
    proc = subprocess.run([sys.executable, str(script), "--check"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]


def test_pml_supcon_with_a_wrong_tau_is_told_its_temperature():
    case = CASES[0]
    try:
        pml = case.build()
    except CaseUnavailable as exc:
        pytest.skip(str(exc))
    report = audit_loss(pml, tau=0.2, geometry=False)
    assert report.tau_estimate == pytest.approx(0.1, rel=1e-6)
    assert report.tau_given == 0.2 and report.tau_source == "estimated"
    assert any("the temperature is 0.1, not the given tau = 0.2" in w for w in report.warnings)
    assert report.match["objective"] == "supcon"


@pytest.mark.parametrize("error", [RuntimeError("operator torchvision::nms does not exist"),
                                   ImportError("No module named 'torchvision'"),
                                   OSError("libc10.so: cannot open shared object file")])
def test_an_optional_package_that_fails_to_import_is_loaded_from_its_file(monkeypatch, error):
    """`import lightly.loss` may raise anything a broken torchvision raises: the DCL and NT-Xent
    losses are then loaded from their files; `_attr` turns the failure into a skipped row that
    says why."""
    from dgp.torch import _audit_catalogue as ex  # the catalogue's loaders (private)

    try:
        ex._version("lightly")
    except CaseUnavailable as exc:
        pytest.skip(str(exc))
    real = ex.importlib.import_module

    def failing(name, *args):
        if name.startswith("lightly.loss"):
            raise error
        return real(name, *args)

    monkeypatch.setattr(ex.importlib, "import_module", failing)
    ntxent = ex._lightly("NTXentLoss", "loss/ntx_ent_loss.py")(temperature=0.1)
    assert type(ntxent).__module__ == "_dgp_audit_loss_ntx_ent_loss"
    # the stub stood in only while the file was loaded
    bank = sys.modules.get("lightly.models.modules.memory_bank")
    assert getattr(bank, "MemoryBankModule", None) is not ex._MemoryBankOff
    z1, z2 = torch.randn(2, 4, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    # NT-Xent of the two views, written out: SupCon on pairs with a mean over the 2b anchors
    from dgp.torch.losses import SupConLoss

    ours = SupConLoss(temperature=0.1, reduction="mean")(torch.cat([z1, z2]),
                                                         torch.arange(4).repeat(2))
    assert ntxent(z1, z2).item() == pytest.approx(ours.item(), rel=1e-12)
    with pytest.raises(CaseUnavailable, match=type(error).__name__):
        ex._attr("lightly.loss", "NTXentLoss", "lightly")
