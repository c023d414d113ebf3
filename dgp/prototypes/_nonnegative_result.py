"""The result of the prototypes of a ReLU head (:func:`dgp.prototypes.nonnegative_prototypes`):
:class:`NonnegativePrototypes` and what certifies it (:class:`NonnegativeCertificate`, built by
:func:`nonnegative_certificate`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dgp.constants import NONNEG_GAP_RTOL
from dgp.prototypes._result import Prototypes
from dgp.records import CertificateProtocol
from dgp.solver._batch_result import BatchCertificate
from dgp.tolerance import DEFAULT_POLICY, Margin

__all__ = ["NonnegativeCertificate", "NonnegativePrototypes", "nonnegative_certificate",
           "primal_residual"]


@dataclass(frozen=True)
class NonnegativeCertificate(CertificateProtocol):
    """What is certified about a non-negative prototype Gram.

    Attributes
    ----------
    lower_bound : float
        Certified lower bound (nats) on the loss over non-negative Grams of rank ``<= dim``.
    dnn_bound : float
        The bound of the doubly non-negative relaxation alone (no rank cuts), nats.
    gap_bound : float
        ``loss - lower_bound`` (nats, ``>= 0``): how far the result can be from optimal.
    log_gap_bound : float
        Its natural log (``-inf`` at a zero gap).
    gap_atol : float
        The gap accepted as zero: ``NONNEG_GAP_RTOL`` of the excess loss, or the rounding of
        the loss (its size times the policy's relative tolerance), whichever is larger.
    certified : bool
        ``gap_bound <= gap_atol``: the result is optimal (within ``gap_atol``).
    stationarity : float or None
        First-order (KKT) residual of the non-negative factor (``None`` for closed forms).
    primal_residual : float
        How far the Gram is from unit diagonal, entrywise ``>= 0`` and PSD.
    min_cross_gradient : float or None
        Closed form ``I``: the smallest off-diagonal entry of :math:`\\nabla F(I)` (nats); ``>=
        0`` proves the orthogonal frame optimal.
    cuts : int
        Rank-``d`` inequalities in the relaxation.
    branches : int
        Partitions of the classes by largest coordinate the bound branched on (0: none).
    relaxation : str
        What the bound was computed from.
    margins : tuple of Margin
    """

    lower_bound: float
    dnn_bound: float
    gap_bound: float
    log_gap_bound: float
    gap_atol: float
    certified: bool
    stationarity: float | None
    primal_residual: float
    min_cross_gradient: float | None
    cuts: int
    branches: int
    relaxation: str
    margins: tuple[Margin, ...]

    kind: ClassVar[str] = "nonnegative-bound"

    @property
    def statement(self) -> str:
        """What the bound rests on, as :attr:`relaxation` says it for this result (the DNN
        relaxation with its rank cuts, the elliptope above its size, or a closed form)."""
        return ("lower_bound is a certified lower bound on the loss over non-negative Grams of "
                f"rank <= dim, from {self.relaxation}; the Gram is optimal when loss - "
                "lower_bound <= gap_atol")

    def claims(self):
        yield "the gap is non-negative", self.gap_bound >= 0
        yield ("the cut bound is no weaker than the plain DNN bound",
               self.lower_bound >= self.dnn_bound)
        yield "certified is gap_bound <= gap_atol", self.certified == (
            self.gap_bound <= self.gap_atol)
        yield "the loss meets its lower bound within gap_atol (optimality)", self.certified


@dataclass(frozen=True, eq=False)
class NonnegativePrototypes(Prototypes):
    """:class:`~dgp.prototypes.Prototypes` for a ReLU head: a completely positive Gram, with
    these attributes beside those of ``Prototypes``.

    Attributes
    ----------
    dim : int or None
        (Of ``Prototypes``.) The embedding dimension the factor lives in (``None``: free).
    lower_bound : float
        (Of ``Prototypes``.) Certified lower bound on the loss (nats), see ``certificate``.
    certified : bool
        The loss meets ``lower_bound`` (the Gram is optimal among non-negative ones).
    factor : ndarray or None
        Non-negative prototypes ``K x d`` with unit rows and ``factor @ factor.T == gram``
        (:attr:`embedding`).
    starts : int
        Seeded starts of the factor descent (0 for closed forms).
    hits : int
        Starts (and polished points) that reached the best loss within rounding.
    """

    certified: bool = False
    factor: np.ndarray | None = None
    starts: int = 0
    hits: int = 0

    #: a ReLU head's result reports its own identifiability (as its build found it)
    SETTLES_IDENTIFIABILITY: ClassVar[bool] = False

    @cached_property
    def embedding(self) -> np.ndarray:
        """The non-negative prototypes (``K x d``, unit rows; ``factor``)."""
        return self.factor

    @cached_property
    def prototypes(self) -> np.ndarray:
        """The fixed targets of a ReLU head: :attr:`factor` itself (a rotation to a canonical
        frame would leave the non-negative orthant)."""
        return self.factor

    def _title(self) -> str:
        where = "free dimension" if self.dim is None else f"d = {self.dim}"
        return "ReLU " + super()._title() + f", {where}"

    def _summary_pairs(self) -> list[tuple[str, str]]:
        pairs = super()._summary_pairs()
        cert = self.certificate
        if self.method == "numeric":
            runs = (f"{self.starts} seeded starts ({self.hits} reached the best)"
                    if self.starts > 1 else "one seeded start")
            how = f"numeric, {runs}, first-order residual {self.kkt_residual:.1e}"
            pairs[0] = ("method", how)
        elif self.method == "closed-form":
            pairs[0] = ("method", f"closed form ({self.stop_reason})")
        if cert is None or isinstance(cert, BatchCertificate):  # beyond enumeration: the
            # bound is the held-out estimate's
            est = self.batch.estimate
            pairs.insert(1, ("bound", f"NOT certified (the loss is estimated): lower "
                             f"bound {self.lower_bound:.10g} at {est.confidence:.0%} confidence "
                             f"(per-batch convex relaxation on {est.bound_batches} fresh "
                             f"batches), gap {est.gap:.3g}"))
            return pairs
        word = "certified optimal" if self.certified else "NOT certified"
        pairs.insert(1, ("bound", f"{word}: lower bound {self.lower_bound:.10g} nats, gap "
                         f"{cert.gap_bound:.3g} ({cert.relaxation})"))
        return pairs

    @property
    def convergence(self):
        c = super().convergence
        return type(c)(success=c.success, status=c.status, nit=c.nit, residual=c.residual,
                       certified=self.certified and not self.certificate.check(),
                       certifies="the optimum among non-negative Grams"
                       + ("" if self.dim is None else f" of rank <= {self.dim}")
                       + ": the loss meets the certificate's lower_bound within gap_atol")

    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"gram": None, "embedding": False}

    def json_items(self, options):
        yield from super().json_items(options)
        yield from (("nonnegative", True), ("dim", self.dim), ("lower_bound", self.lower_bound),
                    ("certified", self.certified), ("starts", self.starts), ("hits", self.hits))



def primal_residual(G: np.ndarray) -> float:
    """How far ``G`` is from unit diagonal, entrywise non-negative and PSD."""
    off = G[~np.eye(G.shape[0], dtype=bool)]
    return max(float(np.abs(np.diag(G) - 1.0).max()), max(0.0, -float(off.min())),
               max(0.0, -float(np.linalg.eigvalsh(G)[0])))


def nonnegative_certificate(loss_excess: float, bound_excess: float, dnn_excess: float, *,
                            stationarity: float | None, G: np.ndarray, min_grad: float | None,
                            grad_atol: float, cuts: int, relaxation: str, entropy: float,
                            branches: int = 0) -> NonnegativeCertificate:
    """The certificate of a non-negative prototype Gram ``G`` from its excess loss and the
    excess of its lower bounds (nats above ``entropy``), certified when the gap is within the
    solver's accuracy on the excess or the rounding of the loss."""
    gap = max(0.0, loss_excess - bound_excess)
    # the solver's accuracy on the excess, or the rounding of the loss itself
    atol = max(NONNEG_GAP_RTOL * loss_excess, DEFAULT_POLICY.atol(entropy + loss_excess))
    margins = [DEFAULT_POLICY.margin("loss minus its certified lower bound (nats; certified "
                                     "at or below atol)", gap, atol, zero_is_near=False)]
    if min_grad is not None:
        margins.append(DEFAULT_POLICY.margin(
            "smallest off-diagonal entry of grad F(I) (nats; >= 0 proves the orthogonal frame)",
            min_grad, grad_atol, zero_is_near=True))
    return NonnegativeCertificate(
        lower_bound=entropy + bound_excess, dnn_bound=entropy + dnn_excess, gap_bound=gap,
        log_gap_bound=math.log(gap) if gap > 0 else -math.inf, gap_atol=atol,
        certified=gap <= atol, stationarity=stationarity, primal_residual=primal_residual(G),
        min_cross_gradient=min_grad, cuts=cuts, branches=branches, relaxation=relaxation,
        margins=tuple(margins),
    )
