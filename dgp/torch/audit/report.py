"""The audit's report (:class:`AuditReport`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.records import Record
from dgp.torch._compat import require_torch

torch = require_torch()
from dgp.torch.audit.model import (  # noqa: E402
    ModelFit,
    partition_anchors,
)

# --------------------------------------------------------------------------------------------
# the report


#: the keys of :meth:`AuditReport.to_dict`, in order (each an attribute but ``labels``,
#: ``model`` and ``geometry``, whose values ``json_items`` computes)
_JSON_KEYS = (
    "callable", "n", "tau", "tau_source", "tau_given", "tau_estimate", "tau_residual",
    "learned_temperature", "similarity", "similarity_source", "call", "labels", "labels_note",
    "row_labels", "identified", "named_form", "model", "hypotheses", "match_rtol", "match",
    "closest", "verdict", "classification", "reduction_scale", "anchor_weights", "anchor_spread",
    "symmetric_part", "effective_weights", "representative_residual", "geometry", "intended",
    "candidates", "probes", "attempts", "warnings",
)


@dataclass(frozen=True, eq=False)
class AuditReport(Record):
    """What :func:`audit_loss` found. ``to_dict()`` gives the JSON of ``dgp audit --json``.

    Attributes
    ----------
    callable : str
        The name of the audited loss.
    n : int
        Number of embeddings (rows) probed.
    tau : float
        The temperature used.
    tau_source : {"argument", "attribute", "estimated"}
        Where the temperature came from (``"estimated"``: from the probes, none being given or
        the given one not fitting).
    tau_given : float or None
        The temperature given (argument or attribute), if any.
    tau_estimate : float
        The temperature at which the gradient model fits the probes best
        (:func:`~dgp.torch.audit.model.estimate_tau`).
    tau_residual : float
        The relative residual of that fit.
    learned_temperature : str or None
        The name of a trainable temperature parameter of the loss (CLIP's ``logit_scale``).
    similarity : {"cosine", "euclidean"}
        The latent.
    similarity_source : {"detected", "argument"}
        Whether the latent was read from the gradient or given.
    call : str
        The calling convention used (:data:`CALLS`).
    labels_kind : str
        The labels used (:data:`LABEL_KINDS`, or ``"given"``).
    labels_note : str
        Why those labels.
    row_labels : ndarray or None
        The label of each embedding row (two-view calls repeat the sample labels).
    identified : bool
        Whether the loss is a w-InfoNCE (with one of :data:`PARTITIONS`) within ``match_rtol``.
    named_form : dict or None
        When it is not: the named non-InfoNCE form that fits (:data:`NAMED_FORMS`: ``form``,
        ``description``, ``tau_estimate``, ``residual``), if one does.
    fit : ModelFit or None
        The fit of the best partition.
    hypotheses : tuple of dict
        Every partition tried, with its residual.
    match_rtol : float
        The tolerance of the model and of a match.
    anchor_weights : ndarray or None
        ``m / mean(m)``.
    reduction_scale : float or None
        ``mean(m)``: 1 for a sum over anchors, ``1/N`` for a mean.
    symmetric_part : ndarray or None
        ``S / mean(m)`` (``p + p^T`` when anchors weigh the same).
    effective_weights : ndarray or None
        ``R`` (:func:`effective_weights`), scaled to a maximum of 1.
    representative_residual : float or None
        Residual of ``R``'s fixed point.
    candidates : tuple of dict
        Registered objectives tried, in every form, best first.
    match : dict or None
        The matched one: ``objective``, ``form``, ``parameter``, ``value``, ``error``,
        ``latent``.
    closest : dict or None
        The closest candidate when none matches.
    classification : dict or None
        :func:`dgp.classify` of ``R`` (``to_dict()`` fields).
    geometry : dict or None
        The predicted geometry (:func:`predicted_geometry`).
    intended : dict or None
        The comparison with the intended objective's geometry.
    probes : dict
        Diagnostics of the probes.
    attempts : tuple of dict
        Every calling convention and label kind tried, with what happened.
    warnings : tuple of str
        What the audit found suspicious, in words.
    """

    callable: str
    n: int
    tau: float
    tau_source: str
    tau_given: float | None
    tau_estimate: float
    tau_residual: float
    learned_temperature: str | None
    similarity: str
    similarity_source: str
    call: str
    labels_kind: str
    labels_note: str
    row_labels: np.ndarray | None
    identified: bool
    named_form: dict[str, Any] | None
    fit: ModelFit | None
    hypotheses: tuple[dict[str, Any], ...]
    match_rtol: float
    anchor_weights: np.ndarray | None
    reduction_scale: float | None
    symmetric_part: np.ndarray | None
    effective_weights: np.ndarray | None
    representative_residual: float | None
    candidates: tuple[dict[str, Any], ...]
    match: dict[str, Any] | None
    closest: dict[str, Any] | None
    classification: dict[str, Any] | None
    geometry: dict[str, Any] | None
    intended: dict[str, Any] | None
    probes: dict[str, Any]
    attempts: tuple[dict[str, Any], ...]
    warnings: tuple[str, ...] = ()

    @property
    def verdict(self) -> str | None:
        """The verdict on the effective weighting (``None`` when not classified)."""
        return None if self.classification is None else self.classification.get("verdict")

    @property
    def partition(self) -> str | None:
        """The partition function of the identified loss."""
        return None if self.fit is None else self.fit.partition

    @property
    def anchor_spread(self) -> float | None:
        """``max / min`` of the anchor weights (1: every anchor weighs the same), over the
        partition's anchors (the first view only, for a one-direction loss)."""
        if self.anchor_weights is None:
            return None
        a = self.anchor_weights[partition_anchors(len(self.anchor_weights), self.partition)]
        return float(a.max() / a.min()) if (a > 0).all() else math.inf

    def summary(self) -> str:
        """One line: what the loss is, for tables."""
        if not self.identified:
            return ("not identified" if self.named_form is None
                    else f"not a w-InfoNCE: {self.named_form['form']}")
        if self.match is None:
            return "w-InfoNCE of no registered objective"
        m = self.match
        text = m["objective"]
        if m["parameter"] is not None:
            text += f" ({m['parameter']}={m['value']:.4g})"
        if m["form"] != "rows":
            text += ", " + {"raw": "rows not normalised", "columns": "column-normalised",
                            "columns-rows": "column- then row-normalised"}[m["form"]]
        if self.partition != "all":
            text += f", {self.partition} partition"
        return text

    def json_items(self, options):
        fit = None if self.fit is None else {
            "partition": self.fit.partition, "residual": self.fit.residual,
            "value_spread": self.fit.value_spread, "offset": self.fit.offset,
            "condition": self.fit.condition}
        geometry = None if self.geometry is None else {
            k: v for k, v in self.geometry.items() if k != "embedding"}
        # the attributes in this order, under their own names but for these three
        values = {"labels": self.labels_kind, "model": fit, "geometry": geometry}
        yield from ((key, values[key] if key in values else getattr(self, key))
                    for key in _JSON_KEYS)


