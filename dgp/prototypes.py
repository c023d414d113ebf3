r"""Class prototypes of SupCon and Soft SupCon: closed forms and a certified solver.

Under SupCon every class collapses to one prototype :math:`\mu_c` on the unit sphere (verified
against the full ``N x N`` convex program in :mod:`dgp.optimum`), and the prototype Gram
:math:`G_{cc'} = \langle\mu_c, \mu_{c'}\rangle` solves the ``K x K`` problem over the elliptope
:math:`\mathcal{E}_K = \{G \succeq 0,\ \operatorname{diag} G = 1\}`

.. math::

    \min_{G \in \mathcal{E}_K} F(G), \qquad
    F(G) = \sum_c n_c\Big[\beta_c \sum_{c' \ne c} n_{c'}(1 - G_{cc'})
        + \log\Big((n_c - 1) + \sum_{c' \ne c} n_{c'}\, e^{(G_{cc'} - 1)/\tau}\Big)\Big],

with :math:`\beta_c = 0` for SupCon. For Soft SupCon (weight 1 within a class, :math:`\varepsilon`
across) a collapsed configuration has exactly this loss with
:math:`\beta_c = \varepsilon / (\tau Z_c)`, :math:`Z_c = (n_c - 1) + \varepsilon (N - n_c)`
(the row normaliser): the cross-entropy of anchor ``i`` in class ``c`` is
:math:`\sum_{c'} \varepsilon n_{c'} (1 - G_{cc'}) / (\tau Z_c) + \log(\dots)`. ``F`` is the
w-InfoNCE loss summed over all ``N`` anchors, in nats.

Closed forms (``method="auto"``):

* balanced SupCon: the regular simplex, :math:`G_{cc'} = -1/(K-1)`;
* Soft SupCon when realizable: the equiangular Gram with :math:`\rho = 1 + \tau\log\varepsilon`,
  for any class sizes, iff :math:`\rho \ge -1/(K-1)`, i.e.
  :math:`\tau \le \tau^* = K / ((K-1)(-\log\varepsilon))`; it attains the entropic bound;
* ``method="first-order"`` (SupCon only): the small-:math:`\tau` expansion around the simplex,

  .. math::

      G_{cc'} \approx -\frac{1}{K-1} - \tau\big(\log\omega_{cc'} - \overline{\log\omega}\big),
      \qquad \omega_{cc'} = n_c n_{c'}\Big(\frac{1}{n_c - 1} + \frac{1}{n_{c'} - 1}\Big),

  where :math:`\overline{\log\omega}` is the mean over the :math:`K(K-1)/2` pairs. Derivation: for
  small :math:`\tau`, :math:`F = \sum_c n_c \log(n_c - 1) + \sum_{c<c'} \omega_{cc'}
  e^{(G_{cc'} - 1)/\tau} + O(e^{-2\kappa/\tau})`, :math:`\kappa = K/(K-1)`. Write
  :math:`G = S + \tau H` with :math:`S` the simplex Gram; its kernel is :math:`\mathbb 1`, so to
  first order the elliptope is :math:`\mathbb 1^\top H \mathbb 1 \ge 0`, i.e.
  :math:`\sum_{c<c'} h_{cc'} \ge 0`. Minimising
  :math:`e^{-\kappa/\tau}\sum_{c<c'}\omega_{cc'} e^{h_{cc'}}` under that constraint gives
  :math:`\omega_{cc'} e^{h_{cc'}} = \lambda` with :math:`\sum h = 0`. The curvature of the PSD
  boundary is :math:`O(\tau)` in :math:`h`, hence the error in :math:`G` is :math:`O(\tau^2)`.
  Minority pairs have the smaller :math:`\omega` and so the larger cosine.

The certified solver (``method="numeric"``) works with the scaled objective
:math:`\hat F = (\tau / t)\,(F - \sum_c n_c\log(n_c - 1))`, :math:`t = e^{\log t}` the leading
exponential (:math:`\log t = -\kappa/\tau` for SupCon, :math:`\max(-\kappa/\tau, \log\varepsilon)`
for Soft SupCon), evaluated with ``log1p`` so that nothing underflows even at
:math:`\tau = 0.01` where :math:`e^{-\kappa/\tau} \approx 10^{-58}`. It runs Burer–Monteiro
(:math:`G = X^\top X`, unit columns) with L-BFGS, then a Newton polish on the reduced KKT system,
and proves the result with a KKT certificate computed from ``G`` alone (see
:func:`kkt_certificate`), never from a solver status.
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgp.errors import check_choice, check_positive, check_sizes, check_unit_interval

__all__ = [
    "METHODS",
    "Prototypes",
    "entropic_bound_prototypes",
    "first_order_gram",
    "kkt_certificate",
    "prototype_loss",
    "soft_supcon_rho",
    "soft_supcon_tau_star",
    "supcon_prototypes",
]

METHODS = ("auto", "numeric", "first-order")

#: smallest temperature the scaled objective evaluates without overflow (exp(kappa/tau) finite)
_TAU_MIN = 4e-3


@dataclass(frozen=True, eq=False)
class Prototypes:
    """The optimal prototype Gram of SupCon / Soft SupCon and how it was obtained.

    Attributes
    ----------
    gram : ndarray, shape (K, K)
        Prototype Gram matrix :math:`G_{cc'} = \\langle \\mu_c, \\mu_{c'} \\rangle`.
    loss : float
        w-InfoNCE loss of the collapsed configuration, summed over all ``N`` anchors (nats).
    method : str
        ``"closed-form"``, ``"numeric"`` (certified solver) or ``"first-order"``.
    kkt_residual : float or None
        ``max(primal, dual, complementarity)`` relative KKT residual (see
        :func:`kkt_certificate`); ``None`` for closed forms.
    objective : str
        ``"supcon"`` or ``"soft-supcon"``.
    sizes : tuple of int
        Class sizes ``n_1..n_K``.
    tau : float
        Temperature.
    eps : float or None
        Soft SupCon cross-class weight (``None`` for SupCon).
    entropic_bound : float
        :math:`\\sum_i H(p_i)` (nats) of the weighting.
    excess_loss : float
        ``loss - entropic_bound`` computed without cancellation for SupCon (it can be
        :math:`10^{-50}` at small ``tau`` while ``loss`` is of order ``N``).
    certificate : dict or None
        The KKT certificate of the numeric solver (``None`` for closed forms), and for
        ``first-order`` the smallest eigenvalue of its (slightly infeasible) Gram.
    """

    gram: np.ndarray
    loss: float
    method: str
    kkt_residual: float | None
    objective: str
    sizes: tuple[int, ...]
    tau: float
    eps: float | None
    entropic_bound: float = float("nan")
    excess_loss: float = float("nan")
    certificate: dict[str, Any] | None = field(default=None)

    def to_dict(self) -> dict[str, Any]:
        """The CONTRACT fields (plus ``entropic_bound``, ``excess_loss``, ``certificate``)."""
        return {
            "objective": self.objective,
            "sizes": list(self.sizes),
            "tau": self.tau,
            "eps": self.eps,
            "gram": self.gram.tolist(),
            "loss": self.loss,
            "method": self.method,
            "kkt_residual": self.kkt_residual,
            "entropic_bound": self.entropic_bound,
            "excess_loss": self.excess_loss,
            "certificate": self.certificate,
        }


# ----------------------------------------------------------------------------------------------
# closed forms
# ----------------------------------------------------------------------------------------------


def soft_supcon_rho(*, tau: float, eps: float) -> float:
    r"""Equiangular target cosine of Soft SupCon, :math:`\rho = 1 + \tau\log\varepsilon`.

    >>> round(soft_supcon_rho(tau=0.5, eps=math.exp(-1)), 12)
    0.5
    """
    tau = check_positive(tau, "tau")
    eps = check_unit_interval(eps, "eps")
    return 1.0 + tau * math.log(eps)


def soft_supcon_tau_star(*, K: int, eps: float) -> float:
    r"""Temperature :math:`\tau^* = K/((K-1)(-\log\varepsilon))` at which Soft SupCon's target is
    the centred regular simplex; realizable iff :math:`\tau \le \tau^*` (any class sizes).

    Raises
    ------
    ValueError
        If ``K < 2`` or ``eps`` is not in ``(0, 1)``.

    >>> round(soft_supcon_tau_star(K=2, eps=math.exp(-1)), 12)
    2.0
    """
    if isinstance(K, bool) or not isinstance(K, int | np.integer) or K < 2:
        raise ValueError(f"K must be an integer >= 2, got {K!r}")
    eps = check_unit_interval(eps, "eps")
    return K / ((K - 1) * (-math.log(eps)))


def first_order_gram(sizes: object, *, tau: float) -> np.ndarray:
    r"""First-order small-:math:`\tau` prototype Gram of SupCon under imbalance (module docstring).

    .. math::

        G_{cc'} = -\frac{1}{K-1} - \tau\Big(\log\omega_{cc'} - \frac{2}{K(K-1)}
            \sum_{a<b}\log\omega_{ab}\Big), \quad
        \omega_{cc'} = n_c n_{c'}\Big(\frac{1}{n_c-1} + \frac{1}{n_{c'}-1}\Big).

    It is returned exactly as derived: its smallest eigenvalue is :math:`O(\tau^2)` and may be
    slightly negative, and its error against the true optimum is :math:`O(\tau^2)`.

    Raises
    ------
    ValueError, TypeError
        As :func:`dgp.errors.check_sizes` and :func:`dgp.errors.check_positive`.

    >>> first_order_gram([3, 3, 3], tau=0.1).round(6)  # balanced: the simplex
    array([[ 1. , -0.5, -0.5],
           [-0.5,  1. , -0.5],
           [-0.5, -0.5,  1. ]])
    """
    n = check_sizes(sizes).astype(float)
    tau = check_positive(tau, "tau")
    K = n.size
    m = n - 1.0
    logw = np.log(np.outer(n, n)) + np.log(1.0 / m[:, None] + 1.0 / m[None, :])
    iu = np.triu_indices(K, 1)
    G = -1.0 / (K - 1) - tau * (logw - logw[iu].mean())
    np.fill_diagonal(G, 1.0)
    return G


def entropic_bound_prototypes(sizes: object, *, eps: float | None = None) -> float:
    r"""Entropic bound :math:`\sum_i H(p_i)` of SupCon (``eps=None``) or Soft SupCon, in nats.

    SupCon: :math:`\sum_c n_c\log(n_c - 1)`. Soft SupCon:
    :math:`\sum_c n_c[\log Z_c - \varepsilon (N - n_c)\log\varepsilon / Z_c]`.

    >>> round(entropic_bound_prototypes([3, 3]), 12) == round(6 * math.log(2), 12)
    True
    """
    n = check_sizes(sizes).astype(float)
    m = n - 1.0
    if eps is None:
        return float(np.sum(n * np.log(m)))
    eps = check_unit_interval(eps, "eps")
    N = n.sum()
    Z = m + eps * (N - n)
    return float(np.sum(n * (np.log(Z) - eps * (N - n) * math.log(eps) / Z)))


# ----------------------------------------------------------------------------------------------
# the scaled prototype problem
# ----------------------------------------------------------------------------------------------


class _Problem:
    """Data of the scaled prototype problem :math:`\\hat F = (\\tau/t)(F - \\sum n_c\\log m_c)`."""

    def __init__(self, n: np.ndarray, tau: float, eps: float | None) -> None:
        self.n = n.astype(float)
        self.m = self.n - 1.0
        self.K = K = n.size
        self.N = float(self.n.sum())
        self.tau = tau
        self.eps = eps
        self.kappa = K / (K - 1.0)
        log_t = -self.kappa / tau
        if eps is not None:
            log_t = max(log_t, math.log(eps))
        self.log_t = log_t
        self.t = math.exp(log_t)
        nn = np.outer(self.n, self.n)
        if eps is None:
            self.bh = np.zeros(K)  # tau * beta_c / t
        else:
            Z = self.m + eps * (self.N - self.n)
            self.bh = math.exp(math.log(eps) - log_t) / Z
        # b_cc' = n_c n_c' (bh_c + bh_c'): constant (linear) part of the scaled gradient, x2
        self.b = nn * (self.bh[:, None] + self.bh[None, :])
        np.fill_diagonal(self.b, 0.0)
        self.nn = nn
        self.F_ref = float(np.sum(self.n * np.log(self.m)))

    # -- objective -----------------------------------------------------------------------------
    def exps(self, G: np.ndarray) -> np.ndarray:
        """:math:`\\hat E_{cc'} = e^{(G_{cc'} - 1)/\\tau - \\log t}` with a zero diagonal."""
        X = (G - 1.0) / self.tau - self.log_t
        np.fill_diagonal(X, -np.inf)
        return np.exp(X)

    def value_grad(self, G: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Scaled value, symmetric scaled gradient (zero diagonal) and ``A * E`` (for scaling)."""
        E = self.exps(G)
        y = E @ self.n
        u = self.t * y / self.m
        phi = np.where(u > 1e-8, np.log1p(u) / np.where(u > 1e-8, u, 1.0), 1.0 - u / 2.0)
        f_exp = self.tau * float(np.sum(self.n * (y / self.m) * phi))
        one_minus = 1.0 - G
        np.fill_diagonal(one_minus, 0.0)
        f_lin = float(np.sum((self.n * self.bh) * (one_minus @ self.n)))
        D = self.m + self.t * y
        AE = self.nn * E * (1.0 / D[:, None] + 1.0 / D[None, :])
        g = 0.5 * (AE - self.b)
        np.fill_diagonal(g, 0.0)
        return f_exp + f_lin, g, AE

    def loss(self, G: np.ndarray) -> tuple[float, float]:
        """Loss ``F`` (nats) and ``F - sum n_c log(n_c - 1)`` without cancellation."""
        fh, _, _ = self.value_grad(G)
        excess_ref = fh * self.t / self.tau
        return self.F_ref + excess_ref, excess_ref


def prototype_loss(gram: object, sizes: object, *, tau: float, eps: float | None = None) -> float:
    r"""The prototype objective :math:`F(G)` (module docstring) in nats: the w-InfoNCE loss of the
    collapsed configuration with prototype Gram ``gram``, summed over all ``N`` anchors.

    Raises
    ------
    ValueError
        If ``gram`` is not a ``K x K`` finite matrix matching ``sizes``, or an argument is invalid.

    >>> round(prototype_loss([[1, -1], [-1, 1]], [2, 2], tau=1.0), 10) == round(
    ...     4 * math.log(1 + 2 * math.exp(-2)), 10)
    True
    """
    n = check_sizes(sizes)
    tau = check_positive(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    G = np.asarray(gram, dtype=float)
    if G.shape != (n.size, n.size) or not np.isfinite(G).all():
        raise ValueError(f"gram must be a finite {n.size} x {n.size} matrix, got shape {G.shape}")
    return _Problem(n, tau, eps).loss(0.5 * (G + G.T))[0]


# ----------------------------------------------------------------------------------------------
# KKT certificate
# ----------------------------------------------------------------------------------------------


def _certificate(prob: _Problem, G: np.ndarray) -> dict[str, Any]:
    G = 0.5 * (G + G.T)
    _, g, AE = prob.value_grad(G)
    y = np.einsum("ij,ji->i", G, g)  # y = diag(G g): the multiplier of diag G = 1
    S = g - np.diag(y)
    lam_S = np.linalg.eigvalsh(S)
    lam_G = np.linalg.eigvalsh(G)
    nu = max(0.5 * float(np.linalg.norm(AE)), 1e-300)  # scale: |exp part of the gradient|_F
    g_norm = max(float(lam_G[-1]), 1.0)
    r_primal = max(float(np.max(np.abs(np.diag(G) - 1.0))), max(0.0, -float(lam_G[0])))
    r_dual = max(0.0, -float(lam_S[0])) / nu
    r_comp = float(np.linalg.norm(G @ S)) / (nu * g_norm)
    # F(G) - F* <= <S, G> + K max(0, -lam_min(S)) (convexity; <S, G> = 0 when diag G = 1)
    gap_scaled = max(0.0, float(np.sum(S * G))) + prob.K * max(0.0, -float(lam_S[0]))
    tol_rank = 1e-9 * max(1.0, float(lam_G[-1]))
    return {
        "kkt_residual": max(r_primal, r_dual, r_comp),
        "primal_residual": r_primal,
        "dual_residual": r_dual,
        "complementarity_residual": r_comp,
        "min_eig_gram": float(lam_G[0]),
        "min_eig_dual": float(lam_S[0]),
        "rank": int(np.sum(lam_G > tol_rank)),
        "rank_tol": tol_rank,
        "gap_bound": gap_scaled * prob.t / prob.tau,
        "multipliers_scaled": y.tolist(),
        "log_scale": prob.log_t,
        "scaling": (
            "objective F_hat = (tau/t)(F - sum n_c log(n_c-1)), log t = log_scale; "
            "y = diag(G grad F_hat), S = grad F_hat - Diag(y); primal = max(|diag G - 1|, "
            "-lam_min(G)); dual = max(0, -lam_min(S)) / nu; complementarity = |G S|_F / "
            "(nu max(1, lam_max(G))); nu = |exp part of grad F_hat|_F; gap_bound (nats) bounds "
            "F(G) - min F"
        ),
    }


def kkt_certificate(
    gram: object, sizes: object, *, tau: float, eps: float | None = None
) -> dict[str, Any]:
    r"""KKT certificate of a prototype Gram for :math:`\min_{G\in\mathcal E_K} F(G)`.

    With :math:`\hat g = \nabla\hat F(G)` (the gradient of the scaled objective, a symmetric
    matrix), the multiplier of :math:`\operatorname{diag} G = 1` is taken as
    :math:`y = \operatorname{diag}(G\hat g)` and :math:`S = \hat g - \operatorname{Diag}(y)`.
    ``G`` is optimal iff :math:`G \in \mathcal E_K`, :math:`S \succeq 0` and :math:`GS = 0`.
    Reported residuals (all dimensionless):

    * ``primal_residual`` :math:`= \max(\|\operatorname{diag}G - 1\|_\infty, -\lambda_{\min}(G))`;
    * ``dual_residual`` :math:`= \max(0, -\lambda_{\min}(S)) / \nu`;
    * ``complementarity_residual`` :math:`= \|GS\|_F / (\nu \max(1, \lambda_{\max}(G)))`;

    with :math:`\nu = \tfrac12\|A\circ\hat E\|_F` the size of the exponential part of the
    scaled gradient (non-zero even at an interior optimum). ``kkt_residual`` is their maximum.
    ``gap_bound`` :math:`= (t/\tau)(\langle S, G\rangle + K\max(0, -\lambda_{\min}(S)))` bounds
    :math:`F(G) - \min F` in nats, by convexity.

    Raises
    ------
    ValueError
        If ``gram`` is not a finite ``K x K`` matrix or an argument is invalid.
    """
    n = check_sizes(sizes)
    tau = check_positive(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    G = np.asarray(gram, dtype=float)
    if G.shape != (n.size, n.size) or not np.isfinite(G).all():
        raise ValueError(f"gram must be a finite {n.size} x {n.size} matrix, got shape {G.shape}")
    return _certificate(_Problem(n, tau, eps), G)


# ----------------------------------------------------------------------------------------------
# certified solver
# ----------------------------------------------------------------------------------------------


def _factor(G: np.ndarray, r: int) -> np.ndarray:
    """``r x K`` factor of the PSD part of ``G`` (clipped eigenvalues, unit columns)."""
    lam, Q = np.linalg.eigh(0.5 * (G + G.T))
    lam = np.clip(lam, 0.0, None)
    idx = np.argsort(lam)[::-1][:r]
    V = (Q[:, idx] * np.sqrt(lam[idx])).T
    norms = np.linalg.norm(V, axis=0)
    V[:, norms == 0] = 1.0
    return V / np.linalg.norm(V, axis=0)


def _project_elliptope(G: np.ndarray) -> np.ndarray:
    V = _factor(G, G.shape[0])
    return V.T @ V


def _bm_solve(prob: _Problem, G0: np.ndarray, *, maxiter: int, gtol: float) -> np.ndarray:
    K = prob.K
    V0 = _factor(G0, K)
    r = V0.shape[0]

    def fun(v: np.ndarray) -> tuple[float, np.ndarray]:
        V = v.reshape(r, K)
        norms = np.linalg.norm(V, axis=0)
        X = V / norms
        G = X.T @ X
        f, g, _ = prob.value_grad(G)
        Gam = 2.0 * (X @ g)
        dots = np.sum(X * Gam, axis=0)
        return f, ((Gam - X * dots) / norms).ravel()

    v = _lbfgs(fun, V0.ravel(), maxiter=maxiter, gtol=gtol)
    V = v.reshape(r, K)
    X = V / np.linalg.norm(V, axis=0)
    return X.T @ X


def _lbfgs(
    fun: Any, x: np.ndarray, *, maxiter: int, gtol: float, memory: int = 8
) -> np.ndarray:
    """Plain L-BFGS (two-loop recursion, Armijo backtracking): O(memory * n) per iteration,
    unlike L-BFGS-B whose bound handling costs O(memory^2 * n) and dominates at K = 1000."""
    f, g = fun(x)
    s_hist: list[np.ndarray] = []
    y_hist: list[np.ndarray] = []
    stall = 0
    for _ in range(maxiter):
        if float(np.max(np.abs(g))) <= gtol:
            break
        d = -g
        alphas = []
        for s_k, y_k in zip(reversed(s_hist), reversed(y_hist), strict=True):
            a_k = float(s_k @ d) / float(y_k @ s_k)
            alphas.append(a_k)
            d -= a_k * y_k
        if s_hist:
            d *= (float(s_hist[-1] @ y_hist[-1]) / float(y_hist[-1] @ y_hist[-1]))
        else:
            d /= max(1.0, float(np.linalg.norm(g)))
        for (s_k, y_k), a_k in zip(zip(s_hist, y_hist, strict=True), reversed(alphas), strict=True):
            b_k = float(y_k @ d) / float(y_k @ s_k)
            d += (a_k - b_k) * s_k
        slope = float(g @ d)
        if slope >= 0:  # not a descent direction: restart with steepest descent
            s_hist.clear()
            y_hist.clear()
            d = -g / max(1.0, float(np.linalg.norm(g)))
            slope = float(g @ d)
        step = 1.0
        while True:
            x_new = x + step * d
            f_new, g_new = fun(x_new)
            if f_new <= f + 1e-4 * step * slope or step < 1e-12:
                break
            step *= 0.5
        s_k, y_k = x_new - x, g_new - g
        if float(s_k @ y_k) > 1e-16 * float(np.linalg.norm(s_k)) * float(np.linalg.norm(y_k)):
            s_hist.append(s_k)
            y_hist.append(y_k)
            if len(s_hist) > memory:
                s_hist.pop(0)
                y_hist.pop(0)
        stall = stall + 1 if f - f_new <= 1e-15 * max(1.0, abs(f)) else 0
        x, f, g = x_new, f_new, g_new
        if stall >= 5:
            break
    return x


def _from_dual(prob: _Problem, delta: np.ndarray, U: np.ndarray) -> tuple[np.ndarray, ...] | None:
    """Primal Gram from the reduced dual variables ``(delta, U)``; ``None`` off the domain."""
    D = prob.m + prob.t * delta
    if (D <= 0).any():
        return None
    H = 1.0 / (1.0 / D[:, None] + 1.0 / D[None, :])
    A = prob.nn / H
    M = 2.0 * (U @ U.T) + prob.b
    np.fill_diagonal(M, 1.0)
    if (M <= 0).any():
        return None
    Eh = M / A
    np.fill_diagonal(Eh, 0.0)
    G = 1.0 + prob.tau * (prob.log_t + np.log(M) - np.log(A))
    np.fill_diagonal(G, 1.0)
    return G, D, H, A, M, Eh


def _residual(prob: _Problem, delta: np.ndarray, U: np.ndarray) -> np.ndarray | None:
    out = _from_dual(prob, delta, U)
    if out is None:
        return None
    G, _, _, _, _, Eh = out
    return np.concatenate([delta - Eh @ prob.n, (G @ U).ravel()])


def _jacobian(prob: _Problem, delta: np.ndarray, U: np.ndarray) -> np.ndarray:
    G, D, H, A, M, Eh = _from_dual(prob, delta, U)  # type: ignore[misc]
    K, q = U.shape
    tau, t, n = prob.tau, prob.t, prob.n
    Q = tau / M
    np.fill_diagonal(Q, 0.0)
    Hz = H.copy()
    np.fill_diagonal(Hz, 0.0)
    invA = 1.0 / A
    np.fill_diagonal(invA, 0.0)
    J = np.zeros((K + K * q, K + K * q))
    # R1_c = delta_c - sum_c' n_c' Eh_cc'
    w = (n[None, :] * Eh * Hz).sum(axis=1)
    J[:K, :K] = np.diag(1.0 - t * w / D**2) - t * (n[None, :] * Eh * Hz) / D[None, :] ** 2
    # d R1_c / d U_al = -2 delta_ca sum_c' n_c' U_c'l / A_cc' - 2 n_a U_cl / A_ca
    nU = invA @ (n[:, None] * U)  # K x q
    JU = np.zeros((K, K, q))
    JU[np.arange(K), np.arange(K), :] -= 2.0 * nU
    JU -= 2.0 * (invA * n[None, :])[:, :, None] * U[:, None, :]
    J[:K, K:] = JU.reshape(K, K * q)
    # R2_ck = sum_c' G_cc' U_c'k
    # d/d U_al: G_ca d_kl + 2 d_ca T_c,lk + 2 Q_ca U_cl U_ak
    T = np.einsum("cd,dl,dk->clk", Q, U, U)
    J2 = np.einsum("ca,kl->ckal", G, np.eye(q))
    J2[np.arange(K), :, np.arange(K), :] += 2.0 * T.transpose(0, 2, 1)
    J2 += 2.0 * np.einsum("ca,cl,ak->ckal", Q, U, U)
    J[K:, K:] = J2.reshape(K * q, K * q)
    # d/d delta_a: tau t [d_ca / D_c^2 sum_c' H_cc' U_c'k + H_ca U_ak / D_a^2]
    Jd = np.zeros((K, q, K))
    Jd[np.arange(K), :, np.arange(K)] = (Hz @ U) / D[:, None] ** 2
    Jd += np.einsum("ca,ak->cka", Hz, U) / D[None, None, :] ** 2
    J[K:, :K] = tau * t * Jd.reshape(K * q, K)
    return J


def _newton_polish(prob: _Problem, G: np.ndarray, *, q: int, maxiter: int = 30) -> np.ndarray:
    """Newton on the reduced KKT system: ``S = U U^T`` (rank ``q``), ``G U = 0``, ``delta``."""
    _, g, _ = prob.value_grad(G)
    y = np.einsum("ij,ji->i", G, g)
    S = g - np.diag(y)
    lam, W = np.linalg.eigh(S)
    if q > 0:
        U = W[:, -q:] * np.sqrt(np.clip(lam[-q:], 0.0, None))
    else:
        U = np.zeros((prob.K, 0))
    delta = prob.exps(G) @ prob.n
    R = _residual(prob, delta, U)
    if R is None:
        return G
    norm_R = norm_0 = float(np.linalg.norm(R))
    for it in range(maxiter):
        if it == 8 and norm_R > 1e-3 * norm_0:
            break  # not in Newton's quadratic regime: wrong rank guess or a poor start
        if norm_R < 1e-14 * (1.0 + float(np.linalg.norm(delta))):
            break
        J = _jacobian(prob, delta, U)
        try:
            step = np.linalg.solve(J, -R) if q <= 1 else None
        except np.linalg.LinAlgError:
            step = None
        if step is None or not np.isfinite(step).all():
            step = np.linalg.lstsq(J, -R, rcond=1e-13)[0]
        a = 1.0
        while a > 1e-4:
            d_new = delta + a * step[: prob.K]
            U_new = U + a * step[prob.K :].reshape(U.shape)
            R_new = _residual(prob, d_new, U_new)
            if R_new is not None and np.linalg.norm(R_new) < (1 - 1e-4 * a) * norm_R:
                break
            a *= 0.5
        else:
            break
        delta, U, R = d_new, U_new, R_new
        norm_R = float(np.linalg.norm(R))
    out = _from_dual(prob, delta, U)
    return G if out is None else out[0]


def _dual_rank(prob: _Problem, G: np.ndarray) -> list[int]:
    """Candidate ranks ``q`` of ``S`` at an approximate optimum, cheapest first.

    Candidates: the eigenvalues above 1e-2, 1e-5 of the largest, and the position of the
    largest spectral gap among those above 1e-4; ranks whose Newton system would exceed 4000
    unknowns are skipped (the next Burer–Monteiro round sharpens the spectrum instead)."""
    _, g, AE = prob.value_grad(G)
    y = np.einsum("ij,ji->i", G, g)
    lam = np.linalg.eigvalsh(g - np.diag(y))[::-1]
    scale = max(0.5 * float(np.linalg.norm(AE)), 1e-300)
    pos = np.clip(lam / scale, 1e-300, None)
    top = float(pos[0])
    cands = [int(np.sum(pos > 1e-2 * top)), int(np.sum(pos > 1e-5 * top))]
    big = int(np.sum(pos > 1e-4 * top))
    if 1 <= big < prob.K:
        cands.append(int(np.argmax(pos[:big] / pos[1 : big + 1])) + 1)
    if top <= 1e-10:  # interior optimum: S = 0
        cands = [0]
    return sorted(q for q in set(cands) if 0 <= q < prob.K and prob.K * (q + 1) <= 4000)


def _solve_numeric(prob: _Problem, *, tol: float) -> tuple[np.ndarray, dict[str, Any]]:
    """Burer–Monteiro L-BFGS in rounds, each followed by a Newton polish; stop once certified."""
    K = prob.K
    simplex = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(simplex, 1.0)
    starts = [simplex]
    if prob.eps is None:
        starts.append(_project_elliptope(first_order_gram(prob.n.astype(int), tau=prob.tau)))
    G = min(starts, key=lambda G: prob.value_grad(G)[0])
    best, cert = G, _certificate(prob, G)
    for maxiter in (60, 400, 4000):
        G = _bm_solve(prob, best, maxiter=maxiter, gtol=1e-12)
        c_bm = _certificate(prob, G)
        if c_bm["kkt_residual"] < cert["kkt_residual"]:
            best, cert = G, c_bm
        if cert["kkt_residual"] <= tol:
            break
        for q in _dual_rank(prob, G):
            G_new = _newton_polish(prob, G, q=q)
            c_new = _certificate(prob, G_new)
            if c_new["kkt_residual"] < cert["kkt_residual"]:
                best, cert = G_new, c_new
            if cert["kkt_residual"] <= tol:
                break
        if cert["kkt_residual"] <= tol:
            break
    return best, cert


def _blas_limit(K: int) -> contextlib.AbstractContextManager[Any]:
    """One BLAS thread: threaded OpenBLAS on these matrix sizes (K <= ~1000) is up to 100x
    slower on a loaded machine, and barely faster on an idle one. Uses ``threadpoolctl`` when
    it is installed."""
    del K
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it the solver is correct, only slower under load
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


# ----------------------------------------------------------------------------------------------
# public entry point
# ----------------------------------------------------------------------------------------------


def supcon_prototypes(
    sizes: object,
    *,
    tau: float,
    eps: float | None = None,
    method: str = "auto",
    tol: float = 1e-10,
) -> Prototypes:
    r"""Optimal class-prototype Gram of SupCon (``eps=None``) or Soft SupCon.

    Solves :math:`\min_{G \succeq 0,\ \operatorname{diag}G = 1} F(G)` (module docstring).

    Parameters
    ----------
    sizes : sequence of int
        Class sizes, each ``>= 2``, at least two classes.
    tau : float
        Temperature ``> 0`` (the certified solver is validated on ``[0.01, 10]``).
    eps : float, optional
        Soft SupCon cross-class weight in ``(0, 1)``; ``None`` for SupCon.
    method : {"auto", "numeric", "first-order"}
        ``auto``: the closed form where it is exact (balanced SupCon; realizable Soft SupCon),
        else the certified solver. ``numeric``: always the certified solver. ``first-order``:
        the small-:math:`\tau` formula of :func:`first_order_gram` (SupCon only).
    tol : float
        Target ``kkt_residual`` of the certified solver (reported, not assumed).

    Returns
    -------
    Prototypes

    Raises
    ------
    ValueError, TypeError
        On invalid sizes, ``tau <= 0``, ``eps`` outside ``(0, 1)``, an unknown ``method``,
        ``first-order`` with ``eps``, or ``tau`` below ``0.004`` for the numeric solver.

    Examples
    --------
    >>> p = supcon_prototypes([5, 5, 5], tau=0.1)
    >>> p.method, float(p.gram[0, 1].round(12))
    ('closed-form', -0.5)
    >>> q = supcon_prototypes([2, 5, 20], tau=0.1)
    >>> q.method, q.kkt_residual < 1e-8, bool(q.gram[0, 1] > q.gram[1, 2])
    ('numeric', True, True)
    """
    n = check_sizes(sizes)
    tau = check_positive(tau, "tau")
    if eps is not None:
        eps = check_unit_interval(eps, "eps")
    check_choice(method, METHODS, "method")
    tol = check_unit_interval(tol, "tol")
    K = n.size
    objective = "supcon" if eps is None else "soft-supcon"
    prob = _Problem(n, tau, eps)
    bound = entropic_bound_prototypes(n, eps=eps)
    common = {"objective": objective, "sizes": tuple(int(v) for v in n), "tau": tau, "eps": eps}

    def _result(G: np.ndarray, meth: str, cert: dict[str, Any] | None, kkt: float | None):
        loss, excess_ref = prob.loss(G)
        excess = excess_ref if eps is None else loss - bound
        return Prototypes(
            gram=G,
            loss=loss,
            method=meth,
            kkt_residual=kkt,
            entropic_bound=bound,
            excess_loss=excess,
            certificate=cert,
            **common,
        )

    if method == "first-order":
        if eps is not None:
            raise ValueError(
                "method='first-order' is the small-tau formula of SupCon; drop eps (got "
                f"eps={eps}) or use method='auto'"
            )
        G = first_order_gram(n, tau=tau)
        cert = {"min_eig_gram": float(np.linalg.eigvalsh(G)[0]), "order": "O(tau^2) error"}
        return _result(G, "first-order", cert, None)

    if method == "auto":
        if eps is None and (n == n[0]).all():
            G = np.full((K, K), -1.0 / (K - 1))
            np.fill_diagonal(G, 1.0)
            return _result(G, "closed-form", None, None)
        if eps is not None:
            rho = 1.0 + tau * math.log(eps)
            if rho >= -1.0 / (K - 1) - 1e-12:
                G = np.full((K, K), max(rho, -1.0 / (K - 1)))
                np.fill_diagonal(G, 1.0)
                res = _result(G, "closed-form", None, None)
                # attains the bound: report the exact excess (zero) rather than rounding noise
                return Prototypes(**{**res.__dict__, "loss": bound, "excess_loss": 0.0})

    if tau < _TAU_MIN:
        raise ValueError(
            f"tau = {tau} is below {_TAU_MIN}, where the certified solver's scaled objective "
            "overflows; use method='first-order' (error O(tau^2))"
        )
    with _blas_limit(K):
        G, cert = _solve_numeric(prob, tol=tol)
    return _result(G, "numeric", cert, cert["kkt_residual"])
