r"""Mini-batch prototypes over enumerable compositions: the expected batch loss of every class
composition of the sampler (or a sample of them), solved and certified by the row solver, and
the batch size from which the full-batch prediction is within a tolerance.

Beyond :data:`exact_max` compositions the class-level path of :mod:`dgp.prototypes._sampled`
takes over (optimised on fresh batches, reported on held-out ones), except where the full-batch
optimum attains every composition's bound (:func:`attains_every_batch_bound`: Soft SupCon at
:math:`\tau \le \tau^*`): that Gram is then the expected-batch optimum, in closed form.

Why. A row of a composition (an anchor of class :math:`a`; :math:`\mu_b` partners of class
:math:`b`, the anchor itself not counted) has the target :math:`P_b \propto \mu_b W_{ab}` and
the model :math:`q_b \propto \mu_b e^{G_{ab}/\tau}`. Where :math:`G_{ab}/\tau - \log W_{ab}
= c_a` for every :math:`b` (the anchor's own class included), :math:`q_b \propto \mu_b
W_{ab} e^{c_a}`, so :math:`q = P` whatever the composition: the row's cross-entropy equals its
entropy, the least any Gram gives it (Gibbs). Every row of every composition at its minimum,
any non-negative combination of them (any sampler, reduction or treatment of anchors without
positives) is at its minimum over all Grams, and :math:`G` attains it. For Soft SupCon
(:math:`W` 1 within a class, :math:`\varepsilon` across) the condition is the equiangular
:math:`G` at :math:`\rho = 1 + \tau\log\varepsilon`, a Gram exactly when :math:`\tau \le
\tau^*`. The answer checks the condition on :math:`G` and reports each drawn composition's
excess over its bound (zero to rounding) as its certificate.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.constants import BATCH_ATTAIN_ATOL as ATTAIN_ATOL
from dgp.constants import BATCH_ATTAIN_EXCESS as ATTAIN_EXCESS
from dgp.constants import BATCH_GRAM_TOL, BATCH_REPLICATES
from dgp.display import stderr_progress
from dgp.errors import (
    ParameterError,
    SolverError,
    check_class_sizes,
    check_dim,
    check_positive,
)
from dgp.prototypes._blocks import block_weights, excess_gap, fits
from dgp.prototypes._closed_forms import equiangular_gram
from dgp.prototypes._dim import guard_dim, pinned_identifiability, rank_d_point
from dgp.prototypes._ident import Identifiability
from dgp.prototypes._rates import pair_probability
from dgp.prototypes._result import Prototypes
from dgp.prototypes._sampled import stochastic_prototypes
from dgp.records import Record
from dgp.resources import check_memory
from dgp.solver import (
    BatchPrediction,
    BatchSpec,
    RowProblem,
    batch_rows,
    compositions,
    exact_rows_fit,
    factor,
    lift_certificate,
    row_budget_samples,
    row_certificate,
    solve_rows,
)
from dgp.tolerance import DEFAULT_POLICY

__all__ = ["BatchTolerance", "attains_every_batch_bound", "batch_prototypes",
           "batch_size_for_tolerance", "tolerance_verdict"]


def _composition_losses(prob: RowProblem, G: np.ndarray, comp_index: np.ndarray,
                        prob_of: np.ndarray, *, excess: bool = False) -> np.ndarray:
    """Each composition's own loss (rows weighted without the composition's probability), or
    with ``excess`` its loss minus its entropic bound."""
    rows = prob.row_losses(G)
    if excess:  # the row's entropy is log mu_ref - (const - H)
        rows = rows - (prob.log_mu_ref - prob.const_minus_entropy)
    contrib = prob.alpha * rows
    per = np.zeros(prob_of.size)
    np.add.at(per, comp_index, contrib)
    return per / prob_of


def _sample_se(per: np.ndarray, comps: Any) -> float:
    """Standard error of the probability-weighted mean of ``per`` over sampled compositions."""
    mean = float(comps.prob @ per)
    var = float(comps.prob @ (per - mean) ** 2) * comps.drawn / max(comps.drawn - 1, 1)
    return math.sqrt(var / comps.drawn)


def attains_every_batch_bound(G: np.ndarray, weights: np.ndarray, tau: float,
                              atol: float = ATTAIN_ATOL) -> bool:
    """Whether ``G`` attains the entropic bound of every row of every batch composition of the
    class-block ``weights`` (module docstring): positive weights and, per class ``a``,
    ``G[a, b] - tau log weights[a, b]`` the same for every ``b`` to ``atol``.

    >>> from dgp.prototypes._closed_forms import equiangular_gram
    >>> W = np.where(np.eye(3, dtype=bool), 1.0, 0.25)
    >>> attains_every_batch_bound(equiangular_gram(3, 1 + 0.4 * np.log(0.25)), W, 0.4)
    True
    >>> attains_every_batch_bound(equiangular_gram(3, -0.5), W, 0.4)
    False
    """
    if not (weights > 0).all():
        return False
    shifted = G - tau * np.log(weights)
    return bool(np.ptp(shifted, axis=1).max() <= atol)


def batch_prototypes(
    n: np.ndarray, tau: float, eps: float | None, method: str, tol: float, spec: BatchSpec,
    full: Prototypes, *, samples: int, replicates: int, seed: int, exact_max: int,
    dim: int | None = None, starts: int = 0, progress: bool | None = None,
) -> Prototypes:
    """The expected-batch prototypes of ``spec`` from the full-batch prediction ``full`` (in
    the same dimension): exact over every composition up to ``exact_max`` of them (certified),
    the closed-form simplex for a sampler that treats classes alike, beyond that the
    stochastic class-level path (:func:`dgp.prototypes._sampled.stochastic_prototypes`)."""
    K = n.size
    exchangeable = spec.sampler != "uniform" or bool((n == n[0]).all())
    # the regular simplex, where it fits (K - 1 <= dim): in a smaller dimension it is no
    # candidate at all, and the expectation is solved like any other
    closed = (method == "auto" and eps is None and exchangeable
              and (dim is None or K - 1 <= dim))
    G_full = full.gram
    weights = block_weights(K, eps)
    # the full-batch optimum attains every composition's bound (Soft SupCon at tau <= tau*,
    # module docstring): the expected-batch optimum, in closed form, certified per composition
    attained = (not closed and method == "auto" and eps is not None
                and attains_every_batch_bound(G_full, weights, tau))
    # beyond enumeration, or where the rank-dim search over every composition would take
    # longer than fresh batches (EXACT_RANK_D_MAX_S): the stochastic class-level path
    if (not closed and not attained
            and not exact_rows_fit(n, spec, dim, exact_max, max(starts, 1))):
        return stochastic_prototypes(n, tau, eps, spec, full, dim=dim, seed=seed,
                                   replicates=replicates, samples=samples, progress=progress)
    check_memory(
        24 * 8.0 * K * K, what=f"a batch prediction for K = {K} classes",
        hint=f"up to about K = {fits(24 * 8.0)} classes fit; use fewer classes",
    )
    n_samp = row_budget_samples(K, samples)

    def build(s: int):
        comps = compositions(n, spec, exact_max=exact_max, samples=n_samp, seed=s)
        prob, ci = batch_rows(comps, weights, spec, tau=tau)
        return comps, prob, ci

    comps, prob, ci = build(seed)
    simplex = equiangular_gram(K, -1.0 / (K - 1))
    if closed:
        prob.set_scale(simplex)
        G, cert = simplex, row_certificate(prob, simplex)
        meth, reason, kkt = "closed-form", "regular simplex: the sampler treats classes alike", None
    elif attained:
        prob.set_scale(G_full)
        # the certificate of each composition drawn: its loss less its bound (zero to rounding)
        excess = _composition_losses(prob, G_full, ci, comps.prob, excess=True)
        worst = float(np.max(np.abs(excess)))
        if worst > ATTAIN_EXCESS * max(1.0, float(np.max(np.abs(prob.row_losses(G_full))))):
            raise SolverError(
                f"the full-batch optimum was to attain every composition's bound, but one "
                f"composition's loss is {worst:.2g} nats above it; please report it"
            )
        G, cert = G_full, row_certificate(prob, G_full)
        which = "every composition" if comps.exact else (
            f"the {comps.counts.shape[0]} compositions drawn")
        meth, kkt = "closed-form", None
        reason = (f"the full-batch optimum attains the bound of every row of every composition "
                  f"(G_ab - tau log W_ab the same for each a); largest excess over its bound "
                  f"of {which}: {worst:.1e} nats")
    else:
        res = solve_rows(prob, starts=[G_full, simplex], tol=tol)
        G, cert, reason = res.gram, res.certificate, res.stop_reason
        if not DEFAULT_POLICY.accepts(cert.kkt_residual, tol):
            raise SolverError(
                f"the certified solver did not converge on the batch problem: KKT residual "
                f"{cert.kkt_residual:.2g} ({reason}); please report it"
            )
        meth, kkt = "numeric", cert.kkt_residual
    rcert, lower = None, None
    if dim is not None and cert.rank > dim:
        prob.set_scale(G)
        free_low = prob.loss(G)[0] - cert.gap_bound
        guard_dim(K, dim, starts, prob.R)
        report = (stderr_progress(f"the rank-{dim} batch prototypes of K = {K} classes")
                  if progress is None or progress else None)
        X, rcert, found = rank_d_point(prob, dim, [factor(G_full, dim), factor(G, dim)],
                                       starts=starts, seed=seed, tol=tol, progress=report)
        G = X.T @ X
        prob.set_scale(G)
        cert = row_certificate(prob, G, target=tol)
        meth, kkt, reason = "numeric", rcert.gradient_norm, found.reason
        loss = prob.loss(G)[0]
        lower = min(max(prob.entropy, free_low, loss - cert.gap_bound), loss)
    elif dim is not None:
        prob.set_scale(G)
        lower = prob.loss(G)[0] - cert.gap_bound
    loss, excess, log_excess = prob.loss(G)
    loss_se = gram_se = excess_se = None
    if not comps.exact:
        # the rows are solved numerically only where every composition is enumerated
        # (exact_rows_fit): what is sampled here is a closed form, which no sample moves
        assert meth == "closed-form"
        loss_se = _sample_se(_composition_losses(prob, G, ci, comps.prob), comps)
        excess_se = _sample_se(_composition_losses(prob, G, ci, comps.prob, excess=True), comps)
        gram_se = 0.0
    # the lift certifies the collapse of a free-dimension optimum; a rank-d point has none
    lift = lift_certificate(prob, G, n, cert) if rcert is None else None
    ident = _batch_identifiability(prob, comps, ci, simplex, G_full, G)
    if dim is not None and K > dim + 1:  # no simplex in R^dim
        ident = dataclasses.replace(ident, simplex_gap=math.nan, simplex_gap_se=None,
                                    log_simplex_gap=math.nan)
    if rcert is not None:  # what the loss pins among the rank-dim search's candidates
        ident = pinned_identifiability(ident, [X.T for X in found.candidate_factors],
                                       found.candidate_losses, prob.alpha_total, seed, n)
    batch = BatchPrediction(
        spec=spec, exact=comps.exact, compositions=int(comps.counts.shape[0]),
        drawn=comps.drawn, seed=comps.seed, loss_se=loss_se, gram_se=gram_se, replicates=0,
        full_batch_gram=G_full, shift=float(np.abs(G - G_full).max()),
        positive_pair_probability=pair_probability(n, spec),
        excess_se=excess_se,
    )
    return Prototypes(
        objective="supcon" if eps is None else "soft-supcon",
        sizes=tuple(int(v) for v in n), tau=tau, eps=eps, method=meth, loss=loss,
        entropic_bound=prob.entropy, excess_loss=excess, log_excess_loss=log_excess,
        kkt_residual=kkt, certificate=cert, collapse=lift,
        # the closed-form simplex has rank K - 1 (a certificate on sampled compositions is of
        # the sample, not of the expectation the simplex solves exactly)
        rank=K - 1 if closed else cert.rank if rcert is None else DEFAULT_POLICY.rank(
            np.linalg.eigvalsh(G)),
        unique=None if lift is None else lift.unique,
        stop_reason=reason, matrix=G, batch=batch, search_identifiability=ident,
        dim=dim, lower_bound=lower, rank_d=rcert, classes=full.classes,
    )



def _batch_identifiability(prob: RowProblem, comps: Any, ci: np.ndarray, simplex: np.ndarray,
                           G_full: np.ndarray, G: np.ndarray) -> Identifiability:
    """Expected batch loss gaps of the simplex and of the full-batch prediction over the batch
    prediction ``G``, per expected anchor, with paired standard errors over the sampled
    compositions (none when the expectation is exact)."""

    def se(G_alt: np.ndarray) -> float | None:
        if comps.exact:
            return None
        d = (_composition_losses(prob, G_alt, ci, comps.prob)
             - _composition_losses(prob, G, ci, comps.prob))
        mean = float(comps.prob @ d)
        var = float(comps.prob @ (d - mean) ** 2) * comps.drawn / max(comps.drawn - 1, 1)
        return math.sqrt(var / comps.drawn) / prob.alpha_total

    gap_s, log_s = excess_gap(prob, simplex, G)
    gap_f, _ = excess_gap(prob, G_full, G)
    return Identifiability(gap_s, se(simplex), gap_f, se(G_full), prob.alpha_total, log_s)



@dataclass(frozen=True)
class BatchTolerance(Record):
    """The batch size from which the full-batch prediction is within a tolerance.

    Attributes
    ----------
    batch_size : int or None
        Smallest batch size ``B`` found within ``tol`` (``max |G_B - G_full| <= tol``, decided
        beyond the noise of ``G_B``) at ``B`` and at every larger size tried; ``None`` if even
        the largest size tried is not.
    tol : float
    table : tuple of (int, float, float or None, str)
        ``(B, shift, gram_se, verdict)`` for every size evaluated, increasing: ``"within"``
        (every entry's 95% interval within ``tol`` of the full-batch Gram), ``"beyond"`` (some
        entry's interval wholly farther) or ``"undecided"`` (between, or where the loss does
        not pin the pairwise cosines, so no Gram is a prediction).
    note : str
        How the sizes were searched.
    statement : str
        The answer in words, saying where sizes were undecided (a smaller size may then do).
    """

    batch_size: int | None
    tol: float
    table: tuple[tuple[int, float, float | None, str], ...]
    note: str
    statement: str = ""

    def json_items(self, options):
        yield from (("batch_size", self.batch_size), ("tol", self.tol))
        yield "table", [{"batch_size": b, "shift": s, "gram_se": e, "verdict": v}
                        for b, s, e, v in self.table]
        yield from (("note", self.note), ("statement", self.statement))


#: why a batch size is undecided (:func:`tolerance_verdict`), as the statement says it
_UNDECIDED_WHY = {
    "not pinned": "the loss does not pin the pairwise cosines (no Gram is a prediction)",
    "no interval": "no interval was measured (no independent run ended near the reported "
                   "solution)",
    "noise": "the Gram's 95% intervals reach across the tolerance",
}


def tolerance_verdict(p: Any, tol: float) -> tuple[str, str]:
    """Whether the prototypes ``p`` of a batch size are within ``tol`` of the full-batch Gram
    beyond the noise of their Gram (``BatchTolerance.table``'s verdicts), and why undecided
    (``"not pinned"``, ``"no interval"``, ``"noise"``; ``""`` where decided)."""
    b = p.batch
    if p.cosines_pinned is False:
        return "undecided", "not pinned"
    if b.gram_interval is None:  # exact: every composition, or a closed form
        return ("within" if b.shift <= tol else "beyond"), ""
    lo, hi = b.gram_interval
    if not (np.isfinite(lo).all() and np.isfinite(hi).all()):
        return "undecided", "no interval"
    G0 = b.full_batch_gram
    far = float(np.maximum(np.abs(lo - G0), np.abs(hi - G0)).max())
    near = float(np.maximum(np.maximum(lo - G0, G0 - hi), 0.0).max())
    if far <= tol:
        return "within", ""
    return ("beyond", "") if near > tol else ("undecided", "noise")


def batch_size_for_tolerance(
    sizes: object,
    *,
    tau: float,
    tol: float = BATCH_GRAM_TOL,
    eps: float | None = None,
    sampler: str = "uniform",
    samples_per_class: int | None = None,
    reduction: str = "mean",
    anchors_without_positives: str = "drop",
    samples: int = 1000,
    seed: int = 0,
    max_batch_size: int | None = None,
    replicates: int = BATCH_REPLICATES,
) -> BatchTolerance:
    """The smallest batch size from which the full-batch prediction is within ``tol`` (max
    absolute difference of the prototype Grams).

    Batch sizes are tried on a doubling grid from the smallest valid one up to ``N`` (or
    ``max_batch_size``), then bisected between the last size off and the first within
    ``tol`` — which assumes the shift decreases with ``B`` between grid points (stated in
    ``note``; the table shows every size tried). A size counts as within ``tol`` only
    beyond the noise of its Gram (:func:`tolerance_verdict`): ``replicates`` further
    independent runs of each sampled size give its entries' 95% intervals.

    Raises
    ------
    ValueError, TypeError
        As :func:`supcon_prototypes`, and if ``tol`` is not positive.

    >>> r = batch_size_for_tolerance([2, 5, 20], tau=0.5, tol=0.05)
    >>> r.batch_size is not None and r.batch_size <= 27
    True
    """
    from dgp.prototypes._api import supcon_prototypes  # the entry point (it imports this module)

    # every size tried is a batch problem, which takes singleton classes
    n = check_class_sizes(sizes, positives_across=eps is not None, batch=True)
    tol = check_positive(tol, "tol")
    N, K = int(n.sum()), n.size
    m = samples_per_class if sampler == "m-per-class" else None
    low = 2 * int(m) if m else 3
    high = N if max_batch_size is None else check_dim(max_batch_size, "max_batch_size")
    if sampler == "m-per-class":
        high = min(high, int(m) * K)
    if high < low:
        raise ParameterError("max_batch_size", f"must be at least {low}, got {high}")
    step = int(m) if m else 1
    cache: dict[int, tuple[float, float | None, str, str]] = {}  # shift, se, verdict, why

    def within(B: int) -> bool:
        if B not in cache:
            p = supcon_prototypes(
                n, tau=tau, eps=eps, batch_size=B, sampler=sampler,
                samples_per_class=samples_per_class, reduction=reduction,
                anchors_without_positives=anchors_without_positives, samples=samples,
                replicates=replicates, seed=seed,
            )
            cache[B] = (p.batch.shift, p.batch.gram_se, *tolerance_verdict(p, tol))
        return cache[B][2] == "within"

    grid = []
    B = low
    while B < high:
        grid.append(B)
        B = max(B * 2 // step * step, B + step)
    grid.append(high)
    ok = [within(B) for B in grid]
    if not ok[-1]:
        found = None
    else:
        first = len(ok) - 1
        while first > 0 and ok[first - 1]:
            first -= 1
        found = grid[first]
        if first > 0:
            lo, hi = grid[first - 1], grid[first]
            while hi - lo > step:
                mid = (lo + hi) // 2 // step * step
                if mid <= lo:
                    break
                if within(mid):
                    hi = mid
                else:
                    lo = mid
            found = hi
    table = tuple((b, *cache[b][:3]) for b in sorted(cache))
    undecided = [b for b, *_, v in table if v == "undecided" and (found is None or b < found)]
    why = {b: cache[b][3] for b in undecided}

    def sizes_of(r: str) -> str:
        bs = [b for b in undecided if why[b] == r]
        return (", ".join(map(str, bs)) if len(bs) <= 3 else
                f"{bs[0]}, {bs[1]}, ..., {bs[-1]} ({len(bs)} sizes)")

    reasons = "; ".join(f"{_UNDECIDED_WHY[r]} at B = {sizes_of(r)}"
                        for r in _UNDECIDED_WHY if any(why[b] == r for b in undecided))
    said = (f"; undecided at {len(undecided)} size{'s' if len(undecided) > 1 else ''} "
            f"{'below it' if found is not None else 'tried'}: {reasons}; so "
            + ("a smaller size may do" if found is not None else "none is decided")
            if undecided else "")
    statement = ((f"from B = {found}, the full-batch prediction is within {tol:g} beyond the "
                  "noise of the batched Gram" if found is not None else
                  f"no batch size tried is decided within {tol:g} of the full-batch "
                  "prediction") + said)
    return BatchTolerance(
        batch_size=found, tol=tol, table=table,
        note="doubling grid then bisection (assumes the shift decreases between grid points); "
        f"sampler {sampler}, reduction {reduction}", statement=statement,
    )
