"""`dgp audit`: the weighting a loss optimises, from one backward pass at orthonormal embeddings."""

from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from dgp.cli import main  # noqa: E402
from dgp.torch import audit_examples as ex  # noqa: E402
from dgp.torch.audit import (  # noqa: E402
    audit_loss,
    default_labels,
    recover_symmetric_part,
    reversible_representative,
    symmetric_part,
)
from dgp.torch.losses import (  # noqa: E402
    EuclidEuclidLoss,
    SoftSupConLoss,
    SupConLoss,
    WInfoNCELoss,
    XCLRLoss,
)


def test_recovers_p_plus_pT_of_any_weighting():
    rng = np.random.default_rng(3)
    W = rng.random((9, 9)) ** 3  # asymmetric
    for reduction, scale in (("sum", 1.0), ("mean", 1.0 / 9)):
        loss = WInfoNCELoss(tau=0.3, weights=W, reduction=reduction)
        rec = recover_symmetric_part(loss, np.arange(9), tau=0.3)
        assert rec.reduction_scale == pytest.approx(scale)
        assert rec.similarity == "cosine"
        np.testing.assert_allclose(rec.A, symmetric_part(W), atol=1e-12)
        # the antisymmetric part of p is invisible: the gradient pattern is symmetric
        assert rec.gradient_asymmetry < 1e-10


def test_euclidean_latent_is_detected():
    rng = np.random.default_rng(4)
    W = rng.random((8, 8)) ** 2
    rec = recover_symmetric_part(
        WInfoNCELoss(tau=0.5, similarity="euclidean", weights=W), np.arange(8), tau=0.5
    )
    assert rec.similarity == "euclidean"
    np.testing.assert_allclose(rec.A, symmetric_part(W), atol=1e-12)


def test_reversible_representative_round_trip():
    rng = np.random.default_rng(5)
    S = rng.random((7, 7))
    S = S + S.T
    np.fill_diagonal(S, 0)
    R, residual = reversible_representative(symmetric_part(S))
    assert residual < 1e-10
    np.testing.assert_allclose(R, S / S.max(), rtol=1e-7)


def test_correct_y_aware_matches():
    report = audit_loss(ex.y_aware_loss)
    assert report.match["objective"] == "y-aware"
    assert report.match["value"] == pytest.approx(ex.SIGMA, rel=1e-6)
    assert report.tau_source == "attribute" and report.reduction_scale == pytest.approx(1.0)
    assert not any("column" in w for w in report.warnings)
    assert report.verdict in ("realizable", "degenerate", "inconsistent")


def test_public_y_aware_slip_is_caught():
    report = audit_loss(ex.y_aware_loss_public)
    assert report.match["objective"] == "y-aware-colnorm-public"
    assert report.match["value"] == pytest.approx(ex.SIGMA, rel=1e-6)
    errors = {c["objective"]: c["error"] for c in report.candidates}
    assert errors["y-aware"] > 1e-2  # no kernel width makes it the y-Aware weighting
    assert any("W /= W.sum(1)" in w for w in report.warnings)
    assert report.reduction_scale == pytest.approx(1.0 / report.n)
    assert report.classification["weights_asymmetry"] > 1e-3


@pytest.mark.parametrize(
    ("loss", "kind", "objective", "value"),
    [
        (SupConLoss(tau=0.2), "classes", "supcon", None),
        (SoftSupConLoss(tau=0.2, eps=0.3), "classes", "soft-supcon", 0.3),
        (EuclidEuclidLoss(tau=0.2, sigma=0.4), "continuous", "y-aware", 0.4),
    ],
)
def test_known_objectives(loss, kind, objective, value):
    report = audit_loss(loss, labels=default_labels(kind, 12))
    assert report.match["objective"] == objective
    if value is not None:
        assert report.match["value"] == pytest.approx(value, rel=1e-6)
    assert report.similarity == loss.similarity


def test_xclr_with_label_embeddings():
    y = np.hstack([np.random.default_rng(0).uniform(-1, 1, (10, 2)), np.ones((10, 1))])
    report = audit_loss(XCLRLoss(tau=0.1, label_tau=0.2), labels=y)
    assert report.match["objective"] == "x-clr"
    assert report.match["value"] == pytest.approx(0.2, rel=1e-6)


def test_tau_is_needed_and_a_wrong_tau_does_not_match():
    def bare(z, y):
        return SupConLoss(tau=0.2)(z, y)

    labels = default_labels("classes", 12)
    with pytest.raises(ValueError, match="tau is needed"):
        audit_loss(bare, labels=labels)
    assert audit_loss(bare, labels=labels, tau=0.2).match["objective"] == "supcon"
    assert audit_loss(bare, labels=labels, tau=0.5).match is None


def test_audit_cli_json_and_text(capsys):
    target = "dgp.torch.audit_examples:y_aware_loss_public"
    assert main(["audit", target, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["match"]["objective"] == "y-aware-colnorm-public"
    assert out["verdict"] in ("realizable", "degenerate", "inconsistent")
    assert len(out["symmetric_part"]) == out["n"] == 12
    assert main(["audit", "dgp.torch.audit_examples:y_aware_loss", "--n", "8"]) == 0
    text = capsys.readouterr().out
    assert "match: y-aware" in text and "verdict:" in text


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["audit", "no_such_module_xyz:loss"], "cannot import module"),
        (["audit", "dgp.torch.audit_examples"], "MODULE:CALLABLE"),
        (["audit", "dgp.torch.audit_examples:nope"], "no attribute"),
        (["audit", "dgp.torch.audit_examples:TAU"], "not callable"),
        (["audit", "dgp.torch.audit_examples:y_aware_loss", "--n", "2"], "--n"),
        (["audit", "dgp.torch.audit_examples:y_aware_loss", "--labels", "x.npy"], "labels"),
    ],
)
def test_audit_cli_errors(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error:") and err.count("\n") == 1 and match in err
