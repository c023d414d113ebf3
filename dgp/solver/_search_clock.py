"""The clock of a rank-``d`` search (:func:`dgp.solver.solve_rank_d`): progress lines at most
every :data:`~dgp.constants.RANK_D_PROGRESS_S` seconds, ticked by the factor objective it
watches."""

from __future__ import annotations

import math
import time
from collections.abc import Callable

import numpy as np

from dgp.constants import RANK_D_PROGRESS_S
from dgp.solver._blockfactor import BlockFactor

__all__ = ["SearchClock", "Watched", "watched"]


class SearchClock:
    """The clock of a search given a ``progress`` callable: at most one line every
    :data:`~dgp.constants.RANK_D_PROGRESS_S` seconds, saying the candidate, the phase, the time
    spent, the loss and the stationarity reached (the last known where a Hessian-vector product
    ticks), and after the first candidate the estimate of the whole search's CPU seconds
    (:func:`~dgp.solver._rank_d_budget.extrapolated_seconds`)."""

    def __init__(self, report: Callable[[str], None], candidates: int, target: float) -> None:
        self.report, self.candidates, self.target = report, candidates, target
        self.start = self.last = time.monotonic()
        self.candidate, self.phase = 0, "descent"
        self.loss = self.gradient = math.nan
        self.estimate = math.nan  # CPU seconds of the whole search, once the first is timed

    def at(self, candidate: int, phase: str) -> None:
        self.candidate, self.phase = candidate, phase

    def due(self) -> bool:
        return time.monotonic() - self.last >= RANK_D_PROGRESS_S

    def measure(self, obj, X: np.ndarray) -> None:
        """The loss (nats) and stationarity at ``X``, the point ``obj`` was just evaluated at."""
        self.gradient = obj.stationarity(X)
        if isinstance(obj, BlockFactor):
            self.loss = obj.loss(X)[0]
        else:
            self.loss = obj.prob.loss(X.T @ X)[0]

    def say(self) -> None:
        self.last = now = time.monotonic()
        where = (f", loss {self.loss:.10g}, Riemannian gradient {self.gradient:.2g} of its "
                 f"scale (target {self.target:.2g})"
                 if math.isfinite(self.loss) and math.isfinite(self.gradient) else "")
        whole = (f"; about {self.estimate:.0f} s of CPU in all (the first candidate timed)"
                 if math.isfinite(self.estimate) else "")
        self.report(f"candidate {self.candidate + 1} of {self.candidates}, {self.phase}: "
                    f"{now - self.start:.0f} s" + where + whole)


class Watched:
    """A factor objective (:class:`~dgp.solver._rowfactor.FactorObjective`) that ticks the
    search's clock at every evaluation and Hessian-vector product; everything else is the
    wrapped objective's."""

    def __init__(self, obj, clock: SearchClock) -> None:
        self._obj, self._clock = obj, clock
        self.K, self.tau = obj.K, obj.tau

    def on_factor(self) -> Watched:
        return self

    def evaluate(self, X: np.ndarray) -> tuple[float, np.ndarray]:
        out = self._obj.evaluate(X)
        if self._clock.due():
            self._clock.measure(self._obj, X)
            self._clock.say()
        return out

    def hessian(self, X: np.ndarray):
        hess = self._obj.hessian(X)
        clock = self._clock

        def ticking(xi: np.ndarray) -> np.ndarray:
            if clock.due():
                clock.say()
            return hess(xi)

        return ticking

    def __getattr__(self, name: str):
        return getattr(self._obj, name)


def watched(prob, clock: SearchClock | None):
    """What the descents are given: the problem itself, or its factor objective watched."""
    return prob if clock is None else Watched(prob.on_factor(), clock)
