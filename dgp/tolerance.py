r"""The one tolerance policy of the engine: relative, scale-invariant, reported.

Every decision of the engine compares a computed number with zero: the smallest eigenvalue of a
target (is it PSD?), the eigenvalues at an end point (its rank), the log-ratio around a cycle (is
the cycle condition met?). Each comparison uses an absolute tolerance

.. math:: \mathrm{atol} = r\,n\,s, \qquad r = \max(\mathrm{rtol},\ 4u),

where :math:`n` is the number of samples, :math:`s` the scale of the quantity (the spectral norm
of the member for eigenvalues, the spread of the log-weights for log-ratios) and :math:`u` the
unit roundoff of the input (``2.2e-16`` for float64, ``1.2e-7`` for float32). Rescaling
:math:`W \to \alpha W` changes neither :math:`s` nor the decision (the log-weights are
canonicalised first, see :mod:`dgp.engine.target`). Two inputs carry more rounding than their
dtype says, and their :math:`u` is widened by it (:meth:`Tolerance.widened`, reported as the
``unit_roundoff``): a row-rescaled ``W``, whose canonical log-weights are larger than the target
they cancel down to (:attr:`dgp.engine.target.LogTarget.roundoff_factor`), and continuous labels
far from the origin, known to a unit roundoff of their size rather than of their spread
(:attr:`dgp.objectives.registry.Kernel.roundoff_factor`), and log-weights given as large numbers
(``log W + log alpha``: an absolute error of ``u |log alpha|``) or subnormal weights
(:attr:`dgp.engine.target.LogWeights.magnitude`). So ``diag(a) W`` and labels
translated by ``t`` are decided as ``W`` and the centred labels are (property-tested in
``tests/test_extremes.py``). Where a rank rests on the widening (an eigenvalue that is non-zero
at the input's own precision is read as zero, :meth:`Tolerance.read_as_zero`), the verdict is
flagged near its threshold, never changed silently. The default ``rtol`` sits at the rounding
noise of float64, so a verdict is exact wherever floating point can resolve it; larger values
widen the band treated as "at the critical value".

A decisive number within ``NEAR`` tolerances of its threshold makes the verdict *near the
threshold*: it is reported (``near_threshold``, with the margins in the certificate), never
flipped silently.

The same policy carries the thresholds on solver output, also relative to the data: the rank of
a Gram (:meth:`Tolerance.rank`, eigenvalues above ``gram_rtol`` of the largest) and the
acceptance of a certified solve (:meth:`Tolerance.accepts`). :data:`DEFAULT_POLICY` is the
policy at the default ``rtol`` for callers that classify nothing (the prototype and optimum
solvers); it imports no engine, so the solver floor may use it. Its constants live in
:mod:`dgp.constants`.

Zero-weight patterns (:mod:`dgp.engine.zeros`) add the tolerances of their leading-order
problem, solved in float64 at unit scale: the edges and slack of a constructed configuration,
the residual of its rigidity system (which follows ``rtol`` through the log-ratio terms, like the
cycle condition) and the level at which a family's gap reads as zero (relative to its number of
rows and the size of its similarities). They are reported in ``to_dict()["zero_patterns"]`` and,
where they depend on the data, as margins of the certificate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from dgp.constants import (
    ACCEPT_FACTOR,
    ACCEPT_FLOOR,
    DEFAULT_RTOL,
    GRAM_RANK_RTOL,
    NEAR,
    ZERO_ARITH,
    ZERO_EDGE_RTOL,
    ZERO_EVIDENCE,
    ZERO_GAP,
    ZERO_GAP_DECAY,
    ZERO_RESIDUAL_RTOL,
    ZERO_SLACK,
)
from dgp.errors import ParameterError, describe
from dgp.records import Record

__all__ = ["DEFAULT_POLICY", "DEFAULT_RTOL", "NEAR", "Margin", "Tolerance", "check_rtol"]

_FLOAT64_U = float(np.finfo(np.float64).eps)


def check_rtol(value: object, name: str = "rtol") -> float:
    """The one validator of a relative tolerance: a real number in ``(0, 1)``.

    Raises
    ------
    ParameterError
        If ``value`` is not a number in ``(0, 1)`` (``name`` is the argument it was given as).

    >>> check_rtol(1e-6)
    1e-06
    """
    if isinstance(value, bool) or not isinstance(value, int | float | np.floating):
        raise ParameterError(name, f"must be a number in (0, 1), got {describe(value)}")
    r = float(value)
    if not 0.0 < r < 1.0:
        raise ParameterError(name, f"must be a number in (0, 1), got {describe(value)}")
    return r


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
    gram_rtol : float
        Relative rank threshold of a Gram computed by the solver (:meth:`rank`).
    accept_factor : float
        Slack of the acceptance rule of a certified solve over its target (:meth:`accepts`).
    accept_floor : float
        The largest KKT residual :meth:`accepts` accepts, whatever the target.
    widening : float
        How much :meth:`widened` multiplied the input's own unit roundoff (1: not widened).
    """

    rtol: float
    unit_roundoff: float = _FLOAT64_U
    n: int = 1
    gram_rtol: float = GRAM_RANK_RTOL
    accept_factor: float = ACCEPT_FACTOR
    accept_floor: float = ACCEPT_FLOOR
    widening: float = 1.0

    @classmethod
    def make(cls, rtol: object, *, n: int = 1, unit_roundoff: float = _FLOAT64_U) -> Tolerance:
        """Validate ``rtol`` (a number in ``(0, 1)``) and build the policy.

        Raises
        ------
        ParameterError
            If ``rtol`` is not a number in ``(0, 1)``.
        """
        return cls(check_rtol(rtol), float(unit_roundoff), int(n))

    def widened(self, factor: float) -> Tolerance:
        """The policy for data whose representation amplifies the input's rounding by
        ``factor`` (:attr:`dgp.engine.target.LogTarget.roundoff_factor`): the unit roundoff
        times ``factor`` (``self`` when ``factor <= 1``); reported as such.

        >>> DEFAULT_POLICY.widened(1e3).unit_roundoff / DEFAULT_POLICY.unit_roundoff
        1000.0
        """
        f = float(factor)
        if not f > 1.0:
            return self
        return Tolerance(self.rtol, self.unit_roundoff * f, self.n, self.gram_rtol,
                         self.accept_factor, self.accept_floor, self.widening * f)

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

    def rank(self, eigenvalues: object) -> int:
        """Numerical rank of a PSD matrix from its eigenvalues: those above ``gram_rtol`` times
        the largest (relative, so the rank of ``s G`` is that of ``G`` for every ``s > 0``).

        >>> DEFAULT_POLICY.rank([2.0, 1e-12, 0.0]), DEFAULT_POLICY.rank([2e-20, 1e-32, 0.0])
        (1, 1)
        """
        lam = np.asarray(eigenvalues, dtype=float)
        if lam.size == 0:
            return 0
        top = max(float(np.max(lam)), 0.0)
        return int(np.count_nonzero(lam > self.gram_rtol * top))

    def accepts(self, kkt_residual: float, target: float) -> bool:
        """The one acceptance rule of a certified solve run to the KKT target ``target``: its
        residual is at most ``max(accept_factor * target, accept_floor)``.

        >>> DEFAULT_POLICY.accepts(1e-9, 1e-10), DEFAULT_POLICY.accepts(1e-5, 1e-10)
        (True, False)
        """
        return float(kkt_residual) <= max(self.accept_factor * float(target), self.accept_floor)

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

    def read_as_zero(self, quantity: str, value: float, atol: float) -> Margin | None:
        """A margin for the largest eigenvalue counted as zero, when the tolerance is
        :meth:`widened` and that eigenvalue would be non-zero at the input's own precision
        (above ``atol / widening``): the rank then rests on the widening (the rounding of the
        input's representation), so it is reported as near the threshold. ``None`` otherwise.
        """
        v, a = float(value), float(atol)
        if self.widening > 1.0 and a / self.widening < abs(v) <= a:
            return Margin(quantity, v, a, True)
        return None

    # ---- zero-weight patterns (dgp.engine.zeros) ---------------------------------------------

    def edge_atol(self) -> float:
        """Accepted residual of the unit-length equations of a constructed configuration
        :math:`X_0` (its positive pairs at unit distance; a float64 computation)."""
        return ZERO_EDGE_RTOL

    def slack_atol(self) -> float:
        """Least slack (squared distance minus 1) of the non-positive pairs of a strict
        :math:`X_0` (a million times its edge accuracy)."""
        return ZERO_SLACK

    def delta_atol(self, delta: np.ndarray, tau: float, terms: int = 1) -> float:
        r"""Uncertainty of a sum of ``terms`` log-ratio terms :math:`\delta = -2\tau\ell` of a
        component (each :math:`2\tau` ``log_atol`` of the spread of ``delta / 2 tau``): the
        planar wheel rule compares its 12-term defect with it."""
        spread = float(np.ptp(delta)) / (2 * tau) if np.size(delta) else 0.0
        return 2.0 * tau * float(terms) * self.log_atol(spread)

    def residual_atol(self, delta: np.ndarray, tau: float) -> float:
        r"""Accepted residual of the rigidity system :math:`2\langle x_i - x_j, y_i - y_j\rangle =
        \delta_{ij}`: the float64 solve, ``ZERO_RESIDUAL_RTOL * (1 + max|delta|)``, or the
        uncertainty of one term, :meth:`delta_atol`, whichever is larger. A self-stress with
        unit coefficients on ``k`` pairs leaves a residual of ``defect / k``, so this accepts
        what the planar wheel rule (a 12-term defect within ``delta_atol(delta, tau, 12)``)
        accepts."""
        top = float(np.abs(np.asarray(delta, dtype=float)).max(initial=0.0))
        return max(ZERO_RESIDUAL_RTOL * (1.0 + top), self.delta_atol(delta, tau))

    def gap_atol(self, n: int, scale: float) -> float:
        """A family's entropic gap (``n`` float64 log-softmax rows whose similarities reach
        ``scale``) at or below this reads as zero: ``max(ZERO_GAP, 4 u n scale)`` with ``u``
        float64's roundoff (the rounding of a row grows with its largest similarity)."""
        return max(ZERO_GAP, ZERO_ARITH * int(n) * float(scale))

    @property
    def evidence_threshold(self) -> float:
        """Gap per sample (nats) below which a loss minimisation reads as approached (undecided
        components only, reported as evidence)."""
        return ZERO_EVIDENCE

    def zero_patterns(self) -> dict:
        """The zero-pattern part of the policy, plain JSON-ready fields. The data-dependent
        ones are margins of the certificate: the rigidity residual of each scaled component,
        the family's gap where it decides the placement of pure sources."""
        return {
            "edge_atol": self.edge_atol(),
            "slack_atol": self.slack_atol(),
            "residual_rtol": ZERO_RESIDUAL_RTOL,
            "gap_zero": ZERO_GAP,
            "gap_decay": ZERO_GAP_DECAY,
            "evidence_threshold": self.evidence_threshold,
            "policy": "unit-scale leading-order problem in float64: edges within edge_atol, "
            "other pairs beyond slack_atol; rigidity residual below max(residual_rtol (1 + "
            "max|delta|), 2 tau log_atol(spread of delta / 2 tau)); a family's gap is zero "
            "below max(gap_zero, 4 u64 n / (2 tau t^2)) at its last t, and vanishes when the "
            "last is below gap_decay times the first plus gap zero / gap_decay",
        }

    def json_items(self, options):
        """The fields, the effective ``relative`` tolerance and the policy in words."""
        yield from (("rtol", self.rtol), ("unit_roundoff", self.unit_roundoff),
                    ("widening", self.widening),
                    ("relative", self.relative), ("n", self.n), ("gram_rtol", self.gram_rtol),
                    ("accept", [self.accept_factor, self.accept_floor]),
                    ("zero_patterns", self.zero_patterns()))
        yield "policy", (
            "atol = max(rtol, 4 u) * n * scale; scale = spectral norm of the member "
            "(cosine), max(eigenvalue spread, 1 + log-weight spread) (Euclidean), "
            "cycle log-ratios: 16 max(rtol, 4 u) max(1, log-weight spread), independent of n; "
            "Gram rank: eigenvalues > gram_rtol * largest; a solve is accepted when its KKT "
            "residual <= max(accept[0] * target, accept[1])"
        )


#: the policy at the default ``rtol`` (one sample), for thresholds on solver output
DEFAULT_POLICY = Tolerance(DEFAULT_RTOL)
