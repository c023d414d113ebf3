"""The model of the audit (numpy only): the w-InfoNCE gradient model fitted to the probes
(:func:`fit_model`), and the objectives of the registry it is matched against."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize_scalar

from dgp.constants import (
    EPS_FIT_RANGE,
    LABEL_TAU_FIT_RANGE,
    PARAM_FIT_XATOL,
    SCALE_FLOOR,
    TAU_SEARCH_POINTS,
    TAU_SEARCH_RANGE,
)
from dgp.errors import InputError, check_choice
from dgp.torch._compat import require_torch

torch = require_torch()
from dgp.torch.audit.probe import (  # noqa: E402
    Probes,
    similarities,
)
from dgp.torch.audit.vocabulary import (  # noqa: E402
    CROSS_VIEW,
    FIRST_VIEW_ANCHORS,
    FORMS,
    NAMED_FORMS,
    PARTITIONS,
)

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
    if partition in ("class-averaged", "negatives") and row_labels is None:
        raise InputError(f"partition {partition!r} needs class labels")
    if partition in CROSS_VIEW + FIRST_VIEW_ANCHORS and n % 2:
        raise InputError(f"partition {partition!r} needs two views (an even n), got n = {n}")
    if partition in ("all", "one-view"):
        logc = np.zeros((n, n))
    elif partition in CROSS_VIEW:
        view = np.arange(n) >= n // 2
        logc = np.where(view[:, None] == view[None, :], -np.inf, 0.0)
    else:
        y = equality_codes(row_labels)
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


def partition_anchors(n: int, partition: str) -> np.ndarray:
    """Which of ``n`` rows are anchors of the loss under ``partition`` (bool mask): all, or the
    first view's (rows ``0..n/2-1``) for :data:`FIRST_VIEW_ANCHORS`."""
    check_choice(partition, PARTITIONS, "partition")
    if partition in FIRST_VIEW_ANCHORS:
        return np.arange(n) < n // 2
    return np.ones(n, dtype=bool)


def softmax_rows(logits: np.ndarray) -> np.ndarray:
    top = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - top)
    return e / e.sum(axis=1, keepdims=True)


def log_softmax_normaliser(logits: np.ndarray) -> np.ndarray:
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
    probes: Probes, *, tau: float, similarity: str, logc: np.ndarray, partition: str = "all",
    anchors: np.ndarray | None = None,
) -> ModelFit:
    r"""Fit :math:`T^{(p)}_{ij} = m_i q^{(p)}_{ij} + m_j q^{(p)}_{ji} - S_{ij}` by least squares.

    ``S`` is eliminated (:math:`S = m_i\bar q_{ij} + m_j \bar q_{ji} - \bar T_{ij}`, bars are
    means over probes), leaving the ``N x N`` normal equations
    :math:`H m = g` with :math:`H_{kk} = \sum_{p,j} D_{kj}^2`,
    :math:`H_{kj} = \sum_p D_{kj} D_{jk}`, :math:`g_k = \sum_{p,j} E_{kj} D_{kj}`
    (:math:`D = q - \bar q`, :math:`E = T - \bar T`). ``anchors`` (a bool mask) fixes
    :math:`m_i = 0` off the anchors: the normal equations are solved on the anchors alone.
    """
    n = probes.T.shape[1]
    a = np.ones(n, dtype=bool) if anchors is None else np.asarray(anchors, dtype=bool)
    Q = np.stack([
        softmax_rows(similarities(Zp, tau=tau, similarity=similarity) + logc)
        for Zp in probes.points
    ])
    Qb, Tb = Q.mean(axis=0), probes.T.mean(axis=0)
    D, E = Q - Qb, probes.T - Tb
    H = np.einsum("pkj,pjk->kj", D, D)
    H[np.diag_indices(n)] = np.einsum("pkj,pkj->k", D, D)
    g = np.einsum("pkj,pkj->k", E, D)
    m = np.zeros(n)
    m[a], *_ = np.linalg.lstsq(H[np.ix_(a, a)], g[a], rcond=None)
    lam = np.abs(np.linalg.eigvalsh((H[np.ix_(a, a)] + H[np.ix_(a, a)].T) / 2.0))
    condition = float(lam.max() / max(lam.min(), SCALE_FLOOR))
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
    spread = float(np.ptp(diff) / max(np.abs(probes.values).max(), SCALE_FLOOR))
    return ModelFit(partition, m, S, resid, spread, float(diff.mean()), condition)


def with_tau(probes: Probes, tau: float, probe_tau: float) -> Probes:
    """The probes as if taken at temperature ``tau``: ``T`` was computed as
    ``probe_tau * gradient``, so it scales by ``tau / probe_tau``."""
    from dataclasses import replace

    return replace(probes, T=probes.T * (tau / probe_tau))


def estimate_tau(
    probes: Probes, *, similarity: str, logc: np.ndarray, partition: str = "all",
    anchors: np.ndarray | None = None,
) -> tuple[float, ModelFit]:
    r"""The temperature at which the gradient model fits the probes best, and that fit.

    A wrong temperature scales ``T`` (absorbed by the scale of ``(m, S)``) but also moves every
    softmax :math:`q^{(p)}` of the model, which no ``(m, S)`` absorbs once the probes differ:
    the residual vanishes at the loss's temperature only. It is minimised over
    :math:`\log\tau` on :data:`~dgp.constants.TAU_SEARCH_RANGE` (a grid, then Brent's method
    on the squared residual, smooth at its zero). ``probes`` may be taken at any temperature.
    """

    def fit_at(log_tau: float) -> ModelFit:
        return fit_model(probes, tau=math.exp(log_tau), similarity=similarity, logc=logc,
                         partition=partition, anchors=anchors)

    best = best_log_tau(lambda g: fit_at(g).residual)
    return math.exp(best), fit_at(best)


def best_log_tau(residual: Callable[[float], float]) -> float:
    """The :math:`\\log\\tau` on :data:`~dgp.constants.TAU_SEARCH_RANGE` where ``residual``
    (a function of :math:`\\log\\tau`) is least: the best of a grid, then Brent's method on
    its square around it, whichever is lower (non-finite residuals count as infinite)."""
    grid = np.linspace(math.log(TAU_SEARCH_RANGE[0]), math.log(TAU_SEARCH_RANGE[1]),
                       TAU_SEARCH_POINTS)
    with np.errstate(all="ignore"):
        values = np.array([residual(g) for g in grid])
        values[~np.isfinite(values)] = np.inf
        k = int(np.argmin(values))
        lo, hi = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
        opt = minimize_scalar(lambda g: residual(g) ** 2, bounds=(lo, hi), method="bounded",
                              options={"xatol": PARAM_FIT_XATOL})
    return float(opt.x) if opt.fun <= values[k] ** 2 else float(grid[k])


def _named_sensitivities(s: np.ndarray, positives: np.ndarray, form: str) -> np.ndarray:
    """``A[i, j] = d f_i / d s_ij`` of one anchor's term of a named non-InfoNCE form, at the
    similarity matrix ``s`` (diagonal unused); ``positives`` is the bool matrix of positive
    pairs (diagonal false)."""
    n = len(s)
    off = ~np.eye(n, dtype=bool)
    logits = np.where(off, s, -np.inf)
    q = softmax_rows(logits)
    if form == "L_in":  # f_i = LSE_{k != i} s_ik - LSE_{p in P(i)} s_ip
        r = softmax_rows(np.where(positives, s, -np.inf))
        return q - r
    # "one-positive": f_i = mean_p [-s_ip + log(e^{s_ip} + sum_{k in N(i)} e^{s_ik})]
    negatives = off & ~positives
    top = logits.max(axis=1, keepdims=True)
    e = np.exp(logits - top)
    D = (e * negatives).sum(axis=1, keepdims=True)
    count = positives.sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        denom = np.where(positives, e + D, np.inf)  # one denominator per positive pair
        own = np.where(positives, e / denom, 0.0)  # sigma_ip
        inv = np.where(positives, 1.0 / denom, 0.0).sum(axis=1, keepdims=True)
    A = np.where(positives, own - 1.0, 0.0) + np.where(negatives, e * inv, 0.0)
    return A / np.maximum(count, 1)


def fit_named_form(
    probes: Probes, *, tau: float, similarity: str, positives: np.ndarray, form: str
) -> tuple[np.ndarray, float]:
    r"""Fit a named non-InfoNCE form, :math:`T_{ij} = m_i A_{ij} + m_j A_{ji}` with the form's
    own sensitivities ``A`` (:data:`NAMED_FORMS`), by least squares in the anchor weights
    ``m`` alone; returns ``(m, relative residual)``."""
    check_choice(form, tuple(NAMED_FORMS), "form")
    n = probes.T.shape[1]
    iu = np.triu_indices(n, 1)
    rows, rhs = [], []
    for Zp, T in zip(probes.points, probes.T, strict=True):
        A = _named_sensitivities(similarities(Zp, tau=tau, similarity=similarity), positives,
                                 form)
        X = np.zeros((len(iu[0]), n))
        X[np.arange(len(iu[0])), iu[0]] = A[iu]
        X[np.arange(len(iu[0])), iu[1]] = A.T[iu]
        rows.append(X)
        rhs.append(T[iu])
    X, y = np.vstack(rows), np.concatenate(rhs)
    m, *_ = np.linalg.lstsq(X, y, rcond=None)
    return m, float(np.linalg.norm(X @ m - y) / max(np.linalg.norm(y), SCALE_FLOOR))


def estimate_named_form(
    probes: Probes, *, similarity: str, positives: np.ndarray, form: str
) -> tuple[float, float]:
    """The temperature at which a named form fits best, and its residual (as
    :func:`estimate_tau`)."""

    def res(log_tau: float) -> float:
        return fit_named_form(probes, tau=math.exp(log_tau), similarity=similarity,
                              positives=positives, form=form)[1]

    best = best_log_tau(res)
    return math.exp(best), res(best)


def model_loss(s: np.ndarray, m: np.ndarray, S: np.ndarray, logc: np.ndarray) -> float:
    r""":math:`-\sum_{i<j} S_{ij}s_{ij} + \sum_i m_i \mathrm{LSE}_{k\ne i}(s_{ik} + \log c_{ik})`
    for a similarity matrix ``s`` (its diagonal unused)."""
    lin = -0.5 * float(np.sum(S * np.where(np.eye(len(m), dtype=bool), 0.0, s)))
    return lin + float(np.dot(m, log_softmax_normaliser(s + logc)))


# --------------------------------------------------------------------------------------------
# candidates from the registry


def candidate_terms(W: np.ndarray, form: str, anchors: np.ndarray | None = None
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Anchor weights ``m`` and symmetric part ``S`` of a loss that uses ``W`` in ``form``.

    ``"rows"``: the w-InfoNCE, ``p = W / W.sum(1, keepdims=True)``, ``m = 1``;
    ``"raw"``: :math:`-\\sum_{ij} w_{ij}\\log q_{ij}` with ``W`` as given, ``m = W.sum(1)``;
    ``"columns"``: the same after ``W /= W.sum(1)`` (the broadcast divides column ``j`` by
    the sum of row ``j``); ``"columns-rows"``: that, then rows normalised. ``anchors`` (a bool
    mask) keeps the terms of those anchors only (a loss over the first view's anchors).

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
    keep = np.ones(A.shape[0]) if anchors is None else np.asarray(anchors, dtype=float)
    if form in ("rows", "columns-rows"):
        P = keep[:, None] * (A / A.sum(axis=1, keepdims=True))
        return keep, P + P.T
    A = keep[:, None] * A
    return A.sum(axis=1), A + A.T


def symmetric_part(W: np.ndarray) -> np.ndarray:
    """``p + p^T`` for the row distribution ``p`` of ``W`` (zero diagonal).

    Raises
    ------
    ValueError
        As :func:`dgp.engine.target.check_weights`.
    """
    from dgp.weights import row_distribution

    P = row_distribution(W)
    return P + P.T


def equality_codes(labels: np.ndarray) -> np.ndarray:
    y = np.asarray(labels)
    y2 = y.reshape(len(y), -1)
    _, codes = np.unique(y2, axis=0, return_inverse=True)
    return codes.reshape(-1)


def has_classes(row_labels: np.ndarray | None) -> bool:
    if row_labels is None:
        return False
    counts = np.bincount(equality_codes(row_labels))
    return bool(counts.size >= 2 and (counts >= 2).any())


@dataclass(frozen=True)
class Candidate:
    objective: str
    form: str
    param: str | None
    labels: Any  # validated registry Labels

    def weights(self, value: float | None) -> np.ndarray:
        from dgp.objectives import registry

        rec = registry.get(self.objective)
        params = rec.check_params(**({} if self.param is None else {self.param: value}))
        return rec.weights(self.labels, params)


def candidates(row_labels: np.ndarray | None, kind: str) -> list[Candidate]:
    """Registry objectives whose labels fit, in every form."""
    from dgp.errors import ParameterError
    from dgp.objectives import registry

    if row_labels is None:
        return []
    out = []
    codes = equality_codes(row_labels)
    for rec in registry.OBJECTIVES.values():
        source = codes if rec.labels == "class" else row_labels
        if rec.labels == "continuous" and kind != "continuous":
            continue
        try:
            lab = rec.check_labels(source)
        except (ParameterError, ValueError, TypeError):
            continue  # e.g. singleton classes for SupCon, 1-D labels for X-CLR
        param = rec.params[0] if rec.params else None
        # a column-normalised slip is already the columns form of the objective it slips from
        forms = ("rows",) if rec.intended is not None else FORMS
        out += [Candidate(rec.name, f, param, lab) for f in forms]
    return out


def param_bounds(cand: Candidate) -> tuple[float, float]:
    if cand.param == "eps":
        return math.log(EPS_FIT_RANGE[0]), math.log(EPS_FIT_RANGE[1])
    if cand.param == "sigma":
        y = np.asarray(cand.labels.values, dtype=float).reshape(cand.labels.n, -1)
        d = np.sqrt(((y[:, None, :] - y[None, :, :]) ** 2).sum(-1))
        pos = d[d > 0]
        return math.log(pos.min() / 2), math.log(pos.max() * 10)
    return math.log(LABEL_TAU_FIT_RANGE[0]), math.log(LABEL_TAU_FIT_RANGE[1])


def match_error(m: np.ndarray, S: np.ndarray, mc: np.ndarray, Sc: np.ndarray) -> float:
    kappa = m.sum() / mc.sum()
    e_s = np.linalg.norm(kappa * Sc - S) / max(np.linalg.norm(S), SCALE_FLOOR)
    e_m = np.linalg.norm(kappa * mc - m) / max(np.linalg.norm(m), SCALE_FLOOR)
    return float(max(e_s, e_m))


def fit_candidate(fit: ModelFit, cand: Candidate) -> tuple[float, float | None]:
    from dgp.errors import ParameterError

    anchors = partition_anchors(len(fit.m), fit.partition)

    def err(value: float | None) -> float:
        try:
            W = cand.weights(value)
            mc, Sc = candidate_terms(W, cand.form, anchors)
        except (ParameterError, ValueError, FloatingPointError):
            return math.inf  # e.g. a kernel so narrow that a row has no mass
        if not (np.isfinite(Sc).all() and np.isfinite(mc).all() and mc.sum() > 0):
            return math.inf
        return match_error(fit.m, fit.S, mc, Sc)

    if cand.param is None:
        return err(None), None
    lo, hi = param_bounds(cand)
    grid = np.linspace(lo, hi, 41)
    with np.errstate(all="ignore"):
        errs = [err(math.exp(g)) for g in grid]
        k = int(np.argmin(errs))
        if not math.isfinite(errs[k]):
            return math.inf, None
        a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
        res = minimize_scalar(lambda g: err(math.exp(g)), bounds=(a, b), method="bounded",
                              options={"xatol": PARAM_FIT_XATOL})
    if res.fun <= errs[k]:
        return float(res.fun), math.exp(float(res.x))
    return float(errs[k]), math.exp(float(grid[k]))


