"""Closed forms of the design tools: the balanced Soft SupCon simplex past :math:`\tau^*`, and the
phase boundary (:class:`Boundary`) drawn over a map and checked against its cells."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from dgp.constants import CLOSED_FORM_BOUNDARY_RTOL
from dgp.design._parameters import GRID_PARAMETERS, check_value
from dgp.errors import (
    ParameterError,
    check_sizes,
)
from dgp.records import Record


def balanced_soft_supcon_simplex(sizes: object, *, tau: float, eps: float):
    r"""The optimal prototypes of Soft SupCon with equal class sizes past :math:`\tau^*`: the
    centred regular simplex.

    The prototype objective :math:`F` (:mod:`dgp.prototypes`) is convex on the elliptope and,
    with equal sizes, invariant under permutations of the classes, so the average of the
    permuted copies of a minimiser is an equiangular minimiser,
    :math:`G = (1-\rho)I + \rho 11^\top`, :math:`\rho \in [-1/(K-1), 1]`. Along that line
    :math:`F(\rho)` is convex, and :math:`F \ge \sum_i H(p_i)` (Gibbs) with equality at
    :math:`\rho_0 = 1 + \tau\log\varepsilon`, so :math:`\rho_0` is its minimiser over all
    real :math:`\rho`. Past :math:`\tau^*`, :math:`\rho_0 < -1/(K-1)`: :math:`F` increases on
    the feasible segment and its minimum is the simplex :math:`\rho = -1/(K-1)`. Tested
    against the certified solver of :func:`dgp.supcon_prototypes`.

    Returns
    -------
    dgp.prototypes.Prototypes
        ``method="closed-form"``.

    Raises
    ------
    ValueError
        If the sizes are not equal or :math:`\tau \le \tau^*`.
    """
    from dgp.prototypes import supcon_prototypes

    n = check_sizes(sizes)
    tau = check_value("tau", tau)
    eps = check_value("eps", eps)
    K = n.size
    if not (n == n[0]).all():
        raise ParameterError("sizes", f"must be equal for the closed form, got {n.tolist()}")
    if 1.0 + tau * math.log(eps) >= -1.0 / (K - 1):
        raise ParameterError("tau", f"= {tau:g} is not above tau* = "
                             f"{K / ((K - 1) * -math.log(eps)):.6g}, where the optimum attains "
                             "the bound (use dgp.supcon_prototypes)")
    return supcon_prototypes(n, tau=tau, eps=eps)  # the same closed form, method "auto"


@dataclass(frozen=True, eq=False)
class Boundary(Record):
    r"""A closed-form phase boundary drawn over a map and checked against its cells.

    The bound is attainable on one side only: :math:`\tau < \tau_c` (with enough dimensions)
    attains it, :math:`\tau > \tau_c` does not. ``tau_c`` depends on the other parameters.

    Attributes
    ----------
    name : str
        ``"tau*"`` (Soft SupCon), ``"tau R^2 = sigma^2"`` (y-Aware), ``"tau R^2 = tau_y"``
        (X-CLR).
    formula : str
        The closed form, with its constants.
    constants : dict
        ``K`` (Soft SupCon); ``R`` (sphere radius) and ``m`` (affine dimension) otherwise.
    dim_needed : int
        Dimension needed below the boundary (``K``, or ``m + 1``).
    n : int
        Number of samples (y-Aware and X-CLR: the closed form needs :math:`N \ge d + m + 3`).
    agree : int
        Cells whose verdict agrees with the closed form.
    disagree : int
        Cells whose verdict disagrees with it.
    skipped : int
        Cells not predicted (within ``1e-9`` relative of the boundary, or outside the theorem's
        hypotheses).
    mismatches : tuple of dict
        The first disagreeing cells (parameters, verdict, prediction).
    """

    name: str
    formula: str
    constants: dict[str, float]
    dim_needed: int
    n: int
    agree: int = 0
    disagree: int = 0
    skipped: int = 0
    mismatches: tuple[dict[str, Any], ...] = ()

    def tau_c(self, params: Mapping[str, float]) -> float:
        """The critical temperature at the other parameters of a cell."""
        if self.name == "tau*":
            K = self.constants["K"]
            return K / ((K - 1.0) * -math.log(params["eps"]))
        R2 = self.constants["R"] ** 2
        width2 = params["sigma"] ** 2 if "sigma" in params else params["label_tau"]
        return width2 / R2

    def other_c(self, tau: float) -> tuple[str, float]:
        """The critical value of the objective's parameter at temperature ``tau``."""
        if self.name == "tau*":
            K = self.constants["K"]
            return "eps", math.exp(-K / ((K - 1.0) * tau))
        R = self.constants["R"]
        if self.name.endswith("sigma^2"):
            return "sigma", R * math.sqrt(tau)
        return "label_tau", tau * R * R

    def predicts(self, params: Mapping[str, float]) -> bool | None:
        """Whether the closed form says the bound is attainable at a cell (``None``: no
        prediction, on the boundary or outside the hypotheses)."""
        if self.name != "tau*" and self.n < params["dim"] + self.constants["m"] + 3:
            return None
        ratio = params["tau"] / self.tau_c(params)
        if abs(ratio - 1.0) <= CLOSED_FORM_BOUNDARY_RTOL:
            return None
        if ratio > 1.0:
            return False
        return params["dim"] >= self.dim_needed

    def checked(self, cells: Sequence[Mapping[str, Any]]) -> Boundary:
        """This boundary with its agreement counted over ``cells``."""
        agree = disagree = skipped = 0
        bad: list[dict[str, Any]] = []
        for cell in cells:
            pred = self.predicts(cell)
            if pred is None:
                skipped += 1
                continue
            got = cell["verdict"] != "inconsistent"
            if got == pred:
                agree += 1
            else:
                disagree += 1
                if len(bad) < 10:
                    bad.append({k: cell[k] for k in (*GRID_PARAMETERS, "verdict") if k in cell}
                               | {"predicted_attainable": pred})
        return replace(self, agree=agree, disagree=disagree, skipped=skipped,
                       mismatches=tuple(bad))

    def json_items(self, options):
        yield from (("name", self.name), ("formula", self.formula),
                    ("constants", dict(self.constants)), ("dim_needed", self.dim_needed))
        yield "check", {"agree": self.agree, "disagree": self.disagree, "skipped": self.skipped,
                        "mismatches": self.mismatches}
