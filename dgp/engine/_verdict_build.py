"""How one verdict is built: the context a rule reads (:class:`Context`), the closed-form
explanation it is checked against (:class:`Explanation`), and the :class:`dgp.result.Classification`
with its certificate fields and, for an inconsistent cosine verdict, the loss floor."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from dgp.engine.certificates import (
    Certificate,
)
from dgp.engine.target import CanonicalShift
from dgp.result import Classification
from dgp.tolerance import Margin, Tolerance

NEAR_NOTE = " (decided within tolerance of a critical value: see near_threshold and the margins)"


@dataclass(frozen=True)
class Explanation:
    """A closed-form prediction of a named objective, used as the reason when it agrees.

    Attributes
    ----------
    verdict : str
        The predicted verdict.
    rank : int or None
        The predicted rank.
    sentence : str
        The closed-form reason, with its numbers.
    applies : bool
        Whether the closed form's hypotheses hold (else it only explains).
    details : dict
        The conditions and their numbers (reported in ``certificate.conditions``).
    summary : str
        A short clause added to the engine's reason when the prediction does not apply.
    """

    verdict: str
    rank: int | None
    sentence: str
    applies: bool
    details: dict[str, Any]
    summary: str = ""


@dataclass(frozen=True)
class Context(CanonicalShift):
    """Everything a verdict needs besides the family.

    Attributes
    ----------
    similarity : str
        The latent similarity.
    tau : float
        Temperature.
    dim : int
        Embedding dimension.
    n : int
        Number of samples.
    tol : Tolerance
    method : str
    entropic_bound : float or None
    shift : float
        Canonical constant ``c`` minus the user's ``c`` (see :mod:`dgp.engine.target`); its
        inverse is :meth:`~dgp.engine.target.CanonicalShift.to_user_c`.
    objective : str or None
    warnings : tuple of str
    structure : dict or None
        Added to the certificate (what a structured engine reduced the problem to).
    notes : dict or None
        Added to the certificate (anything else worth saying).
    explanation : Explanation or None
        A closed-form prediction (named objectives).
    margins : tuple of Margin
        Decisions made before the family (the cycle condition), reported with its own.
    floor : LossFloor, str or None
        What an inconsistent cosine verdict says of the loss floor in dimension ``dim``: the
        floor computed by the caller (a :class:`dgp.optima.LossFloor`, handed down as a value:
        the engine never calls up for it), a sentence saying why none was computed, or ``None``
        (not asked for).
    suffix : str
        Appended to the reason (e.g. the column-normalisation diagnosis).
    embed : bool
        Build the embedding of a realizable verdict.
    """

    similarity: str
    tau: float
    dim: int
    n: int
    tol: Tolerance
    method: str
    entropic_bound: float | None
    shift: float = 0.0
    objective: str | None = None
    warnings: tuple[str, ...] = ()
    structure: dict[str, Any] | None = None
    notes: dict[str, Any] | None = None
    explanation: Explanation | None = None
    suffix: str = ""
    embed: bool = True
    margins: tuple[Margin, ...] = ()
    floor: Any = None


def _build(
    ctx: Context,
    *,
    verdict: str,
    attainable: bool,
    reason: str,
    certificate: Certificate,
    rank: int | None = None,
    c_interval: tuple[float | None, float | None] | None = None,
    c: float | None = None,
    min_dim: int | None = None,
    near: bool = False,
    embedding: np.ndarray | None = None,
    c_resolution: float = 0.0,
) -> Classification:
    if near:
        reason += NEAR_NOTE
    ex = ctx.explanation
    if ex is not None:
        agrees = bool(ex.applies and ex.verdict == verdict and ex.rank == rank)
        certificate = replace(certificate,
                              conditions={**ex.details, "agrees_with_engine": agrees})
    loss_floor = None
    if verdict == "inconsistent" and ctx.similarity == "cosine":
        loss_floor, note = _loss_floor(ctx)
        certificate = replace(certificate, notes={**(certificate.notes or {}), "loss_floor": note})
    return Classification(
        verdict=verdict,
        attainable=attainable,
        similarity=ctx.similarity,
        n=ctx.n,
        dim=ctx.dim,
        tau=ctx.tau,
        rank=rank,
        c_interval=c_interval,
        entropic_bound=ctx.entropic_bound,
        reason=reason + ctx.suffix,
        certificate=certificate,
        min_dim=min_dim,
        near_threshold=bool(near),
        tolerance=ctx.tol.to_dict(),
        method=ctx.method,
        c=c,
        objective=ctx.objective,
        embedding=embedding,
        loss_floor=loss_floor,
        warnings=ctx.warnings,
        c_resolution=c_resolution,
    )


#: what a verdict says of a loss floor nobody asked for
FLOOR_NOT_ASKED = "not asked for (dgp.optima.loss_floor and dgp optimum compute it)"


def _loss_floor(ctx: Context) -> tuple[float | None, Any]:
    """The optimum's excess over the bound in ``R^dim`` when certified, and what was found
    (``ctx.floor``: the floor, why there is none, or ``None``: not asked for)."""
    lf = ctx.floor
    if lf is None:
        return None, FLOOR_NOT_ASKED
    if isinstance(lf, str):
        return None, lf
    note = lf.to_dict()
    if not lf.certified:
        note["statement"] = (f"the loss floor in dim = {ctx.dim} lies in [{lf.lower:.6g}, "
                             f"{lf.upper:.6g}] nats above the bound (not certified)")
        return None, note
    return float(lf.upper), note


def certificate_fields(ctx: Context, margins: tuple[Margin, ...], structure: dict | None) -> dict:
    merged = dict(ctx.structure or {})
    merged.update(structure or {})
    return {
        "margins": (*ctx.margins, *margins),
        "structure": merged or None,
        "conditions": None if ctx.explanation is None else ctx.explanation.details,
        "notes": ctx.notes,
    }


def decided(
    ctx: Context, verdict: str, reason: str, *, attainable: bool | None = None,
    rank: int | None = None, **fields: Any,
) -> Classification:
    """The result of one verdict: the closed-form reason when it agrees, then :func:`_build`.
    ``attainable`` defaults to "the verdict is not inconsistent"."""
    return _build(ctx, verdict=verdict,
                  attainable=verdict != "inconsistent" if attainable is None else attainable,
                  reason=_explained(ctx, verdict, rank, reason), rank=rank, **fields)


def _explained(ctx: Context, verdict: str, rank: int | None, reason: str) -> str:
    """The closed-form sentence when it applies and agrees, else the engine's reason."""
    ex = ctx.explanation
    if ex is None:
        return reason
    if ex.applies and ex.verdict == verdict and ex.rank == rank:
        return ex.sentence
    return f"{reason} ({ex.summary})" if ex.summary else reason
