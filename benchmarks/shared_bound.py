"""How far the lower bound on the expected-batch optimum lies below the loss, per-batch (m = 1)
against batches sharing one Gram matrix (the SAA bound of Mak, Morton and Wood 1999, m > 1,
:mod:`dgp.solver._shared_bound`), on a sparse k-NN weighting and a smooth soft-label one.

Not part of ``python -m benchmarks`` (minutes of CPU): run it alone,

    OMP_NUM_THREADS=1 python -m benchmarks.shared_bound --n 600 --m 1,4,16,64

It prints, for each weighting and each ``m``, the embedding's held-out expected loss (nats per
anchor, uniform batches, mean over anchors with positives) less each replicate's certified bound
(the gap, mean and standard error over the replicates) and the CPU seconds per replicate. The
embedding is ``dgp.optimum``'s (``replicates=1``, the least: two runs) or, with ``--cold``, one
stochastic run from a
random start (faster; it lies further from the optimum, so every gap is larger by the same
amount).
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

__all__ = ["main", "weighting"]


def weighting(kind: str, n: int, seed: int = 0):
    """``(W for dgp.optimum, its batch source)``: ``"knn"``, a k = 10 nearest-neighbour graph
    (mean-symmetrised) of ``n`` seeded 5-D Gaussian points; ``"soft"``, the kernel
    ``exp(-|y_i - y_j|^2)`` of ``n`` seeded 2-D Gaussian labels."""
    from dgp.solver import GaussianKernelWeights, SparseBatchWeights
    from dgp.weights import knn_weights

    rng = np.random.default_rng(seed)
    if kind == "knn":
        W = knn_weights(rng.standard_normal((n, 5)), 10).tocsr()
        return W, SparseBatchWeights(W)
    y = rng.standard_normal((n, 2))
    W = np.exp(-((y[:, None] - y[None]) ** 2).sum(-1))
    np.fill_diagonal(W, 0.0)
    return W, GaussianKernelWeights(y, 1 / math.sqrt(2))


def main(argv: list[str] | None = None) -> None:
    import dgp
    from dgp.solver import BatchSpec, SampleBatches, evaluate, stochastic_optimum
    from dgp.solver._shared_bound import shared_replicate

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=600)
    p.add_argument("--kinds", default="knn,soft")
    p.add_argument("--m", default="1,4,16,64")
    p.add_argument("--replicates", type=int, default=2)
    p.add_argument("--tau", type=float, default=0.1)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--batch-size", type=int, default=256)
    p.add_argument("--iters", type=int, default=200)
    p.add_argument("--cold", action="store_true")
    a = p.parse_args(argv)
    spec = BatchSpec(a.batch_size, "uniform", None, "mean", "drop")
    sampler = SampleBatches(a.n, a.batch_size)
    for kind in a.kinds.split(","):
        W, source = weighting(kind, a.n)
        t0 = time.process_time()
        if a.cold:
            Z = stochastic_optimum(source, sampler, spec, tau=a.tau, dim=a.dim,
                                   seed=0).embedding
        else:
            Z = dgp.optimum(W, tau=a.tau, dim=a.dim, batch_size=a.batch_size,
                            reduction="mean", replicates=1, progress=False).embedding
        fit = time.process_time() - t0
        est = evaluate([Z], source, sampler, spec, tau=a.tau, seed=0)[0]
        print(f"{kind}, N = {a.n}, B = {a.batch_size}, d = {a.dim}, tau = {a.tau}: held-out "
              f"loss {est.mean:.5f} +- {1.96 * est.se:.5f} ({fit:.0f} s of CPU to fit)")
        for m in (int(x) for x in a.m.split(",")):
            gaps, cpu = [], []
            for r in range(a.replicates):
                rng = np.random.default_rng([0, 9, m, r])
                draws = [sampler.draw(rng) for _ in range(m)]
                t0 = time.process_time()
                f0, low = shared_replicate(Z, source, draws, tau=a.tau, spec=spec,
                                           iters=a.iters)
                cpu.append(time.process_time() - t0)
                gaps.append(f0 - low)
            g = np.array(gaps)
            se = g.std(ddof=1) / math.sqrt(g.size) if g.size > 1 else math.nan
            print(f"  m = {m:3d}: gap {g.mean():.4f} (se {se:.4f}), "
                  f"{np.mean(cpu):.1f} s of CPU a replicate")


if __name__ == "__main__":
    main()
