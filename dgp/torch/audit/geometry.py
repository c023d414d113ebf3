"""What the recovered loss optimises: its effective weighting and predicted geometry."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import least_squares, minimize

from dgp.constants import (
    FIT_RESIDUAL_FLOOR,
    GEOMETRY_GTOL,
    GEOMETRY_MATCH_RTOL,
    LBFGS_CHANGE_TOL,
    ROUNDOFF_RTOL,
    SCALE_FLOOR,
    TORCH_LBFGS_GTOL,
)
from dgp.torch._compat import require_torch

torch = require_torch()
from dgp.torch.audit.model import (  # noqa: E402
    candidate_terms,
    equality_codes,
    has_classes,
    log_softmax_normaliser,
    partition_log_weights,
)

# --------------------------------------------------------------------------------------------
# effective weighting and geometry


def effective_weights(
    S: np.ndarray, m: np.ndarray, logc: np.ndarray, *, tol: float = FIT_RESIDUAL_FLOOR
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
    residual = float(np.linalg.norm(back - A) / max(np.linalg.norm(A), SCALE_FLOOR))
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
        lse = log_softmax_normaliser(logits)
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
                       options={"maxiter": 5000, "gtol": GEOMETRY_GTOL, "ftol": ROUNDOFF_RTOL})
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


def within_classes(S: np.ndarray, codes: np.ndarray) -> bool:
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
        opt = torch.optim.LBFGS([X], lr=1.0, max_iter=2000, tolerance_grad=TORCH_LBFGS_GTOL,
                                tolerance_change=LBFGS_CHANGE_TOL, history_size=50,
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
    if similarity == "cosine" and has_classes(row_labels):
        codes = equality_codes(row_labels)
        if within_classes(S, codes):
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


def intended_geometry(intended: Intended, row_labels: np.ndarray, *, tau: float,
                       similarity: str, dim: int | None, seed: int) -> dict[str, Any]:
    from dgp.objectives import registry

    if intended.objective == "simplex":
        from dgp._linalg import simplex_gram

        codes = equality_codes(row_labels)
        G = simplex_gram(int(codes.max()) + 1)[np.ix_(codes, codes)]
        return {"gram": G, "finite": True, "reason": "regular simplex of the classes"}
    rec = registry.get(intended.objective)
    source = equality_codes(row_labels) if rec.labels == "class" else row_labels
    W = rec.weights(rec.check_labels(source), rec.check_params(**intended.params))
    mc, Sc = candidate_terms(W, "rows")
    return predicted_geometry(Sc, mc, partition_log_weights(len(mc), None, "all"), row_labels,
                              tau=tau, similarity=similarity, dim=dim, seed=seed)


def geometry_gap(pred: dict[str, Any], ref: dict[str, Any], similarity: str) -> dict[str, Any]:
    """How far two optimal geometries are, modulo the shift of every similarity by one constant
    (``G + c(J - I)``), which changes no such loss: the squared correlation of the off-diagonal
    similarities, and the largest difference after the best shift (half the range of the
    differences)."""
    off = ~np.eye(len(pred["gram"]), dtype=bool)
    a, b = pred["gram"][off], ref["gram"][off]
    if a.std() > 0 and b.std() > 0:
        r2 = float(np.corrcoef(a, b)[0, 1] ** 2)
    else:
        r2 = 1.0 if np.ptp(a - b) <= GEOMETRY_MATCH_RTOL * max(np.abs(b).max(), 1.0) else 0.0
    gap = float(np.ptp(a - b) / 2.0)
    if similarity == "cosine":
        what = "largest difference of cosines, up to a common shift"
    else:
        gap /= max(float(np.abs(b).max()), SCALE_FLOOR)
        what = "largest difference of squared distances up to a common shift, relative"
    return {"similarity_r2": r2, "max_gap": gap, "gap_measure": what}


