r"""Named objectives built from labels: verdicts through the structured engine, with the exact
conditions that explain them.

:func:`classify_objective` never builds the :math:`N \times N` weighting when the objective has
structure (``engine="auto"`` or ``"structured"``): SupCon and Soft SupCon go through the
:math:`K \times K` class quotient, the Gaussian label kernels (y-Aware, Euclidean–Euclidean) and
X-CLR through a rank-:math:`(p+2)` capacitance matrix (:mod:`dgp.structured`). ``engine="dense"``
builds :math:`W` and calls :func:`dgp.classify`; both give the same verdict, rank and ``c``
interval (property-tested near every threshold).

Exact conditions
----------------
**y-Aware** (Gaussian kernel :math:`w_{ij} = e^{-|y_i - y_j|^2/2\sigma^2}`, cosine latent). The
weighting is symmetric, :math:`\ell_{ij} = -|y_i - y_j|^2/2\sigma^2`, and with
:math:`\kappa = \tau/2\sigma^2`, :math:`\mu = \tau c`,

.. math:: G(\mu)_{ij} = (1-\mu)\,\delta_{ij} + \mu - \kappa|y_i - y_j|^2 .

Let :math:`m` be the dimension of the affine hull of the labels and write :math:`U = [1, q, Y]`
(:math:`q_i = |y_i|^2`), so :math:`G(\mu) = (1-\mu)I + U M(\mu) U^\top`.

1. On :math:`\mathrm{range}(U)^\perp` (dimension :math:`N - \mathrm{rank}\,U`) every member has
   the eigenvalue :math:`1 - \mu`. Hence :math:`\mu \le 1` when :math:`N > \mathrm{rank}\,U`,
   and every member with :math:`\mu < 1` has rank :math:`\ge N - \mathrm{rank}\,U`.
2. At :math:`\mu = 1`, :math:`G(1)_{ij} = 1 - \kappa|y_i - y_j|^2`: a Gram matrix of unit
   vectors :math:`z_i` iff :math:`|z_i - z_j|^2 = (\tau/\sigma^2)|y_i - y_j|^2`, i.e. iff the
   scaled labels :math:`(\sqrt\tau/\sigma)y` are congruent to points of the unit sphere. A point
   set with affine hull of dimension :math:`m` is congruent to points of a unit sphere iff it lies
   on a sphere of radius :math:`r \le 1` within its hull (intersections of spheres with flats are
   spheres; conversely lift the hull to height :math:`\sqrt{1 - r^2}`). With :math:`R` the radius
   of the labels' sphere in their hull and :math:`\rho = \tau R^2/\sigma^2`:
   :math:`G(1) = (1-\rho)11^\top + (\tau/\sigma^2)XX^\top`, :math:`x_i = y_i - c_0`, of rank
   :math:`m` if :math:`\rho = 1` and :math:`m + 1` if :math:`\rho < 1` (:math:`1 \notin
   \mathrm{range}\,X` because the labels span their hull). If :math:`\rho > 1`, a vector
   :math:`v \perp \mathrm{range}\,X` with :math:`1^\top v \ne 0` gives
   :math:`v^\top G(1) v = (1-\rho)(1^\top v)^2 < 0`. Off any sphere, :math:`U` has full column
   rank :math:`m + 2` and :math:`M(1)` has one negative eigenvalue (its block
   :math:`\begin{pmatrix}1 & -\kappa\\ -\kappa & 0\end{pmatrix}` has determinant
   :math:`-\kappa^2`), so by Sylvester's law :math:`G(1) \not\succeq 0`.

**Theorem (y-Aware).** If :math:`N \ge d + m + 3`, the bound is attained in :math:`\mathbb R^d`
iff the labels lie on a sphere of radius :math:`R` within their affine hull, :math:`\tau R^2 \le
\sigma^2`, and :math:`d \ge m + [\tau R^2 < \sigma^2]`. The minimiser is then unique
(realizable), with :math:`c = 1/\tau` and :math:`z_i = \big((\sqrt\tau/\sigma)(y_i - c_0),
\sqrt{1 - \tau R^2/\sigma^2}\big)` up to rotation: the labels themselves when
:math:`\tau R^2 = \sigma^2` (rank :math:`m`), lifted onto a cap when :math:`\tau R^2 < \sigma^2`
(rank :math:`m + 1`). Otherwise the verdict is inconsistent. (For smaller :math:`N` the engine
still decides exactly; the sentence is then only an explanation.)

**X-CLR.** :math:`w_{ij} = e^{\hat y_i\cdot\hat y_j/\tau_y}/Z_i` satisfies the cycle condition
with offsets :math:`c_i = \log Z_i`, whatever :math:`Z_i`: the symmetric target is
:math:`\ell_{ij} = \hat y_i\cdot\hat y_j/\tau_y = 1/\tau_y - |\hat y_i - \hat y_j|^2/2\tau_y`, the
Gaussian target of the points :math:`\hat y` with :math:`\sigma^2 = \tau_y` (the sums
:math:`Z_i` are needed only to place ``c`` in the mean-zero offset convention and for the entropic
bound, never for the verdict; we compute them exactly, in blocks). Normalised embeddings lie on
the unit sphere, so for :math:`\hat y` spanning :math:`\mathbb R^p` affinely (:math:`m = p`,
:math:`R = 1`) and :math:`N \ge d + p + 3`: realizable iff :math:`\tau \le \tau_y` and
:math:`d \ge p + [\tau < \tau_y]`, with :math:`z_i = (\sqrt{\tau/\tau_y}\,\hat y_i,
\sqrt{1 - \tau/\tau_y})`; at :math:`\tau = \tau_y` the target is :math:`\hat y` itself. (If the
:math:`\hat y` lie on a smaller sphere of their hull, the y-Aware statement applies with that
:math:`R` and :math:`m`.)

**Euclidean–Euclidean** (same kernel, Euclidean latent): :math:`-\tfrac12 J D(c) J =
(\tau/\sigma^2) J YY^\top J - \tau c J`, so :math:`c_{\max} = 0`, the target at :math:`c_{\max}` is
:math:`z = (\sqrt\tau/\sigma)\,y` up to rigid motion (rank :math:`m`), and every :math:`c < 0`
has rank :math:`N - 1`: realizable iff :math:`m \le d < N - 1`, degenerate iff
:math:`d \ge N - 1`, inconsistent iff :math:`d < m`.

**Column-normalised y-Aware** (``W /= W.sum(1)`` of public code, :math:`w_{ij} = k_{ij}/s_j`,
:math:`s_j = \sum_k k_{jk}` including :math:`k_{jj} = 1`): the cycle condition holds with offsets
:math:`-\log s_i`, and the target is :math:`\ell_{ij} = \log k_{ij} - t_i - t_j + \bar t`,
:math:`t = \log s`: up to a constant (absorbed by ``c``), the intended target plus the rank-2
distortion
:math:`-(\tilde t 1^\top + 1\tilde t^\top)`, :math:`\tilde t = t - \bar t`. Its diagonal is not
constant, so it is classified by the dense engine; :func:`colnorm_distortion` reports the
distortion (largest similarity shift, relative Frobenius size) in :math:`O(N^2 p)` time and
:math:`O(N)` memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp.classification import METHODS, Classification, classify
from dgp.errors import (
    check_choice,
    check_dim,
    check_labels_class,
    check_labels_continuous,
    check_positive,
    check_rtol,
    check_unit_interval,
)
from dgp.infonce import SIMILARITIES
from dgp.spheres import SphereFit, fit_sphere
from dgp.structured import (
    LowRankTarget,
    centre_points,
    classify_blocks,
    classify_lowrank,
    gaussian_target,
    kernel_row_statistics,
)
from dgp.weights import OBJECTIVES, column_normalised_y_aware_weights, objective_weights

__all__ = [
    "ENGINES",
    "OBJECTIVE_NAMES",
    "classify_objective",
    "colnorm_distortion",
    "gaussian_conditions",
]

ENGINES = ("auto", "dense", "structured")
#: CONTRACT's five objectives plus the column-normalised y-Aware matrix of public code
OBJECTIVE_NAMES = (*OBJECTIVES, "y-aware-colnorm")
#: largest N for which exact O(N^2) row sums are computed (entropic bound, X-CLR's Z_i)
EXACT_SUMS_MAX_N = 20_000
#: largest N for which the dense engine is used where no structured path exists
DENSE_MAX_N = 6_000

_PARAMS = {
    "supcon": (),
    "soft-supcon": ("eps",),
    "y-aware": ("sigma",),
    "euclid-euclid": ("sigma",),
    "x-clr": ("label_tau",),
    "y-aware-colnorm": ("sigma",),
}


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
    rtol: float = 1e-8,
    method: str = "spectral",
    engine: str = "auto",
    embed: bool = False,
    exact_sums_max_n: int = EXACT_SUMS_MAX_N,
) -> Classification:
    r"""Classify a named objective built from labels (DESIGN §1), at any scale.

    Parameters
    ----------
    objective : {"supcon", "soft-supcon", "y-aware", "euclid-euclid", "x-clr", "y-aware-colnorm"}
        The weighting; ``"y-aware-colnorm"`` is the column-normalised y-Aware matrix of public
        reimplementations (``W /= W.sum(1)``).
    labels : array_like
        One integer column for the class objectives; ``N x p`` floats otherwise (X-CLR: label
        embeddings, normalised here).
    tau : float
        Temperature ``> 0``.
    dim : int
        Embedding dimension ``>= 1``.
    sigma, eps, label_tau : float, optional
        The objective's parameter (``sigma > 0``; ``0 < eps < 1``; ``label_tau > 0``).
    similarity : {"cosine", "euclidean"}, optional
        Latent similarity; the objective's own by default.
    rtol : float
        Relative eigenvalue tolerance (reported).
    method : {"spectral", "sdp"}
        ``"sdp"`` forces the dense engine.
    engine : {"auto", "dense", "structured"}
        ``"auto"``: structured whenever the objective has a structured path (all but
        ``y-aware-colnorm``); ``"dense"``: build ``W`` and call :func:`dgp.classify`.
    embed : bool
        On the structured path, also build the ``N x rank`` embedding when realizable (the dense
        path always does). Prototypes (class objectives) and closed-form embeddings (label
        kernels) are reported in the certificate either way.
    exact_sums_max_n : int
        Largest ``N`` for which the :math:`O(N^2)` exact row sums are computed on the structured
        path (entropic bound; X-CLR's :math:`Z_i` for the offset convention of ``c``). Above it
        ``entropic_bound`` is NaN (``null`` in JSON) and the certificate says why.

    Returns
    -------
    Classification
        ``objective`` set; ``method`` is ``"structured"`` on the structured path. For the label
        kernels ``certificate["conditions"]`` holds the best-fit sphere, :math:`\tau R^2`,
        :math:`\sigma^2` and the closed-form statement, and ``reason`` names the failing
        condition.

    Raises
    ------
    ValueError
        If the objective, similarity, method or engine is unknown, a parameter it needs is missing
        or out of range, the labels are invalid for it (NaN, wrong shape, a singleton class, a
        zero X-CLR embedding), or ``engine="structured"`` is asked for ``y-aware-colnorm``.
    TypeError
        If a parameter or the labels have the wrong type (e.g. non-integer class labels).
    NotImplementedError
        For ``y-aware-colnorm`` above ``DENSE_MAX_N`` samples.

    Examples
    --------
    >>> import numpy as np
    >>> t = np.linspace(0, 2 * np.pi, 41)[:-1]
    >>> y = np.c_[np.cos(t), np.sin(t)] * 2.0 + [1.0, -0.5]
    >>> res = classify_objective("y-aware", y, sigma=1.0, tau=0.25, dim=2)
    >>> res.verdict, res.rank, res.method
    ('realizable', 2, 'structured')
    """
    check_choice(objective, OBJECTIVE_NAMES, "objective")
    check_choice(engine, ENGINES, "engine")
    check_choice(method, METHODS, "method")
    tau = check_positive(tau, "tau")
    dim = check_dim(dim)
    rtol = check_rtol(rtol)
    given = {"sigma": sigma, "eps": eps, "label_tau": label_tau}
    for p in _PARAMS[objective]:
        if given[p] is None:
            raise ValueError(f"objective {objective!r} needs {p} (--{p.replace('_', '-')})")
    own = "euclidean" if objective == "euclid-euclid" else "cosine"
    sim = own if similarity is None else check_choice(similarity, SIMILARITIES, "similarity")
    if objective == "y-aware-colnorm" and engine == "structured":
        raise ValueError(
            "engine='structured' has no path for y-aware-colnorm (its target has a non-constant "
            "diagonal); use engine='auto' or 'dense'"
        )
    dense = engine == "dense" or method == "sdp" or objective == "y-aware-colnorm"
    if objective in ("supcon", "soft-supcon"):
        y = check_labels_class(labels)
        e = check_unit_interval(eps, "eps") if objective == "soft-supcon" else 0.0
        if dense:
            res = _dense(objective, y, sim, tau, dim, rtol, method, given)
        else:
            K = np.unique(y).size
            cross = np.full((K, K), e)
            res = classify_blocks(
                y,
                within=np.ones(K),
                cross=cross,
                similarity=sim,
                tau=tau,
                dim=dim,
                rtol=rtol,
                embed=embed,
            )
        res.objective = objective
        return res
    y = check_labels_continuous(labels)
    if objective == "x-clr":
        label_tau = check_positive(label_tau, "label_tau")
        norms = np.linalg.norm(y, axis=1)
        if (norms == 0).any():
            i = int(np.flatnonzero(norms == 0)[0])
            raise ValueError(f"label embedding {i} is zero and cannot be L2-normalised for X-CLR")
        points, sigma2 = y / norms[:, None], label_tau
    else:
        sigma = check_positive(sigma, "sigma")
        points, sigma2 = y, sigma**2
    n = y.shape[0]
    if objective == "y-aware-colnorm":
        if n > DENSE_MAX_N:
            raise NotImplementedError(
                f"y-aware-colnorm is classified by the dense engine, up to N = {DENSE_MAX_N} "
                f"samples; got N = {n}"
            )
        W = column_normalised_y_aware_weights(y, sigma=sigma)
        res = classify(W, similarity=sim, tau=tau, dim=dim, rtol=rtol, method=method)
        res.objective = objective
        dist = colnorm_distortion(y, sigma=sigma)
        intended = classify_objective("y-aware", y, sigma=sigma, tau=tau, dim=dim, rtol=rtol)
        dist["intended"] = {
            "verdict": intended.verdict,
            "rank": intended.rank,
            "c_interval": intended.c_interval,
        }
        res.certificate["colnorm"] = dist
        res.reason = (
            f"{res.reason} [column-normalised y-Aware: its target is the intended one plus the "
            f"rank-2 distortion -(t_i + t_j), t = log row sums centred; largest similarity shift "
            f"{dist['max_similarity_shift']:.3g}, relative size {dist['relative_size']:.3g}; the "
            f"intended y-Aware weighting is {intended.verdict}"
            + (f" (rank {intended.rank})" if intended.rank is not None else "")
            + "]"
        )
        return res
    if dense:
        res = _dense(objective, y, sim, tau, dim, rtol, method, given)
    else:
        res = _structured_kernel(
            objective, points, sigma2, sim, tau, dim, rtol, embed, exact_sums_max_n
        )
    res.objective = objective
    _explain(res, points, sigma2, objective, rtol)
    return res


def _dense(objective, y, sim, tau, dim, rtol, method, given) -> Classification:
    W = objective_weights(objective, y, **given)
    return classify(W, similarity=sim, tau=tau, dim=dim, rtol=rtol, method=method)


def _structured_kernel(objective, points, sigma2, sim, tau, dim, rtol, embed, max_n):
    n = points.shape[0]
    x = centre_points(points)
    notes: dict[str, Any] = {}
    if objective == "x-clr":
        # ell_ij = yh_i . yh_j / tau_y - mean(log Z): logits U C U^T with U = [1, yh]
        p = points.shape[1]
        U = np.column_stack([np.ones(n), points])
        C = np.zeros((p + 1, p + 1))
        C[1:, 1:] = np.eye(p) / sigma2
        if n <= max_n:
            lse, H = kernel_row_statistics(U, C)
            shift = -float(lse.mean())
            bound = float(H.sum())
            notes["offset_convention"] = "mean-zero offsets (as the dense engine)"
        else:
            shift, bound = 0.0, float("nan")
            notes["offset_convention"] = (
                "offsets c_i = log Z_i (ell_ij = yh_i . yh_j / tau_y); the dense engine's "
                "mean-zero convention would shift c by mean(log Z), not computed above "
                f"N = {max_n}"
            )
        C[0, 0] = shift
        t = LowRankTarget(U, C, 1.0 / sigma2 + shift, (shift - 1.0 / sigma2, shift + 1.0 / sigma2))
    else:
        t = gaussian_target(x, sigma2)
        if n <= max_n:
            _, H = kernel_row_statistics(t.U, t.C)
            bound = float(H.sum())
        else:
            bound = float("nan")
    if not np.isfinite(bound):
        notes["entropic_bound"] = (
            f"not computed: it needs all N^2 = {float(n) ** 2:.3g} pairs and N > "
            f"exact_sums_max_n = {max_n}"
        )
    res = classify_lowrank(
        t, similarity=sim, tau=tau, dim=dim, rtol=rtol, entropic_bound=bound, embed=embed
    )
    res.certificate.update(notes)
    return res


def gaussian_conditions(
    points: np.ndarray, *, sigma2: float, tau: float, dim: int, similarity: str, rtol: float
) -> dict[str, Any]:
    r"""The closed-form conditions of a Gaussian-kernel target on ``points`` (module docstring).

    Returns a dict with the sphere fit, :math:`m`, :math:`\tau R^2`, :math:`\sigma^2`,
    :math:`\rho = \tau R^2/\sigma^2`, whether the closed form applies (:math:`N \ge d + m + 3`
    for cosine), and its prediction ``(verdict, rank, why)``.

    Raises
    ------
    ValueError
        As :func:`dgp.spheres.fit_sphere`.
    """
    n = points.shape[0]
    fit: SphereFit = fit_sphere(points, rtol=max(rtol, 1e-12))
    m = fit.affine_dim
    out: dict[str, Any] = {"affine_dim": m, "sphere": fit.to_dict()}
    if similarity == "euclidean":
        out["statement"] = (
            "target z = (sqrt(tau)/sigma) y up to rigid motion (rank = affine dimension m) at "
            "c_max = 0; every c < 0 has rank N - 1"
        )
        if dim >= n - 1:
            pred = ("degenerate", None, f"dim = {dim} >= N - 1 = {n - 1}: every c <= 0 works")
        elif dim >= m:
            pred = (
                "realizable",
                m,
                f"the target is the labels scaled by sqrt(tau)/sigma = "
                f"{np.sqrt(tau / sigma2):.6g}, of affine dimension {m} <= dim = {dim}",
            )
        else:
            pred = (
                "inconsistent",
                None,
                f"the target z = (sqrt(tau)/sigma) y has affine dimension {m} > dim = {dim}",
            )
        out.update(applies=True, prediction=list(pred))
        return out
    R = fit.radius
    tR2 = tau * R * R
    rho = tR2 / sigma2
    sphere_tol = float(np.sqrt(rtol))
    on_sphere = fit.residual <= sphere_tol
    rho_tol = max(1e3 * np.finfo(float).eps, rtol)
    out.update(
        tau_R2=tR2,
        sigma2=sigma2,
        ratio=rho,
        sphere_tolerance=sphere_tol,
        ratio_tolerance=rho_tol,
        on_sphere=bool(on_sphere),
        applies=bool(n >= dim + m + 3),
        statement="for N >= d + m + 3: realizable iff the labels lie on a sphere of radius R in "
        "their affine hull (dimension m), tau R^2 <= sigma^2 and d >= m + [tau R^2 < sigma^2]; "
        "then c = 1/tau and z_i = ((sqrt(tau)/sigma)(y_i - centre), sqrt(1 - tau R^2/sigma^2)); "
        "otherwise inconsistent",
    )
    nums = f"tau R^2 = {tR2:.6g}, sigma^2 = {sigma2:.6g}"
    if not on_sphere:
        pred = (
            "inconsistent",
            None,
            f"labels are not on a sphere: best-fit radius {R:.6g}, "
            f"relative residual {fit.residual:.3g} (> {sphere_tol:.1e})",
        )
    elif rho > 1 + rho_tol:
        pred = (
            "inconsistent",
            None,
            f"labels lie on a sphere of radius {R:.6g} but {nums}"
            f": tau R^2 > sigma^2, so no unit vectors have the target similarities",
        )
    elif rho >= 1 - rho_tol:
        if m <= dim:
            pred = (
                "realizable",
                m,
                f"labels lie on a sphere of radius {R:.6g} with tau R^2 = "
                f"sigma^2 = {sigma2:.6g}: the target is the labels themselves, "
                f"(y - centre)/R, of rank {m} <= dim = {dim}",
            )
        else:
            pred = (
                "inconsistent",
                None,
                f"labels lie on a sphere with tau R^2 = sigma^2, but "
                f"the target (y - centre)/R has rank {m} > dim = {dim}",
            )
    elif m + 1 <= dim:
        pred = (
            "realizable",
            m + 1,
            f"labels lie on a sphere of radius {R:.6g} and {nums}: "
            f"tau R^2 < sigma^2 lifts them onto a cap, rank {m + 1} <= dim = {dim}",
        )
    else:
        pred = (
            "inconsistent",
            None,
            f"labels lie on a sphere of radius {R:.6g} but {nums}: "
            f"tau R^2 < sigma^2 lifts them onto a cap of rank {m + 1} > dim = {dim}",
        )
    out["prediction"] = list(pred)
    return out


def _explain(res: Classification, points, sigma2, objective, rtol) -> None:
    """Replace the generic reason by the failing (or holding) closed-form condition."""
    cond = gaussian_conditions(
        points, sigma2=sigma2, tau=res.tau, dim=res.dim, similarity=res.similarity, rtol=rtol
    )
    if objective == "x-clr":
        cond["note"] = (
            "X-CLR's target is the Gaussian target of the normalised embeddings with "
            "sigma^2 = tau_y (R = 1 when they span R^p)"
        )
    verdict, rank, why = cond["prediction"]
    agree = cond["applies"] and verdict == res.verdict and rank == res.rank
    cond["agrees_with_engine"] = bool(agree)
    res.certificate["conditions"] = cond
    if agree:
        res.reason = why
    else:
        fit = cond["sphere"]
        extra = f"best-fit sphere radius {fit['radius']:.6g}, relative residual "
        extra += f"{fit['relative_residual']:.3g}"
        if "ratio" in cond:
            extra += f", tau R^2 = {cond['tau_R2']:.6g} vs sigma^2 = {sigma2:.6g}"
        res.reason = f"{res.reason} ({extra})"


def colnorm_distortion(labels: object, *, sigma: float, block_bytes: int = 64 * 2**20) -> dict:
    r"""How the column-normalised y-Aware target differs from the intended one.

    The public ``W /= W.sum(1)`` gives :math:`w_{ij} = k_{ij}/s_j`; its symmetric target is
    :math:`\ell_{ij} = \log k_{ij} - \tilde t_i - \tilde t_j - \overline{\log s}` (dense offset
    convention) with :math:`\tilde t = \log s - \overline{\log s}`: the intended
    :math:`\log k_{ij}` plus the rank-2 matrix :math:`-(\tilde t1^\top + 1\tilde t^\top)` (the
    constant is absorbed by ``c``).

    Returns
    -------
    dict
        ``max_similarity_shift`` (:math:`\max_{i \ne j}|\tilde t_i + \tilde t_j|`, nats),
        ``relative_size`` (Frobenius norm of the distortion over that of the intended target, off
        the diagonal), ``log_row_sums`` (min, max of :math:`\log s`) and a statement.

    Raises
    ------
    ValueError
        If the labels are invalid or ``sigma <= 0``.
    """
    y = check_labels_continuous(labels)
    sigma = check_positive(sigma, "sigma")
    x = centre_points(y)
    t = gaussian_target(x, sigma**2)
    lse, _ = kernel_row_statistics(t.U, t.C, block_bytes=block_bytes)
    logs = np.logaddexp(lse, 0.0)  # s_j includes k_jj = 1
    tt = logs - logs.mean()
    n = y.shape[0]
    srt = np.sort(tt)
    max_shift = float(max(abs(srt[-1] + srt[-2]), abs(srt[0] + srt[1])))
    # ||distortion||_F^2 off the diagonal = (2N - 4)|t~|^2 (t~ has mean zero)
    dist_f = float(np.sqrt(max(2 * n - 4, 0) * (tt @ tt)))
    # ||ell||_F^2 with ell_ij = -d_ij^2/(2 sigma^2): sum_ij d^4 from moments (x centred)
    q = t.U[:, 1]
    G = x.T @ x
    d4 = 2 * n * (q @ q) + 2 * q.sum() ** 2 + 4 * float((G * G).sum())
    ell_f = float(np.sqrt(max(d4, 0.0))) / (2 * sigma**2)
    return {
        "statement": "ell_colnorm_ij = log k_ij - t_i - t_j - mean(log s) with t = log s - "
        "mean(log s), s the row sums of K: the intended target plus the rank-2 distortion "
        "-(t 1^T + 1 t^T) (the constant is absorbed by c)",
        "mean_log_row_sum": float(logs.mean()),
        "max_similarity_shift": max_shift,
        "relative_size": dist_f / ell_f if ell_f > 0 else float("inf"),
        "log_row_sums": [float(logs.min()), float(logs.max())],
    }
