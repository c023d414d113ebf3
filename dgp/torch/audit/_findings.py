"""The findings of an audit gathered into its :class:`~dgp.torch.audit.report.AuditReport`: the
labels that identified the loss, the temperature and its source, the weighting, the geometry
and the notes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from dgp.constants import FIT_RESIDUAL_FLOOR, NEAR_MATCH, PROBE_RTOL, TAU_AGREE_RTOL
from dgp.errors import check_int
from dgp.torch._audit_limits import GEOMETRY_MAX_N
from dgp.torch._compat import require_torch
from dgp.torch.audit._identify import equality_only, learned_temperature
from dgp.torch.audit.geometry import (
    Intended,
    effective_weights,
    geometry_gap,
    intended_geometry,
    predicted_geometry,
)
from dgp.torch.audit.model import (
    ModelFit,
    candidates,
    fit_candidate,
    partition_anchors,
    partition_log_weights,
)
from dgp.torch.audit.probe import Probes
from dgp.torch.audit.report import AuditReport
from dgp.torch.audit.vocabulary import FORM_TEXT, FORMS, PARTITIONS, SLIP

torch = require_torch()


def _labels_note(chosen: dict[str, Any], states: list[dict[str, Any]],
                 attempts: list[dict[str, Any]]) -> str:
    kind = chosen["kind"]
    if kind == "given":
        return "labels as given"
    if kind == "continuous":
        return "continuous labels give a w-InfoNCE"
    why = []
    for a in attempts:
        if a["call"] != chosen["call"] or a["labels"] == kind:
            continue
        state = next((s for s in states if s["call"] == a["call"] and s["kind"] == a["labels"]),
                     None)
        if state is not None and state["identified"] and equality_only(state):
            why.append(f"{a['labels']} labels were used only through equality")
        elif state is not None and not state["identified"]:
            why.append(f"{a['labels']} labels give no w-InfoNCE (residual "
                       f"{state['fit'].residual:.2g})")
        elif state is None:
            why.append(f"with {a['labels']} labels {a['outcome'].split(' (called as')[0]}")
    base = {"classes": "class labels", "pairs": "pairs of samples (SimCLR's positives)",
            "none": "no labels (the views of a sample are its positives)"}[kind]
    return base + (f": {'; '.join(why)}" if why else "")


def build_report(
    chosen: dict[str, Any], *, loss_fn: Any, name: str, tau: float, tau_source: str,
    match_rtol: float, dim: int | None, intended: Intended | None, geometry: bool, seed: int,
    attempts: list[dict[str, Any]], states: list[dict[str, Any]],
) -> AuditReport:
    from dgp.classification import classify

    pr: Probes = chosen["probes"]
    fit: ModelFit = chosen["fit"]
    given_tau = tau
    tau = chosen["tau"]
    rows = chosen["rows"]
    similarity = chosen["similarity"]
    n = pr.T.shape[1]
    warnings: list[str] = []
    if chosen["tau_changed"]:
        tau_source = "estimated"
        warnings.append(
            f"the temperature is {tau:.6g}, not the given tau = {given_tau:g}: the loss is a "
            f"w-InfoNCE at {tau:.6g} (residual {fit.residual:.2g}) and at no partition with "
            f"tau = {given_tau:g}; the audit uses the estimate")
    elif (chosen["identified"] and given_tau is not None
          and abs(chosen["tau_estimate"] / given_tau - 1.0) > TAU_AGREE_RTOL):
        warnings.append(f"the temperature estimated from the probes, {chosen['tau_estimate']:.6g}"
                        f", differs from tau = {given_tau:g}, at which the model also fits")
    learned = learned_temperature(loss_fn)
    if learned is not None:
        warnings.append(
            f"the temperature is learned (the trainable parameter `{learned}`): the audit "
            f"reads its current value, tau = {chosen['tau_estimate']:.6g}; training moves it, "
            "and with it the predicted geometry")
    if pr.asymmetry > PROBE_RTOL:
        warnings.append(f"the recovered pair sensitivities are not symmetric (relative "
                        f"{pr.asymmetry:.2g}): the loss is not a function of the similarity "
                        "matrix alone")
    res_sim = pr.cosine_residual if similarity == "cosine" else pr.euclidean_residual
    if res_sim > PROBE_RTOL:
        warnings.append(
            f"the gradient is not that of a {similarity} loss (relative {res_sim:.2g}): "
            + ("not tangent to the sphere, so the loss does not normalise its embeddings"
               if similarity == "cosine" else "not translation invariant")
        )
    if pr.dtype != "float64":
        warnings.append(f"the loss computes in {pr.dtype}: expect residuals near its precision")
    probes_info = {"count": len(pr.points), "asymmetry": pr.asymmetry,
                   "cosine_residual": pr.cosine_residual,
                   "euclidean_residual": pr.euclidean_residual, "dtype": pr.dtype}
    base = dict(callable=name, n=n, tau=tau, tau_source=tau_source, tau_given=given_tau,
                tau_estimate=chosen["tau_estimate"], tau_residual=chosen["tau_residual"],
                learned_temperature=learned, similarity=similarity,
                similarity_source=chosen["sim_source"], call=chosen["call"],
                labels_kind=chosen["kind"], labels_note=_labels_note(chosen, states, attempts),
                row_labels=rows, hypotheses=tuple(chosen["hypotheses"]), match_rtol=match_rtol,
                probes=probes_info, attempts=tuple(attempts))
    if not chosen["identified"]:
        warnings.append(
            (f"not a w-InfoNCE: it is {chosen['named_form']['description']} (residual "
             f"{chosen['named_form']['residual']:.2g} at tau = "
             f"{chosen['named_form']['tau_estimate']:.4g}), whose weights of the positives "
             "depend on the embeddings; " if chosen.get("named_form") else "")
            + f"not identified: no w-InfoNCE (with any of the partitions "
            f"{', '.join(PARTITIONS)}) fits the gradients within match_rtol = {match_rtol:g} "
            f"(best residual "
            f"{fit.residual:.2g}, partition {fit.partition}, at any temperature: the best "
            f"is tau = {chosen['tau_estimate']:.4g}, residual {chosen['tau_residual']:.2g}); "
            "its weights depend on the embeddings (as in SupCon's L_in, which is L_out only to "
            "first order), or each positive pair has its own denominator"
            + ("; a larger --match-rtol accepts it as that w-InfoNCE" if fit.residual < NEAR_MATCH
               else "")
        )
        return AuditReport(identified=False, named_form=chosen.get("named_form"),
                           fit=fit, anchor_weights=None,
                           reduction_scale=None, symmetric_part=None, effective_weights=None,
                           representative_residual=None, candidates=(), match=None,
                           closest=None, classification=None, geometry=None, intended=None,
                           warnings=tuple(warnings), **base)
    mask = partition_anchors(n, fit.partition)
    kappa = float(fit.m[mask].mean())
    anchors = fit.m / kappa
    if (anchors[mask] <= 0).any():
        warnings.append("some recovered anchor weights are not positive: the loss rewards "
                        "raising some anchors' softmax, which no w-InfoNCE does")
    spread = (float(anchors[mask].max() / anchors[mask].min()) if (anchors[mask] > 0).all()
              else math.inf)
    if spread - 1.0 > max(PROBE_RTOL, 10 * match_rtol):
        warnings.append(f"anchors weigh unequally (largest / smallest {spread:.4g}): the loss "
                        "is a w-InfoNCE with per-anchor weights")
    cands = candidates(rows, "continuous" if chosen["kind"] in ("continuous", "given")
                        else "classes")
    results = []
    for cand in cands:
        err, value = fit_candidate(fit, cand)
        results.append({"objective": cand.objective, "form": cand.form,
                        "parameter": cand.param, "value": value, "error": err,
                        "form_text": FORM_TEXT[cand.form]})
    from dgp.objectives import registry

    def rank(c: dict[str, Any]) -> tuple:
        own = registry.get(c["objective"]).similarity == similarity
        return (c["error"] > match_rtol, not own, FORMS.index(c["form"]), c["error"])

    results.sort(key=rank)
    match = closest = None
    if results:
        top = results[0]
        own = registry.get(top["objective"]).similarity
        entry = dict(top, latent=similarity, objective_latent=own)
        if top["error"] <= match_rtol:
            match = entry
            if own != similarity:
                warnings.append(f"the weighting is {top['objective']}'s but the latent is "
                                f"{similarity} ({top['objective']} uses {own})")
        else:
            closest = min((dict(c, latent=similarity,
                                objective_latent=registry.get(c["objective"]).similarity)
                           for c in results), key=lambda c: c["error"])
            warnings.append(
                f"no registered objective matches within match_rtol = {match_rtol:g}; the "
                f"closest is {closest['objective']} ({closest['form']}) with error "
                f"{closest['error']:.3g}" + ("; raise --match-rtol to accept it"
                                              if closest["error"] < NEAR_MATCH else ""))
    if match is not None and (match["form"] in ("columns", "columns-rows")
                              or registry.get(match["objective"]).intended is not None):
        warnings.append(SLIP)
    logc = partition_log_weights(n, rows, fit.partition)
    S = fit.S.copy()
    atol = 10.0 * max(fit.residual, FIT_RESIDUAL_FLOOR) * float(np.abs(S).max())
    S[np.abs(S) <= atol] = 0.0  # zero weights are recovered up to rounding
    R, residual = (effective_weights(S, fit.m, logc) if mask.all() else (None, math.inf))
    if (S < 0).any():
        warnings.append("the recovered weighting has negative entries: the loss rewards "
                        "pushing some pairs apart")
    classification = None
    d = n if dim is None else check_int(dim, "dim", minimum=1)
    if not mask.all():
        warnings.append(
            "only the first view's rows are anchors: the similarities between the other "
            "view's samples enter no term of the loss, so no weighting of all pairs describes "
            "its optimum and there is no verdict; the predicted geometry below is a minimiser "
            "(those free pairs are wherever the minimisation leaves them)")
    elif R is not None and residual <= max(PROBE_RTOL, 10.0 * match_rtol):
        classification = classify(R, similarity=similarity, tau=tau, dim=d).to_dict()
        classification["classified"] = "effective weighting R"
    elif R is None:
        warnings.append("the partition function leaves out pairs the loss pulls together, so "
                        "the loss has no entropic bound: those pairs are pushed together "
                        "without limit (to coincide, under the cosine latent); no verdict")
    else:
        warnings.append(f"the effective weighting was not found (residual {residual:.2g}); "
                        "no verdict")
    geo = inten = None
    if intended is None and match is not None and (match["form"] != "rows"
                                                   or fit.partition != "all"):
        params = {} if match["parameter"] is None else {match["parameter"]: match["value"]}
        intended = Intended(match["objective"], params,
                            "the matched objective done right: rows normalised, every anchor "
                            "the same, every other sample in the denominator")
    if geometry and n <= GEOMETRY_MAX_N:
        geo = predicted_geometry(S / kappa, anchors, logc, rows, tau=tau,
                                 similarity=similarity, dim=d, seed=seed)
        if intended is not None:
            ref = intended_geometry(intended, rows, tau=tau, similarity=similarity, dim=d,
                                     seed=seed)
            inten = {"objective": intended.objective, "params": dict(intended.params),
                     "note": intended.note, **geometry_gap(geo, ref, similarity)}
    elif geometry:
        warnings.append(f"predicted geometry not computed for N > {GEOMETRY_MAX_N}")
    return AuditReport(identified=True, named_form=None, fit=fit, anchor_weights=anchors,
                       reduction_scale=kappa, symmetric_part=fit.S / kappa,
                       effective_weights=R, representative_residual=residual,
                       candidates=tuple(results), match=match, closest=closest,
                       classification=classification, geometry=geo, intended=inten,
                       warnings=tuple(warnings), **base)
