"""The metadata every proof module carries, and the hypothesis settings the proofs share."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, settings

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
    """Settings of the property tests: no deadline (shared CPUs), at least 100 examples.

    The parent profile (``derandomize`` in CI and in ``dgp prove``) is the one loaded when the
    proof module is imported.
    """
    base = {
        "deadline": None,
        "max_examples": max(100, settings.default.max_examples),
        "suppress_health_check": [HealthCheck.too_slow, HealthCheck.filter_too_much],
    }
    base.update(overrides)
    return settings(**base)
