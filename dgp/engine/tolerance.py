"""The old home of the tolerance policy, which now lives on the ground floor in
:mod:`dgp.tolerance` (so that the solver may use it). Kept only while modules written against
the old path (the zero-pattern engine) move to the new one; import from :mod:`dgp.tolerance`."""

from dgp.tolerance import DEFAULT_RTOL, NEAR, Margin, Tolerance

__all__ = ["DEFAULT_RTOL", "NEAR", "Margin", "Tolerance"]
