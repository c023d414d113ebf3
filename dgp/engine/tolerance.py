r"""The one tolerance policy of the engine: relative, scale-invariant, reported.

Every decision of the engine compares a computed number with zero: the smallest eigenvalue of a
target (is it PSD?), the eigenvalues at an end point (its rank), the log-ratio around a cycle (is
the cycle condition met?). Each comparison uses an absolute tolerance

.. math:: \mathrm{atol} = r\,n\,s, \qquad r = \max(\mathrm{rtol},\ 4u),

where :math:`n` is the number of samples, :math:`s` the scale of the quantity (the spectral norm
of the member for eigenvalues, the spread of the log-weights for log-ratios) and :math:`u` the
unit roundoff of the input (``2.2e-16`` for float64, ``1.2e-7`` for float32). Rescaling
:math:`W \to \alpha W` changes neither :math:`s` nor the decision (the log-weights are
canonicalised first, see :mod:`dgp.engine.target`). The default ``rtol`` sits at the rounding
noise of float64, so a verdict is exact wherever floating point can resolve it; larger values
widen the band treated as "at the critical value".

A decisive number within ``NEAR`` tolerances of its threshold makes the verdict *near the
threshold*: it is reported (``near_threshold``, with the margins in the certificate), never
flipped silently.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgp.errors import ParameterError, describe
from dgp.records import Record

__all__ = ["DEFAULT_RTOL", "NEAR", "Margin", "Tolerance"]

#: default relative tolerance per sample: about 4.5 units of float64 roundoff
DEFAULT_RTOL = 1e-15
#: a decisive number within NEAR * atol of its threshold is reported as near the threshold
NEAR = 100.0
_FLOAT64_U = float(np.finfo(np.float64).eps)


@dataclass(frozen=True)
class Margin(Record):
    """One decisive comparison: ``value`` against its threshold with tolerance ``atol``.

    Attributes
    ----------
    quantity : str
        What was compared, in words (e.g. ``"max over c of lambda_min(G(c))"``).
    value : float
        The computed number (its threshold is zero).
    atol : float
        The absolute tolerance of the comparison.
    near : bool
        Whether the decision lies within ``NEAR * atol`` of flipping.
    """

    quantity: str
    value: float
    atol: float
    near: bool



@dataclass(frozen=True)
class Tolerance(Record):
    """The tolerance policy of one classification.

    Attributes
    ----------
    rtol : float
        Relative tolerance per sample (the user's parameter).
    unit_roundoff : float
        Unit roundoff of the input (float64 unless the input had fewer bits).
    n : int
        Number of samples.
    """

    rtol: float
    unit_roundoff: float = _FLOAT64_U
    n: int = 1

    @classmethod
    def make(cls, rtol: object, *, n: int = 1, unit_roundoff: float = _FLOAT64_U) -> Tolerance:
        """Validate ``rtol`` (a number in ``(0, 1)``) and build the policy.

        Raises
        ------
        ParameterError
            If ``rtol`` is not a number in ``(0, 1)``.
        """
        if isinstance(rtol, bool) or not isinstance(rtol, int | float | np.floating):
            raise ParameterError("rtol", f"must be a number in (0, 1), got {describe(rtol)}")
        r = float(rtol)
        if not 0.0 < r < 1.0:
            raise ParameterError("rtol", f"must be a number in (0, 1), got {describe(rtol)}")
        return cls(r, float(unit_roundoff), int(n))

    @property
    def relative(self) -> float:
        """The effective relative tolerance per sample, :math:`\\max(\\mathrm{rtol}, 4u)`."""
        return max(self.rtol, 4.0 * self.unit_roundoff)

    def atol(self, scale: float) -> float:
        """Absolute tolerance for a quantity of the given scale: ``relative * n * scale``."""
        return self.relative * self.n * float(scale)

    def log_atol(self, spread: float) -> float:
        """Absolute tolerance on a sum of a few log-weights whose spread is ``spread`` nats."""
        return 16.0 * self.relative * max(1.0, float(spread))

    def margin(self, quantity: str, value: float, atol: float, *, zero_is_near: bool) -> Margin:
        """A :class:`Margin` for ``value`` against zero.

        ``zero_is_near``: a value at the threshold itself (``|value| <= atol``) counts as near (a
        critical parameter value); otherwise only values in ``(atol, NEAR * atol]`` do (a value
        far below ``atol`` is rounding noise around an exact zero).
        """
        v, a = float(value), float(atol)
        if zero_is_near:
            near = abs(v) <= NEAR * a
        else:
            near = a < abs(v) <= NEAR * a
        return Margin(quantity, v, a, bool(near))

    def json_items(self, options):
        """The fields, the effective ``relative`` tolerance and the policy in words."""
        yield from (("rtol", self.rtol), ("unit_roundoff", self.unit_roundoff),
                    ("relative", self.relative), ("n", self.n))
        yield "policy", (
            "atol = max(rtol, 4 u) * n * scale; scale = spectral norm of the member "
            "(cosine), max(eigenvalue spread, 1 + log-weight spread) (Euclidean), "
            "cycle log-ratios: 16 max(rtol, 4 u) max(1, log-weight spread), independent of n"
        )
