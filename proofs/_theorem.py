"""The metadata every proof module carries, and the hypothesis settings the proofs share."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import settings

__all__ = ["METHODS", "Theorem", "property_settings"]

METHODS = ("symbolic", "property", "both")


@dataclass(frozen=True)
class Theorem:
    """One theorem: a stable id, its statement in one or two sentences, and how it is checked.

    Attributes
    ----------
    id : str
        Stable slug, e.g. ``"entropic-bound"``.
    statement : str
        The claim, in words and formulas (plain text).
    method : {"symbolic", "property", "both"}
        ``symbolic``: sympy derivations (``test_symbolic_*`` functions); ``property``:
        hypothesis property tests (``test_property_*``); ``both``.
    """

    id: str
    statement: str
    method: str

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ValueError(f"method must be one of {METHODS}, got {self.method!r}")


def property_settings(**overrides) -> settings:
    """Settings of the property tests: no deadline (shared CPUs), the rest from the profile.

    The example count is the loaded profile's (100 under the repository's ``default`` profile
    and under ``dgp prove``, 1000 under ``HYPOTHESIS_PROFILE=thorough``) unless ``overrides``
    set one; derandomization too comes from the profile loaded when the proof module is
    imported. No health check is suppressed: without a deadline hypothesis allows 30 s of input
    generation, and no proof filters out most of its inputs.
    """
    return settings(deadline=None, **overrides)
