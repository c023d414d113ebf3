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
implement. The temperature must be known (``tau=`` or an attribute ``tau`` / ``temperature``).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares, minimize, minimize_scalar

from dgp.errors import DgpError, InputError, check_choice, check_int, check_positive
from dgp.torch._audit_limits import (
    GEOMETRY_MAX_N,
    MAX_N,
    check_arguments,
    check_probe_memory,
    probe_memory,
)
from dgp.torch._compat import require_torch

torch = require_torch()

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
    "fit_model",
    "model_loss",
    "model_minimiser",
    "partition_log_weights",
    "predicted_geometry",
    "probe",
    "probe_memory",
    "prototype_minimiser",
    "symmetric_part",
]

SIMILARITY_CHOICES = ("auto", "cosine", "euclidean")
#: label kinds the audit can make up (``"auto"`` tries them in turn)
LABEL_KINDS = ("continuous", "classes", "pairs", "none")
#: calling conventions: loss(Z, labels); loss(features [b, 2, d], labels); loss(z1, z2, labels)
CALLS = ("embeddings", "views", "pair")
#: partition functions the audit knows
PARTITIONS = ("all", "class-averaged", "negatives")
#: how a loss may use a weighting W (see :func:`candidate_terms`)
FORMS = ("rows", "raw", "columns", "columns-rows")

FORM_TEXT = {
    "rows": "rows of W normalised, every anchor weighs the same (a w-InfoNCE)",
    "raw": "cross-entropy against W as given: anchor i weighs sum_j w_ij",
    "columns": "W /= W.sum(1), which divides column j by the degree of sample j, then "
               "cross-entropy against it: anchors weigh unequally",
    "columns-rows": "W /= W.sum(1) (a column normalisation), then rows normalised",
}
PARTITION_TEXT = {
    "all": "every other sample in the denominator",
    "class-averaged": "BCL-style class averaging: each class's exponentials in the "
                      "denominator divided by its count in the batch",
    "negatives": "decoupled: samples with the anchor's label left out of the denominator",
}

_SLIP = (
    "column normalisation: the loss divides its kernel by `W.sum(1)`, which broadcasts the row "
    "sums along the last axis and divides column j by the degree of sample j; anchors then weigh "
    "unequally and the target is the kernel divided by both degrees, k_ij / (s_i s_j). Normalise "
    "rows with `W / W.sum(1, keepdims=True)` (torch: `W.sum(1, keepdim=True)`)"
)

class LossCallError(DgpError, RuntimeError):
    """The audited loss failed: it raised, returned no scalar, or gave no gradient.

    A failure inside the user's code, not bad input to dgp (``dgp audit`` exits 1).
    """


# --------------------------------------------------------------------------------------------
# labels and probe points


def default_labels(kind: str, n: int, *, seed: int = 0) -> np.ndarray | None:
    """Deterministic audit labels for ``n`` samples.

    ``"continuous"``: irregularly spaced 1-D labels in [-1, 1] (so that kernel degrees differ);
    ``"classes"``: ``max(2, n // 4)`` unequal classes of at least 2 samples; ``"pairs"``:
    ``n // 2`` classes of 2 (SimCLR's positives); ``"none"``: ``None``.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``n < 4``.

    >>> default_labels("pairs", 6)
    array([0, 0, 1, 1, 2, 2])
    """
    check_choice(kind, LABEL_KINDS, "labels")
    n = check_int(n, "n", minimum=4)
    rng = np.random.default_rng(seed)
    if kind == "none":
        return None
    if kind == "continuous":
        return np.sort(rng.uniform(-1.0, 1.0, n))
    if kind == "pairs":
        return np.repeat(np.arange(n // 2), 2)[:n] if n % 2 == 0 else np.append(
            np.repeat(np.arange(n // 2), 2), n // 2 - 1)
    k = max(2, n // 4)
    sizes = np.full(k, 2)
    for extra in rng.integers(0, k, n - 2 * k):
        sizes[extra] += 1
    return np.repeat(np.arange(k), sizes)


def _probe_points(n: int, probes: int, tau: float, seed: int) -> list[np.ndarray]:
    """Unit-row ``n x n`` probe points: one orthonormal, then perturbed ones whose cosines move
    the logits by O(1)."""
    rng = np.random.default_rng(seed)
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    Q = Q * np.sign(np.diag(R))
    out = [Q]
    delta = min(1.0, tau * math.sqrt(n / 2.0))
    for _ in range(probes - 1):
        Zp = Q + delta * rng.standard_normal((n, n)) / math.sqrt(n)
        out.append(Zp / np.linalg.norm(Zp, axis=1, keepdims=True))
    return out


def similarities(Z: np.ndarray, *, tau: float, similarity: str) -> np.ndarray:
    """The latent similarity matrix of unit-row or free points (diagonal included)."""
    if similarity == "cosine":
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        return (Zn @ Zn.T) / tau
    from dgp._linalg import squared_distances

    return -squared_distances(Z) / (2.0 * tau)


# --------------------------------------------------------------------------------------------
# calling the loss


@dataclass(frozen=True, eq=False)
class Probes:
    """What the backward passes told: per probe point, the pair sensitivities ``T``.

    Attributes
    ----------
    points : tuple of ndarray
        The ``N x N`` probe points (unit rows).
    T : ndarray, shape (P, N, N)
        :math:`\\partial L/\\partial s_{ij} + \\partial L/\\partial s_{ji}`, symmetrised, zero
        diagonal (in units of the loss, with ``tau`` as given).
    values : ndarray, shape (P,)
        The loss values.
    asymmetry : float
        Relative antisymmetric part of the recovered ``C`` (0 for a function of the Gram).
    cosine_residual : float
        How far the gradient is from tangent to the sphere (0 for a cosine loss).
    euclidean_residual : float
        How far the gradient is from translation invariant (0 for a Euclidean loss).
    dtype : str
        The dtype the loss returned.
    """

    points: tuple[np.ndarray, ...]
    T: np.ndarray
    values: np.ndarray
    asymmetry: float
    cosine_residual: float
    euclidean_residual: float
    dtype: str


def _user(fn: Callable[[], Any], what: str) -> Any:
    """Run user code; whatever it raises becomes a :class:`LossCallError` saying where."""
    try:
        return fn()
    except RecursionError:
        raise LossCallError(f"the loss recursed without end (RecursionError) {what}") from None
    except Exception as exc:  # user code may raise anything: this is the one boundary
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise LossCallError(
            f"the loss raised {type(exc).__name__}{': ' + text if text else ''} {what}"
        ) from exc


def _describe_call(call: str, n: int, labels: np.ndarray | None) -> str:
    b = n // 2
    lab = "" if labels is None else f", labels ({'x'.join(map(str, labels.shape))})"
    if call == "embeddings":
        return f"(called as loss(embeddings {n}x{n}{lab}))"
    if call == "views":
        return f"(called as loss(features {b}x2x{n}{lab}))"
    return f"(called as loss(z1 {b}x{n}, z2 {b}x{n}{lab}))"


def _invoke(loss_fn: Callable[..., Any], Z: Any, labels: Any, call: str) -> Any:
    n = Z.shape[0]
    args: list[Any]
    if call == "embeddings":
        args = [Z]
    elif call == "views":
        args = [Z.reshape(2, n // 2, Z.shape[1]).transpose(0, 1)]
    else:
        args = [Z[: n // 2], Z[n // 2:]]
    if labels is not None:
        args.append(labels)
    return loss_fn(*args)


def probe(
    loss_fn: Callable[..., Any],
    labels: np.ndarray | None,
    *,
    tau: float,
    n: int,
    call: str = "embeddings",
    probes: int = 3,
    seed: int = 0,
) -> Probes:
    """Backward passes of ``loss_fn`` at ``probes`` points, turned into pair sensitivities.

    Parameters
    ----------
    loss_fn : callable
        The loss, called as ``call`` says (see :data:`CALLS`).
    labels : ndarray or None
        What the loss receives as labels (one per sample: ``n`` for ``"embeddings"``,
        ``n // 2`` for the two-view calls), or ``None`` to call it without.
    tau : float
        The loss's temperature.
    n : int
        Number of embeddings (rows); the two-view calls split them into two views.
    call : {"embeddings", "views", "pair"}
    probes : int
        Number of probe points (``>= 2``: the first is orthonormal).
    seed : int

    Raises
    ------
    LossCallError
        If the loss raises, does not return a finite scalar tensor, or gives no gradient.
    ValueError
        On invalid arguments, or if the probes would not fit in memory.
    """
    tau = check_positive(tau, "tau")
    check_choice(call, CALLS, "call")
    n = check_int(n, "n", minimum=4, maximum=MAX_N)
    probes = check_int(probes, "probes", minimum=2, maximum=16)
    if call != "embeddings" and n % 2:
        raise InputError(f"n must be even for a two-view call ({call!r}), got {n}")
    check_probe_memory(n, probes)
    lab = None
    if labels is not None:
        y = np.asarray(labels)
        lab = torch.as_tensor(y) if y.dtype.kind in "iub" else torch.as_tensor(
            y, dtype=torch.float64)
    what = _describe_call(call, n, None if labels is None else np.asarray(labels))
    points = _probe_points(n, probes, tau, seed)
    Ts, values, asym, cos_r, euc_r = [], [], [], [], []
    dtype = "float64"
    for Zp in points:
        Z = torch.tensor(Zp, dtype=torch.float64, requires_grad=True)
        out = _user(lambda Z=Z: _invoke(loss_fn, Z, lab, call), what)
        if not isinstance(out, torch.Tensor) or out.numel() != 1:
            kind = type(out).__name__ if not isinstance(out, torch.Tensor) else (
                f"a tensor of shape {tuple(out.shape)}")
            raise LossCallError(f"the loss must return a scalar tensor, got {kind} {what}")
        dtype = str(out.dtype).replace("torch.", "")
        value = float(out.detach())
        if not math.isfinite(value):
            raise LossCallError(f"the loss is {value} at the probe embeddings {what}")
        if not out.requires_grad:
            raise LossCallError(
                f"the loss has no gradient with respect to the embeddings {what}: it is detached "
                "from them (computed without autograd, e.g. through numpy or .item())"
            )
        (grad,) = _user(lambda out=out, Z=Z: torch.autograd.grad(out, Z, allow_unused=True),
                        f"in its backward pass {what}")
        if grad is None:
            raise LossCallError(f"the loss does not depend on the embeddings {what}")
        C = np.linalg.solve(Zp.T, (tau * grad.detach().numpy()).T).T  # tau grad = C Z
        if not np.isfinite(C).all():
            raise LossCallError(f"the loss's gradient is not finite {what}")
        off = ~np.eye(n, dtype=bool)
        scale = max(float(np.abs(C[off]).max()), 1e-300)
        asym.append(float(np.abs(C - C.T)[off].max() / scale))
        G = Zp @ Zp.T
        cos_r.append(float(np.abs((C * G).sum(axis=1)).max() / scale))
        euc_r.append(float(np.abs(C.sum(axis=1)).max() / scale))
        T = np.where(off, (C + C.T) / 2.0, 0.0)
        Ts.append(T)
        values.append(value)
    T = np.stack(Ts)
    if not np.abs(T).max() > 0:
        raise LossCallError(
            f"the loss's gradient is zero at every probe {what}: with these labels it has no "
            "positive pair (or does not use the embeddings)"
        )
    return Probes(tuple(points), T, np.array(values), max(asym), max(cos_r), max(euc_r), dtype)


# --------------------------------------------------------------------------------------------
# the model fit


def partition_log_weights(n: int, row_labels: np.ndarray | None, partition: str) -> np.ndarray:
    """:math:`\\log c_{ik}` of a partition of ``n`` rows (``-inf`` on the diagonal and at
    left-out pairs).

    Raises
    ------
    ValueError
        If ``partition`` is unknown, or needs labels that are not given.
    """
    check_choice(partition, PARTITIONS, "partition")
    if partition != "all" and row_labels is None:
        raise InputError(f"partition {partition!r} needs class labels")
    if partition == "all":
        logc = np.zeros((n, n))
    else:
        y = _equality_codes(row_labels)
        same = y[:, None] == y[None, :]
        if partition == "negatives":
            logc = np.where(same, -np.inf, 0.0)
        else:
            counts = np.bincount(y).astype(float)
            cnt = np.broadcast_to(counts[y][None, :], same.shape) - same  # own class: minus i
            with np.errstate(divide="ignore"):
                logc = -np.log(cnt)
    np.fill_diagonal(logc, -np.inf)
    return logc


def _softmax_rows(logits: np.ndarray) -> np.ndarray:
    top = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - top)
    return e / e.sum(axis=1, keepdims=True)


def _log_softmax_normaliser(logits: np.ndarray) -> np.ndarray:
    top = logits.max(axis=1)
    return top + np.log(np.exp(logits - top[:, None]).sum(axis=1))


@dataclass(frozen=True, eq=False)
class ModelFit:
    """The least-squares fit of ``(m, S)`` for one partition.

    Attributes
    ----------
    partition : str
    m : ndarray, shape (N,)
        Anchor weights (in units of the loss).
    S : ndarray, shape (N, N)
        Symmetric :math:`m_i p_{ij} + m_j p_{ji}`, zero diagonal.
    residual : float
        Relative residual of the gradient model over all probes.
    value_spread : float
        Spread of ``loss - model`` over the probes, relative to the loss (0 for a loss that
        is the model plus a constant).
    offset : float
        Mean of ``loss - model`` (a constant that changes no minimiser).
    condition : float
        Condition number of the normal equations in ``m``.
    """

    partition: str
    m: np.ndarray
    S: np.ndarray
    residual: float
    value_spread: float
    offset: float
    condition: float


def fit_model(
    probes: Probes, *, tau: float, similarity: str, logc: np.ndarray, partition: str = "all"
) -> ModelFit:
    r"""Fit :math:`T^{(p)}_{ij} = m_i q^{(p)}_{ij} + m_j q^{(p)}_{ji} - S_{ij}` by least squares.

    ``S`` is eliminated (:math:`S = m_i\bar q_{ij} + m_j \bar q_{ji} - \bar T_{ij}`, bars are
    means over probes), leaving the ``N x N`` normal equations
    :math:`H m = g` with :math:`H_{kk} = \sum_{p,j} D_{kj}^2`,
    :math:`H_{kj} = \sum_p D_{kj} D_{jk}`, :math:`g_k = \sum_{p,j} E_{kj} D_{kj}`
    (:math:`D = q - \bar q`, :math:`E = T - \bar T`).
    """
    n = probes.T.shape[1]
    Q = np.stack([
        _softmax_rows(similarities(Zp, tau=tau, similarity=similarity) + logc)
        for Zp in probes.points
    ])
    Qb, Tb = Q.mean(axis=0), probes.T.mean(axis=0)
    D, E = Q - Qb, probes.T - Tb
    H = np.einsum("pkj,pjk->kj", D, D)
    H[np.diag_indices(n)] = np.einsum("pkj,pkj->k", D, D)
    g = np.einsum("pkj,pkj->k", E, D)
    m, *_ = np.linalg.lstsq(H, g, rcond=None)
    lam = np.abs(np.linalg.eigvalsh((H + H.T) / 2.0))
    condition = float(lam.max() / max(lam.min(), 1e-300))
    S = m[:, None] * Qb + m[None, :] * Qb.T - Tb
    np.fill_diagonal(S, 0.0)
    pred = m[None, :, None] * Q + m[None, None, :] * Q.transpose(0, 2, 1) - S[None]
    off = ~np.eye(n, dtype=bool)
    resid = float(np.linalg.norm((pred - probes.T)[:, off]) / np.linalg.norm(probes.T[:, off]))
    model_values = np.array([
        model_loss(similarities(Zp, tau=tau, similarity=similarity), m, S, logc)
        for Zp in probes.points
    ])
    diff = probes.values - model_values
    spread = float(np.ptp(diff) / max(np.abs(probes.values).max(), 1e-300))
    return ModelFit(partition, m, S, resid, spread, float(diff.mean()), condition)


def model_loss(s: np.ndarray, m: np.ndarray, S: np.ndarray, logc: np.ndarray) -> float:
    r""":math:`-\sum_{i<j} S_{ij}s_{ij} + \sum_i m_i \mathrm{LSE}_{k\ne i}(s_{ik} + \log c_{ik})`
    for a similarity matrix ``s`` (its diagonal unused)."""
    lin = -0.5 * float(np.sum(S * np.where(np.eye(len(m), dtype=bool), 0.0, s)))
    return lin + float(np.dot(m, _log_softmax_normaliser(s + logc)))


# --------------------------------------------------------------------------------------------
# candidates from the registry


def candidate_terms(W: np.ndarray, form: str) -> tuple[np.ndarray, np.ndarray]:
    """Anchor weights ``m`` and symmetric part ``S`` of a loss that uses ``W`` in ``form``.

    ``"rows"``: the w-InfoNCE, ``p = W / W.sum(1, keepdims=True)``, ``m = 1``;
    ``"raw"``: :math:`-\\sum_{ij} w_{ij}\\log q_{ij}` with ``W`` as given, ``m = W.sum(1)``;
    ``"columns"``: the same after ``W /= W.sum(1)`` (the broadcast divides column ``j`` by
    the sum of row ``j``); ``"columns-rows"``: that, then rows normalised.

    Raises
    ------
    ValueError
        If ``form`` is unknown.
    """
    check_choice(form, FORMS, "form")
    A = np.array(W, dtype=float)
    np.fill_diagonal(A, 0.0)
    if form in ("columns", "columns-rows"):
        A = A / A.sum(axis=1)[None, :]
    if form in ("rows", "columns-rows"):
        P = A / A.sum(axis=1, keepdims=True)
        return np.ones(A.shape[0]), P + P.T
    return A.sum(axis=1), A + A.T


def symmetric_part(W: np.ndarray) -> np.ndarray:
    """``p + p^T`` for the row distribution ``p`` of ``W`` (zero diagonal).

    Raises
    ------
    ValueError
        As :func:`dgp.errors.check_weights`.
    """
    from dgp.weights import row_distribution

    P = row_distribution(W)
    return P + P.T


def _equality_codes(labels: np.ndarray) -> np.ndarray:
    y = np.asarray(labels)
    y2 = y.reshape(len(y), -1)
    _, codes = np.unique(y2, axis=0, return_inverse=True)
    return codes.reshape(-1)


def _has_classes(row_labels: np.ndarray | None) -> bool:
    if row_labels is None:
        return False
    counts = np.bincount(_equality_codes(row_labels))
    return bool(counts.size >= 2 and (counts >= 2).any())


@dataclass(frozen=True)
class _Candidate:
    objective: str
    form: str
    param: str | None
    labels: Any  # validated registry Labels

    def weights(self, value: float | None) -> np.ndarray:
        from dgp.objectives import registry

        rec = registry.get(self.objective)
        params = rec.check_params(**({} if self.param is None else {self.param: value}))
        return rec.weights(self.labels, params)


def _candidates(row_labels: np.ndarray | None, kind: str) -> list[_Candidate]:
    """Registry objectives whose labels fit, in every form."""
    from dgp.errors import ParameterError
    from dgp.objectives import registry

    if row_labels is None:
        return []
    out = []
    codes = _equality_codes(row_labels)
    for rec in registry.OBJECTIVES.values():
        source = codes if rec.labels == "class" else row_labels
        if rec.labels == "continuous" and kind != "continuous":
            continue
        try:
            lab = rec.check_labels(source)
        except (ParameterError, ValueError, TypeError):
            continue  # e.g. singleton classes for SupCon, 1-D labels for X-CLR
        param = rec.params[0] if rec.params else None
        forms = ("rows",) if rec.name == "y-aware-colnorm" else FORMS
        out += [_Candidate(rec.name, f, param, lab) for f in forms]
    return out


def _param_bounds(cand: _Candidate) -> tuple[float, float]:
    if cand.param == "eps":
        return math.log(1e-6), math.log(1 - 1e-9)
    if cand.param == "sigma":
        y = np.asarray(cand.labels.values, dtype=float).reshape(cand.labels.n, -1)
        d = np.sqrt(((y[:, None, :] - y[None, :, :]) ** 2).sum(-1))
        pos = d[d > 0]
        return math.log(pos.min() / 2), math.log(pos.max() * 10)
    return math.log(1e-2), math.log(1e2)


def _match_error(m: np.ndarray, S: np.ndarray, mc: np.ndarray, Sc: np.ndarray) -> float:
    kappa = m.sum() / mc.sum()
    e_s = np.linalg.norm(kappa * Sc - S) / max(np.linalg.norm(S), 1e-300)
    e_m = np.linalg.norm(kappa * mc - m) / max(np.linalg.norm(m), 1e-300)
    return float(max(e_s, e_m))


def _fit_candidate(fit: ModelFit, cand: _Candidate) -> tuple[float, float | None]:
    from dgp.errors import ParameterError

    def err(value: float | None) -> float:
        try:
            W = cand.weights(value)
            mc, Sc = candidate_terms(W, cand.form)
        except (ParameterError, ValueError, FloatingPointError):
            return math.inf  # e.g. a kernel so narrow that a row has no mass
        if not (np.isfinite(Sc).all() and np.isfinite(mc).all() and mc.sum() > 0):
            return math.inf
        return _match_error(fit.m, fit.S, mc, Sc)

    if cand.param is None:
        return err(None), None
    lo, hi = _param_bounds(cand)
    grid = np.linspace(lo, hi, 41)
    with np.errstate(all="ignore"):
        errs = [err(math.exp(g)) for g in grid]
        k = int(np.argmin(errs))
        if not math.isfinite(errs[k]):
            return math.inf, None
        a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
        res = minimize_scalar(lambda g: err(math.exp(g)), bounds=(a, b), method="bounded",
                              options={"xatol": 1e-11})
    if res.fun <= errs[k]:
        return float(res.fun), math.exp(float(res.x))
    return float(errs[k]), math.exp(float(grid[k]))


# --------------------------------------------------------------------------------------------
# effective weighting and geometry


def effective_weights(
    S: np.ndarray, m: np.ndarray, logc: np.ndarray, *, tol: float = 1e-13
) -> tuple[np.ndarray | None, float]:
    r"""The symmetric weighting ``R`` whose entropic bound the loss ``(m, S, c)`` can attain.

    Solves :math:`R_{ij} = S_{ij}/(m_i c_{ij}/\rho_i + m_j c_{ji}/\rho_j)`,
    :math:`\rho_i = \sum_k c_{ik} R_{ik}` by least squares in :math:`\log\rho`; then
    ``q_i = p_i`` exactly at :math:`s = \log R + \text{const}`, the loss's unconstrained
    minimum. ``R`` is scaled to a maximum of 1. Returns ``(None, inf)`` when a pair with
    weight is left out of the partition function (no bound: the decoupled loss).

    Returns
    -------
    R : ndarray or None
    residual : float
        Relative residual of :math:`m_i p_{ij} + m_j p_{ji} = S_{ij}` with
        :math:`p_{ij} = c_{ij}R_{ij}/\rho_i`.
    """
    n = len(m)
    c = np.exp(logc)
    np.fill_diagonal(c, 0.0)
    A = np.array(S, dtype=float)
    np.fill_diagonal(A, 0.0)
    if ((A > 0) & ((c == 0) | (c.T == 0))).any():
        return None, math.inf
    if (m <= 0).any() or (A < 0).any():
        return None, math.inf

    pos = A > 0

    def parts(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = (m * np.exp(-x))[:, None] * c  # m_i c_ik / rho_i
        den = a + a.T
        with np.errstate(divide="ignore", invalid="ignore"):
            R = np.where(pos, A / den, 0.0)
            u = np.where(pos, a / den, 0.0)  # share of anchor i in the denominator
        return R, u

    def build(x: np.ndarray) -> np.ndarray:
        return parts(x)[0]

    def resid(x: np.ndarray) -> np.ndarray:
        return np.log((c * build(x)).sum(axis=1)) - x

    def jac(x: np.ndarray) -> np.ndarray:
        R, u = parts(x)
        cR = c * R
        rho = cR.sum(axis=1)
        J = cR * (1.0 - u) / rho[:, None]  # d log rho_i / d x_k, k != i
        J[np.diag_indices(n)] = (cR * u).sum(axis=1) / rho - 1.0
        return J

    sol = least_squares(resid, np.zeros(n), jac=jac, xtol=tol, ftol=tol, gtol=tol,
                        max_nfev=2000)
    R = build(sol.x)
    rho = (c * R).sum(axis=1)
    P = c * R / rho[:, None]
    back = m[:, None] * P + (m[:, None] * P).T
    residual = float(np.linalg.norm(back - A) / max(np.linalg.norm(A), 1e-300))
    R = (R + R.T) / 2.0
    return R / R.max(), residual


def model_minimiser(
    S: np.ndarray,
    m: np.ndarray,
    logc: np.ndarray,
    *,
    tau: float,
    similarity: str,
    dim: int | None = None,
    seed: int = 0,
    starts: int = 2,
) -> dict[str, Any]:
    """Minimise the recovered loss over embeddings: the predicted geometry.

    Cosine: ``Z`` free, rows normalised inside the loss (convex in the Gram matrix, so with
    ``dim >= N`` every local minimum is global); Euclidean: ``Z`` free, and a minimiser that
    keeps spreading is reported as not finite. L-BFGS with analytic gradients, ``starts`` seeds,
    the best kept.

    Returns
    -------
    dict
        ``embedding`` (``N x dim``), ``gram`` (cosine: the cosine Gram; Euclidean: the squared
        distance matrix), ``loss``, ``gradient_norm``, ``finite`` (bool) and ``reason``.
    """
    n = len(m)
    d = n if dim is None else int(dim)
    W = np.where(np.eye(n, dtype=bool), 0.0, S / 2.0)
    Wsym = W + W.T

    def value_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        Z = x.reshape(n, d)
        if similarity == "cosine":
            norms = np.linalg.norm(Z, axis=1, keepdims=True)
            Zn = Z / norms
            s = Zn @ Zn.T / tau
        else:
            Zn = Z
            from dgp._linalg import squared_distances

            s = -squared_distances(Z) / (2.0 * tau)
        logits = s + logc
        lse = _log_softmax_normaliser(logits)
        q = np.exp(logits - lse[:, None])
        f = -0.5 * float(np.sum(Wsym * s)) + float(np.dot(m, lse))
        dS = m[:, None] * q - W  # dL/ds_ij (ordered), zero diagonal
        dS = dS + dS.T
        np.fill_diagonal(dS, 0.0)
        if similarity == "cosine":
            gZn = dS @ Zn / tau
            gZ = (gZn - Zn * (gZn * Zn).sum(axis=1, keepdims=True)) / norms
        else:
            gZ = -(dS.sum(axis=1)[:, None] * Z - dS @ Z) / tau
        return f, gZ.ravel()

    rng = np.random.default_rng(seed)
    best = None
    for _ in range(starts):
        x0 = rng.standard_normal(n * d) * (1.0 if similarity == "cosine" else math.sqrt(tau))
        res = minimize(value_grad, x0, jac=True, method="L-BFGS-B",
                       options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15})
        if best is None or res.fun < best.fun:
            best = res
    Z = best.x.reshape(n, d)
    f, g = value_grad(best.x)
    out: dict[str, Any] = {"loss": float(f), "gradient_norm": float(np.linalg.norm(g)),
                           "finite": True, "reason": "L-BFGS converged"}
    if similarity == "cosine":
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        out["embedding"] = Zn
        out["gram"] = np.clip(Zn @ Zn.T, -1.0, 1.0)
    else:
        from dgp._linalg import squared_distances

        Zc = Z - Z.mean(axis=0)
        out["embedding"] = Zc
        out["gram"] = squared_distances(Zc)
        spread = float(np.sqrt(out["gram"].max() / tau))
        if spread > 1e3 or not best.success:
            out["finite"] = False
            out["reason"] = (f"no finite minimiser: the embedding keeps spreading (largest "
                             f"distance {spread:.3g} sqrt(tau))")
    if not best.success and out["finite"]:
        out["reason"] = (f"L-BFGS stopped at gradient norm {out['gradient_norm']:.2g} "
                         f"({best.message})")
    return out


def _within_classes(S: np.ndarray, codes: np.ndarray) -> bool:
    """Whether every weight of ``S`` lies within a class (SupCon-like weightings)."""
    cross = codes[:, None] != codes[None, :]
    return bool(cross.any() and not (S[cross] != 0).any())


def prototype_minimiser(
    m: np.ndarray, logc: np.ndarray, codes: np.ndarray, *, tau: float, seed: int = 0
) -> dict[str, Any]:
    r"""The optimum over collapsed configurations of a loss whose weight is all within classes.

    With every class on one unit prototype :math:`\mu_a` (the optimum of SupCon, and a point of
    the optimal face whenever all weight lies within classes), anchor ``i`` of class ``a`` costs
    :math:`m_i \log\big(C_{i,in} + \sum_{b \ne a} C_{ib}\, e^{(\langle\mu_a,\mu_b\rangle - 1)
    /\tau}\big)` up to a constant, with :math:`C_{ib} = \sum_{k \in b} c_{ik}`. Those
    exponentials are tiny at small ``tau``, so the minimised quantity is the logarithm of the
    excess :math:`\sum_i m_i \log(1 + x_i / C_{i,in})` (or, without the anchor's class in the
    denominator, the loss itself): a well-scaled problem in ``K`` unit vectors, solved by L-BFGS
    from several starts.

    Returns
    -------
    dict
        ``prototypes`` (``K x K`` Gram), ``gram`` (``N x N``), ``loss`` (the minimised
        quantity), ``gradient_norm``, ``finite`` and ``reason``.
    """
    K = int(codes.max()) + 1
    c = np.exp(logc)
    np.fill_diagonal(c, 0.0)
    onehot = np.eye(K)[codes]
    Cb = c @ onehot  # C_ib = sum_{k in b} c_ik
    own = Cb[np.arange(len(codes)), codes]
    Cb[np.arange(len(codes)), codes] = 0.0
    decoupled = bool((own == 0).all())
    mt = torch.tensor(m, dtype=torch.float64)
    Ct = torch.tensor(Cb, dtype=torch.float64)
    owt = torch.tensor(np.where(own > 0, own, 1.0), dtype=torch.float64)
    ct = torch.tensor(codes)

    def objective(X: Any) -> Any:
        mu = torch.nn.functional.normalize(X, dim=1)
        G = mu @ mu.T
        logu = (G - 1.0) / tau  # K x K
        # log x_i = LSE_b (log C_ib + (G_ab - 1) / tau)
        logx = torch.logsumexp(torch.log(Ct) + logu[ct], dim=1)
        if decoupled:
            return (mt * logx).sum()
        excess = mt * torch.log1p(torch.exp(logx) / owt)
        return torch.log(excess.sum())

    gen = torch.Generator().manual_seed(seed)
    best = None
    for _ in range(2):
        X = torch.randn(K, K, dtype=torch.float64, generator=gen).requires_grad_(True)
        opt = torch.optim.LBFGS([X], lr=1.0, max_iter=2000, tolerance_grad=1e-13,
                                tolerance_change=1e-16, history_size=50,
                                line_search_fn="strong_wolfe")

        def closure(X: Any = X, opt: Any = opt) -> Any:
            opt.zero_grad()
            value = objective(X)
            value.backward()
            return value

        opt.step(closure)
        value = float(objective(X).detach())
        if best is None or value < best[0]:
            best = (value, X.detach().clone())
    X = best[1].requires_grad_(True)
    value = objective(X)
    (grad,) = torch.autograd.grad(value, X)
    mu = torch.nn.functional.normalize(X.detach(), dim=1).numpy()
    Gp = np.clip(mu @ mu.T, -1.0, 1.0)
    return {"prototypes": Gp, "gram": Gp[np.ix_(codes, codes)], "loss": float(value.detach()),
            "gradient_norm": float(grad.norm()), "finite": True,
            "reason": "class prototypes (all weight within classes), L-BFGS in log scale"}


def predicted_geometry(
    S: np.ndarray, m: np.ndarray, logc: np.ndarray, row_labels: np.ndarray | None, *,
    tau: float, similarity: str, dim: int | None = None, seed: int = 0,
) -> dict[str, Any]:
    """The optimal geometry of the recovered loss: class prototypes when every weight lies
    within classes under the cosine latent (:func:`prototype_minimiser`), otherwise the
    minimiser over free embeddings (:func:`model_minimiser`)."""
    if similarity == "cosine" and _has_classes(row_labels):
        codes = _equality_codes(row_labels)
        if _within_classes(S, codes):
            return prototype_minimiser(m, logc, codes, tau=tau, seed=seed)
    return model_minimiser(S, m, logc, tau=tau, similarity=similarity, dim=dim, seed=seed)


@dataclass(frozen=True)
class Intended:
    """The objective a loss is meant to implement, to compare geometries with.

    Attributes
    ----------
    objective : str
        A registered objective, or ``"simplex"`` (classes collapsed onto a regular simplex,
        the balanced geometry BCL aims at).
    params : dict
        Its parameters (``sigma``, ``eps``, ``label_tau``).
    note : str
        How the code's own parameters map to these (e.g. nidl's ``bandwidth`` is sigma^2).
    """

    objective: str
    params: dict[str, float] = field(default_factory=dict)
    note: str = ""


def _intended_geometry(intended: Intended, row_labels: np.ndarray, *, tau: float,
                       similarity: str, dim: int | None, seed: int) -> dict[str, Any]:
    from dgp.objectives import registry

    if intended.objective == "simplex":
        from dgp._linalg import simplex_gram

        codes = _equality_codes(row_labels)
        G = simplex_gram(int(codes.max()) + 1)[np.ix_(codes, codes)]
        return {"gram": G, "finite": True, "reason": "regular simplex of the classes"}
    rec = registry.get(intended.objective)
    source = _equality_codes(row_labels) if rec.labels == "class" else row_labels
    W = rec.weights(rec.check_labels(source), rec.check_params(**intended.params))
    mc, Sc = candidate_terms(W, "rows")
    return predicted_geometry(Sc, mc, partition_log_weights(len(mc), None, "all"), row_labels,
                              tau=tau, similarity=similarity, dim=dim, seed=seed)


def _geometry_gap(pred: dict[str, Any], ref: dict[str, Any], similarity: str) -> dict[str, Any]:
    """How far two optimal geometries are, modulo the shift of every similarity by one constant
    (``G + c(J - I)``), which changes no such loss: the squared correlation of the off-diagonal
    similarities, and the largest difference after the best shift (half the range of the
    differences)."""
    off = ~np.eye(len(pred["gram"]), dtype=bool)
    a, b = pred["gram"][off], ref["gram"][off]
    if a.std() > 0 and b.std() > 0:
        r2 = float(np.corrcoef(a, b)[0, 1] ** 2)
    else:
        r2 = 1.0 if np.ptp(a - b) <= 1e-9 * max(np.abs(b).max(), 1.0) else 0.0
    gap = float(np.ptp(a - b) / 2.0)
    if similarity == "cosine":
        what = "largest difference of cosines, up to a common shift"
    else:
        gap /= max(float(np.abs(b).max()), 1e-300)
        what = "largest difference of squared distances up to a common shift, relative"
    return {"similarity_r2": r2, "max_gap": gap, "gap_measure": what}


# --------------------------------------------------------------------------------------------
# the report


@dataclass(frozen=True, eq=False)
class AuditReport:
    """What :func:`audit_loss` found. ``to_dict()`` gives the JSON of ``dgp audit --json``.

    Attributes
    ----------
    callable : str
        The name of the audited loss.
    n : int
        Number of embeddings (rows) probed.
    tau : float
        The temperature used.
    tau_source : {"argument", "attribute"}
        Where the temperature came from.
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
    similarity: str
    similarity_source: str
    call: str
    labels_kind: str
    labels_note: str
    row_labels: np.ndarray | None
    identified: bool
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
        """``max / min`` of the anchor weights (1: every anchor weighs the same)."""
        if self.anchor_weights is None:
            return None
        return float(self.anchor_weights.max() / self.anchor_weights.min())

    def summary(self) -> str:
        """One line: what the loss is, for tables."""
        if not self.identified:
            return "not identified"
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

    def to_dict(self) -> dict[str, Any]:
        from dgp.engine.certificates import plain

        fit = None if self.fit is None else {
            "partition": self.fit.partition, "residual": self.fit.residual,
            "value_spread": self.fit.value_spread, "offset": self.fit.offset,
            "condition": self.fit.condition}
        geometry = None if self.geometry is None else {
            k: v for k, v in self.geometry.items() if k != "embedding"}
        return plain({
            "callable": self.callable,
            "n": self.n,
            "tau": self.tau,
            "tau_source": self.tau_source,
            "similarity": self.similarity,
            "similarity_source": self.similarity_source,
            "call": self.call,
            "labels": self.labels_kind,
            "labels_note": self.labels_note,
            "row_labels": self.row_labels,
            "identified": self.identified,
            "model": fit,
            "hypotheses": list(self.hypotheses),
            "match_rtol": self.match_rtol,
            "match": self.match,
            "closest": self.closest,
            "verdict": self.verdict,
            "classification": self.classification,
            "reduction_scale": self.reduction_scale,
            "anchor_weights": self.anchor_weights,
            "anchor_spread": self.anchor_spread,
            "symmetric_part": self.symmetric_part,
            "effective_weights": self.effective_weights,
            "representative_residual": self.representative_residual,
            "geometry": geometry,
            "intended": self.intended,
            "candidates": list(self.candidates),
            "probes": self.probes,
            "attempts": list(self.attempts),
            "warnings": list(self.warnings),
        })


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


def _identify(
    pr: Probes, row_labels: np.ndarray | None, *, tau: float, similarity: str,
    match_rtol: float,
) -> tuple[ModelFit, list[dict[str, Any]], bool]:
    n = pr.T.shape[1]
    parts = ["all"] + (["class-averaged", "negatives"] if _has_classes(row_labels) else [])
    fits = []
    for part in parts:
        logc = partition_log_weights(n, row_labels, part)
        fits.append(fit_model(pr, tau=tau, similarity=similarity, logc=logc, partition=part))
    hyps = [{"partition": f.partition, "residual": f.residual,
             "description": PARTITION_TEXT[f.partition]} for f in fits]
    ok = [f for f in fits if f.residual <= match_rtol]
    best = ok[0] if ok else min(fits, key=lambda f: f.residual)
    return best, hyps, bool(ok)


def _single_audit(
    loss_fn: Callable[..., Any], labels: np.ndarray | None, *, kind: str, call: str, n: int,
    tau: float, similarity: str, match_rtol: float, probes: int, seed: int,
) -> dict[str, Any]:
    """Probe and identify one (call, labels) combination; raises LossCallError."""
    pr = probe(loss_fn, labels, tau=tau, n=n, call=call, probes=probes, seed=seed)
    rows = _row_labels(labels, call, n)
    sim_source = "argument"
    if similarity == "auto":
        sim_source = "detected"
        similarity = "cosine" if pr.cosine_residual <= pr.euclidean_residual else "euclidean"
    fit, hyps, identified = _identify(pr, rows, tau=tau, similarity=similarity,
                                      match_rtol=match_rtol)
    return {"probes": pr, "rows": rows, "similarity": similarity, "sim_source": sim_source,
            "fit": fit, "hypotheses": hyps, "identified": identified, "labels": labels,
            "kind": kind, "call": call}


def _equality_only(state: dict[str, Any]) -> bool:
    """Whether the identified weighting uses the labels only through equality (so class labels
    would say more)."""
    rows = state["rows"]
    if rows is None or not _has_classes(rows):
        return False
    fit = state["fit"]
    codes = _equality_codes(rows)
    same = codes[:, None] == codes[None, :]
    off = ~np.eye(len(codes), dtype=bool)
    scale = max(float(np.abs(fit.S).max()), 1e-300)
    return bool(np.abs(fit.S[off & ~same]).max() <= 1e-9 * scale) if (off & ~same).any() \
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
    match_rtol: float = 1e-6,
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
        Temperature; default the loss's ``tau`` or ``temperature`` attribute.
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
        If ``tau`` is unknown, an argument is invalid, or the probes would not fit in memory.

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
        source = "attribute"
        if tau is None:
            raise InputError(
                "tau is needed: the gradient of a loss is linear in 1/tau only together with "
                "its weights, so the temperature must be known; pass tau (--tau) or give the "
                "loss a `tau` or `temperature` attribute"
            )
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
    from dgp import classify

    pr: Probes = chosen["probes"]
    fit: ModelFit = chosen["fit"]
    rows = chosen["rows"]
    similarity = chosen["similarity"]
    n = pr.T.shape[1]
    warnings: list[str] = []
    if pr.asymmetry > 1e-6:
        warnings.append(f"the recovered pair sensitivities are not symmetric (relative "
                        f"{pr.asymmetry:.2g}): the loss is not a function of the similarity "
                        "matrix alone")
    res_sim = pr.cosine_residual if similarity == "cosine" else pr.euclidean_residual
    if res_sim > 1e-6:
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
    base = dict(callable=name, n=n, tau=tau, tau_source=tau_source, similarity=similarity,
                similarity_source=chosen["sim_source"], call=chosen["call"],
                labels_kind=chosen["kind"], labels_note=_labels_note(chosen, states, attempts),
                row_labels=rows, hypotheses=tuple(chosen["hypotheses"]), match_rtol=match_rtol,
                probes=probes_info, attempts=tuple(attempts))
    if not chosen["identified"]:
        warnings.append(
            f"not identified: no w-InfoNCE (with any of the partitions {', '.join(PARTITIONS)}) "
            f"fits the gradients within match_rtol = {match_rtol:g} (best residual "
            f"{fit.residual:.2g}, partition {fit.partition}); its weights depend on the "
            "embeddings (as in SupCon's L_in, which is L_out only to first order), or each "
            "positive pair has its own denominator"
            + ("; a larger --match-rtol accepts it as that w-InfoNCE" if fit.residual < 1e-3
               else "")
        )
        return AuditReport(identified=False, fit=fit, anchor_weights=None,
                           reduction_scale=None, symmetric_part=None, effective_weights=None,
                           representative_residual=None, candidates=(), match=None,
                           closest=None, classification=None, geometry=None, intended=None,
                           warnings=tuple(warnings), **base)
    kappa = float(fit.m.mean())
    anchors = fit.m / kappa
    if (anchors <= 0).any():
        warnings.append("some recovered anchor weights are not positive: the temperature is "
                        "probably wrong")
    spread = float(anchors.max() / anchors.min()) if (anchors > 0).all() else math.inf
    if spread - 1.0 > max(1e-6, 10 * match_rtol):
        warnings.append(f"anchors weigh unequally (largest / smallest {spread:.4g}): the loss "
                        "is a w-InfoNCE with per-anchor weights")
    cands = _candidates(rows, "continuous" if chosen["kind"] in ("continuous", "given")
                        else "classes")
    results = []
    for cand in cands:
        err, value = _fit_candidate(fit, cand)
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
                                              if closest["error"] < 1e-3 else ""))
    if match is not None and (match["form"] in ("columns", "columns-rows")
                              or match["objective"] == "y-aware-colnorm"):
        warnings.append(_SLIP)
    logc = partition_log_weights(n, rows, fit.partition)
    S = fit.S.copy()
    atol = 10.0 * max(fit.residual, 1e-13) * float(np.abs(S).max())
    S[np.abs(S) <= atol] = 0.0  # zero weights are recovered up to rounding
    R, residual = effective_weights(S, fit.m, logc)
    if (S < 0).any():
        warnings.append("the recovered weighting has negative entries: the temperature is "
                        "probably wrong, or the loss rewards pushing some pairs apart")
    classification = None
    d = n if dim is None else check_int(dim, "dim", minimum=1)
    if R is not None and residual <= max(1e-6, 10.0 * match_rtol):
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
            ref = _intended_geometry(intended, rows, tau=tau, similarity=similarity, dim=d,
                                     seed=seed)
            inten = {"objective": intended.objective, "params": dict(intended.params),
                     "note": intended.note, **_geometry_gap(geo, ref, similarity)}
    elif geometry:
        warnings.append(f"predicted geometry not computed for N > {GEOMETRY_MAX_N}")
    return AuditReport(identified=True, fit=fit, anchor_weights=anchors,
                       reduction_scale=kappa, symmetric_part=fit.S / kappa,
                       effective_weights=R, representative_residual=residual,
                       candidates=tuple(results), match=match, closest=closest,
                       classification=classification, geometry=geo, intended=inten,
                       warnings=tuple(warnings), **base)

