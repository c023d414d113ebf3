r"""Recover the weighting a contrastive loss really optimises, from its gradients.

**The model.** Write the loss of a batch as a function of its similarity matrix ``s``
(cosine :math:`s_{ij} = \langle \hat z_i, \hat z_j\rangle/\tau`, or Euclidean
:math:`s_{ij} = -\|z_i - z_j\|^2/2\tau`). A w-InfoNCE with anchor weights :math:`m_i`, row
distributions :math:`p_i` and, more generally, partition weights :math:`c_{ik}` is

.. math::

    L(s) = \sum_i m_i\Big[-\sum_{j \ne i} p_{ij} s_{ij}
        + \log \sum_{k \ne i} c_{ik} e^{s_{ik}}\Big]
      = -\sum_{i<j} S_{ij} s_{ij} + \sum_i m_i \,\mathrm{LSE}_{k \ne i}(s_{ik} + \log c_{ik}),

with :math:`S_{ij} = m_i p_{ij} + m_j p_{ji}`. Since ``s`` is symmetric, **the loss depends on
the weighting only through the anchor weights** ``m`` **and the symmetric matrix** ``S``: they
are what can be identified, and all that matters. ``c = 1`` is the w-InfoNCE of dgp (SupCon,
y-Aware, X-CLR...); BCL's class averaging (:math:`c_{ik} = 1/|B_{y_k}|`) and the decoupled loss
(positives left out of the partition function, :math:`c_{ik} = 0` for :math:`y_k = y_i`) are
the two other partitions the audit knows.

**The probes.** At ``P`` points :math:`Z^{(p)}` (unit rows, ``d = N``: the first orthonormal,
the others perturbed so that the softmaxes differ), one backward pass gives
:math:`\nabla_Z L`, and :math:`C = \tau\,\nabla_Z L\,(Z^{(p)})^{-1}` gives
:math:`T^{(p)}_{ij} = \partial L/\partial s_{ij} + \partial L/\partial s_{ji}` off the diagonal.
Its diagonal tells the latent: a cosine loss has a gradient tangent to the sphere
(:math:`\sum_j C_{ij} G_{ij} = 0`), a Euclidean one is translation invariant
(:math:`\sum_j C_{ij} = 0`). The model predicts

.. math::

    T^{(p)}_{ij} = m_i q^{(p)}_{ij} + m_j q^{(p)}_{ji} - S_{ij},\qquad
    q^{(p)}_{ij} = \operatorname{softmax}_{k \ne i}\big(s^{(p)}_{ik} + \log c_{ik}\big)_j,

**linear in** ``(m, S)`` once ``c`` is fixed: a least-squares fit over all probes (normal
equations in ``m`` alone, ``S`` eliminated) recovers them, and its relative residual says whether
the loss *is* such a w-InfoNCE. One probe cannot tell (at orthonormal embeddings every softmax
is uniform, so SupCon's :math:`L_{in}` looks like :math:`L_{out}` to first order); several
probes see how the gradient changes with the embeddings, i.e. the second order. A loss whose
weights depend on the embeddings (SupCon :math:`L_{in}`, DCL's von Mises–Fisher weights, a
denominator per positive pair) leaves a residual and is reported as not identified.

**What is reported.** The matched objective of the registry (:mod:`dgp.objectives.registry`)
with its fitted parameter, the form in which the loss uses it (rows normalised; rows left as
they are, so anchors weigh unequally; or the column normalisation ``W /= W.sum(1)`` of public
y-Aware code), the latent; the per-anchor weights; the **effective weighting** ``R``: the
symmetric matrix whose bound the loss can attain, solving

.. math::

    R_{ij} = \frac{S_{ij}}{m_i c_{ij}/\rho_i + m_j c_{ji}/\rho_j},\qquad
    \rho_i = \sum_k c_{ik} R_{ik}

(for ``m = 1, c = 1``: the reversible representative of ``p + p^T``); its verdict by
:func:`dgp.classify`; and the predicted geometry, the minimiser of the recovered loss
(:func:`model_minimiser`), compared with the geometry of the objective the code meant to
implement.

**The temperature** is read from the probes: a wrong ``tau`` scales ``T`` (absorbed by the scale
of ``(m, S)``) but also moves every softmax :math:`q^{(p)}`, which nothing absorbs, so the
residual vanishes at the loss's own temperature only (:func:`estimate_tau`). A given ``tau``
(argument, or a ``tau`` / ``temperature`` attribute) is checked against it; when it fits no
partition and the estimate does, the estimate is used and the report says so.

**Two views.** For the two-view calls the audit also fits denominators over the other view
only (``cross-view``: CLIP's two cross-entropies) and anchor subsets (``one-direction``,
``one-view``: the first view's rows as the only anchors). When no partition fits, the named
non-InfoNCE forms of :data:`NAMED_FORMS` (SupCon's :math:`L_{in}`, one denominator per
positive pair) are tried.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from dgp.constants import (
    AUDIT_PROBE_TAU,
    FIT_RESIDUAL_FLOOR,
    FIT_ZERO_RTOL,
    MATCH_RTOL,
    NEAR_MATCH,
    PROBE_RTOL,
    SCALE_FLOOR,
    TAU_AGREE_RTOL,
)
from dgp.errors import InputError, check_choice, check_int, check_positive
from dgp.torch._audit_limits import (
    GEOMETRY_MAX_N,
    MAX_N,
    check_arguments,
    check_probe_memory,
    probe_memory,
)
from dgp.torch._compat import require_torch

torch = require_torch()
from dgp.torch.audit.geometry import (  # noqa: E402
    Intended,
    effective_weights,
    geometry_gap,
    intended_geometry,
    model_minimiser,
    predicted_geometry,
    prototype_minimiser,
)
from dgp.torch.audit.model import (  # noqa: E402
    ModelFit,
    candidate_terms,
    candidates,
    equality_codes,
    estimate_named_form,
    estimate_tau,
    fit_candidate,
    fit_model,
    has_classes,
    model_loss,
    partition_anchors,
    partition_log_weights,
    symmetric_part,
    with_tau,
)
from dgp.torch.audit.probe import (  # noqa: E402
    LossCallError,
    Probes,
    default_labels,
    probe,
)
from dgp.torch.audit.report import (  # noqa: E402
    AuditReport,
)
from dgp.torch.audit.vocabulary import (  # noqa: E402
    CALLS,
    FORM_TEXT,
    FORMS,
    LABEL_KINDS,
    NAMED_FORMS,
    PARTITION_TEXT,
    PARTITIONS,
    SIMILARITY_CHOICES,
    SLIP,
)

__all__ = [
    "CALLS",
    "FORMS",
    "GEOMETRY_MAX_N",
    "LABEL_KINDS",
    "MAX_N",
    "PARTITIONS",
    "AuditReport",
    "Intended",
    "LossCallError",
    "ModelFit",
    "Probes",
    "audit_loss",
    "candidate_terms",
    "check_arguments",
    "default_labels",
    "effective_weights",
    "estimate_tau",
    "fit_model",
    "model_loss",
    "model_minimiser",
    "partition_anchors",
    "partition_log_weights",
    "predicted_geometry",
    "probe",
    "probe_memory",
    "prototype_minimiser",
    "symmetric_part",
]

def _find_tau(loss_fn: Any) -> float | None:
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


def _rows_for(call: str, n: int) -> int:
    """Embedding rows probed: ``n``, or two views of ``max(n // 2, 4)`` samples."""
    return n if call == "embeddings" else 2 * max(n // 2, 4)


def _learned_temperature(loss_fn: Any) -> str | None:
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
            logc, anchors = partition_log_weights(n, row_labels, part), partition_anchors(n, part)
            tau_hat, hat = estimate_tau(pr, similarity=similarity, logc=logc, partition=part,
                                        anchors=anchors)
            hyps[part].update(tau_estimate=tau_hat, tau_residual=hat.residual)
            return {"fit": ok[0], "hypotheses": list(hyps.values()), "identified": True,
                    "probes": pr, "tau": tau, "tau_estimate": tau_hat,
                    "tau_residual": hat.residual, "tau_changed": False}
    estimates = []
    for part in parts:
        logc, anchors = partition_log_weights(n, row_labels, part), partition_anchors(n, part)
        tau_hat, hat = estimate_tau(pr, similarity=similarity, logc=logc, partition=part,
                                    anchors=anchors)
        hyps[part].update(tau_estimate=tau_hat, tau_residual=hat.residual)
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


def _single_audit(
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


def _equality_only(state: dict[str, Any]) -> bool:
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


def audit_loss(
    loss_fn: Callable[..., Any],
    *,
    labels: Any = "auto",
    n: int = 12,
    tau: float | None = None,
    similarity: str = "auto",
    call: str = "auto",
    dim: int | None = None,
    name: str = "loss",
    match_rtol: float = MATCH_RTOL,
    probes: int = 3,
    intended: Intended | None = None,
    geometry: bool = True,
    seed: int = 0,
) -> AuditReport:
    """Recover, match and classify the weighting that ``loss_fn`` optimises (module docs).

    Runs the loss in this process: use ``dgp audit`` (a subprocess with ``--timeout``) for code
    you do not trust to return.

    Parameters
    ----------
    loss_fn : callable
        The loss; called as ``loss(embeddings, labels)``, ``loss(features, labels)`` with
        ``features`` of shape ``[b, 2, d]`` (SupContrast), or ``loss(z1, z2, labels)``, with
        or without labels (``call``).
    labels : {"auto", "continuous", "classes", "pairs", "none"} or array_like
        What to pass as labels. ``"auto"`` tries continuous labels, then class labels (when
        continuous ones give no w-InfoNCE, or one that uses them only through equality), then
        pairs / none; the report says which was used and why. An array is passed as given (one
        label per sample).
    n : int
        Number of embeddings (two-view calls: ``n // 2`` samples in two views).
    tau : float, optional
        Temperature; default the loss's ``tau`` or ``temperature`` attribute, else the
        estimate from the probes (``report.tau_estimate``, always computed). A given one that
        fits no partition is replaced by the estimate, with a warning.
    similarity : {"auto", "cosine", "euclidean"}
        ``"auto"`` detects it from the gradient.
    call : {"auto", "embeddings", "views", "pair"}
        ``"auto"`` tries them in this order.
    dim : int, optional
        Embedding dimension of the verdict and the predicted geometry (default ``N``).
    name : str
        How to name the loss in the report.
    match_rtol : float
        Relative tolerance of the gradient model and of a match with a registered objective.
    probes : int
        Probe points (``>= 2``).
    intended : Intended, optional
        The objective the code means to implement: the report compares geometries.
    geometry : bool
        Compute the predicted geometry (a minimisation; skipped for ``N`` above
        :data:`GEOMETRY_MAX_N`).
    seed : int

    Returns
    -------
    AuditReport

    Raises
    ------
    LossCallError
        If the loss fails under every calling convention and label kind tried.
    TypeError, ValueError
        If an argument is invalid, or the probes would not fit in memory.

    Examples
    --------
    >>> from dgp.torch.losses import SupConLoss
    >>> report = audit_loss(SupConLoss(tau=0.2))
    >>> report.labels_kind, report.match["objective"], report.verdict
    ('classes', 'supcon', 'inconsistent')
    """
    check_choice(similarity, SIMILARITY_CHOICES, "similarity")
    calls = CALLS if call == "auto" else (check_choice(call, CALLS, "call"),)
    n, probes, match_rtol = check_arguments(n=n, probes=probes, match_rtol=match_rtol)
    source = "argument"
    if tau is None:
        tau = _find_tau(loss_fn)
        source = "attribute" if tau is not None else "estimated"
    if tau is not None:
        tau = check_positive(tau, "tau")
    given = None
    if isinstance(labels, str):
        kinds = (("continuous", "classes", "pairs", "none") if labels == "auto"
                 else (check_choice(labels, LABEL_KINDS, "labels"),))
    else:
        given = np.asarray(labels)
        if given.ndim not in (1, 2) or given.shape[0] < 2:
            raise InputError(f"labels must be 1-D or N x p with at least 2 rows, got shape "
                             f"{given.shape}")
        kinds = ("given",)
    check_probe_memory(n if given is None else 2 * len(given), probes)
    from dgp._linalg import deterministic_blas

    with deterministic_blas():  # small matrices: threads only contend (and change last digits)
        return _audit(loss_fn, calls=calls, kinds=kinds, given=given, labels=labels, n=n,
                      tau=tau, tau_source=source, similarity=similarity, match_rtol=match_rtol,
                      probes=probes, dim=dim, name=name, intended=intended, geometry=geometry,
                      seed=seed)


def _audit(loss_fn: Callable[..., Any], *, calls: tuple[str, ...], kinds: tuple[str, ...],
           given: np.ndarray | None, labels: Any, n: int, tau: float, tau_source: str,
           similarity: str, match_rtol: float, probes: int, dim: int | None, name: str,
           intended: Intended | None, geometry: bool, seed: int) -> AuditReport:
    attempts: list[dict[str, Any]] = []
    states: list[dict[str, Any]] = []
    failure: LossCallError | None = None
    auto_labels = isinstance(labels, str) and labels == "auto"
    for cv in calls:
        worked = False
        for kind in kinds:
            if kind == "pairs" and cv != "embeddings":
                continue  # two-view losses pair their views themselves
            if kind == "none" and cv == "embeddings" and len(calls) > 1 and auto_labels:
                continue  # a loss of the embeddings alone: the two-view calls come first
            if kind == "given":
                lab = given
                nn_ = len(given) if cv == "embeddings" else 2 * len(given)
            else:
                nn_ = _rows_for(cv, n)
                count = nn_ if cv == "embeddings" else nn_ // 2
                lab = default_labels(kind, count, seed=seed)
            try:
                state = _single_audit(loss_fn, lab, kind=kind, call=cv, n=nn_, tau=tau,
                                      similarity=similarity, match_rtol=match_rtol,
                                      probes=probes, seed=seed)
            except LossCallError as exc:
                attempts.append({"call": cv, "labels": kind, "outcome": str(exc)})
                failure = exc
                continue
            worked = True
            states.append(state)
            outcome = (f"w-InfoNCE ({state['fit'].partition} partition), residual "
                       f"{state['fit'].residual:.2g}" if state["identified"] else
                       f"not a w-InfoNCE (best residual {state['fit'].residual:.2g})")
            attempts.append({"call": cv, "labels": kind, "outcome": outcome})
            if state["identified"] and not (kind == "continuous" and _equality_only(state)):
                break
        if worked:
            break
    if not states:
        tried = "; ".join(f"{a['call']}/{a['labels']}: {a['outcome']}" for a in attempts)
        if len(attempts) == 1 and failure is not None:
            raise failure
        raise LossCallError(f"the loss failed under every calling convention tried ({tried})")
    chosen = next((s for s in states if s["identified"]), states[-1])
    # continuous labels used only through equality: class labels say more, when they work
    if chosen["kind"] == "continuous" and _equality_only(chosen):
        better = [s for s in states if s["identified"] and s["kind"] == "classes"]
        chosen = better[0] if better else chosen
    return _report(chosen, loss_fn=loss_fn, name=name, tau=tau, tau_source=tau_source,
                   match_rtol=match_rtol, dim=dim, intended=intended, geometry=geometry,
                   seed=seed, attempts=attempts, states=states)


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
        if state is not None and state["identified"] and _equality_only(state):
            why.append(f"{a['labels']} labels were used only through equality")
        elif state is not None and not state["identified"]:
            why.append(f"{a['labels']} labels give no w-InfoNCE (residual "
                       f"{state['fit'].residual:.2g})")
        elif state is None:
            why.append(f"with {a['labels']} labels {a['outcome'].split(' (called as')[0]}")
    base = {"classes": "class labels", "pairs": "pairs of samples (SimCLR's positives)",
            "none": "no labels (the views of a sample are its positives)"}[kind]
    return base + (f": {'; '.join(why)}" if why else "")


def _report(
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
    learned = _learned_temperature(loss_fn)
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

