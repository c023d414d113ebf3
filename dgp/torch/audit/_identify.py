"""Identifying what a loss optimises from its probes: the temperature it declares or learns, the
rows of labels of each call, the anchor partitions tried, the fit of the w-InfoNCE model and the
named form it matches."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from dgp.constants import AUDIT_PROBE_TAU, FIT_ZERO_RTOL, SCALE_FLOOR
from dgp.torch._audit_limits import GEOMETRY_MAX_N
from dgp.torch._compat import require_torch
from dgp.torch.audit.model import (
    ModelFit,
    equality_codes,
    estimate_named_form,
    estimate_tau,
    fit_model,
    has_classes,
    partition_anchors,
    partition_log_weights,
    with_tau,
)
from dgp.torch.audit.probe import Probes, probe
from dgp.torch.audit.vocabulary import NAMED_FORMS, PARTITION_TEXT

torch = require_torch()


def find_tau(loss_fn: Any) -> float | None:
    for name in ("tau", "temperature"):
        value = getattr(loss_fn, name, None)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
        if isinstance(value, torch.Tensor) and value.numel() == 1 and float(value) > 0:
            return float(value)
    return None


def _row_labels(labels: np.ndarray | None, call: str, n: int) -> np.ndarray:
    """The label of each embedding row; two-view calls repeat the sample labels, and without
    labels the two views of a sample share an instance label (for ``loss(embeddings)`` alone,
    rows ``i`` and ``i + N/2``: the two views concatenated)."""
    if call == "embeddings" and labels is not None:
        return np.asarray(labels)
    if labels is None:
        return np.tile(np.arange(n // 2), 2)
    y = np.asarray(labels)
    return np.concatenate([y, y])


def rows_for(call: str, n: int) -> int:
    """Embedding rows probed: ``n``, or two views of ``max(n // 2, 4)`` samples."""
    return n if call == "embeddings" else 2 * max(n // 2, 4)


def learned_temperature(loss_fn: Any) -> str | None:
    """The name of a trainable temperature of the loss (CLIP's ``logit_scale``), if any."""
    if not isinstance(loss_fn, torch.nn.Module):
        return None
    for name, param in loss_fn.named_parameters():
        leaf = name.rsplit(".", 1)[-1].lower()
        if param.requires_grad and param.numel() == 1 and (
                "scale" in leaf or "temp" in leaf or leaf in ("tau", "t")):
            return name
    return None


def _partitions(call: str, row_labels: np.ndarray | None) -> list[str]:
    """The partitions tried, the special cases first (a loss over the first view's anchors is
    also fitted by the partition with every anchor, its other anchor weights zero)."""
    parts = [] if call == "embeddings" else ["one-direction", "one-view", "cross-view"]
    return parts + ["all"] + (["class-averaged", "negatives"] if has_classes(row_labels)
                              else [])


def _fit(pr: Probes, rows: np.ndarray | None, part: str, *, tau: float,
         similarity: str) -> ModelFit:
    n = pr.T.shape[1]
    return fit_model(pr, tau=tau, similarity=similarity,
                     logc=partition_log_weights(n, rows, part), partition=part,
                     anchors=partition_anchors(n, part))


def _estimate(pr: Probes, rows: np.ndarray | None, part: str, *, similarity: str,
              hypothesis: dict[str, Any]) -> tuple[float, Any]:
    """The temperature that partition ``part``'s fit estimates (:func:`estimate_tau`), noted in
    its ``hypothesis``."""
    n = pr.T.shape[1]
    tau_hat, hat = estimate_tau(pr, similarity=similarity,
                                logc=partition_log_weights(n, rows, part), partition=part,
                                anchors=partition_anchors(n, part))
    hypothesis.update(tau_estimate=tau_hat, tau_residual=hat.residual)
    return tau_hat, hat


def _identify(
    pr: Probes, row_labels: np.ndarray | None, *, call: str, tau: float | None,
    probe_tau: float, similarity: str, match_rtol: float,
) -> dict[str, Any]:
    """Fit every partition; with a known ``tau`` at that temperature first, then (or without
    one) at the temperature each partition's fit estimates (:func:`estimate_tau`)."""
    n = pr.T.shape[1]
    parts = _partitions(call, row_labels)
    hyps: dict[str, dict[str, Any]] = {
        p: {"partition": p, "description": PARTITION_TEXT[p]} for p in parts}
    given_fits: list[ModelFit] = []
    if tau is not None:
        for part in parts:
            fit = _fit(pr, row_labels, part, tau=tau, similarity=similarity)
            hyps[part]["residual"] = fit.residual
            given_fits.append(fit)
        ok = [f for f in given_fits if f.residual <= match_rtol]
        if ok:
            part = ok[0].partition
            tau_hat, hat = _estimate(pr, row_labels, part, similarity=similarity,
                                     hypothesis=hyps[part])
            return {"fit": ok[0], "hypotheses": list(hyps.values()), "identified": True,
                    "probes": pr, "tau": tau, "tau_estimate": tau_hat,
                    "tau_residual": hat.residual, "tau_changed": False}
    estimates = []
    for part in parts:
        tau_hat, hat = _estimate(pr, row_labels, part, similarity=similarity,
                                 hypothesis=hyps[part])
        if tau is None:
            hyps[part]["residual"] = hat.residual
        estimates.append((tau_hat, hat))
        if hat.residual <= match_rtol and n > GEOMETRY_MAX_N:
            break  # large probes: the first partition that fits is the answer, skip the rest
    ok = [(t, f) for t, f in estimates if f.residual <= match_rtol]
    if ok:
        tau_hat, hat = ok[0]
        scaled = with_tau(pr, tau_hat, probe_tau)
        fit = _fit(scaled, row_labels, hat.partition, tau=tau_hat, similarity=similarity)
        return {"fit": fit, "hypotheses": list(hyps.values()), "identified": True,
                "probes": scaled, "tau": tau_hat, "tau_estimate": tau_hat,
                "tau_residual": hat.residual, "tau_changed": tau is not None}
    tau_hat, hat = min(estimates, key=lambda e: e[1].residual)
    tau_res = hat.residual
    named = _named_form(pr, row_labels, similarity=similarity, match_rtol=match_rtol)
    if named is not None:  # its own form fits: that is the loss's temperature
        tau_hat, tau_res = named["tau_estimate"], named["residual"]
    if tau is None:  # not identified: report the best partition's fit at the estimate
        scaled = with_tau(pr, tau_hat, probe_tau)
        fit = min((_fit(scaled, row_labels, part, tau=tau_hat, similarity=similarity)
                   for part in parts), key=lambda f: f.residual)
        return {"fit": fit, "hypotheses": list(hyps.values()), "identified": False,
                "probes": scaled, "tau": tau_hat, "tau_estimate": tau_hat,
                "tau_residual": tau_res, "tau_changed": False, "named_form": named}
    return {"fit": min(given_fits, key=lambda f: f.residual), "hypotheses": list(hyps.values()),
            "identified": False, "probes": pr, "tau": tau, "tau_estimate": tau_hat,
            "tau_residual": tau_res, "tau_changed": False, "named_form": named}


def _named_form(pr: Probes, row_labels: np.ndarray | None, *, similarity: str,
                match_rtol: float) -> dict[str, Any] | None:
    """The named non-InfoNCE form (:data:`NAMED_FORMS`) that fits, at its own temperature."""
    n = pr.T.shape[1]
    if not has_classes(row_labels) or n > GEOMETRY_MAX_N:
        return None
    codes = equality_codes(row_labels)
    positives = (codes[:, None] == codes[None, :]) & ~np.eye(n, dtype=bool)
    if not positives.any(axis=1).all():
        return None  # an anchor without a positive: these forms are not defined for it
    for form, text in NAMED_FORMS.items():
        tau_hat, residual = estimate_named_form(pr, similarity=similarity, positives=positives,
                                                form=form)
        if residual <= match_rtol:
            return {"form": form, "description": text, "tau_estimate": tau_hat,
                    "residual": residual}
    return None


def single_audit(
    loss_fn: Callable[..., Any], labels: np.ndarray | None, *, kind: str, call: str, n: int,
    tau: float | None, similarity: str, match_rtol: float, probes: int, seed: int,
) -> dict[str, Any]:
    """Probe and identify one (call, labels) combination; raises LossCallError."""
    probe_tau = AUDIT_PROBE_TAU if tau is None else tau
    pr = probe(loss_fn, labels, tau=probe_tau, n=n, call=call, probes=probes, seed=seed)
    rows = _row_labels(labels, call, n)
    sim_source = "argument"
    if similarity == "auto":
        sim_source = "detected"
        similarity = "cosine" if pr.cosine_residual <= pr.euclidean_residual else "euclidean"
    found = _identify(pr, rows, call=call, tau=tau, probe_tau=probe_tau, similarity=similarity,
                      match_rtol=match_rtol)
    return {**found, "rows": rows, "similarity": similarity, "sim_source": sim_source,
            "labels": labels, "kind": kind, "call": call, "raw_probes": pr}


def equality_only(state: dict[str, Any]) -> bool:
    """Whether the identified weighting uses the labels only through equality (so class labels
    would say more)."""
    rows = state["rows"]
    if rows is None or not has_classes(rows):
        return False
    fit = state["fit"]
    codes = equality_codes(rows)
    same = codes[:, None] == codes[None, :]
    off = ~np.eye(len(codes), dtype=bool)
    scale = max(float(np.abs(fit.S).max()), SCALE_FLOOR)
    return bool(np.abs(fit.S[off & ~same]).max() <= FIT_ZERO_RTOL * scale) if (off & ~same).any() \
        else True
