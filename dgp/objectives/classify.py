r"""Classify a named objective built from labels, at any scale.

:func:`classify_objective` validates its arguments once, through the objective's registry record
(:mod:`dgp.objectives.registry`), then never builds the :math:`N \times N` weighting when the
objective has structure (``engine="auto"`` or ``"structured"``): SupCon and Soft SupCon go
through the :math:`K \times K` class quotient (:mod:`dgp.engine.blocks`), the Gaussian label
kernels (y-Aware, Euclidean–Euclidean) and X-CLR through a rank-:math:`(p+2)` capacitance matrix
(:mod:`dgp.engine.lowrank`). ``engine="dense"`` builds the log-weights and runs the dense engine;
both give the same verdict, rank and ``c`` interval (property-tested near every threshold).
The closed-form conditions of the label kernels (:mod:`dgp.objectives.conditions`) explain the
verdict.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from dgp.classification import METHODS, classify_keywords, floor_of, with_loss_floor
from dgp.engine.blocks import BlockWeights, classify_blocks
from dgp.engine.lowrank import classify_lowrank, gaussian_target, row_statistics
from dgp.engine.pipeline import classify_weights
from dgp.engine.target import canonical
from dgp.errors import ParameterError, check_choice, check_int
from dgp.infonce import SIMILARITIES
from dgp.objectives import registry
from dgp.objectives.conditions import distortion_of, gaussian_explanation
from dgp.objectives.registry import Labels, Objective
from dgp.resources import blas_threads, check_memory
from dgp.result import Classification
from dgp.spec import not_given
from dgp.tolerance import Tolerance

__all__ = ["ENGINES", "EXACT_SUMS_MAX_N", "METHODS", "classify_objective"]

ENGINES = ("auto", "dense", "structured")
#: largest N for which exact O(N^2) row sums are computed (entropic bound, X-CLR's Z_i)
EXACT_SUMS_MAX_N = 20_000
#: largest number of classes for which an inconsistent verdict comes with its loss floor
FLOOR_MAX_K = 1000


def classify_objective(
    objective: str,
    labels: object,
    *,
    tau: float,
    dim: int,
    sigma: float | None = None,
    eps: float | None = None,
    label_tau: float | None = None,
    similarity: str | None = None,
    tol: float | None = None,
    method: str = "spectral",
    engine: str = "auto",
    embed: bool = False,
    exact_sums_max_n: int = EXACT_SUMS_MAX_N,
    floor: bool = False,
    starts: int | None = None,
    seed: int | None = None,
    rtol: object = not_given,
) -> Classification:
    r"""Classify a named objective built from labels.

    Parameters
    ----------
    objective : {"supcon", "soft-supcon", "y-aware", "euclid-euclid", "x-clr", "y-aware-colnorm"}
        The weighting; ``"y-aware-colnorm"`` is the column-normalised y-Aware matrix of public
        reimplementations (``W /= W.sum(1)``).
    labels : array_like
        One column of class labels (integers or names) for the class objectives; ``N x p``
        floats otherwise (X-CLR: label embeddings, normalised here).
    tau : float
        Temperature ``> 0``.
    dim : int
        Embedding dimension ``>= 1``.
    sigma, eps, label_tau : float, optional
        The objective's parameter (``sigma > 0``; ``0 < eps < 1``; ``label_tau > 0``); a
        parameter the objective does not take is refused.
    similarity : {"cosine", "euclidean"}, optional
        Latent similarity; the objective's own by default.
    tol : float
        Relative tolerance per sample (see :func:`dgp.classify`; reported).
    method : {"spectral", "sdp"}
        ``"sdp"`` forces the dense engine with semidefinite programs.
    engine : {"auto", "dense", "structured"}
        ``"auto"``: structured whenever the objective has a structured path (all but
        ``y-aware-colnorm``); ``"dense"``: build the log-weights and run the dense engine.
    embed : bool
        On the structured path, also build the ``N x rank`` embedding when realizable (the dense
        path always does). Prototypes (class objectives) are reported in the certificate.
    exact_sums_max_n : int
        Largest ``N`` for which the :math:`O(N^2)` exact row sums are computed on the structured
        label-kernel path (entropic bound; X-CLR's :math:`Z_i` for the offset convention of
        ``c``). Above it ``entropic_bound`` is ``None`` and the certificate's notes say why.
    floor : bool
        For an inconsistent cosine verdict, also compute the loss floor in ``R^dim`` (from the
        class prototypes for the class objectives; ``dgp classify`` does it by default).
    starts, seed : int, optional
        Random starts and their seed of the loss floor's search in ``R^dim`` (``floor=True``).
    rtol : float, optional
        Deprecated name of ``tol``.

    Returns
    -------
    Classification
        ``objective`` set; ``method`` is ``"structured"`` on the structured path. For the label
        kernels ``certificate.conditions`` holds the best-fit sphere, :math:`\tau R^2`,
        :math:`\sigma^2` and the closed-form statement.

    Raises
    ------
    dgp.InvalidParameterError
        If the objective, similarity, method or engine is unknown, a parameter it needs is missing
        or out of range, one it does not take is given, the labels are invalid for it (NaN,
        wrong shape, a class too small, a zero X-CLR embedding; a bare list of class sizes read
        as labels gets a hint to ``dgp.Problem(sizes=...)``), ``engine="structured"`` is asked
        for ``y-aware-colnorm``, or a parameter or the labels have the wrong type (also a
        ``TypeError`` then).
    dgp.errors.InputError
        If the dense engine would not fit in memory.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 2 * np.pi, 41)[:-1]
    >>> y = np.c_[np.cos(t), np.sin(t)] * 2.0 + [1.0, -0.5]
    >>> res = classify_objective("y-aware", y, sigma=1.0, tau=0.25, dim=2)
    >>> res.verdict, res.rank, res.method
    ('realizable', 2, 'structured')
    """
    rec = registry.get(objective)
    params = rec.check_params(sigma=sigma, eps=eps, label_tau=label_tau)
    tau, dim, rtol, floor, search = classify_keywords(
        tau=tau, dim=dim, method=method, tol=tol, rtol=rtol, floor=floor, starts=starts,
        seed=seed)
    sim = rec.similarity if similarity is None else check_choice(similarity, SIMILARITIES,
                                                                  "similarity")
    check_choice(engine, ENGINES, "engine")
    max_n = check_int(exact_sums_max_n, "exact_sums_max_n", minimum=0)
    if engine == "structured" and rec.structured is None:
        raise ParameterError(
            "engine", f"'structured' has no path for {rec.name} (its target has a non-constant "
            "diagonal); use 'auto' or 'dense'"
        )
    lab = rec.check_labels(labels)
    with blas_threads():
        return classify_labels(rec, lab, params, similarity=sim, tau=tau, dim=dim, rtol=rtol,
                               method=method, engine=engine, embed=embed, max_n=max_n,
                               floor=floor, search=search)


def classify_labels(
    rec: Objective,
    lab: Labels,
    params: dict[str, float],
    *,
    similarity: str,
    tau: float,
    dim: int,
    rtol: float,
    method: str = "spectral",
    engine: str = "auto",
    embed: bool = False,
    max_n: int = EXACT_SUMS_MAX_N,
    floor: bool = False,
    search: Mapping[str, int] | None = None,
) -> Classification:
    """:func:`classify_objective` of validated labels and parameters (``search``: the loss
    floor's ``starts`` and ``seed`` when given)."""
    dense = engine == "dense" or method == "sdp" or rec.structured is None
    explanation = None
    # continuous labels far from the origin are known to a unit roundoff of their size: the
    # tolerance of the centred kernel is relative to its spread (translation-invariant)
    factor = 1.0
    if rec.labels == "continuous":
        kernel = rec.kernel(lab, params)
        factor = kernel.roundoff_factor
    if rec.labels == "continuous" and rec.intended is None:
        width2 = rec.weighting.width2(params)
        explanation = gaussian_explanation(
            kernel.points, width2=width2, tau=tau, dim=dim, similarity=similarity,
            rtol=max(rtol, 4.0 * kernel.unit_roundoff), objective=rec.name,
        )
    compute = _floor(rec, lab, params, similarity, tau, dim, dict(search or {})) if floor \
        else None

    def decide(lf: Any, _data: None) -> Classification:
        if dense:
            return _dense(rec, lab, params, similarity, tau, dim, rtol, method, explanation, lf,
                          factor)
        tol = Tolerance.make(rtol, n=lab.n).widened(factor)
        if rec.structured == "blocks":
            within, cross = rec.block_log_weights(params, lab.classes.size)
            bw = BlockWeights(lab.sizes, within, None, lab.values, lab.classes,
                              cross_value=cross)
            return classify_blocks(bw, similarity=similarity, tau=tau, dim=dim, tol=tol,
                                   objective=rec.name, explanation=explanation, embed=embed,
                                   floor=lf)
        return _lowrank(rec, kernel, params, similarity, tau, dim, tol, explanation, embed,
                        max_n, lf)

    return with_loss_floor(decide, None, compute)


def _floor(rec: Objective, lab: Labels, params: dict[str, float], similarity: str, tau: float,
           dim: int, search: dict[str, int]) -> Callable[[], Any] | str | None:
    """What computes the loss floor in ``R^dim`` of an inconsistent cosine verdict (for
    :func:`dgp.classification.with_loss_floor`): from the class prototypes for the class
    objectives (up to FLOOR_MAX_K classes), from the dense weighting otherwise
    (:func:`dgp.classification.floor_of`); beyond, why it is not computed."""
    if similarity != "cosine":
        return None
    where = "(dgp.optima.loss_floor or dgp optimum computes it)"
    if rec.labels == "class":
        if lab.classes.size > FLOOR_MAX_K:
            return f"not computed: {lab.classes.size} > {FLOOR_MAX_K} classes {where}"
        cross = rec.cross_weight(params)

        def by_blocks():
            from dgp.optima import block_loss_floor

            return block_loss_floor(lab.sizes, within=1.0, cross=cross, tau=tau, dim=dim,
                                    **search)

        return by_blocks
    return floor_of(lab.n, lambda: rec.weights(lab, params), tau=tau, dim=dim, search=search)


def _dense(rec, lab, params, similarity, tau, dim, rtol, method, explanation, floor, factor):
    n = lab.n
    check_memory(16.0 * n * n, what=f"the dense {n} x {n} weighting of {rec.name}",
                 hint="use the structured engine (engine='auto') or fewer samples")
    suffix, notes = "", None
    if rec.intended is not None:
        dist = distortion_of(rec.kernel(lab, params))
        intended = classify_labels(registry.get(rec.intended), lab, params, similarity=similarity,
                                   tau=tau, dim=dim, rtol=rtol)
        dist["intended"] = {"verdict": intended.verdict, "rank": intended.rank,
                            "c_interval": intended.c_interval}
        notes = {"colnorm": dist}
        suffix = (
            " [column-normalised y-Aware: its target is the intended one plus the rank-2 "
            "distortion -(t_i + t_j), t = log row sums centred; largest similarity shift "
            f"{dist['max_similarity_shift']:.3g}, relative size {dist['relative_size']:.3g}; the "
            f"intended y-Aware weighting is {intended.verdict}"
            + (f" (rank {intended.rank})" if intended.rank is not None else "") + "]"
        )
    weights = canonical(rec.log_weights(lab, params))
    tol = Tolerance.make(rtol, n=n).widened(factor)
    return classify_weights(weights, similarity=similarity, tau=tau, dim=dim, tol=tol,
                            method=method, objective=rec.name, explanation=explanation,
                            suffix=suffix, notes=notes, floor=floor)


def _lowrank(rec, kernel, params, similarity, tau, dim, tol, explanation, embed, max_n, floor):
    n = kernel.x.shape[0]
    notes: dict[str, Any] = {}
    t = gaussian_target(kernel.x, kernel.kappa)
    bound: float | None = None
    shift = 0.0
    if n <= max_n:
        lse, H = row_statistics(t.U, t.C)
        bound = float(H.sum())
        if rec.weighting.row_normalised:
            # ell_ij = log w_ij + c_i with offsets of mean zero: the kernel minus mean(log Z)
            shift = -float(lse.mean())
            notes["offset_convention"] = "mean-zero offsets (as the dense engine)"
    else:
        notes["entropic_bound"] = (
            f"not computed: it needs all N^2 = {float(n) ** 2:.3g} pairs and N > "
            f"exact_sums_max_n = {max_n}"
        )
        if rec.weighting.row_normalised:
            # the kernel's own constant: ell = yh.yh / tau_y
            shift = 1.0 / rec.weighting.width2(params)
            notes["offset_convention"] = (
                "offsets c_i = log Z_i (ell_ij = yh_i . yh_j / tau_y); the "
                "dense engine's mean-zero convention would shift c by mean(log Z), not computed "
                f"above N = {max_n}"
            )
    if shift:
        t = gaussian_target(kernel.x, kernel.kappa, shift=shift)
    return classify_lowrank(t, similarity=similarity, tau=tau, dim=dim, tol=tol,
                            entropic_bound=bound, objective=rec.name, explanation=explanation,
                            notes=notes or None, embed=embed, floor=floor)
