"""Loss floors: the optimal, collapsed and random-embedding losses of a batch."""

from __future__ import annotations

import html
import math
import sys
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.design._common import (
    DesignInput,
    cell_prototypes,
    design_input,
    fixed_parameters,
    needed_parameters,
    optimum_takes_dim,
    prototype_rank,
    search_settings,
    tolerance,
)
from dgp.design._parameters import (
    CONVENTIONS,
    EXCESS_SOURCES,
    GENERAL_OPTIMUM_MAX_N,
    SUPCONTRAST_BASE_TEMPERATURE,
)
from dgp.errors import (
    ParameterError,
    check_choice,
    check_dim,
    check_int,
    check_positive,
)
from dgp.problem import Problem
from dgp.records import Record
from dgp.resources import check_memory
from dgp.result import Classification
from dgp.solver import check_time
from dgp.spec import not_given

__all__ = [
    "LossFloors",
    "log_mgf_cosine",
    "loss_floors",
]

# ----------------------------------------------------------------------------------------------
# loss floors
# ----------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LossFloors(Record):
    r"""Reference values of a w-InfoNCE loss for reading a training curve.

    All values are in nats. ``*_sum`` values are summed over the :math:`N` anchors (dgp's
    convention); :meth:`per_anchor` converts them:

    * ``"pml"`` — pytorch-metric-learning's ``SupConLoss`` with its default reducer
      (``AvgNonZeroReducer``): the mean over anchors that have a positive;
    * ``"supcontrast"`` — the SupContrast reference ``SupConLoss``: the mean over all anchors
      times :math:`\tau/\tau_{\text{base}}` (``base_temperature``, 0.07 by default);
    * ``"sum"`` — unchanged.

    Attributes
    ----------
    objective : str
    n : int
        Number of anchors (rows of the batch's similarity matrix: with several views per
        sample, every view is an anchor).
    anchors_with_positives : int
        Anchors with a positive weight on some other sample.
    tau : float
    dim : int or None
        Embedding dimension (``None``: free dimension).
    base_temperature : float
    entropic_bound : float or None
        :math:`\sum_i H(p_i)`, the floor when it is attained.
    optimal_sum : float or None
        :math:`\min_Z L(Z)` (in :math:`\mathbb R^{d}` when ``dim`` is given); ``None`` when
        not computed (``optimal_source`` says why).
    optimal_source : str
        How it was obtained.
    collapsed_sum : float
        The loss with every embedding at one point: :math:`q_{ij} = 1/(N-1)`, so each anchor
        costs :math:`\log(N-1)` whatever its weights.
    random_sum : float or None
        The expected loss of embeddings drawn independently and uniformly on the unit sphere of
        :math:`\mathbb R^d` (needs ``dim``), by Monte Carlo. Given the anchor,
        :math:`u_k = \langle z_i, z_k\rangle` are independent with density
        :math:`\propto (1-u^2)^{(d-3)/2}` and :math:`\mathbb E s_{ij} = 0`, so each anchor costs
        :math:`\mathbb E\log\sum_{k=1}^{N-1} e^{u_k/\tau}`, whatever its weights.
    random_stderr : float or None
        Standard error of ``random_sum``.
    random_interval : tuple of float or None
        Exact bounds on ``random_sum`` (Jensen): :math:`N\log(N-1) \le \cdot \le
        N[\log(N-1) + \log M_d(1/\tau)]`, :math:`M_d(\kappa) = \Gamma(d/2)(2/\kappa)^{d/2-1}
        I_{d/2-1}(\kappa)` the moment generating function of :math:`u`.
    random_samples : int
        Monte Carlo replicates.
    seed : int
    optimal_certified : bool
        ``optimal_sum`` is proven the minimum: the entropic bound attained (the
        classification's certificate), class prototypes whose certificate is global, or a
        :func:`dgp.optimum` point whose dual matrix is PSD.
    lower_bound : float or None
        A proven lower bound on the minimum (in :math:`\mathbb R^{d}` when ``dim`` is given):
        ``optimal_sum`` when certified, otherwise the convex (dual) lower bound of the solve
        that found it (``lower_bound`` of :func:`dgp.optimum` or
        :func:`dgp.supcon_prototypes`); ``None`` when none was computed.
    solve_certificate : certificate or None
        The certificate of the solve that gave ``optimal_sum``, the very one its result
        carries: the KKT certificate of :func:`dgp.optimum` or :func:`dgp.supcon_prototypes`,
        the classification's certificate when the entropic bound is attained; ``None`` when
        nothing was solved. ``certificate`` in ``to_dict`` is it (else a ``"loss-floor"``
        block that says why there is none).
    """

    objective: str
    n: int
    anchors_with_positives: int
    tau: float
    dim: int | None
    base_temperature: float
    entropic_bound: float | None
    optimal_sum: float | None
    optimal_source: str
    collapsed_sum: float
    random_sum: float | None
    random_stderr: float | None
    random_interval: tuple[float, float] | None
    random_samples: int
    seed: int
    optimal_certified: bool = False
    lower_bound: float | None = None
    solve_certificate: Any = None

    def per_anchor(self, convention: str) -> dict[str, float | None]:
        """``optimal``, ``collapsed``, ``random`` (and ``entropic_bound``) in a convention.

        Raises
        ------
        ValueError
            If ``convention`` is not one of :data:`CONVENTIONS`.
        """
        check_choice(convention, CONVENTIONS, "convention")
        if convention == "sum":
            scale = 1.0
        elif convention == "pml":
            scale = 1.0 / self.anchors_with_positives
        else:
            scale = (self.tau / self.base_temperature) / self.n

        def conv(x: float | None) -> float | None:
            return None if x is None else x * scale

        return {"optimal": conv(self.optimal_sum), "collapsed": conv(self.collapsed_sum),
                "random": conv(self.random_sum), "entropic_bound": conv(self.entropic_bound)}

    def json_items(self, options):
        """The fields, every convention included."""
        yield from (("objective", self.objective), ("n", self.n),
                    ("anchors_with_positives", self.anchors_with_positives), ("tau", self.tau),
                    ("dim", self.dim), ("base_temperature", self.base_temperature),
                    ("optimal_source", self.optimal_source),
                    ("conventions", {c: self.per_anchor(c) for c in CONVENTIONS}),
                    ("random_stderr", self.random_stderr),
                    ("random_interval", self.random_interval),
                    ("random_samples", self.random_samples), ("seed", self.seed),
                    ("lower_bound", self.lower_bound),
                    ("gap", None if self.lower_bound is None or self.optimal_sum is None
                     else max(0.0, self.optimal_sum - self.lower_bound)),
                    ("certificate", self.certificate))

    @property
    def certificate(self) -> Any:
        """The certificate of the optimal loss: the solve's own (:attr:`solve_certificate`,
        the same as :func:`dgp.optimum`'s or :func:`dgp.supcon_prototypes`' for the same
        problem), or, when nothing was solved, a ``"loss-floor"`` block (``kind``,
        ``statement``, ``certified`` false) that says why."""
        if self.solve_certificate is not None:
            return self.solve_certificate
        return {"kind": "loss-floor", "statement": _FLOOR_STATEMENT,
                "certified": False, "source": self.optimal_source, "lower_bound": None}

    def _table(self) -> list[list[str]]:
        conv = {c: self.per_anchor(c) for c in CONVENTIONS}
        rows = []
        for key, label in (("optimal", "optimal (floor)"), ("collapsed", "collapsed (1 point)"),
                           ("random", "random (uniform)")):
            rows.append([label, *("n/a" if conv[c][key] is None else f"{conv[c][key]:.6g}"
                                  for c in CONVENTIONS)])
        return rows

    def __str__(self) -> str:
        from textwrap import wrap

        head = [f"loss floors of {self.objective}: N = {self.n} anchors, tau = {self.tau:g}, "
                + ("free dimension" if self.dim is None else f"dim = {self.dim}")]
        cols = ["", "sum (nats)", "pml / anchor", f"SupContrast (base {self.base_temperature:g})"]
        rows = self._table()
        widths = [max(len(r[k]) for r in [cols, *rows]) for k in range(4)]
        fmt = "  ".join(f"{{:<{w}}}" for w in widths)
        lines = [*head, "", fmt.format(*cols), fmt.format(*("-" * w for w in widths))]
        lines += [fmt.format(*r) for r in rows]
        lines += ["", *wrap("optimal: " + self.optimal_source, 80)]
        if self.random_sum is None:
            lines.append("random: needs dim (embeddings uniform on the unit sphere of R^dim)")
        else:
            lo, hi = self.random_interval
            lines += wrap(f"random: Monte Carlo over {self.random_samples} draws (seed "
                          f"{self.seed}), standard error {self.random_stderr:.2g}; exact bounds "
                          f"[{lo:.6g}, {hi:.6g}] summed", 80)
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        cols = ["", "sum (nats)", "pml / anchor", f"SupContrast (base {self.base_temperature:g})"]
        head = "".join(f"<th>{html.escape(c)}</th>" for c in cols)
        body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in r) + "</tr>"
                       for r in self._table())
        return (f"<p>{html.escape(str(self).splitlines()[0])}</p><table><tr>{head}</tr>{body}"
                f"</table>")


#: the statement of the loss floors' certificate (kind ``"loss-floor"``)
_FLOOR_STATEMENT = (
    "optimal_sum is the minimum of the loss (in R^dim when dim is given) when certified: the "
    "entropic bound attained (the classification's certificate), the loss of class prototypes "
    "certified globally optimal, or of a dgp.optimum point whose dual matrix is PSD; source "
    "says which, and uncertified it is only the loss of the best point found; this block "
    "stands where no solve was made (the solve's own certificate stands otherwise)"
)


def log_mgf_cosine(kappa: float, d: int) -> float:
    r""":math:`\log \mathbb E[e^{\kappa u}]` for :math:`u` the cosine between two independent
    uniform directions of :math:`\mathbb R^d`: :math:`\log[\Gamma(d/2)(2/\kappa)^{\nu}
    I_\nu(\kappa)]`, :math:`\nu = d/2 - 1`, in log space (scaled Bessel function, or its series
    when that underflows).

    >>> round(log_mgf_cosine(2.0, 1), 12) == round(math.log(math.cosh(2.0)), 12)
    True
    >>> round(log_mgf_cosine(2.0, 3), 12) == round(math.log(math.sinh(2.0) / 2.0), 12)
    True
    """
    from scipy.special import gammaln, ive, logsumexp

    nu = d / 2.0 - 1.0
    if d == 1:
        return kappa + math.log1p(math.exp(-2.0 * kappa)) - math.log(2.0)
    v = float(ive(nu, kappa))
    if v > 0.0 and math.isfinite(v):
        return float(gammaln(d / 2.0)) + nu * math.log(2.0 / kappa) + math.log(v) + kappa
    if kappa > 1e8 * (1.0 + nu * nu):  # beyond scipy's range, where the asymptotic series
        # I_nu(k) e^-k = (2 pi k)^-1/2 (1 - (4nu^2-1)/(8k) + O(nu^4/k^2)) is exact in float64
        return (float(gammaln(d / 2.0)) + nu * math.log(2.0 / kappa) + kappa
                - 0.5 * (math.log(2.0 * math.pi) + math.log(kappa))
                + math.log1p(-(4.0 * nu * nu - 1.0) / (8.0 * kappa)))
    # series 0F1(; d/2; kappa^2/4) = sum_k (kappa^2/4)^k / ((d/2)_k k!)
    a = kappa * kappa / 4.0
    kmax = int(8.0 * math.sqrt(a) + 60)
    k = np.arange(kmax)
    terms = k * math.log(a) - gammaln(k + 1.0) - (gammaln(d / 2.0 + k) - gammaln(d / 2.0))
    return float(logsumexp(terms))


#: float64 arrays of one block of draws alive at once in the Monte Carlo mean (the draws, their
#: scaled copy and scipy's logsumexp temporaries): 7.1 measured with tracemalloc, 8 counted
_MC_TEMPORARIES = 8


_LOG_FLOAT_MAX = math.log(sys.float_info.max)


def _mc_block(n: int) -> int:
    """Draws per block of the Monte Carlo mean (about 2e6 cosines)."""
    return max(1, int(2_000_000 // max(1, n - 1)))


def _mc_bytes(n: int, samples: int) -> float:
    """The peak memory of :func:`_random_loss`: the values and one block's temporaries."""
    return 8.0 * samples + 8.0 * _MC_TEMPORARIES * min(_mc_block(n), samples) * (n - 1)


def _random_loss(n: int, tau: float, d: int, samples: int, seed: int) -> tuple[float, float]:
    """Monte Carlo mean and standard error of :math:`\\log\\sum_{k=1}^{n-1} e^{u_k/\\tau}`."""
    from scipy.special import logsumexp

    block = _mc_block(n)
    rng = np.random.default_rng(seed)
    vals = np.empty(samples)
    for s in range(0, samples, block):
        m = min(block, samples - s)
        if d == 1:
            u = rng.choice([-1.0, 1.0], size=(m, n - 1))
        else:
            u = 2.0 * rng.beta((d - 1) / 2.0, (d - 1) / 2.0, size=(m, n - 1)) - 1.0
        vals[s:s + m] = logsumexp(u / tau, axis=1)
    scale = max(1.0, float(np.abs(vals).max()))  # values near 1/tau: no overflow in the squares
    se = float((vals / scale).std(ddof=1) * scale / math.sqrt(samples)) if samples > 1 else \
        float("nan")
    return float(vals.mean()), se


def loss_floors(
    objective: str | Problem | None = None,
    labels: object = None,
    *,
    tau: float | None = None,
    W: object = None,
    sizes: object = None,
    dim: int | None = None,
    eps: float | None = None,
    sigma: float | None = None,
    label_tau: float | None = None,
    similarity: str | None = None,
    base_temperature: float = SUPCONTRAST_BASE_TEMPERATURE,
    samples: int | None = None,
    seed: int | None = None,
    tol: float | None = None,
    starts: int | None = None,
    rtol: object = not_given,
) -> LossFloors:
    r"""The optimal, collapsed and random-embedding losses of an objective on a batch.

    A training curve of a w-InfoNCE loss

    .. math:: L(Z) = \sum_i \sum_{j\ne i} p_{ij}\Big(-s_{ij} + \log\sum_{k\ne i} e^{s_{ik}}\Big)

    starts near the random value, can stall at the collapsed value :math:`N\log(N-1)` (every
    embedding at one point) and cannot go below the optimum. The optimum is the entropic bound
    when it is attained; else, for SupCon and Soft SupCon, the loss of the optimal class
    prototypes (:func:`dgp.supcon_prototypes`) when their rank fits in ``dim``; otherwise, and
    for other cosine weightings (up to 300 samples), :func:`dgp.optimum` in ``R^dim`` (under
    its memory and time guards: a class weighting is solved on its K classes).

    Parameters
    ----------
    objective, labels, W, sizes, eps, sigma, label_tau, similarity
        As :func:`phase` (a :class:`dgp.Problem` first, or the older forms). ``sizes`` count
        the rows of one batch's similarity matrix (with
        ``n_views`` views per sample, each sample contributes ``n_views`` rows).
    tau : float
        Temperature (a keyword, or the problem's).
    dim : int, optional
        Embedding dimension; ``None`` for the free-dimension optimum (no random value then).
    base_temperature : float
        SupContrast's ``base_temperature`` (its loss is scaled by ``tau / base_temperature``).
    samples : int, optional
        Monte Carlo replicates of the random embedding (default: about :math:`4\cdot10^6/N`,
        between 50 and 4000).
    seed : int, optional
        Seed of the Monte Carlo draws and of the random starts of a search in ``R^dim``
        (default 0, as every entry point's).
    tol : float
        Relative tolerance of the classification (``rtol``: its deprecated name).
    starts : int, optional
        Random starts of a search in ``R^dim`` (:func:`dgp.optimum`'s default otherwise).

    Returns
    -------
    LossFloors

    Raises
    ------
    ValueError
        As :func:`phase`; ``base_temperature <= 0``; ``samples < 2``.
    TypeError
        If an argument has the wrong type.

    Examples
    --------
    >>> f = loss_floors("supcon", sizes=[4, 4, 4], tau=0.1)
    >>> round(f.per_anchor("pml")["optimal"], 6)     # log(3 + 8 e^{-15}): the simplex
    1.098613
    >>> round(f.per_anchor("pml")["collapsed"], 6)   # log(N - 1) = log 11
    2.397895
    """
    rtol = tolerance(tol, rtol)
    seed = 0 if seed is None else check_int(seed, "seed", minimum=0)
    problem, given = design_input(
        objective, labels, W=W, sizes=sizes, similarity=similarity, rtol=rtol,
        entry="loss_floors", given={"tau": tau, "eps": eps, "sigma": sigma,
                                    "label_tau": label_tau},
        search=search_settings(starts, seed))
    needed = tuple(p for p in needed_parameters(problem) if p != "dim")
    fixed = fixed_parameters(problem, given, (), needed)
    if dim is not None:
        fixed["dim"] = check_dim(dim)
    base = check_positive(base_temperature, "base_temperature")
    n = problem.weights.n if problem.weights is not None else problem.labels.n
    if samples is None:
        reps = int(min(4000, max(50, 4_000_000 // max(1, n - 1))))
    else:
        reps = check_int(samples, "samples", minimum=2)
        check_time(20.0 * reps * max(1, n - 1), what=f"{reps} Monte Carlo draws of {n - 1} "
                   "cosines", instead="ask for fewer samples", param="samples")
    if "dim" in fixed and math.log(2.0 * n) - math.log(fixed["tau"]) > _LOG_FLOAT_MAX:
        raise ParameterError("tau", f"= {fixed['tau']:g} is too small for the random-embedding "
                             f"loss: it is about N / tau = {n} / {fixed['tau']:g} nats summed, "
                             "beyond the float range (about 1.8e308); use a larger tau, or "
                             "leave out dim (no random value then)")
    if "dim" in fixed:  # beside the validated weighting, alive until the end
        kept = problem.weights.L.nbytes if problem.weights is not None and \
            problem.weights.L is not None else 0
        check_memory(kept + _mc_bytes(n, reps),
                     what=f"{reps} Monte Carlo draws of {n - 1} cosines",
                     hint="ask for fewer samples")
    t = fixed["tau"]
    res = problem.classify({**fixed, "dim": fixed.get("dim", n)})
    bound = res.entropic_bound
    optimal, source, certified, lower, cert = _optimal_loss(problem, fixed, res)
    collapsed = n * math.log(n - 1.0)
    random_sum = random_se = None
    interval = None
    if "dim" in fixed:
        mean, se = _random_loss(n, t, fixed["dim"], reps, seed)
        random_sum, random_se = n * mean, n * se
        interval = (collapsed, n * (math.log(n - 1.0) + log_mgf_cosine(1.0 / t, fixed["dim"])))
    return LossFloors(problem.name, n, n, t, fixed.get("dim"), base, bound, optimal, source,
                      collapsed, random_sum, random_se, interval, reps, seed, certified, lower,
                      cert)


#: what :func:`_optimal_loss` found: the optimal loss, how, whether it is proven the minimum, a
#: proven lower bound on it, and the certificate of the solve (``None`` where nothing was solved)
Optimal = tuple[float | None, str, bool, float | None, Any]


def _none(why: str) -> Optimal:
    return None, why, False, None, None


def _optimal_loss(problem: DesignInput, fixed: dict, res: Classification) -> Optimal:
    """The optimal loss, how it was obtained, whether it is proven the minimum, its proven
    lower bound and the solve's certificate."""
    where = "free dimension" if "dim" not in fixed else f"R^{fixed['dim']}"
    if res.attainable:
        if res.entropic_bound is None:
            return _none("not computed: the entropic bound is attained but was not computed "
                         "(N above the exact-sums limit)")
        return (res.entropic_bound, (f"the entropic bound sum_i H(p_i), attained in {where} "
                                     f"({res.verdict})"), True, res.entropic_bound,
                res.certificate)
    if problem.is_class:
        protos, code = cell_prototypes(problem, {**fixed, "dim": fixed.get("dim", res.n)})
        if protos is None:
            return _none(EXCESS_SOURCES[code])
        r = prototype_rank(protos.gram)
        if "dim" in fixed and r > fixed["dim"]:  # the free prototypes do not fit in R^dim
            return _optimum_in(problem, fixed, where)
        how = "closed form" if protos.kkt_residual is None else (
            f"certified solver, KKT residual {protos.kkt_residual:.1e}")
        certified = protos.convergence.certified
        return (float(protos.loss), (f"the optimal class prototypes (dgp.supcon_prototypes, "
                                     f"{how}; rank {r}), classes collapsed; the bound "
                                     "is not attained"), certified,
                float(protos.loss) if certified else protos.lower_bound, protos.certificate)
    if res.similarity != "cosine":
        return _none(EXCESS_SOURCES["not-computed-euclidean"])
    if res.n > GENERAL_OPTIMUM_MAX_N:
        return _none(EXCESS_SOURCES["not-computed-size"])
    return _optimum_in(problem, fixed, where)


def _optimum_in(problem: DesignInput, fixed: dict, where: str) -> Optimal:
    """The loss of :func:`dgp.optimum` in ``R^dim`` (or free), under its memory and time
    guards (a class weighting is reduced to its K classes there)."""
    if not optimum_takes_dim():
        return _none(EXCESS_SOURCES["not-computed-solver"])
    from dgp.optima import optimum

    opt = optimum(problem.dense_weights(fixed), tau=fixed["tau"], dim=fixed.get("dim"),
                  progress=False, **problem.search)
    how = "certified globally optimal" if opt.certified_global else "best of its starts, gap " \
        f"{opt.gap:.2g} nats to the convex lower bound"
    certified = bool(opt.certified_global)
    return (float(opt.loss), f"dgp.optimum in {where} (rank {opt.rank}, {how})", certified,
            float(opt.loss) if certified else float(opt.lower_bound), opt.certificate)

