"""A seeded training loop with a progress bar, on CPU or CUDA."""

from __future__ import annotations

import contextlib
import os
import random
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgp.errors import InputError, check_choice, check_dim, check_positive
from dgp.torch._compat import require_torch

torch = require_torch()

__all__ = [
    "DEVICES",
    "TrainResult",
    "cpu_threads",
    "embed",
    "progress_bar",
    "resolve_device",
    "seed_everything",
    "train",
]

DEVICES = ("auto", "cpu", "cuda")


def resolve_device(device: str = "auto") -> Any:
    """``"auto"`` -> CUDA when available, else CPU.

    Raises
    ------
    ValueError
        If ``device`` is unknown, or ``"cuda"`` is asked for and no CUDA device is available.
    """
    check_choice(device, DEVICES, "device")
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise InputError("device 'cuda' was requested but no CUDA device is available; use cpu")
    return torch.device(device)


@contextlib.contextmanager
def cpu_threads(n: int | None = None) -> Iterator[int]:
    """Temporarily set torch's intra-op CPU threads (restored on exit).

    The experiments' matrices are small (hundreds of rows): one thread is about as fast as two on
    an idle machine and several times faster on a busy one, where spinning threads contend. The
    default is ``$DGP_TORCH_THREADS`` if set, else 1.

    Raises
    ------
    ValueError
        If the thread count is not a positive integer.
    """
    if n is None:
        env = os.environ.get("DGP_TORCH_THREADS", "1")
        try:
            n = int(env)
        except ValueError:
            raise InputError(f"DGP_TORCH_THREADS must be a positive integer, got {env!r}") from None
    if n < 1:
        raise InputError(f"the number of CPU threads must be >= 1, got {n}")
    before = torch.get_num_threads()
    torch.set_num_threads(int(n))
    try:
        yield int(n)
    finally:
        torch.set_num_threads(before)


def seed_everything(seed: int) -> None:
    """Seed Python, numpy's legacy global generator and torch (CPU and CUDA).

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not a non-negative integer.
    """
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    random.seed(int(seed))
    np.random.seed(int(seed) % 2**32)  # noqa: NPY002 - third-party code may use the global RNG
    torch.manual_seed(int(seed))


@dataclass
class TrainResult:
    """What :func:`train` did: the loss per step, wall time and device."""

    losses: list[float] = field(default_factory=list)
    seconds: float = 0.0
    device: str = "cpu"
    steps: int = 0


def progress_bar(total: int, *, desc: str, enabled: bool | None) -> Any:
    """A tqdm bar on stderr (by default only when stderr is a terminal), or None without tqdm."""
    show = sys.stderr.isatty() if enabled is None else bool(enabled)
    try:
        from tqdm.auto import tqdm
    except ImportError:  # tqdm is in the torch extra; without it, no bar
        return None
    return tqdm(total=total, desc=desc, disable=not show, leave=False, file=sys.stderr)


def train(
    encoder: Any,
    loss_fn: Any,
    X: Any,
    labels: Any,
    *,
    steps: int,
    lr: float = 1e-3,
    batch_size: int | None = None,
    weight_decay: float = 0.0,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    desc: str = "train",
) -> TrainResult:
    """Train ``encoder`` to minimise ``loss_fn(encoder(X_batch), labels_batch)`` with Adam.

    Full-batch by default (``batch_size=None``): the loss is then exactly the dataset loss whose
    minimiser the theory predicts. With ``batch_size`` each step draws a batch uniformly without
    replacement from a generator seeded by ``seed``. The learning rate follows a cosine decay to
    1% of ``lr``, which helps the last steps settle on the optimum.

    Parameters
    ----------
    encoder : torch.nn.Module
        Moved to the device in place.
    loss_fn : callable
        ``loss_fn(embeddings, labels) -> scalar``, e.g. a :class:`dgp.torch.WInfoNCELoss`.
    X, labels : Tensor or array_like
        The dataset; ``labels`` is passed through as a tensor (indices work too).
    steps : int
        Number of optimisation steps.
    lr, weight_decay : float
        Adam (AdamW when ``weight_decay > 0``) parameters.
    batch_size : int, optional
    seed : int
        Seeds the batch sampler (seed the encoder's initialisation yourself, before building it,
        e.g. with :func:`seed_everything`).
    device : {"auto", "cpu", "cuda"}
    progress : bool, optional
        Show a tqdm bar; by default only when stderr is a terminal.
    desc : str
        Label of the progress bar.

    Returns
    -------
    TrainResult

    Raises
    ------
    TypeError, ValueError
        If an argument is invalid, or the loss becomes NaN/infinite.
    """
    steps = check_dim(steps, "steps")
    lr = check_positive(lr, "lr")
    if weight_decay < 0:
        raise InputError(f"weight_decay must be >= 0, got {weight_decay!r}")
    dev = resolve_device(device)
    Xt = torch.as_tensor(X, dtype=torch.float32).to(dev)
    yt = torch.as_tensor(labels).to(dev)
    n = Xt.shape[0]
    if yt.shape[0] != n:
        raise InputError(f"labels must have one entry per sample ({n}), got {yt.shape[0]}")
    if batch_size is not None:
        batch_size = check_dim(batch_size, "batch_size")
        if batch_size < 2 or batch_size > n:
            raise InputError(f"batch_size must be in [2, {n}], got {batch_size}")
    encoder.to(dev)
    encoder.train()
    params = [p for p in encoder.parameters() if p.requires_grad]
    if weight_decay > 0:
        opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    else:
        opt = torch.optim.Adam(params, lr=lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=0.01 * lr)
    gen = torch.Generator(device="cpu").manual_seed(int(seed))
    result = TrainResult(device=str(dev))
    bar = progress_bar(steps, desc=desc, enabled=progress)
    t0 = time.perf_counter()
    # exp of very negative logits underflows into subnormal floats, whose CPU arithmetic is
    # several times slower; flushing them to zero changes no loss value above 1e-38
    flush = dev.type == "cpu" and torch.set_flush_denormal(True)
    try:
        for step in range(steps):
            if batch_size is None or batch_size == n:
                xb, yb = Xt, yt
            else:
                idx = torch.randperm(n, generator=gen)[:batch_size].to(dev)
                xb, yb = Xt[idx], yt[idx]
            opt.zero_grad(set_to_none=True)
            loss = loss_fn(encoder(xb), yb)
            loss.backward()
            opt.step()
            sched.step()
            value = float(loss.detach())
            if not np.isfinite(value):
                raise InputError(f"the loss became {value} at step {step}; lower lr")
            result.losses.append(value)
            if bar is not None:
                bar.update(1)
                if step % 20 == 0:
                    bar.set_postfix(loss=f"{value:.4f}")
    finally:
        if flush:
            torch.set_flush_denormal(False)
        if bar is not None:
            bar.close()
    result.seconds = time.perf_counter() - t0
    result.steps = steps
    encoder.eval()
    return result


def embed(encoder: Any, X: Any, *, batch_size: int = 4096) -> np.ndarray:
    """Embeddings of ``X`` as a float64 numpy array, without gradients, on the encoder's device."""
    dev = next(encoder.parameters()).device
    Xt = torch.as_tensor(X, dtype=torch.float32)
    encoder.eval()
    out = []
    with torch.no_grad():
        for k in range(0, Xt.shape[0], batch_size):
            out.append(encoder(Xt[k : k + batch_size].to(dev)).double().cpu().numpy())
    return np.concatenate(out, axis=0)
