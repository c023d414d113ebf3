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

from collections.abc import Callable
from typing import Any

import numpy as np

from dgp.constants import MATCH_RTOL
from dgp.errors import InputError, check_choice, check_positive
from dgp.torch._audit_limits import (
    GEOMETRY_MAX_N,
    MAX_N,
    check_arguments,
    check_probe_memory,
    probe_memory,
)
from dgp.torch._compat import require_torch

torch = require_torch()
from dgp.torch.audit._findings import build_report  # noqa: E402
from dgp.torch.audit._identify import equality_only, find_tau, rows_for, single_audit  # noqa: E402
from dgp.torch.audit.geometry import (  # noqa: E402
    Intended,
    effective_weights,
    model_minimiser,
    predicted_geometry,
    prototype_minimiser,
)
from dgp.torch.audit.model import (  # noqa: E402
    ModelFit,
    candidate_terms,
    estimate_tau,
    fit_model,
    model_loss,
    partition_anchors,
    partition_log_weights,
    symmetric_part,
)
from dgp.torch.audit.probe import LossCallError, Probes, default_labels, probe  # noqa: E402
from dgp.torch.audit.report import AuditReport  # noqa: E402
from dgp.torch.audit.vocabulary import (  # noqa: E402
    CALLS,
    FORMS,
    LABEL_KINDS,
    PARTITIONS,
    SIMILARITY_CHOICES,
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
        tau = find_tau(loss_fn)
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
                nn_ = rows_for(cv, n)
                count = nn_ if cv == "embeddings" else nn_ // 2
                lab = default_labels(kind, count, seed=seed)
            try:
                state = single_audit(loss_fn, lab, kind=kind, call=cv, n=nn_, tau=tau,
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
            if state["identified"] and not (kind == "continuous" and equality_only(state)):
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
    if chosen["kind"] == "continuous" and equality_only(chosen):
        better = [s for s in states if s["identified"] and s["kind"] == "classes"]
        chosen = better[0] if better else chosen
    return build_report(chosen, loss_fn=loss_fn, name=name, tau=tau, tau_source=tau_source,
                   match_rtol=match_rtol, dim=dim, intended=intended, geometry=geometry,
                   seed=seed, attempts=attempts, states=states)


