r"""The closed-form conditions of the label-kernel objectives, and the column-normalisation
diagnosis. They explain the engine's verdict (the engine decides; a closed form whose
hypotheses hold gives the reason sentence when it agrees).

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
   on a sphere of radius :math:`r \le 1` within its hull. With :math:`R` the radius of the
   labels' sphere in their hull and :math:`\rho = \tau R^2/\sigma^2`:
   :math:`G(1) = (1-\rho)11^\top + (\tau/\sigma^2)XX^\top`, :math:`x_i = y_i - c_0`, of rank
   :math:`m` if :math:`\rho = 1` and :math:`m + 1` if :math:`\rho < 1`. If :math:`\rho > 1`, a
   vector :math:`v \perp \mathrm{range}\,X` with :math:`1^\top v \ne 0` gives
   :math:`v^\top G(1) v = (1-\rho)(1^\top v)^2 < 0`. Off any sphere, :math:`M(1)` has one negative
   eigenvalue, so by Sylvester's law :math:`G(1) \not\succeq 0`.

**Theorem (y-Aware).** If :math:`N \ge d + m + 3`, the bound is attained in :math:`\mathbb R^d`
iff the labels lie on a sphere of radius :math:`R` within their affine hull, :math:`\tau R^2 \le
\sigma^2`, and :math:`d \ge m + [\tau R^2 < \sigma^2]`. The minimiser is then unique, with
:math:`c = 1/\tau` and :math:`z_i = \big((\sqrt\tau/\sigma)(y_i - c_0), \sqrt{1 - \tau
R^2/\sigma^2}\big)` up to rotation. Otherwise the verdict is inconsistent.

**X-CLR.** :math:`w_{ij} = e^{\hat y_i\cdot\hat y_j/\tau_y}/Z_i` satisfies the cycle condition
with offsets :math:`c_i = \log Z_i`: the symmetric target is
:math:`\ell_{ij} = \hat y_i\cdot\hat y_j/\tau_y = 1/\tau_y - |\hat y_i - \hat y_j|^2/2\tau_y`, the
Gaussian target of the points :math:`\hat y` with :math:`\sigma^2 = \tau_y`: for :math:`\hat y`
spanning :math:`\mathbb R^p` affinely (:math:`m = p`, :math:`R = 1`) and :math:`N \ge d + p + 3`,
realizable iff :math:`\tau \le \tau_y` and :math:`d \ge p + [\tau < \tau_y]`.

**Euclidean–Euclidean** (same kernel, Euclidean latent): :math:`-\tfrac12 J D(c) J =
(\tau/\sigma^2) J YY^\top J - \tau c J`, so :math:`c_{\max} = 0` (in the convention
:math:`s^* = \log w + c`), the target at :math:`c_{\max}` is :math:`z = (\sqrt\tau/\sigma)\,y`
up to rigid motion (rank :math:`m`), and every :math:`c < 0` has rank :math:`N - 1`: realizable
iff :math:`m \le d < N - 1`, degenerate iff :math:`d \ge N - 1`, inconsistent iff :math:`d < m`.

**Column-normalised y-Aware** (``W /= W.sum(1)`` of public code, :math:`w_{ij} = k_{ij}/s_j`):
the cycle condition holds with offsets :math:`-\log s_i`, and the target is the intended
:math:`\log k_{ij}` plus the rank-2 distortion :math:`-(\tilde t 1^\top + 1\tilde t^\top)`,
:math:`\tilde t = \log s - \overline{\log s}` (the constant is absorbed by ``c``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from dgp.engine.lowrank import gaussian_target, row_statistics
from dgp.engine.rules import Explanation
from dgp.objectives import registry
from dgp.objectives.registry import Kernel
from dgp.objectives.spheres import label_sphere, on_label_sphere, sphere_tolerance

__all__ = ["colnorm_distortion", "distortion_of", "gaussian_explanation"]


def gaussian_explanation(
    points: np.ndarray, *, width2: float, tau: float, dim: int, similarity: str, rtol: float,
    objective: str,
) -> Explanation:
    r"""The closed-form prediction of a Gaussian-kernel target on ``points`` (module docstring).

    ``width2`` is :math:`\sigma^2` (y-Aware, Euclidean–Euclidean) or :math:`\tau_y` (X-CLR, on
    the normalised label embeddings); ``objective`` is a registered label-kernel objective,
    whose weighting says how texts write the width and whether the points are directions.
    """
    n = points.shape[0]
    fit = label_sphere(points, rtol=rtol)
    m = fit.affine_dim
    details: dict[str, Any] = {"affine_dim": m, "sphere": fit.to_dict()}
    weighting = registry.get(objective).weighting
    name = weighting.symbol
    if weighting.directions:
        details["note"] = (
            "X-CLR's target is the Gaussian target of the normalised embeddings with "
            "sigma^2 = tau_y (R = 1 when they span R^p)"
        )
    if similarity == "euclidean":
        details["statement"] = (
            "target z = (sqrt(tau)/sigma) y up to rigid motion (rank = affine dimension m) at "
            "c_max; every c < c_max has rank N - 1"
        )
        if dim >= n - 1:
            pred = ("degenerate", None, f"dim = {dim} >= N - 1 = {n - 1}: every c <= c_max "
                    "gives an optimal configuration")
        elif dim >= m:
            pred = ("realizable", m, "the target is the labels scaled by sqrt(tau)/sigma = "
                    f"{np.sqrt(tau / width2):.6g}, of affine dimension {m} <= dim = {dim}, "
                    "unique up to rigid motion")
        else:
            pred = ("inconsistent", None, "the target z = (sqrt(tau)/sigma) y has affine "
                    f"dimension {m} > dim = {dim}")
        details.update(applies=True, prediction=list(pred))
        return Explanation(pred[0], pred[1], pred[2], True, details,
                           f"labels of affine dimension {m}")
    R = fit.radius
    tR2 = tau * R * R
    rho = tR2 / width2
    sphere_tol = sphere_tolerance(rtol)
    on_sphere = on_label_sphere(fit, rtol)
    rho_tol = max(1e3 * np.finfo(float).eps, rtol)
    applies = bool(n >= dim + m + 3)
    details.update(
        tau_R2=tR2, width2=width2, ratio=rho, sphere_tolerance=sphere_tol,
        ratio_tolerance=rho_tol, on_sphere=bool(on_sphere), applies=applies,
        statement=f"for N >= d + m + 3: realizable iff the labels lie on a sphere of radius R in "
        f"their affine hull (dimension m), tau R^2 <= {name} and d >= m + [tau R^2 < {name}]; "
        f"then c = 1/tau and z_i = ((sqrt(tau/{name}))(y_i - centre), sqrt(1 - tau R^2/{name}));"
        " otherwise inconsistent",
    )
    nums = f"tau R^2 = {tR2:.6g}, {name} = {width2:.6g}"
    if not on_sphere:
        pred = ("inconsistent", None, f"labels are not on a sphere: best-fit radius {R:.6g}, "
                f"relative residual {fit.residual:.3g} (> {sphere_tol:.1e})")
    elif rho > 1 + rho_tol:
        pred = ("inconsistent", None, f"labels lie on a sphere of radius {R:.6g} but {nums}: "
                f"tau R^2 > {name}, so no unit vectors have the target similarities")
    elif rho >= 1 - rho_tol:
        if m <= dim:
            pred = ("realizable", m, f"labels lie on a sphere of radius {R:.6g} with tau R^2 = "
                    f"{name} = {width2:.6g}: the target is the labels themselves, "
                    f"(y - centre)/R, of rank {m} <= dim = {dim}")
        else:
            pred = ("inconsistent", None, f"labels lie on a sphere with tau R^2 = {name}, but "
                    f"the target (y - centre)/R has rank {m} > dim = {dim}")
    elif m + 1 <= dim:
        pred = ("realizable", m + 1, f"labels lie on a sphere of radius {R:.6g} and {nums}: "
                f"tau R^2 < {name} lifts them onto a cap, rank {m + 1} <= dim = {dim}")
    else:
        pred = ("inconsistent", None, f"labels lie on a sphere of radius {R:.6g} but {nums}: "
                f"tau R^2 < {name} lifts them onto a cap of rank {m + 1} > dim = {dim}")
    details["prediction"] = list(pred)
    summary = (f"best-fit sphere radius {R:.6g}, relative residual {fit.residual:.3g}, "
               f"tau R^2 = {tR2:.6g} vs {name} = {width2:.6g}")
    return Explanation(pred[0], pred[1], pred[2], applies, details, summary)


def colnorm_distortion(labels: object, *, sigma: float) -> dict[str, Any]:
    r"""How the column-normalised y-Aware target differs from the intended one, in
    :math:`O(N^2 p)` time and :math:`O(N)` memory.

    Raises
    ------
    ValueError
        If the labels are invalid or ``sigma`` is not a number ``> 0``.

    Returns
    -------
    dict
        ``max_similarity_shift`` (:math:`\max_{i \ne j}|\tilde t_i + \tilde t_j|`, nats),
        ``relative_size`` (Frobenius norm of the distortion over that of the intended target, off
        the diagonal), ``log_row_sums`` (min, max of :math:`\log s`) and a statement.
    """
    rec, lab, params = registry.validated("y-aware-colnorm", labels, sigma=sigma)
    return distortion_of(rec.kernel(lab, params))


def distortion_of(kernel: Kernel) -> dict[str, Any]:
    """:func:`colnorm_distortion` of a validated, scaled kernel."""
    x, kappa = kernel.x, kernel.kappa
    t = gaussian_target(x, kappa)
    lse, _ = row_statistics(t.U, t.C)
    logs = np.logaddexp(lse, 0.0)  # s_j includes k_jj = 1
    tt = logs - logs.mean()
    n = x.shape[0]
    srt = np.sort(tt)
    max_shift = float(max(abs(srt[-1] + srt[-2]), abs(srt[0] + srt[1])))
    # ||distortion||_F^2 off the diagonal = (2N - 4)|t~|^2 (t~ has mean zero)
    dist_f = float(np.sqrt(max(2 * n - 4, 0) * (tt @ tt)))
    # ||ell||_F^2 with ell_ij = -kappa d_ij^2: sum_ij d^4 from moments (x centred)
    q = t.U[:, 1]
    G = x.T @ x
    d4 = 2 * n * (q @ q) + 2 * q.sum() ** 2 + 4 * float((G * G).sum())
    ell_f = float(np.sqrt(max(d4, 0.0))) * kappa
    return {
        "statement": "ell_colnorm_ij = log k_ij - t_i - t_j - mean(log s) with t = log s - "
        "mean(log s), s the row sums of K: the intended target plus the rank-2 distortion "
        "-(t 1^T + 1 t^T) (the constant is absorbed by c)",
        "mean_log_row_sum": float(logs.mean()),
        "max_similarity_shift": max_shift,
        "relative_size": dist_f / ell_f if ell_f > 0 else float("inf"),
        "log_row_sums": [float(logs.min()), float(logs.max())],
    }
