"""The audit recovers the anchor weights and the weighting a loss optimises from its gradients,
tells w-InfoNCE losses from others, and predicts the geometry their training reaches."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

torch = pytest.importorskip("torch")

import dgp  # noqa: E402
from dgp.torch import audit_examples as ex  # noqa: E402
from dgp.torch.audit import (  # noqa: E402
    Intended,
    LossCallError,
    audit_loss,
    candidate_terms,
    default_labels,
    effective_weights,
    fit_model,
    partition_log_weights,
    probe,
)
from dgp.torch.losses import (  # noqa: E402
    EuclidEuclidLoss,
    SoftSupConLoss,
    SupConLoss,
    XCLRLoss,
    YAwareLoss,
)

pytestmark = pytest.mark.torch


def _raw_loss(W, tau, similarity="cosine"):
    """-sum_ij w_ij log q_ij with W as given: anchor i weighs sum_j w_ij (independent of dgp)."""
    Wt = torch.as_tensor(W)

    def loss(z, _labels=None):
        if similarity == "cosine":
            zn = torch.nn.functional.normalize(z, dim=1)
            s = zn @ zn.T / tau
        else:
            s = -torch.cdist(z, z) ** 2 / (2 * tau)
        s = s.masked_fill(torch.eye(len(z), dtype=torch.bool), float("-inf"))
        logq = torch.log_softmax(s, dim=1).masked_fill(torch.eye(len(z), dtype=torch.bool), 0)
        return -(Wt * logq).sum()

    loss.tau = tau
    return loss


@pytest.mark.parametrize("similarity", ["cosine", "euclidean"])
def test_fit_recovers_anchor_weights_and_symmetric_part(similarity):
    rng = np.random.default_rng(3)
    n = 9
    W = rng.random((n, n)) ** 3 * rng.uniform(0.2, 3.0, (n, 1))  # unequal anchors, asymmetric
    np.fill_diagonal(W, 0.0)
    pr = probe(_raw_loss(W, 0.3, similarity), None, tau=0.3, n=n)
    fit = fit_model(pr, tau=0.3, similarity=similarity, logc=partition_log_weights(n, None, "all"))
    assert fit.residual < 1e-12
    np.testing.assert_allclose(fit.m, W.sum(axis=1), rtol=1e-10)
    np.testing.assert_allclose(fit.S, W + W.T, atol=1e-11)
    # the loss value is the model plus nothing
    assert fit.value_spread < 1e-12 and abs(fit.offset) < 1e-10
    # the latent is told from the gradient's direction
    assert (pr.cosine_residual < 1e-10) == (similarity == "cosine")
    assert (pr.euclidean_residual < 1e-10) == (similarity == "euclidean")


def test_scaling_the_loss_scales_the_anchor_weights_only():
    loss = YAwareLoss(tau=0.2, sigma=0.4)
    base = audit_loss(loss, labels="continuous")
    scaled = audit_loss(lambda z, y: 7.0 * loss(z, y), labels="continuous", tau=0.2)
    assert scaled.reduction_scale == pytest.approx(7.0 * base.reduction_scale, rel=1e-10)
    np.testing.assert_allclose(scaled.effective_weights, base.effective_weights, atol=1e-10)
    assert scaled.match["value"] == pytest.approx(0.4, rel=1e-6)


def test_effective_weights_round_trip_with_anchor_weights():
    rng = np.random.default_rng(5)
    n = 8
    R = rng.random((n, n))
    R = R + R.T
    np.fill_diagonal(R, 0.0)
    m = rng.uniform(0.5, 2.0, n)
    P = R / R.sum(axis=1, keepdims=True)
    S = m[:, None] * P + (m[:, None] * P).T
    back, residual = effective_weights(S, m, partition_log_weights(n, None, "all"))
    assert residual < 1e-10
    np.testing.assert_allclose(back, R / R.max(), rtol=1e-8)


def test_column_normalised_y_aware_anchor_weights_and_true_effective_weighting():
    """The fix: per-anchor weights are recovered, and the effective W is k_ij / (s_i s_j), not
    the reversible representative of p + p^T computed as if every anchor weighed the same."""
    report = audit_loss(ex.y_aware_loss_public)
    y = report.row_labels.astype(float)
    K = np.exp(-((y[:, None] - y[None, :]) ** 2) / (2 * ex.SIGMA**2))
    np.fill_diagonal(K, 0.0)
    s = K.sum(axis=1)
    m = (K / s[None, :]).sum(axis=1)  # anchor i weighs sum_j k_ij / s_j
    np.testing.assert_allclose(report.anchor_weights, m / m.mean(), rtol=1e-9)
    truth = K / np.outer(s, s)
    np.testing.assert_allclose(report.effective_weights, truth / truth.max(), rtol=1e-7)
    assert report.match["objective"] == "y-aware" and report.match["form"] == "columns"
    assert report.match["value"] == pytest.approx(ex.SIGMA, rel=1e-6)
    assert report.anchor_spread > 1.05
    assert any("W.sum(1)" in w for w in report.warnings)
    # what equal anchors would have given is off by several percent
    naive, _ = effective_weights(report.symmetric_part, np.ones(report.n),
                                 partition_log_weights(report.n, None, "all"))
    assert np.abs(naive - report.effective_weights).max() > 0.05


def test_correct_y_aware_matches_with_equal_anchors():
    report = audit_loss(ex.y_aware_loss)
    assert report.labels_kind == "continuous"
    assert (report.match["objective"], report.match["form"]) == ("y-aware", "rows")
    assert report.match["value"] == pytest.approx(ex.SIGMA, rel=1e-6)
    assert report.anchor_spread == pytest.approx(1.0, abs=1e-9)
    assert not any("W.sum(1)" in w for w in report.warnings)


@pytest.mark.parametrize(
    ("loss", "objective", "latent", "value"),
    [
        (SupConLoss(tau=0.2), "supcon", "cosine", None),
        (SoftSupConLoss(tau=0.2, eps=0.3), "soft-supcon", "cosine", 0.3),
        (YAwareLoss(tau=0.2, sigma=0.4), "y-aware", "cosine", 0.4),
        (EuclidEuclidLoss(tau=0.2, sigma=0.4), "euclid-euclid", "euclidean", 0.4),
    ],
)
def test_known_objectives_and_their_latent(loss, objective, latent, value):
    """The fix: the match names the latent; the Gaussian kernel under a Euclidean latent is
    Euclidean-Euclidean, not y-Aware."""
    report = audit_loss(loss, geometry=False)
    assert report.match["objective"] == objective
    assert report.match["latent"] == report.similarity == latent == loss.similarity
    assert report.similarity_source == "detected"
    if value is not None:
        assert report.match["value"] == pytest.approx(value, rel=1e-6)


def test_xclr_with_label_embeddings():
    y = np.hstack([np.random.default_rng(0).uniform(-1, 1, (10, 2)), np.ones((10, 1))])
    report = audit_loss(XCLRLoss(tau=0.1, label_tau=0.2), labels=y, geometry=False)
    assert report.match["objective"] == "x-clr"
    assert report.match["value"] == pytest.approx(0.2, rel=1e-6)


def test_default_labels_follow_what_the_loss_needs():
    """The fix: a class loss given continuous labels fails, so class labels are used, and the
    report says why."""
    report = audit_loss(SupConLoss(tau=0.2), geometry=False)
    assert report.labels_kind == "classes"
    assert "continuous" in report.labels_note
    assert report.attempts[0]["labels"] == "continuous"
    assert report.match["objective"] == "supcon"


def test_released_supcontrast_is_supcon_with_a_mean_over_anchors():
    """HobbitLong's SupConLoss as released (views stacked view-major, features normalised by
    the model) equals dgp's SupConLoss with a mean over anchors; the base temperature only
    scales it; contrast_mode='one' keeps the first view's anchors, written out by hand."""
    gen = torch.Generator().manual_seed(4)
    b, tau = 5, 0.1
    f = torch.randn(b, 2, 4, dtype=torch.float64, generator=gen)
    y = torch.tensor([0, 0, 1, 1, 2])
    z = torch.nn.functional.normalize(torch.cat(torch.unbind(f, dim=1)), dim=1)
    ours = SupConLoss(temperature=tau, reduction="mean")(z, y.repeat(2))
    assert ex.supcontrast_out(tau)(f, y).item() == pytest.approx(ours.item(), rel=1e-12)
    scaled = ex.supcontrast_base_temperature(tau, 0.07)(f, y).item()
    assert scaled == pytest.approx(ours.item() * tau / 0.07, rel=1e-12)
    # contrast_mode='one': anchors f[:, 0], every other row of z in the denominator
    s = (z @ z.T / tau).masked_fill(torch.eye(2 * b, dtype=torch.bool), float("-inf"))
    logq = torch.log_softmax(s, dim=1)[:b]
    pos = (y.repeat(2)[None, :] == y[:, None]) & ~torch.eye(b, 2 * b, dtype=torch.bool)
    by_hand = -(logq.masked_fill(~pos, 0).sum(1) / pos.sum(1)).mean()
    assert ex.supcontrast_one(tau)(f, y).item() == pytest.approx(by_hand.item(), rel=1e-12)


def test_released_supcontrast_matches_supcon_at_the_default_tolerance():
    """Nothing is added inside its log: it is SupCon to rounding, no --match-rtol needed."""
    report = audit_loss(ex.supcontrast_out(0.1), labels="classes", call="views", geometry=False)
    assert report.match["objective"] == "supcon" and report.match["form"] == "rows"
    assert report.match["error"] < 1e-9 and report.partition == "all"
    one = audit_loss(ex.supcontrast_one(0.1), labels="classes", call="views", geometry=False)
    assert one.partition == "one-view" and one.match["objective"] == "supcon"
    assert (one.anchor_weights[:6] == pytest.approx(1.0)) and (one.anchor_weights[6:] == 0).all()
    assert not any("temperature" in w or "no registered" in w for w in one.warnings)


def test_supcon_in_is_told_apart_from_out():
    """L_in equals L_out to first order (identical sensitivities at orthonormal embeddings), so
    one probe cannot tell them; several probes can. solo-learn's SupCon is L_in."""
    lin = ex.SoloLearnSupCon(0.1)
    lout = SupConLoss(temperature=0.1, reduction="mean")
    y = default_labels("classes", 12)
    p_in = probe(lin, y, tau=0.1, n=12)
    p_out = probe(lout, y, tau=0.1, n=12)
    np.testing.assert_allclose(p_in.T[0], p_out.T[0], atol=1e-9 * np.abs(p_out.T[0]).max())
    assert np.abs(p_in.T[1] - p_out.T[1]).max() > 1e-2 * np.abs(p_out.T[1]).max()
    report = audit_loss(lin, labels="classes", call="embeddings", geometry=False)
    assert not report.identified and report.match is None and report.verdict is None
    assert any("L_in" in w for w in report.warnings)
    assert audit_loss(lout, labels="classes", call="embeddings", geometry=False).identified


def _one_positive(tau):
    """Each positive pair with its own denominator of the negatives (TF SupCon's
    denominator_mode=ONE_POSITIVE), written here, no temperature attribute."""

    def loss(z, y):
        zn = torch.nn.functional.normalize(z, dim=1)
        s = zn @ zn.T / tau
        y = torch.as_tensor(y)
        same = y[:, None] == y[None, :]
        pos = same & ~torch.eye(len(y), dtype=torch.bool)
        lse_neg = torch.logsumexp(s.masked_fill(same, float("-inf")), dim=1, keepdim=True)
        per_pair = torch.logaddexp(s, lse_neg) - s
        return (per_pair.masked_fill(~pos, 0).sum(1) / pos.sum(1)).mean()

    return loss


def test_named_non_infonce_forms_are_recognised_with_their_temperature():
    """No partition fits them, but their own forms do, exactly, at their temperature."""
    y = default_labels("classes", 12)
    lin = audit_loss(ex.SoloLearnSupCon(0.1), labels=y, geometry=False)
    assert not lin.identified and lin.named_form["form"] == "L_in"
    assert lin.named_form["tau_estimate"] == pytest.approx(0.1, rel=1e-6)
    assert lin.summary() == "not a w-InfoNCE: L_in"
    one = audit_loss(_one_positive(0.3), labels=y, geometry=False)
    assert not one.identified and one.named_form["form"] == "one-positive"
    assert one.named_form["tau_estimate"] == pytest.approx(0.3, rel=1e-6)
    assert one.named_form["residual"] < 1e-9
    # a loss of neither form: DCLW-like weights of the positives from the embeddings
    def vmf_weighted(z, y):
        zn = torch.nn.functional.normalize(z, dim=1)
        s = zn @ zn.T / 0.1
        y = torch.as_tensor(y)
        pos = (y[:, None] == y[None, :]) & ~torch.eye(len(y), dtype=torch.bool)
        w = torch.softmax((zn @ zn.T / 0.5).masked_fill(~pos, float("-inf")), 1).detach()
        logq = torch.log_softmax(s.masked_fill(torch.eye(len(y), dtype=torch.bool),
                                               float("-inf")), 1)
        return -(w * logq.masked_fill(~pos, 0)).sum(1).mean()

    other = audit_loss(vmf_weighted, labels=y, geometry=False)
    assert not other.identified and other.named_form is None


def _clip(tau, both):
    """A CLIP-style loss written here, with no temperature attribute."""

    def loss(a, b):
        a = torch.nn.functional.normalize(a, dim=1)
        b = torch.nn.functional.normalize(b, dim=1)
        logits = a @ b.T / tau
        t = torch.arange(len(a))
        ce = torch.nn.functional.cross_entropy
        return (ce(logits, t) + ce(logits.T, t)) / 2 if both else ce(logits, t)

    return loss


@pytest.mark.parametrize("tau", [0.05, 0.7])
@pytest.mark.parametrize("both", [True, False])
def test_clip_style_losses_are_cross_view_w_infonce_with_their_temperature(tau, both):
    """No temperature given: it is estimated from the probes; the loss is a fixed-weight
    InfoNCE whose denominator runs over the other view (both directions: every row an anchor
    of weight 1/(2b); one direction: the first view's rows, weight 1/b)."""
    report = audit_loss(_clip(tau, both), geometry=False)
    assert report.call == "pair" and report.labels_kind == "none"
    assert report.identified and report.tau_source == "estimated"
    assert report.partition == ("cross-view" if both else "one-direction")
    assert report.tau_estimate == pytest.approx(tau, rel=1e-3)
    assert report.tau == pytest.approx(tau, rel=1e-6) and report.tau_residual < 1e-8
    assert report.match["objective"] == "supcon" and report.match["form"] == "rows"
    b = report.n // 2
    m = report.anchor_weights * report.reduction_scale
    np.testing.assert_allclose(m, np.r_[np.full(b, 1 / (2 * b) if both else 1 / b),
                                        np.full(b, 1 / (2 * b) if both else 0.0)], rtol=1e-6,
                               atol=1e-12)
    S = report.symmetric_part * report.reduction_scale
    np.testing.assert_allclose(S, np.kron([[0, 1], [1, 0]], np.eye(b)) / b, atol=1e-7 / b)
    # every other partition fails at every temperature, but the one-direction loss is also the
    # cross-view one with the second view's anchor weights zero (that is why it is tried first)
    fits = {h["partition"] for h in report.hypotheses if h["tau_residual"] < 1e-8}
    assert fits == ({"cross-view"} if both else {"one-direction", "cross-view"})
    # the estimate does not depend on the loss's scale
    scaled = audit_loss(lambda a, b: 5.0 * _clip(tau, both)(a, b), geometry=False)
    assert scaled.tau_estimate == pytest.approx(report.tau_estimate, rel=1e-8)
    assert scaled.reduction_scale == pytest.approx(5.0 * report.reduction_scale, rel=1e-6)


def test_cross_view_geometry_equals_brute_force_minimisation_of_the_clip_loss():
    """Predicting what training does: minimise the CLIP-style loss itself over free
    embeddings (torch L-BFGS, independent of the audit's model) and compare the Gram."""
    tau = 0.5
    loss = _clip(tau, True)
    report = audit_loss(loss, n=8)
    assert report.partition == "cross-view" and report.geometry is not None
    b = report.n // 2
    Z = torch.randn(2 * b, 2 * b, dtype=torch.float64,
                    generator=torch.Generator().manual_seed(2), requires_grad=True)
    opt = torch.optim.LBFGS([Z], max_iter=5000, tolerance_grad=1e-12, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe", history_size=50)

    def closure():
        opt.zero_grad()
        value = loss(Z[:b], Z[b:])
        value.backward()
        return value

    for _ in range(3):
        opt.step(closure)
    Zn = torch.nn.functional.normalize(Z.detach(), dim=1).numpy()
    np.testing.assert_allclose(report.geometry["gram"], Zn @ Zn.T, atol=1e-5)
    # the loss collapses the two views of a sample, and the samples form a regular simplex
    np.testing.assert_allclose(np.diag(Zn[:b] @ Zn[b:].T), 1.0, atol=1e-5)


@settings(max_examples=6, deadline=None, derandomize=True)
@given(log_tau=st.floats(np.log(0.03), np.log(3.0)), both=st.booleans())
def test_the_temperature_estimate_is_the_loss_temperature(log_tau, both):
    tau = float(np.exp(log_tau))
    report = audit_loss(_clip(tau, both), geometry=False, labels="none", call="pair")
    assert report.identified
    assert report.tau_estimate == pytest.approx(tau, rel=1e-6)


def test_a_learned_temperature_is_flagged():
    class Clip(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.logit_scale = torch.nn.Parameter(torch.tensor(np.log(1 / 0.07)))

        def forward(self, a, b):
            return _clip(1.0 / float(self.logit_scale.detach().exp()), True)(a, b)

    report = audit_loss(Clip(), geometry=False)
    assert report.learned_temperature == "logit_scale"
    assert report.tau_estimate == pytest.approx(0.07, rel=1e-6)
    assert any("learned" in w for w in report.warnings)


def test_two_view_pair_call():
    def simclr(z1, z2):
        b = len(z1)
        return SupConLoss(tau=0.2)(torch.cat([z1, z2]), torch.arange(b).repeat(2))

    simclr.tau = 0.2
    report = audit_loss(simclr, geometry=False)
    assert report.call == "pair" and report.labels_kind == "none"
    assert report.match["objective"] == "supcon"
    np.testing.assert_array_equal(report.row_labels, np.tile(np.arange(6), 2))


def test_partitions_class_averaged_and_decoupled():
    y = np.array([0] * 5 + [1] * 3 + [2] * 2 + [3] * 2)
    bcl = audit_loss(ex.bcl_loss(0.1), labels=y)
    assert bcl.partition == "class-averaged" and bcl.match["objective"] == "supcon"
    dec = audit_loss(ex.decoupled_supcon_loss(0.1), labels=y)
    assert dec.partition == "negatives" and dec.verdict is None  # no entropic bound
    assert any("no entropic bound" in w for w in dec.warnings)


def test_supcon_geometry_equals_the_certified_prototypes():
    sizes = [6, 3, 2]
    y = np.repeat(np.arange(3), sizes)
    report = audit_loss(SupConLoss(tau=0.1), labels=y)
    ref = dgp.supcon_prototypes(sizes, tau=0.1)
    np.testing.assert_allclose(report.geometry["prototypes"], ref.gram, atol=1e-6)


def test_bcl_geometry_equals_brute_force_minimisation_of_the_loss():
    """Predicting what training does: minimise the BCL loss itself over free embeddings."""
    y = np.repeat(np.arange(3), [6, 3, 2])
    loss = ex.bcl_loss(0.5)
    report = audit_loss(loss, labels=y, intended=Intended("simplex"))
    Z = torch.randn(11, 11, dtype=torch.float64, generator=torch.Generator().manual_seed(1),
                    requires_grad=True)
    opt = torch.optim.LBFGS([Z], max_iter=5000, tolerance_grad=1e-12, tolerance_change=1e-15,
                            line_search_fn="strong_wolfe", history_size=50)

    def closure():
        opt.zero_grad()
        value = loss(Z, torch.as_tensor(y))
        value.backward()
        return value

    for _ in range(3):
        opt.step(closure)
    Zn = torch.nn.functional.normalize(Z.detach(), dim=1).numpy()
    G = Zn @ Zn.T
    Gp = np.array([[G[np.ix_(y == a, y == b)].mean() for b in range(3)] for a in range(3)])
    np.testing.assert_allclose(report.geometry["prototypes"], Gp, atol=1e-5)
    assert report.intended["max_gap"] > 0.1  # BCL without prototypes is not balanced here


def test_candidate_forms():
    W = np.array([[0, 2.0, 1.0], [2.0, 0, 4.0], [1.0, 4.0, 0]])
    m, S = candidate_terms(W, "raw")
    np.testing.assert_allclose(m, [3, 6, 5])
    np.testing.assert_allclose(S, 2 * W)
    m, S = candidate_terms(W, "columns")
    np.testing.assert_allclose(m, (W / W.sum(1)[None, :]).sum(1))
    m, S = candidate_terms(W, "rows")
    np.testing.assert_allclose(m, 1.0)
    np.testing.assert_allclose(S.sum(), 3.0 * 2)


def test_the_temperature_is_estimated_and_a_wrong_one_is_named():
    def bare(z, y):
        return SupConLoss(tau=0.2)(z, y)

    labels = default_labels("classes", 12)
    found = audit_loss(bare, labels=labels, geometry=False)
    assert found.tau_source == "estimated" and found.tau == pytest.approx(0.2, rel=1e-6)
    assert found.match["objective"] == "supcon" and found.tau_given is None
    right = audit_loss(bare, labels=labels, tau=0.2, geometry=False)
    assert right.tau_source == "argument" and right.tau == 0.2
    assert right.tau_estimate == pytest.approx(0.2, rel=1e-6)
    assert not any("temperature" in w for w in right.warnings)
    wrong = audit_loss(bare, labels=labels, tau=0.5, geometry=False)
    assert wrong.identified and wrong.match["objective"] == "supcon"
    assert wrong.tau_given == 0.5 and wrong.tau == pytest.approx(0.2, rel=1e-6)
    assert any("the temperature is 0.2, not the given tau = 0.5" in w for w in wrong.warnings)
    # the model at the given temperature does not fit: that is what the estimate corrects
    assert all(h["residual"] > 1e-3 for h in wrong.hypotheses)


@pytest.mark.parametrize(
    ("loss", "match"),
    [
        (lambda z, y: (_ for _ in ()).throw(KeyError("boom")), "raised KeyError"),
        (lambda z, y: torch.tensor(1.0), "no gradient"),
        (lambda z, y: z.sum(dim=1), "scalar"),
        (lambda z, y: (z * 0).sum(), "zero"),
    ],
)
def test_loss_failures_are_loss_call_errors(loss, match):
    with pytest.raises(LossCallError, match=match):
        audit_loss(loss, tau=0.1, labels="continuous", call="embeddings")


def test_recursion_is_reported():
    def deep(z, y):
        return deep(z, y)

    with pytest.raises(LossCallError, match="recursed"):
        audit_loss(deep, tau=0.1, labels="continuous", call="embeddings")


def test_probe_memory_is_checked_before_allocating(monkeypatch):
    monkeypatch.setenv("DGP_MEMORY_LIMIT", "64M")
    with pytest.raises(ValueError, match=r"N <= \d+ samples fit"):
        audit_loss(SupConLoss(tau=0.1), n=100000)


@pytest.mark.parametrize(("loss", "objective", "tau", "value"), [
    (EuclidEuclidLoss(tau=0.3, sigma=0.5), "euclid-euclid", 0.3, 0.5),
    (YAwareLoss(tau=0.2, sigma=0.4), "y-aware", 0.2, 0.4),
    (SoftSupConLoss(tau=0.15, eps=0.1), "soft-supcon", 0.15, 0.1),
])
def test_the_temperature_and_the_parameter_are_recovered_together(loss, objective, tau, value):
    """Hidden behind a function (no attribute), each registered objective is matched with
    its parameter at the estimated temperature, under either latent."""
    report = audit_loss(lambda z, y: loss(z, y), geometry=False)
    assert report.tau_source == "estimated"
    assert report.tau_estimate == pytest.approx(tau, rel=1e-6)
    assert report.match["objective"] == objective
    assert report.match["value"] == pytest.approx(value, rel=1e-6)
