r"""The sublevel probe of the identifiability report: how far an invariant moves among the
solutions whose loss is within the resolution of the best one, found by pushing it.

Local minima found from different seeds need not explore the set of near-optimal solutions: on a
flat landscape (SupCon of 8 imbalanced classes in :math:`\mathbb R^4` at tau 0.1) nine seeds'
minima lay within 1.6e-6 of each other while the spectrum of :math:`Z^\top Z/K` moved by 0.48
(relative) within 5e-4 nats per anchor of the best loss. Where the loss is deterministic and the
problem small (``n * d`` at most :data:`PROBE_MAX_SIZE`), each invariant is pushed from the best
solution (both ways, the cosines away from the best Gram): minimise
:math:`(L(Z) - L(Z^\ast))/r - s\,c\,\phi(Z)` on the product of spheres (L-BFGS,
:func:`~dgp.solver._sphere_lbfgs.sphere_lbfgs`) for a growing ``c`` (doubling from
:data:`PROBE_START`, each solve warm-started from the last), ``r`` the resolution, and keep the
furthest point whose loss is within ``r`` of the best (a bisection in ``c`` refines the last
step that crossed it). That point, the *witness*, is a near-optimal solution: the invariant's
spread is at least its move.

The pushed functions :math:`\phi`, each a function of the Gram (so of no rotation):

* ``spectrum``: the largest and the smallest of the top eigenvalues of :math:`Z^\top Z/n`, each
  up and down (moves measured as the report's: the largest relative change of the top ones);
* ``mean_norm``: :math:`\|w^\top Z\|^2`, up and down (``w`` the row weights: the class sizes of
  prototypes, the mean embedding of the samples);
* ``pairwise cosines``: :math:`\langle Z Z^\top, G^\ast\rangle/n^2` down (away from the best Gram,
  each step from a seeded perturbation of size :data:`PROBE_KICK` of the last, since its
  gradient vanishes at the best Gram);
  the move is the largest change of a cosine.

Every witness is a near-optimal solution, so each counts for every invariant (the spectrum's
witness moves the cosines too); the moves reported are the largest over all witnesses.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from dgp.solver._sphere_lbfgs import sphere_lbfgs

__all__ = [
    "BATCH_NOT_PROBED",
    "PROBE_BISECTIONS",
    "PROBE_FTOL",
    "PROBE_GTOL",
    "PROBE_ITERATIONS",
    "PROBE_KICK",
    "PROBE_MAX_SIZE",
    "PROBE_SECONDS",
    "PROBE_START",
    "PROBE_STEPS",
    "FactorLoss",
    "ProbeResult",
    "factor_loss",
    "invariant_moves",
    "probe_refusal",
    "sublevel_probe",
]

#: the probe runs where the solution has at most this many coordinates (``n * d``; SLSQP-free,
#: L-BFGS on the product of spheres: about 1-3 s of CPU at K = 8, d = 4 for all pushes)
PROBE_MAX_SIZE = 400
#: why a batch loss is not probed (its neighbourhood is probed at full batch only)
BATCH_NOT_PROBED = "a batch loss (probed at full batch only)"


def probe_refusal(n: int, d: int) -> str | None:
    """Why the probe does not run on a solution of ``n x d`` coordinates (more than
    :data:`PROBE_MAX_SIZE`), in words; ``None`` where it runs. The one size rule of every
    caller."""
    return f"{n} x {d} coordinates, above {PROBE_MAX_SIZE}" if n * d > PROBE_MAX_SIZE else None

#: wall-clock budget of one probe (seconds); pushes not reached are reported as not probed
PROBE_SECONDS = 20.0
#: L-BFGS iterations of each continuation step
PROBE_ITERATIONS = 200
#: first weight ``c`` of the pushed invariant, in resolutions per unit of the invariant
PROBE_START = 0.05
#: doublings of ``c`` at most (``c`` up to ``PROBE_START * 2**PROBE_STEPS``)
PROBE_STEPS = 22
#: bisections in ``c`` between the last step within the resolution and the first beyond it
PROBE_BISECTIONS = 4
#: L-BFGS-B's ``gtol`` and ``ftol`` in each step (the pushed objective is in resolutions:
#: an absolute 1e-14 of it is far below what the witness's excess is compared with)
PROBE_GTOL = 1e-9
PROBE_FTOL = 1e-14
#: size of the seeded perturbation the cosine push starts from (its gradient is zero at the
#: best Gram)
PROBE_KICK = 1e-3

ValueGrad = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass(frozen=True)
class ProbeResult:
    """What the probe found for each pushed invariant.

    Attributes
    ----------
    moves : dict
        Each probed invariant (``"pairwise cosines"``, ``"spectrum"``, ``"mean_norm"``) and
        its largest move among the witnesses (same measures as the report's spread).
    witnesses : dict
        Each probed invariant and its furthest witness (unit rows).
    excess : dict
        Each witness's loss above the best, nats per anchor (at most the resolution).
    probed : tuple
        The invariants the probe pushed to the end (within :data:`PROBE_SECONDS`).
    cosine_rms : float
        The largest RMS change of the pairwise cosines over the witnesses.
    """

    moves: dict
    witnesses: dict
    excess: dict
    probed: tuple
    cosine_rms: float = 0.0


class FactorLoss:
    r"""The per-anchor loss of a factor objective (``dgp.solver.RowFactor`` or
    ``dgp.solver.BlockFactor``: ``evaluate(X)`` on ``d x K`` factors with unit columns) as a
    function of unit rows ``Z`` (``K x d``), less its value at the rows it was made at: the
    scaled objective :math:`\hat F` times :math:`t = e^{\log t}` is the loss over the anchors
    (the scale fixed there). A plain object, not a closure, so that a result keeping it (to
    probe on first read) can still be pickled."""

    def __init__(self, objective, Z: np.ndarray) -> None:
        X0 = np.ascontiguousarray(Z.T)
        self.objective = objective
        self.t = math.exp(objective.set_scale(X0))
        self.f0 = objective.evaluate(X0)[0]

    def __call__(self, Zr: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = self.objective.evaluate(np.ascontiguousarray(Zr.T))
        return self.t * (f - self.f0), self.t * np.asarray(g).T


def factor_loss(objective, Z: np.ndarray) -> ValueGrad:
    """:class:`FactorLoss` of ``objective`` at the rows ``Z`` (``K x d``)."""
    return FactorLoss(objective, Z)


def _weights(n: int, row_weights: np.ndarray | None) -> np.ndarray:
    w = np.ones(n) if row_weights is None else np.asarray(row_weights, dtype=float)
    return w / w.sum()


def invariant_moves(Z: np.ndarray, ref: np.ndarray, row_weights: np.ndarray | None = None,
                    top: int | None = None) -> dict[str, float]:
    """How far ``Z`` is from ``ref`` (unit rows) in each invariant: the largest change of a
    pairwise cosine, its RMS over the pairs, the largest relative change of the ``top``
    eigenvalues of :math:`Z^\\top Z/n` and the change of the norm of the (``row_weights``-)
    weighted mean row."""
    n, d = Z.shape
    top = min(d, n, 16) if top is None else top
    w = _weights(n, row_weights)
    iu = np.triu_indices(n, 1)
    dc = (Z @ Z.T - ref @ ref.T)[iu]
    lam = np.linalg.eigvalsh(Z.T @ Z / n)[::-1][:top]
    lam0 = np.linalg.eigvalsh(ref.T @ ref / n)[::-1][:top]
    return {"cosine_max": float(np.abs(dc).max()) if dc.size else 0.0,
            "cosine_rms": float(np.sqrt(np.mean(dc**2))) if dc.size else 0.0,
            "spectrum": float(np.abs(lam - lam0).max()
                              / max(float(lam0[0]), np.finfo(float).tiny)),
            "mean_norm": abs(float(np.linalg.norm(w @ Z)) - float(np.linalg.norm(w @ ref)))}


def _pushes(Z0: np.ndarray, w: np.ndarray, top: int, invariant: str):
    """The functions pushed for ``invariant``: ``(phi, sign, kick)`` with ``phi(Z)`` returning
    its value and Euclidean gradient in ``Z``."""
    n = Z0.shape[0]
    if invariant == "spectrum":
        def eig(k: int):
            def phi(Z):
                lam, V = np.linalg.eigh(Z.T @ Z / n)
                v = V[:, ::-1][:, k]
                return float(lam[::-1][k]), 2.0 * np.outer(Z @ v, v) / n
            return phi
        ks = sorted({0, top - 1})
        return [(eig(k), s, False) for k in ks for s in (1.0, -1.0)]
    if invariant == "mean_norm":
        def phi(Z):
            m = w @ Z
            return float(m @ m), 2.0 * np.outer(w, m)
        if np.linalg.norm(w @ Z0) > 1e-8:
            return [(phi, 1.0, False), (phi, -1.0, False)]
        # at a zero mean (a balanced simplex) that push's gradient vanishes and whether it
        # moved was decided by the roundoff of the rows' rotation: the mean is pushed toward
        # the first point instead, a direction of the configuration itself (so that a rotated
        # or differently factored copy of the same Gram is pushed alike)
        u = Z0[0] / max(float(np.linalg.norm(Z0[0])), np.finfo(float).tiny)

        def along(Z):
            return float(w @ Z @ u), np.outer(w, u)
        return [(along, 1.0, False)]
    G0 = Z0 @ Z0.T

    def toward(Z):
        return float(np.sum((Z @ Z.T) * G0)) / n**2, 2.0 * (G0 @ Z) / n**2
    return [(toward, -1.0, True)]


def sublevel_probe(value_grad: ValueGrad, Z: np.ndarray, *, resolution: float,
                   invariants: tuple[str, ...], row_weights: np.ndarray | None = None,
                   seed: int = 0, seconds: float = PROBE_SECONDS) -> ProbeResult:
    """Push each of ``invariants`` both ways from the best solution ``Z`` (unit rows) within the
    loss ``resolution`` (nats per anchor) of ``value_grad`` (the loss per anchor and its
    Euclidean gradient in the rows; deterministic), the module docstring's continuation. Seeded
    by ``seed``; stops after ``seconds`` (invariants not finished are left out of ``probed``)."""
    Z = np.asarray(Z, dtype=float)
    n, d = Z.shape
    top = min(d, n, 16)
    w = _weights(n, row_weights)
    base = value_grad(Z)[0]
    rng = np.random.default_rng([seed, 40, 5])
    deadline = time.monotonic() + seconds
    moves: dict[str, float] = {}
    witnesses: dict[str, np.ndarray] = {}
    excess: dict[str, float] = {}
    probed = []
    rms = [0.0]
    key = {"pairwise cosines": "cosine_max", "spectrum": "spectrum", "mean_norm": "mean_norm"}

    def keep(Zc: np.ndarray, ex: float) -> None:
        # a witness of one push is a near-optimal solution for every invariant
        found = invariant_moves(Zc, Z, row_weights, top)
        for inv, k in key.items():
            if inv not in moves or found[k] > moves[inv]:
                moves[inv], witnesses[inv], excess[inv] = found[k], Zc, ex
        rms[0] = max(rms[0], found["cosine_rms"])

    for inv in invariants:
        finished = True
        for phi, sign, kick in _pushes(Z, w, top, inv):
            if time.monotonic() > deadline:
                finished = False
                break

            def objective(Zr, c, phi=phi, sign=sign):
                f, g = value_grad(Zr)
                p, gp = phi(Zr)
                return f / resolution - sign * c * p, g / resolution - sign * c * gp

            def kicked(Zs: np.ndarray, kick=kick) -> np.ndarray:
                return Zs + PROBE_KICK * rng.standard_normal(Zs.shape) if kick else Zs

            ok_c, ok_Z, bad_c = 0.0, Z, None
            c = PROBE_START
            idle = 0
            for _ in range(PROBE_STEPS):
                Zc, its = sphere_lbfgs(lambda Zr, c=c: objective(Zr, c), kicked(ok_Z),
                                       maxiter=PROBE_ITERATIONS, gtol=PROBE_GTOL,
                                       ftol=PROBE_FTOL)
                # no step twice: a stationary point of every push weight (a symmetric point)
                idle = idle + 1 if its == 0 else 0
                if idle >= 2:
                    break
                ex = value_grad(Zc)[0] - base
                if ex > resolution:
                    bad_c = c
                    break
                keep(Zc, ex)
                ok_c, ok_Z = c, Zc
                if time.monotonic() > deadline:
                    break
                c *= 2.0
            for _ in range(PROBE_BISECTIONS if bad_c is not None else 0):
                mid = 0.5 * (ok_c + bad_c)
                Zc, _ = sphere_lbfgs(lambda Zr, c=mid: objective(Zr, c), kicked(ok_Z),
                                     maxiter=PROBE_ITERATIONS, gtol=PROBE_GTOL, ftol=PROBE_FTOL)
                ex = value_grad(Zc)[0] - base
                if ex > resolution:
                    bad_c = mid
                else:
                    keep(Zc, ex)
                    ok_c, ok_Z = mid, Zc
        if finished:
            probed.append(inv)
            moves.setdefault(inv, 0.0)
    moves = {k: v for k, v in moves.items() if k in probed}
    return ProbeResult(moves=moves, witnesses=witnesses, excess=excess, probed=tuple(probed),
                       cosine_rms=rms[0])
