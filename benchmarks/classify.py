"""Dense classification against one ``numpy.linalg.eigvalsh`` (the floor) and a generic SDP.

Both sides run as a user would run them: on the default BLAS threads (every core), nothing
pinned. The engine's one :math:`O(N^3)` step is a multi-threaded LAPACK ``dsytrd``;
``eigvalsh`` is ``dsyevd``, whose reduction is the same ``dsytrd`` plus its own copies. A
class weighting written out as a dense matrix (the Soft SupCon row) has twin classes, which the
engine finds in :math:`O(N^2)` and decides without the reduction; the planted and kernel rows
have none.
"""

from __future__ import annotations

import numpy as np
from threadpoolctl import threadpool_info

import dgp
from benchmarks import best_time, growth_table, paired_ratios
from dgp.weights import gaussian_kernel_weights, soft_supcon_weights


def _soft_supcon(n: int) -> np.ndarray:
    return soft_supcon_weights(np.arange(n) % 10, eps=0.3)


def _planted(n: int) -> np.ndarray:
    """A realizable weighting without twins: ``w_ij = exp(z_i . z_j / 0.5)`` of random unit
    vectors in ``R^5`` (its target at ``c = 0`` is their Gram matrix)."""
    z = np.random.default_rng(1).standard_normal((n, 5))
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    return np.exp((z @ z.T) / 0.5)


def _kernel(n: int) -> np.ndarray:
    y = np.random.default_rng(0).standard_normal((n, 3))
    return gaussian_kernel_weights(y, sigma=1.5)


def _blas_threads() -> str:
    counts = sorted({m["num_threads"] for m in threadpool_info() if m["user_api"] == "blas"})
    return "/".join(str(c) for c in counts)


def vs_eigvalsh(n: int, repeat: int, *, limit: float, target: str) -> list[dict]:
    out = []
    for name, W, sim in (
        ("soft-supcon (realizable; its 10 twin classes found in the dense matrix)",
         _soft_supcon(n), "cosine"),
        ("planted rank-5 (realizable, no twins)", _planted(n), "cosine"),
        ("gaussian kernel (cosine)", _kernel(n), "cosine"),
        ("gaussian kernel (euclidean)", _kernel(n), "euclidean"),
    ):
        dgp.classify(W, similarity=sim, tau=0.5, dim=20)  # warm-up
        ratios, ours, base = paired_ratios(  # both on the default threads, as a user runs them
            lambda W=W, sim=sim: dgp.classify(W, similarity=sim, tau=0.5, dim=20),
            lambda W=W: np.linalg.eigvalsh(W),
            repeat=repeat,
        )
        ratio = float(np.median(ratios))
        q1, q3 = (float(q) for q in np.quantile(ratios, [0.25, 0.75]))
        out.append(
            {
                "name": f"dense classify N={n}, {name}",
                "baseline": f"one numpy.linalg.eigvalsh of the same {n}x{n} matrix (default "
                f"BLAS threads: {_blas_threads()}, as dgp)",
                "ratio_meaning": f"median over {repeat} back-to-back pairs of our time / the "
                f"baseline's; quartiles {q1:.3g}-{q3:.3g}, range {min(ratios):.3g}-"
                f"{max(ratios):.3g}",
                "ratios": ratios,
                "ours_s": ours,
                "baseline_s": base,
                "ratio": ratio,
                "target": target,
                "ok": ratio <= limit,
            }
        )
    return out


def peak_memory(n: int) -> list[dict]:
    """Peak memory of one dense classification, in units of the N x N matrix, the input itself
    counted once (it is in memory before classify starts): every array numpy allocates during
    the call is traced (LAPACK workspaces included)."""
    import tracemalloc

    W = _kernel(n)
    tracemalloc.start()
    dgp.classify(W, tau=0.5, dim=5)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    matrix = 8.0 * n * n
    ratio = (matrix + peak) / matrix
    return [{
        "name": f"dense classify N={n}: peak memory",
        "baseline": "the N x N float64 input matrix (8 N^2 bytes), counted once",
        "ratio": ratio,
        "ratio_meaning": "peak memory / (8 N^2), input included",
        "target": "<= 3",
        "ok": ratio <= 3.0,
    }]


def vs_sdp(n: int) -> list[dict]:
    W = _soft_supcon(n)
    fast = dgp.classify(W, tau=0.5, dim=10)
    t_ours = best_time(lambda: dgp.classify(W, tau=0.5, dim=10), repeat=3)
    t_sdp = best_time(lambda: dgp.classify(W, tau=0.5, dim=10, method="sdp"), repeat=1)
    slow = dgp.classify(W, tau=0.5, dim=10, method="sdp")
    speedup = t_sdp / t_ours
    return [
        {
            "name": f"dense classify N={n} vs the generic SDP",
            "baseline": "cvxpy + Clarabel: min and max of c s.t. G(c) PSD, ranks by eigvalsh",
            "ours_s": t_ours,
            "baseline_s": t_sdp,
            "ratio": speedup,
            "ratio_meaning": "baseline time / our time (speed-up)",
            "same_verdict": fast.verdict == slow.verdict and fast.rank == slow.rank,
            "target": ">= 100x faster, same verdict",
            "ok": speedup >= 100 and fast.verdict == slow.verdict,
        }
    ]


def growth(sizes: list[int]) -> list[dict]:
    def make(n: int):
        W = _kernel(n)
        return lambda: dgp.classify(W, tau=0.5, dim=5)

    return [
        growth_table(
            "dense growth",
            sizes,
            make,
            target="time ~ N^3 (one tridiagonalisation), memory ~ N^2",
            max_time_exponent=3.5,
            max_memory_exponent=2.3,
            fit_from=1,
        )
    ]


def run(quick: bool) -> list[dict]:
    # N = 3000 is the size of issue 26's requirement (<= 1.0x eigvalsh); smaller sizes weigh
    # O(N^2) overheads more
    # the quick run (CI: that it cannot rot) times the full run's N = 2000 row, with its target,
    # three pairs (N = 3000 took 29 of its 42 s)
    rows = vs_eigvalsh(2000, repeat=3 if quick else 5, limit=2.0, target="<= 2 (goal 1.3)")
    if not quick:
        rows += vs_eigvalsh(3000, repeat=9, limit=1.0, target="<= 1.0")
    for m in ([4000] if quick else [4000, 10_000]):
        rows += peak_memory(m)
    rows += vs_sdp(40 if quick else 120)
    rows += growth([250, 500, 1000] if quick else [250, 500, 1000, 2000, 3000])
    return rows
