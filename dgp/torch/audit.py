r"""Recover the weighting a contrastive loss really optimises, from one autograd call.

At orthonormal embeddings (``d >= N``, rows of ``Z`` orthonormal) every latent similarity off the
diagonal is equal, so every softmax is uniform, :math:`q_{ij} = 1/(N-1)`. For a w-InfoNCE loss
with row distribution ``p`` and similarity ``s = Z Z^T / tau`` (or the Euclidean one),

.. math::

    \frac{\partial L}{\partial s_{ij}} = q_{ij} - p_{ij} =: g_{ij},\qquad
    \langle \nabla_{z_i} L, z_j\rangle = \frac{g_{ij} + g_{ji}}{\tau}\quad (i \ne j),

so one backward pass gives :math:`M_{ij} = \langle \nabla_{z_i} L, z_j\rangle` and hence
:math:`A = p + p^\top = 2/(N-1) - \tau M` off the diagonal. **Only the symmetric part is
identifiable, and only it matters**: since ``s`` is symmetric,
:math:`L(Z) = -\tfrac12 \sum_{ij} (p_{ij} + p_{ji}) s_{ij} + \sum_i \mathrm{LSE}_{k \ne i}(s_{ik})`,
so the loss, hence its minimisers, depend on ``p`` only through ``p + p^T``. Two more facts are
used:

- the loss value at this point is :math:`\kappa N \log(N-1)` whatever ``p``; it reveals the
  reduction (``kappa = 1`` for a sum over anchors, ``1/N`` for a mean), which is divided out;
- mixing ``p`` with the uniform distribution is indistinguishable, at this point, from changing
  ``tau``: the temperature must be known (``tau=`` or an attribute ``tau``/``temperature`` of the
  loss).

The audit then (1) compares ``A`` with the symmetric parts of the known objectives built from the
same labels, fitting their parameter (``sigma``, ``eps``, ``label_tau``) — which catches the
column-normalisation slip of public y-Aware code, ``W /= W.sum(1)`` (numpy/torch broadcast the
row sums along columns); (2) finds the *reversible representative*: a symmetric ``S`` whose row
distribution :math:`S_{ij}/\sum_k S_{ik}` has symmetric part ``A`` (a fixed point, solved by
iteration), the weighting that :func:`dgp.classify` can certify; and (3) classifies it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares, minimize_scalar

from dgp.errors import check_choice, check_dim, check_positive
from dgp.torch._compat import require_torch

torch = require_torch()

__all__ = [
    "AuditReport",
    "audit_loss",
    "default_labels",
    "recover_symmetric_part",
    "reversible_representative",
    "symmetric_part",
]

SIMILARITY_CHOICES = ("auto", "cosine", "euclidean")
LABEL_KINDS = ("continuous", "classes")


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


def default_labels(kind: str, n: int, *, seed: int = 0) -> np.ndarray:
    """Deterministic audit labels: ``n`` continuous 1-D labels (irregularly spaced, so that the
    kernel degrees differ) or ``n`` class labels in ``max(2, n // 4)`` unequal classes.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``n < 4``.
    """
    check_choice(kind, LABEL_KINDS, "labels")
    n = check_dim(n, "n")
    if n < 4:
        raise ValueError(f"n must be >= 4 for an audit, got {n}")
    rng = np.random.default_rng(seed)
    if kind == "continuous":
        return np.sort(rng.uniform(-1.0, 1.0, n))
    k = max(2, n // 4)
    sizes = np.full(k, 2)
    for extra in rng.integers(0, k, n - 2 * k):
        sizes[extra] += 1
    return np.repeat(np.arange(k), sizes)


@dataclass
class Recovered:
    """What one backward pass at orthonormal embeddings tells about a loss."""

    A: np.ndarray  # p + p^T, zero diagonal, assuming unit anchor weights (a w-InfoNCE)
    B: np.ndarray  # tau * sym(M) / kappa: what is identified whatever the model
    value: float
    reduction_scale: float
    gradient_asymmetry: float
    radial: float
    similarity: str


def recover_symmetric_part(
    loss_fn: Callable[..., Any],
    labels: Any,
    *,
    tau: float,
    similarity: str = "auto",
    seed: int = 0,
) -> Recovered:
    """One autograd call of ``loss_fn(Z, labels)`` at random orthonormal ``Z`` (``N x N``).

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(embeddings, labels) -> scalar tensor``.
    labels : array_like or Tensor
        One label per sample; ``N = len(labels)``.
    tau : float
        The loss's temperature.
    similarity : {"auto", "cosine", "euclidean"}
        ``"auto"``: Euclidean when the gradient has a radial component (a cosine loss normalises
        its inputs, so its gradient is tangent to the sphere), else cosine.
    seed : int
        Seeds the random orthogonal matrix.

    Raises
    ------
    TypeError, ValueError
        If the loss does not return a finite scalar, or gives no gradient.
    """
    tau = check_positive(tau, "tau")
    check_choice(similarity, SIMILARITY_CHOICES, "similarity")
    lab = torch.as_tensor(np.asarray(labels))
    n = int(lab.shape[0])
    rng = np.random.default_rng(seed)
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    Q = Q * np.sign(np.diag(R))
    Z = torch.tensor(Q, dtype=torch.float64, requires_grad=True)
    out = loss_fn(Z, lab)
    if not isinstance(out, torch.Tensor) or out.numel() != 1:
        raise TypeError("the loss must return a scalar tensor (use a sum or mean reduction)")
    value = float(out.detach())
    if not math.isfinite(value):
        raise ValueError(f"the loss is {value} at orthonormal embeddings")
    (grad,) = torch.autograd.grad(out, Z)
    M = (grad @ Z.detach().T).numpy()  # M_ij = <grad_i L, z_j>
    scale = value / (n * math.log(n - 1))
    if not scale > 0:
        raise ValueError(
            f"the loss value {value:g} at orthonormal embeddings is not N log(N-1) times a "
            "positive constant: it is not a w-InfoNCE (or a multiple of one)"
        )
    M = M / scale
    off = ~np.eye(n, dtype=bool)
    asym = float(np.abs(M - M.T)[off].max() / max(np.abs(M[off]).max(), 1e-300))
    radial = float(np.abs(np.diag(M)).max() / max(np.abs(M[off]).max(), 1e-300))
    if similarity == "auto":
        similarity = "euclidean" if radial > 1e-6 else "cosine"
    Ms = (M + M.T) / 2.0
    B = np.where(off, -tau * Ms, 0.0)
    A = np.where(off, 2.0 / (n - 1) + B, 0.0)
    return Recovered(A, B, value, scale, asym, radial, similarity)


def reversible_representative(
    A: np.ndarray, *, tol: float = 1e-12, max_iter: int = 10000
) -> tuple[np.ndarray, float]:
    r"""A symmetric ``S >= 0`` whose row distribution ``p`` has ``p + p^T = A``.

    With ``r_i = sum_k S_ik``, :math:`S_{ij} = A_{ij} r_i r_j / (r_i + r_j)` and the fixed point
    :math:`\sum_j A_{ij} r_j / (r_i + r_j) = 1` is solved by least squares in ``log r``. ``S`` is
    scaled to a maximum of 1. Returns ``S`` and the relative residual of ``p + p^T = A``.

    Raises
    ------
    ValueError
        If ``A`` has a negative entry or a zero row.
    """
    A = np.array(A, dtype=float)
    np.fill_diagonal(A, 0.0)
    if (A < 0).any():
        raise ValueError("A has a negative entry; it is not the symmetric part of a distribution")
    if (A.sum(axis=1) <= 0).any():
        raise ValueError("A has a zero row")
    n = A.shape[0]

    def resid(x: np.ndarray) -> np.ndarray:
        r = np.exp(np.append(x, 0.0))  # r_n = 1 fixes the scale
        return (A * (r[None, :] / (r[:, None] + r[None, :]))).sum(axis=1) - 1.0

    sol = least_squares(resid, np.zeros(n - 1), xtol=tol, ftol=tol, gtol=tol, max_nfev=max_iter)
    r = np.exp(np.append(sol.x, 0.0))
    S = A * (r[:, None] * r[None, :]) / (r[:, None] + r[None, :])
    P = S / S.sum(axis=1, keepdims=True)
    residual = float(np.linalg.norm(P + P.T - A) / np.linalg.norm(A))
    return S / S.max(), residual


# --------------------------------------------------------------------------------------------
# candidates


def _colnorm_public(y: np.ndarray, sigma: float) -> np.ndarray:
    """Public y-Aware code: kernel, diagonal zeroed, then ``W /= W.sum(1)`` (a column norm)."""
    from dgp.weights import gaussian_kernel_weights

    K = gaussian_kernel_weights(y, sigma=sigma)  # zero diagonal
    return K / K.sum(1)


# A candidate: (parameter name or None, builder of W, how the loss uses W).
# "rows": a w-InfoNCE, p = W / W.sum(1, keepdims=True), every anchor weighs 1 (dgp's convention).
# "raw":  the cross-entropy  -sum_ij W_ij log q_ij  with W as given: anchor i weighs m_i = sum_j
#         W_ij, and p_i = W_i / m_i; this is what code that forgets to re-normalise computes.
Candidate = tuple[str | None, Callable[[float], np.ndarray], str]


def _candidates(labels: np.ndarray) -> dict[str, Candidate]:
    from dgp.weights import (
        column_normalised_y_aware_weights,
        gaussian_kernel_weights,
        soft_supcon_weights,
        supcon_weights,
        xclr_weights,
    )

    y = np.asarray(labels)
    if y.dtype.kind in "iub" and (y.ndim == 1 or y.shape[1] == 1):
        return {
            "supcon": (None, lambda _: supcon_weights(y), "rows"),
            "soft-supcon": ("eps", lambda e: soft_supcon_weights(y, eps=e), "rows"),
        }
    yf = y.astype(float)
    out: dict[str, Candidate] = {
        "y-aware": ("sigma", lambda s: gaussian_kernel_weights(yf, sigma=s), "rows"),
        "y-aware-colnorm": (
            "sigma",
            lambda s: column_normalised_y_aware_weights(yf, sigma=s),
            "rows",
        ),
        "y-aware-colnorm-public": ("sigma", lambda s: _colnorm_public(yf, s), "raw"),
    }
    y2 = yf[:, None] if yf.ndim == 1 else yf
    if y2.shape[1] >= 2 and (np.linalg.norm(y2, axis=1) > 0).all():
        out["x-clr"] = ("label_tau", lambda t: xclr_weights(y2, label_tau=t), "rows")
    return out


def _model_B(W: np.ndarray, mode: str) -> np.ndarray:
    """The identified matrix ``B_ij = (W_ij + W_ji) - (m_i + m_j)/(N-1)`` of a candidate model
    (``W`` row-normalised for "rows", scaled to a mean anchor weight 1 for "raw")."""
    from dgp.errors import check_weights

    A = check_weights(W)
    n = A.shape[0]
    A = A / A.sum(axis=1, keepdims=True) if mode == "rows" else A * (n / A.sum())
    m = A.sum(axis=1)
    B = A + A.T - (m[:, None] + m[None, :]) / (n - 1)
    np.fill_diagonal(B, 0.0)
    return B


def _fit_candidate(
    B: np.ndarray, cand: Candidate, labels: np.ndarray
) -> tuple[float, float | None]:
    param, build, mode = cand
    nB = np.linalg.norm(B)

    def err(value: float | None) -> float:
        try:
            return float(np.linalg.norm(_model_B(build(value), mode) - B) / nB)
        except (ValueError, FloatingPointError):  # e.g. a kernel so narrow a row has no mass
            return math.inf

    if param is None:
        return err(None), None
    if param == "eps":
        lo, hi = math.log(1e-6), math.log(1 - 1e-9)
    elif param == "sigma":
        y = np.asarray(labels, dtype=float).reshape(len(labels), -1)
        d = np.sqrt(((y[:, None, :] - y[None, :, :]) ** 2).sum(-1))
        pos = d[d > 0]
        lo, hi = math.log(pos.min() / 2), math.log(pos.max() * 10)
    else:
        lo, hi = math.log(1e-2), math.log(1e2)
    grid = np.linspace(lo, hi, 41)
    with np.errstate(all="ignore"):
        errs = [err(math.exp(g)) for g in grid]
        k = int(np.argmin(errs))
        a, b = grid[max(k - 1, 0)], grid[min(k + 1, len(grid) - 1)]
        res = minimize_scalar(
            lambda g: err(math.exp(g)), bounds=(a, b), method="bounded", options={"xatol": 1e-10}
        )
    if res.fun <= errs[k]:
        return float(res.fun), math.exp(float(res.x))
    return float(errs[k]), math.exp(float(grid[k]))


_SLIP = (
    "the loss optimises the column-normalised y-Aware kernel: `W /= W.sum(1)` broadcasts the row "
    "sums along the last axis, dividing column j by the degree of sample j; normalise rows with "
    "`W / W.sum(1, keepdims=True)` (torch: `W.sum(1, keepdim=True)`)"
)


@dataclass
class AuditReport:
    """What :func:`audit_loss` found. ``to_dict()`` gives the JSON of ``dgp audit --json``."""

    callable: str
    n: int
    tau: float
    tau_source: str
    similarity: str
    reduction_scale: float
    gradient_asymmetry: float
    symmetric_part: np.ndarray
    effective_weights: np.ndarray
    representative_residual: float
    candidates: list[dict[str, Any]]
    match: dict[str, Any] | None
    classification: dict[str, Any] | None
    warnings: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str | None:
        return None if self.classification is None else self.classification.get("verdict")

    def to_dict(self) -> dict[str, Any]:
        return {
            "callable": self.callable,
            "n": self.n,
            "tau": self.tau,
            "tau_source": self.tau_source,
            "similarity": self.similarity,
            "reduction_scale": self.reduction_scale,
            "gradient_asymmetry": self.gradient_asymmetry,
            "match": self.match,
            "verdict": self.verdict,
            "classification": self.classification,
            "candidates": self.candidates,
            "warnings": self.warnings,
            "representative_residual": self.representative_residual,
            "symmetric_part": self.symmetric_part,
            "effective_weights": self.effective_weights,
        }


def _find_tau(loss_fn: Any) -> float | None:
    for name in ("tau", "temperature"):
        value = getattr(loss_fn, name, None)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
        if isinstance(value, torch.Tensor) and value.numel() == 1:
            return float(value)
    return None


def audit_loss(
    loss_fn: Callable[..., Any],
    *,
    labels: Any = None,
    n: int = 12,
    tau: float | None = None,
    similarity: str = "auto",
    dim: int | None = None,
    name: str = "loss",
    match_rtol: float = 1e-6,
    seed: int = 0,
) -> AuditReport:
    """Recover, match and classify the weighting that ``loss_fn`` optimises (see module docs).

    Parameters
    ----------
    loss_fn : callable
        ``loss_fn(embeddings, labels) -> scalar``.
    labels : array_like, optional
        Labels passed to the loss; default ``default_labels("continuous", n)``.
    n : int
        Number of samples when ``labels`` is not given.
    tau : float, optional
        Temperature; default the loss's ``tau`` or ``temperature`` attribute.
    similarity : {"auto", "cosine", "euclidean"}
    dim : int, optional
        Embedding dimension for the classification (default ``N``).
    name : str
        How to name the loss in the report.
    match_rtol : float
        A candidate matches when the relative Frobenius error of its ``p + p^T`` is below this.
    seed : int

    Returns
    -------
    AuditReport

    Raises
    ------
    TypeError, ValueError
        If ``tau`` is unknown, the loss misbehaves at orthonormal embeddings, or an argument is
        invalid.
    """
    if labels is None:
        labels = default_labels("continuous", n)
    y = np.asarray(labels)
    if y.ndim not in (1, 2) or y.shape[0] < 4:
        raise ValueError(f"labels must hold at least 4 samples (1-D or N x p), got {y.shape}")
    source = "argument"
    if tau is None:
        tau = _find_tau(loss_fn)
        source = "attribute"
        if tau is None:
            raise ValueError(
                "tau is needed: at orthonormal embeddings a change of temperature is "
                "indistinguishable from mixing the weights with the uniform distribution; pass "
                "--tau (or give the loss a `tau` or `temperature` attribute)"
            )
    tau = check_positive(tau, "tau")
    rec = recover_symmetric_part(loss_fn, y, tau=tau, similarity=similarity, seed=seed)
    warnings: list[str] = []
    if rec.gradient_asymmetry > 1e-6:
        warnings.append(
            f"the gradient is not symmetric (relative {rec.gradient_asymmetry:.2g}): the loss is "
            "not a w-InfoNCE of a symmetric similarity; the recovered matrix is its symmetric part"
        )
    A = rec.A
    neg = A < -1e-9 * np.abs(A).max()
    if neg.any():
        warnings.append(
            "the recovered p + p^T has negative entries: tau is probably wrong, or the loss is not "
            "a w-InfoNCE"
        )
    A = np.maximum(A, 0.0)
    cands = _candidates(y)
    candidates = []
    for obj, cand in cands.items():
        err, value = _fit_candidate(rec.B, cand, y)
        candidates.append(
            {"objective": obj, "parameter": cand[0], "value": value, "error": err, "use": cand[2]}
        )
    candidates.sort(key=lambda c: c["error"])
    match = candidates[0] if candidates and candidates[0]["error"] <= match_rtol else None
    if match is not None and match["objective"].startswith("y-aware-colnorm"):
        warnings.append(_SLIP)
    try:
        S, residual = reversible_representative(A)
    except ValueError as exc:
        warnings.append(f"no reversible representative: {exc}")
        S, residual = A, math.nan
    from dgp import classify

    d = check_dim(dim if dim is not None else y.shape[0], "dim")
    if match is not None:
        # Gibbs holds anchor by anchor, so whatever the anchor weights the bound is attained iff
        # q_i = p_i for all i: the matched weighting decides realizability.
        W_class = cands[match["objective"]][1](match["value"])
        classified = f"matched weighting {match['objective']}"
    elif residual <= 1e-8:
        W_class = S
        classified = "reversible representative of p + p^T"
    else:
        W_class = None
        classified = None
        warnings.append(
            "no known objective matches and p + p^T has no reversible representative "
            f"(residual {residual:.2g}); classification skipped"
        )
    classification = None
    if W_class is not None:
        classification = classify(W_class, similarity=rec.similarity, tau=tau, dim=d).to_dict()
        classification["classified"] = classified
        Wm = np.asarray(W_class, dtype=float)
        classification["weights_asymmetry"] = float(
            np.linalg.norm(Wm - Wm.T) / max(np.linalg.norm(Wm), 1e-300)
        )
    return AuditReport(
        callable=name,
        n=int(y.shape[0]),
        tau=tau,
        tau_source=source,
        similarity=rec.similarity,
        reduction_scale=rec.reduction_scale,
        gradient_asymmetry=rec.gradient_asymmetry,
        symmetric_part=A,
        effective_weights=S,
        representative_residual=residual,
        candidates=candidates,
        match=match,
        classification=classification,
        warnings=warnings,
    )
