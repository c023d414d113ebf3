"""Vectorised torch w-InfoNCE against a straightforward per-anchor loop on the same batch.

The baseline is how the loss is often first written: for each anchor ``i``, its similarities to
the others, a log-softmax, and a weighted sum, accumulated in a Python loop. Both compute the loss
and its gradient (forward + backward) on CPU in float32; the values must agree.
"""

from __future__ import annotations

import torch

from benchmarks import interleaved
from dgp.torch.losses import SupConLoss, YAwareLoss, gaussian_weights, supcon_weights
from dgp.torch.training import cpu_threads

__all__ = ["loop_loss", "run"]


def loop_loss(Z: torch.Tensor, W: torch.Tensor, *, tau: float) -> torch.Tensor:
    """The per-anchor baseline: cosine w-InfoNCE summed over anchors, one anchor at a time."""
    Zn = torch.nn.functional.normalize(Z, dim=1)
    n = Zn.shape[0]
    total = Zn.new_zeros(())
    for i in range(n):
        others = torch.cat([torch.arange(i), torch.arange(i + 1, n)])
        s = Zn[others] @ Zn[i] / tau
        w = W[i, others]
        p = w / w.sum()
        total = total - (p * torch.log_softmax(s, dim=0)).sum()
    return total


def _case(name: str, n: int, d: int, repeat: int) -> dict:
    gen = torch.Generator().manual_seed(0)
    Z0 = torch.randn(n, d, generator=gen)
    if name == "supcon":
        labels = torch.arange(n) % 10
        loss_fn = SupConLoss(tau=0.1)
        W = supcon_weights(labels).float()
    else:
        labels = torch.rand(n, generator=gen)
        loss_fn = YAwareLoss(tau=0.1, sigma=0.2)
        W = gaussian_weights(labels, sigma=0.2).float()

    def ours() -> float:
        Z = Z0.clone().requires_grad_(True)
        value = loss_fn(Z, labels)
        value.backward()
        return float(value.detach())

    def base() -> float:
        Z = Z0.clone().requires_grad_(True)
        value = loop_loss(Z, W, tau=0.1)
        value.backward()
        return float(value.detach())

    diff = abs(ours() - base()) / abs(base())
    t_ours, t_base = interleaved(ours, base, repeat=repeat)
    ratio = t_ours / t_base
    return {
        "name": f"torch {name} loss + gradient, N={n}, d={d}",
        "baseline": "per-anchor Python loop (log-softmax per row), same batch",
        "ours_s": t_ours,
        "baseline_s": t_base,
        "ratio": ratio,
        "relative_difference": diff,
        "target": "<= 0.2 (at least 5x faster), same value to 1e-5",
        "ok": ratio <= 0.2 and diff <= 1e-5,
    }


def run(quick: bool) -> list[dict]:
    """Benchmark rows (see module docstring). Torch uses ``$DGP_TORCH_THREADS`` (default 1)
    CPU threads, as in the experiments: on a busy 2-core machine spinning threads dominate."""
    sizes = (256,) if quick else (256, 1024)
    repeat = 3 if quick else 5
    with cpu_threads():
        return [_case(name, n, 128, repeat) for n in sizes for name in ("supcon", "y-aware")]
