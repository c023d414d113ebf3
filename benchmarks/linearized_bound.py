r"""The linearised (Frank-Wolfe) lower bound on the expected-batch optimum, measured against the
per-batch relaxation (issue 40 point 2): why it is not in the library.

With :math:`F(G) = \mathbb E_b L_b(G_b)` convex on the elliptope :math:`\mathcal E` and
:math:`S = \nabla F(G_0) = \mathbb E_b C_b` at the embedding's Gram :math:`G_0 = Z Z^T`
(:math:`C_b`: batch ``b``'s symmetric derivative in its Gram entries),

.. math::

    \min_{\mathcal E} F \;\ge\; F(G_0) - \langle S, G_0\rangle + h(S), \qquad
    h(S) = \min_{G \in \mathcal E}\langle S, G\rangle \;\ge\; \textstyle\sum_i y_i
    + N \lambda_{\min}(S - \operatorname{Diag} y)

for any ``y``. With :math:`S` estimated by :math:`\hat S` from ``M`` fresh batches, ``h`` is
concave, so :math:`\mathbb E\,h(\hat S) \le h(S)` (Jensen: the estimate is a valid bound in
expectation, biased low by the noise of :math:`\hat S`). The same bound is the SAA bound of
:mod:`dgp.solver._shared_bound` of the batches' *linearised* losses, so at equal ``M`` it can
never beat that SAA bound; it is only cheaper.

For each ``M`` the script prints the gap :math:`\langle\hat S, G_0\rangle - h(\hat S)` (the
loss of ``Z`` on the ``M`` batches less the bound, nats per anchor): ``h`` by a Burer-Monteiro
descent of rank ``d + 32`` and certified by ``y = diag(S X X^T)`` and a dense
:math:`\lambda_{\min}` (LAPACK), which here equals the descent's value to 1e-5. The fit
``gap(M) = g + b / M`` over the two largest ``M`` separates the Jensen bias ``b / M`` from
``g``, the gap at :math:`M = \infty` (the Frank-Wolfe gap of ``Z``). Beside it, the per-batch
relaxation's mean gap (:func:`dgp.solver.relaxation_bound`, 300 iterations at full rank).

This is a measurement, not a library path: :math:`\hat S` is held as a dense ``N x N`` array
(the sum of ``M`` batches' ``B x B`` blocks is dense once pairs meet a few times), so ``--n``
is limited to 3000. Run it alone (minutes of CPU)::

    OMP_NUM_THREADS=1 python -m benchmarks.linearized_bound --kind knn --n 2000 --tau 0.1

``--epochs``: the stochastic run's round budget (200, the library's default; a longer run
shows how the Frank-Wolfe gap falls as ``Z`` nears the optimum).
"""

from __future__ import annotations

import argparse
import time

import numpy as np

__all__ = ["gradient_sum", "linear_gap", "main"]


def gradient_sum(Z: np.ndarray, source, sampler, spec, *, tau: float, M: int,
                 rng: np.random.Generator) -> tuple[float, np.ndarray]:
    """(mean loss of ``Z`` on ``M`` fresh batches, :math:`\\hat S`: the mean of their symmetric
    derivatives in the Gram entries, each embedded in a dense ``n x n`` array)."""
    from dgp.solver._batch_sources import batch_function

    n = Z.shape[0]
    S = np.zeros((n, n))
    total = 0.0
    for _ in range(M):
        idx, counts = sampler.draw(rng)
        fn = batch_function(source, idx, counts, tau=tau, spec=spec)
        f, Gam = fn.terms(Z[idx])
        total += f
        S[np.ix_(idx, idx)] += 0.5 * (Gam + Gam.T)
    return total / M, S / M


def linear_gap(S: np.ndarray, Z: np.ndarray, *, extra_rank: int = 32,
               iters: int = 300) -> tuple[float, float]:
    """(:math:`\\langle S, Z Z^T\\rangle - h(S)` certified: ``h`` bounded below by weak duality
    at the multipliers of a Burer-Monteiro point of rank ``d + extra_rank``; the same with the
    descent's value of ``h``, an upper estimate, for comparison)."""
    from scipy.linalg import eigh

    from dgp.solver._sphere_lbfgs import row_lbfgs

    n, d = Z.shape
    X0 = np.zeros((n, d + extra_rank))
    X0[:, :d] = Z
    X0[:, d:] = 1e-2 * np.random.default_rng(0).standard_normal((n, extra_rank))
    X = row_lbfgs(lambda X: (float(np.sum((S @ X) * X)), 2.0 * (S @ X)), X0, iters=iters)
    SX = S @ X
    y = np.einsum("ij,ij->i", SX, X)
    lam = float(eigh(S - np.diag(y), eigvals_only=True, subset_by_index=[0, 0])[0])
    lin = float(np.sum((S @ Z) * Z))
    return lin - (float(y.sum()) + n * lam), lin - float(np.sum(SX * X))


def main(argv: list[str] | None = None) -> None:
    from benchmarks.shared_bound import weighting
    from dgp.solver import (
        BatchSpec,
        Estimate,
        SampleBatches,
        relaxation_bound,
        stochastic_optimum,
    )

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--kind", default="knn", choices=["knn", "soft"])
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--tau", type=float, default=0.1)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--m", default="1024,4096")
    p.add_argument("--epochs", type=int, default=200)
    p.add_argument("--per-batch", type=int, default=8)
    a = p.parse_args(argv)
    if a.n > 3000:
        raise SystemExit("--n: at most 3000 (the estimate of S is a dense n x n array)")
    spec = BatchSpec(a.batch_size, "uniform", None, "mean", "drop")
    sampler = SampleBatches(a.n, a.batch_size)
    _, source = weighting(a.kind, a.n)
    t0 = time.process_time()
    run = stochastic_optimum(source, sampler, spec, tau=a.tau, dim=a.dim, seed=0,
                             max_epochs=a.epochs)
    Z = run.embedding
    print(f"{a.kind}, N = {a.n}, B = {a.batch_size}, d = {a.dim}, tau = {a.tau}: stochastic run "
          f"{time.process_time() - t0:.0f} s of CPU ({run.status})", flush=True)
    t0 = time.process_time()
    rb = relaxation_bound(Z, Estimate(0.0, 1.0, 2), source, sampler, spec, tau=a.tau, seed=0,
                          batches=a.per_batch, iters=300, shared=False)
    print(f"  per-batch relaxation: gap {rb.mean_gap * spec.per_anchor:.4f} (se "
          f"{rb.gap_se * spec.per_anchor:.4f}), {(time.process_time() - t0) / a.per_batch:.1f} s "
          "of CPU a batch", flush=True)
    gaps = []
    Ms = [int(x) for x in a.m.split(",")]
    for M in Ms:
        t0 = time.process_time()
        _, S = gradient_sum(Z, source, sampler, spec, tau=a.tau, M=M,
                            rng=np.random.default_rng([0, 40, M]))
        t1 = time.process_time()
        gap, descent = linear_gap(S, Z)
        gaps.append(gap)
        print(f"  linearised, M = {M}: gap {gap:.4f} (descent's {descent:.4f}); CPU {t1 - t0:.0f} "
              f"s for the batches, {time.process_time() - t1:.0f} s for h", flush=True)
    if len(Ms) >= 2 and Ms[-1] != Ms[-2]:
        b = (gaps[-2] - gaps[-1]) / (1 / Ms[-2] - 1 / Ms[-1])
        g = gaps[-1] - b / Ms[-1]
        print(f"  gap(M) = g + b / M: g = {g:.4f} (M = infinity), b = {b:.1f} "
              f"(pairs meet {Ms[-1] * a.batch_size**2 / a.n**2:.3g} times at M = {Ms[-1]})")


if __name__ == "__main__":
    main()
