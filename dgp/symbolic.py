r"""Symbolic (sympy) formulas of the SupCon family, with symbolic class sizes, :math:`\tau` and
:math:`\varepsilon`.

* :func:`balanced_simplex_cosine`, :func:`balanced_loss`: balanced SupCon, the regular simplex;
* :func:`soft_supcon_rho`, :func:`soft_supcon_condition`, :func:`soft_supcon_tau_star`: Soft
  SupCon's equiangular target, its feasibility condition and the temperature of the centred
  simplex (free of the class sizes);
* :func:`pair_weight`, :func:`first_order_gram`: SupCon under imbalance to first order in
  :math:`\tau` (derivation in :mod:`dgp.prototypes`);
* :func:`prototype_objective`, :func:`kkt_system`: the prototype problem and its exact KKT system;
* :func:`latex_lines`: all of them in LaTeX (what ``dgp supcon --latex`` prints).

>>> balanced_simplex_cosine()
-1/(K - 1)
>>> soft_supcon_tau_star()
-K/((K - 1)*log(varepsilon))
"""

from __future__ import annotations

from dataclasses import dataclass

import sympy as sp

from dgp.errors import InputError

__all__ = [
    "K",
    "KKTSystem",
    "balanced_loss",
    "balanced_simplex_cosine",
    "eps",
    "first_order_gram",
    "kkt_system",
    "latex_lines",
    "n",
    "pair_weight",
    "prototype_objective",
    "size_symbols",
    "soft_supcon_condition",
    "soft_supcon_rho",
    "soft_supcon_tau_star",
    "tau",
]

#: temperature, Soft SupCon weight, number of classes, common class size (balanced case)
tau = sp.Symbol("tau", positive=True)
eps = sp.Symbol("varepsilon", positive=True)
K = sp.Symbol("K", integer=True, positive=True)
n = sp.Symbol("n", integer=True, positive=True)


def size_symbols(k: int) -> tuple[sp.Symbol, ...]:
    """Symbolic class sizes ``n_1, ..., n_k``.

    Raises
    ------
    ValueError
        If ``k < 2``.
    """
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise InputError(f"k must be an integer >= 2 (number of classes), got {k!r}")
    return tuple(sp.Symbol(f"n_{c + 1}", integer=True, positive=True) for c in range(k))


def balanced_simplex_cosine() -> sp.Expr:
    r"""Off-diagonal prototype cosine of balanced SupCon: :math:`-1/(K-1)`."""
    return -1 / (K - 1)


def balanced_loss() -> sp.Expr:
    r"""SupCon loss at the regular simplex, ``K`` classes of size ``n``, summed over
    :math:`N = nK` anchors: :math:`nK\log\big((n-1) + n(K-1)e^{-K/((K-1)\tau)}\big)`."""
    return n * K * sp.log((n - 1) + n * (K - 1) * sp.exp(-K / ((K - 1) * tau)))


def soft_supcon_rho() -> sp.Expr:
    r"""Soft SupCon's equiangular target cosine :math:`\rho = 1 + \tau\log\varepsilon` (any
    class sizes)."""
    return 1 + tau * sp.log(eps)


def soft_supcon_tau_star() -> sp.Expr:
    r""":math:`\tau^* = K/((K-1)(-\log\varepsilon))`: there :math:`\rho = -1/(K-1)`, the centred
    regular simplex. It does not involve the class sizes."""
    return K / ((K - 1) * (-sp.log(eps)))


def soft_supcon_condition() -> sp.Rel:
    r"""Feasibility of the equiangular target: :math:`\rho \ge -1/(K-1)` (the equiangular
    ``K x K`` Gram :math:`(1-\rho)I + \rho\mathbb 1\mathbb 1^\top` is PSD), equivalently
    :math:`\tau \le \tau^*` since :math:`\log\varepsilon < 0`."""
    return sp.Ge(soft_supcon_rho(), balanced_simplex_cosine())


def pair_weight(n_c: sp.Expr, n_d: sp.Expr) -> sp.Expr:
    r"""Weight of :math:`e^{(G_{cd} - 1)/\tau}` in the small-:math:`\tau` loss:
    :math:`\omega_{cd} = n_c n_d (1/(n_c - 1) + 1/(n_d - 1))`."""
    return n_c * n_d * (1 / (n_c - 1) + 1 / (n_d - 1))


def first_order_gram(k: int) -> sp.Matrix:
    r"""First-order small-:math:`\tau` SupCon prototype Gram for ``k`` classes of symbolic sizes:
    :math:`G_{cd} = -1/(k-1) - \tau(\log\omega_{cd} - \overline{\log\omega})`.

    Raises
    ------
    ValueError
        If ``k < 2``.
    """
    ns = size_symbols(k)
    pairs = [(a, b) for a in range(k) for b in range(a + 1, k)]
    mean_log = sum(sp.log(pair_weight(ns[a], ns[b])) for a, b in pairs) / len(pairs)

    def entry(c: int, d: int) -> sp.Expr:
        if c == d:
            return sp.Integer(1)
        return sp.Rational(-1, k - 1) - tau * (sp.log(pair_weight(ns[c], ns[d])) - mean_log)

    return sp.Matrix(k, k, entry)


def _gram_symbols(k: int) -> sp.Matrix:
    def entry(c: int, d: int) -> sp.Expr:
        if c == d:
            return sp.Integer(1)
        a, b = min(c, d), max(c, d)
        return sp.Symbol(f"G_{a + 1}{b + 1}", real=True)

    return sp.Matrix(k, k, entry)


def prototype_objective(k: int, *, soft: bool = False) -> sp.Expr:
    r"""The prototype objective :math:`F(G)` (nats, summed over anchors) with symbolic sizes,
    :math:`\tau`, (:math:`\varepsilon`) and off-diagonal Gram symbols ``G_ab`` (``a < b``):

    .. math::

        F = \sum_c n_c\Big[\beta_c\sum_{d \ne c} n_d (1 - G_{cd})
            + \log\Big((n_c - 1) + \sum_{d \ne c} n_d e^{(G_{cd} - 1)/\tau}\Big)\Big],

    :math:`\beta_c = 0` (SupCon) or :math:`\varepsilon/(\tau Z_c)`,
    :math:`Z_c = (n_c - 1) + \varepsilon\sum_{d \ne c} n_d` (Soft SupCon).

    Raises
    ------
    ValueError
        If ``k < 2``.
    """
    ns = size_symbols(k)
    G = _gram_symbols(k)
    F = sp.Integer(0)
    for c in range(k):
        others = [d for d in range(k) if d != c]
        inner = (ns[c] - 1) + sum(ns[d] * sp.exp((G[c, d] - 1) / tau) for d in others)
        term = sp.log(inner)
        if soft:
            Z = (ns[c] - 1) + eps * sum(ns[d] for d in others)
            term += eps / (tau * Z) * sum(ns[d] * (1 - G[c, d]) for d in others)
        F += ns[c] * term
    return F


@dataclass(frozen=True)
class KKTSystem:
    r"""The exact KKT system of :math:`\min F(G)` s.t. :math:`G \succeq 0`,
    :math:`\operatorname{diag}G = 1`.

    Attributes
    ----------
    gram : sympy.Matrix
        ``G`` with unit diagonal and symbols ``G_ab`` off it (primal feasibility of the diagonal is
        built in; :math:`G \succeq 0` remains).
    multipliers : tuple of sympy.Symbol
        :math:`y_c`, multipliers of :math:`G_{cc} = 1`.
    objective : sympy.Expr
        :math:`F(G)`.
    gradient : sympy.Matrix
        :math:`\nabla F` as a symmetric matrix: :math:`\tfrac12\partial F/\partial G_{ab}` off the
        diagonal, 0 on it (``F`` does not involve the diagonal).
    dual : sympy.Matrix
        :math:`S = \nabla F - \operatorname{Diag}(y)`; dual feasibility is :math:`S \succeq 0`.
    complementarity : sympy.Matrix
        :math:`GS`, which must vanish.
    """

    gram: sp.Matrix
    multipliers: tuple[sp.Symbol, ...]
    objective: sp.Expr
    gradient: sp.Matrix
    dual: sp.Matrix
    complementarity: sp.Matrix


def kkt_system(k: int, *, soft: bool = False) -> KKTSystem:
    r"""The KKT system of the ``k``-class prototype problem: :math:`G \succeq 0`,
    :math:`\operatorname{diag}G = 1`, :math:`S = \nabla F(G) - \operatorname{Diag}(y) \succeq 0`,
    :math:`GS = 0`.

    Raises
    ------
    ValueError
        If ``k < 2``.
    """
    G = _gram_symbols(k)
    F = prototype_objective(k, soft=soft)
    y = tuple(sp.Symbol(f"y_{c + 1}", real=True) for c in range(k))

    def grad(c: int, d: int) -> sp.Expr:
        return sp.Integer(0) if c == d else sp.diff(F, G[c, d]) / 2

    g = sp.Matrix(k, k, grad)
    S = g - sp.diag(*y)
    return KKTSystem(
        gram=G, multipliers=y, objective=F, gradient=g, dual=S, complementarity=G * S
    )


def latex_lines(k: int | None = None) -> list[tuple[str, str]]:
    r"""``(title, LaTeX)`` pairs of every formula of this module (``k`` classes for the
    first-order Gram and the KKT system; ``None`` leaves them general).

    Raises
    ------
    ValueError
        If ``k`` is given and ``< 2``.
    """
    c, d = sp.symbols("c d", integer=True)
    n_c, n_d = sp.Symbol("n_c", positive=True), sp.Symbol("n_d", positive=True)
    G_cd = sp.Symbol("G_{cd}")
    mean = sp.Symbol(r"\overline{\log\omega}")
    rho = sp.Symbol(r"\rho")
    out = [
        (
            "prototype problem (SupCon: beta_c = 0; Soft SupCon: beta_c = eps/(tau Z_c))",
            r"\min_{G \succeq 0,\ \operatorname{diag} G = 1}\ \sum_c n_c\Big[\beta_c \sum_{d\ne c}"
            r" n_d (1 - G_{cd}) + \log\Big((n_c - 1) + \sum_{d \ne c} n_d\,"
            r"e^{(G_{cd} - 1)/\tau}\Big)\Big]",
        ),
        ("balanced SupCon: regular simplex", f"G_{{cd}} = {sp.latex(balanced_simplex_cosine())}"),
        ("balanced SupCon: loss (N = nK anchors)", sp.latex(balanced_loss())),
        ("Soft SupCon: equiangular target", f"{sp.latex(rho)} = {sp.latex(soft_supcon_rho())}"),
        ("Soft SupCon: realizable iff", sp.latex(soft_supcon_condition())),
        (
            "Soft SupCon: centred simplex at (independent of class sizes)",
            rf"\tau^* = {sp.latex(soft_supcon_tau_star())}",
        ),
        (
            "SupCon under imbalance, first order in tau",
            sp.latex(
                sp.Eq(
                    G_cd,
                    balanced_simplex_cosine()
                    - tau * (sp.log(sp.Symbol(r"\omega_{cd}")) - mean),
                )
            )
            + r",\quad \omega_{cd} = "
            + sp.latex(pair_weight(n_c, n_d)),
        ),
        (
            "KKT system",
            r"G \succeq 0,\ \operatorname{diag}G = 1,\ S = \nabla F(G) - \operatorname{Diag}(y)"
            r" \succeq 0,\ G S = 0",
        ),
    ]
    del c, d
    if k is not None:
        out.append((f"first-order Gram, K = {k}", sp.latex(first_order_gram(k))))
        sysk = kkt_system(k)
        out.append((f"KKT: S = grad F - Diag(y), K = {k}", sp.latex(sysk.dual)))
    return out
