r"""Closed forms of SupCon and Soft SupCon prototypes, and the nearest point of the elliptope.

* balanced SupCon: the regular simplex, :math:`G_{cc'} = -1/(K-1)`;
* Soft SupCon when realizable: the equiangular Gram with :math:`\rho = 1 + \tau\log\varepsilon`,
  for any class sizes, iff :math:`\rho \ge -1/(K-1)`, i.e.
  :math:`\tau \le \tau^* = K / ((K-1)(-\log\varepsilon))`; it attains the entropic bound;
* balanced Soft SupCon above :math:`\tau^*`: the regular simplex (the convex objective is
  invariant under class permutations and strictly convex, so its minimiser is equiangular; along
  the equiangular line it is convex with its unconstrained minimum at
  :math:`\rho < -1/(K-1)`, outside the feasible segment, whose end it therefore is);
* SupCon under imbalance to first order in :math:`\tau` (an approximation):

  .. math::

      G_{cc'} \approx -\frac{1}{K-1} - \tau\big(\log\omega_{cc'} - \overline{\log\omega}\big),
      \qquad \omega_{cc'} = n_c n_{c'}\Big(\frac{1}{n_c - 1} + \frac{1}{n_{c'} - 1}\Big),

  where :math:`\overline{\log\omega}` is the mean over the :math:`K(K-1)/2` pairs. Derivation:
  for small :math:`\tau`, :math:`F = \sum_c n_c \log(n_c - 1) + \sum_{c<c'} \omega_{cc'}
  e^{(G_{cc'} - 1)/\tau} + O(e^{-2\kappa/\tau})`, :math:`\kappa = K/(K-1)`. Write
  :math:`G = S + \tau H` with :math:`S` the simplex Gram; its kernel is :math:`\mathbb 1`, so to
  first order the elliptope is :math:`\mathbb 1^\top H \mathbb 1 \ge 0`, i.e.
  :math:`\sum_{c<c'} h_{cc'} \ge 0`. Minimising :math:`e^{-\kappa/\tau}\sum_{c<c'}\omega_{cc'}
  e^{h_{cc'}}` under that constraint gives :math:`\omega_{cc'} e^{h_{cc'}} = \lambda` with
  :math:`\sum h = 0`. The curvature of the PSD boundary is :math:`O(\tau)` in :math:`h`, hence
  the error in :math:`G` is :math:`O(\tau^2)` — and the formula's smallest eigenvalue is
  :math:`O(\tau^2)` too, possibly negative: it need not be a Gram matrix at all, which is why
  :func:`nearest_elliptope` exists.
"""

from __future__ import annotations

import math

import numpy as np

from dgp.constants import LOG1P_SERIES_BELOW, NEAREST_ELLIPTOPE_TOL, SCALE_FLOOR
from dgp.errors import (
    ParameterError,
    check_class_sizes,
    check_positive,
    check_sizes,
    check_square,
    check_unit_interval,
)

__all__ = [
    "METHODS",
    "balanced_soft_supcon_simplex_loss",
    "balanced_supcon_loss",
    "entropic_bound_prototypes",
    "equiangular_gram",
    "first_order_gram",
    "nearest_elliptope",
    "soft_supcon_rho",
    "soft_supcon_tau_star",
]

METHODS = ("auto", "numeric", "first-order")


def equiangular_gram(K: int, rho: float) -> np.ndarray:
    """The ``K x K`` Gram with unit diagonal and every off-diagonal entry ``rho``.

    >>> equiangular_gram(3, -0.5)[0].tolist()
    [1.0, -0.5, -0.5]
    """
    G = np.full((K, K), float(rho))
    np.fill_diagonal(G, 1.0)
    return G


def soft_supcon_rho(*, tau: float, eps: float) -> float:
    r"""Equiangular target cosine of Soft SupCon, :math:`\rho = 1 + \tau\log\varepsilon`.

    Raises
    ------
    ValueError, TypeError
        If ``tau <= 0`` or ``eps`` is not in ``(0, 1)``.

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
        raise ParameterError("K", f"must be an integer >= 2, got {K!r}")
    eps = check_unit_interval(eps, "eps")
    return K / ((K - 1) * (-math.log(eps)))


def first_order_gram(sizes: object, *, tau: float) -> np.ndarray:
    r"""First-order small-:math:`\tau` prototype Gram of SupCon under imbalance (an
    approximation, module docstring).

    .. math::

        G_{cc'} = -\frac{1}{K-1} - \tau\Big(\log\omega_{cc'} - \frac{2}{K(K-1)}
            \sum_{a<b}\log\omega_{ab}\Big), \quad
        \omega_{cc'} = n_c n_{c'}\Big(\frac{1}{n_c-1} + \frac{1}{n_{c'}-1}\Big).

    Returned exactly as derived: its smallest eigenvalue is :math:`O(\tau^2)` and may be
    negative (then it is no Gram matrix; :func:`nearest_elliptope` gives the nearest one), and
    its error against the true optimum is :math:`O(\tau^2)`.

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
    :math:`\sum_c n_c[\log Z_c - \varepsilon (N - n_c)\log\varepsilon / Z_c]`,
    :math:`Z_c = (n_c - 1) + \varepsilon(N - n_c)`.

    Raises
    ------
    ValueError, TypeError
        On invalid sizes or ``eps``.

    >>> round(entropic_bound_prototypes([3, 3]), 12) == round(6 * math.log(2), 12)
    True
    """
    eps = None if eps is None else check_unit_interval(eps, "eps")
    # Soft SupCon takes a singleton (its anchor has positives across classes)
    n = check_class_sizes(sizes, positives_across=eps is not None, batch=False)
    return class_entropic_bound(n, eps)


def class_entropic_bound(sizes: np.ndarray, eps: float | None) -> float:
    """:func:`entropic_bound_prototypes` of validated sizes and ``eps``, singletons of a batch
    problem included: a SupCon singleton's anchor has no positive, no row and no term."""
    n = np.asarray(sizes, dtype=float)
    m = n - 1.0
    if eps is None:
        return float(np.sum(n[m > 0] * np.log(m[m > 0])))
    N = n.sum()
    Z = m + eps * (N - n)
    return float(np.sum(n * (np.log(Z) - eps * (N - n) * math.log(eps) / Z)))


def _psd_part(A: np.ndarray) -> np.ndarray:
    lam, U = np.linalg.eigh(0.5 * (A + A.T))
    return (U * np.clip(lam, 0.0, None)) @ U.T


def nearest_elliptope(
    A: object, *, tol: float = NEAREST_ELLIPTOPE_TOL, maxiter: int = 1000
) -> tuple[np.ndarray, bool, int]:
    r"""The nearest point of the elliptope :math:`\{G \succeq 0, \operatorname{diag}G = 1\}` to a
    symmetric ``A`` in the Frobenius norm (the nearest correlation matrix).

    .. math::

        \min_G \|G - A\|_F \quad\text{s.t.}\quad G \succeq 0,\ \operatorname{diag} G = 1,

    by alternating projections with Dykstra's correction (Higham 2002), stopped when an
    iteration moves the point by less than ``tol`` (relative). The returned matrix is exactly
    feasible (eigenvalues clipped, diagonal rescaled: a Gram of unit vectors).

    Returns
    -------
    gram : ndarray
    converged : bool
    iterations : int

    Raises
    ------
    ValueError
        If ``A`` is not a finite square matrix.

    >>> G, ok, _ = nearest_elliptope([[1.0, 1.2], [1.2, 1.0]])
    >>> bool(ok), G.round(9).tolist()
    (True, [[1.0, 1.0], [1.0, 1.0]])
    """
    A = check_square(A, "A")
    A = 0.5 * (A + A.T)
    Y = A.copy()
    np.fill_diagonal(Y, 1.0)
    dS = np.zeros_like(A)
    converged = False
    it = 0
    for it in range(1, maxiter + 1):  # noqa: B007 - the count is returned
        R = Y - dS
        X = _psd_part(R)
        dS = X - R
        Y_new = X.copy()
        np.fill_diagonal(Y_new, 1.0)
        step = float(np.linalg.norm(Y_new - Y)) / max(1.0, float(np.linalg.norm(Y)))
        Y = Y_new
        if step <= tol:
            converged = True
            break
    G = _psd_part(Y)
    d = np.sqrt(np.clip(np.diag(G), SCALE_FLOOR, None))
    G = G / np.outer(d, d)
    return 0.5 * (G + G.T), converged, it


def balanced_supcon_loss(n0: int, K: int, tau: float) -> tuple[float, float, float]:
    """Loss, excess and log-excess at the simplex, balanced SupCon, without any K x K array."""
    N = n0 * K
    kappa = K / (K - 1.0)
    log_x = math.log(n0 * (K - 1.0) / (n0 - 1.0)) - kappa / tau
    x = math.exp(log_x) if log_x > -745 else 0.0
    l1p = math.log1p(x) if x > 0 else 0.0
    log_l1p = (log_x + math.log(l1p / x) if x > LOG1P_SERIES_BELOW
               else log_x + math.log1p(-0.5 * x))
    excess = N * l1p
    return N * math.log(n0 - 1.0) + excess, excess, math.log(N) + log_l1p


def balanced_soft_supcon_simplex_loss(n0: int, K: int, tau: float, eps: float) -> float:
    r"""Soft SupCon's loss at the regular simplex, ``K`` classes of ``n0`` samples (no K x K
    array): each anchor sees :math:`n_0 - 1` samples at cosine 1 with target :math:`1/Z` and
    :math:`n_0(K-1)` at cosine :math:`-1/(K-1)` with target :math:`\varepsilon/Z`,
    :math:`Z = (n_0 - 1) + \varepsilon n_0 (K - 1)`."""
    s = -1.0 / (K - 1)
    Z = (n0 - 1) + eps * n0 * (K - 1)
    lin = ((n0 - 1) + eps * n0 * (K - 1) * s) / (tau * Z)
    lse = 1.0 / tau + math.log((n0 - 1) + n0 * (K - 1) * math.exp((s - 1.0) / tau))
    return n0 * K * (lse - lin)

