"""The torch side of the audit: labels and probe points, calling the loss under its calling
conventions, and the gradients it gives (:class:`Probes`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from dgp.constants import SCALE_FLOOR
from dgp.errors import DgpError, InputError, check_choice, check_int, check_positive
from dgp.torch._audit_limits import (
    MAX_N,
    check_probe_memory,
)
from dgp.torch._compat import require_torch

torch = require_torch()
from dgp.torch.audit.vocabulary import (  # noqa: E402
    CALLS,
    LABEL_KINDS,
)


class LossCallError(DgpError, RuntimeError):
    """The audited loss failed: it raised, returned no scalar, or gave no gradient.

    A failure inside the user's code, not bad input to dgp (``dgp audit`` exits 1).
    """


# --------------------------------------------------------------------------------------------
# labels and probe points


def default_labels(kind: str, n: int, *, seed: int = 0) -> np.ndarray | None:
    """Deterministic audit labels for ``n`` samples.

    ``"continuous"``: irregularly spaced 1-D labels in [-1, 1] (so that kernel degrees differ);
    ``"classes"``: ``max(2, n // 4)`` unequal classes of at least 2 samples; ``"pairs"``:
    ``n // 2`` classes of 2 (SimCLR's positives); ``"none"``: ``None``.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``n < 4``.

    >>> default_labels("pairs", 6)
    array([0, 0, 1, 1, 2, 2])
    """
    check_choice(kind, LABEL_KINDS, "labels")
    n = check_int(n, "n", minimum=4)
    rng = np.random.default_rng(seed)
    if kind == "none":
        return None
    if kind == "continuous":
        return np.sort(rng.uniform(-1.0, 1.0, n))
    if kind == "pairs":
        return np.repeat(np.arange(n // 2), 2)[:n] if n % 2 == 0 else np.append(
            np.repeat(np.arange(n // 2), 2), n // 2 - 1)
    k = max(2, n // 4)
    sizes = np.full(k, 2)
    for extra in rng.integers(0, k, n - 2 * k):
        sizes[extra] += 1
    return np.repeat(np.arange(k), sizes)


def probe_points(n: int, probes: int, tau: float, seed: int) -> list[np.ndarray]:
    """Unit-row ``n x n`` probe points: one orthonormal, then perturbed ones whose cosines move
    the logits by O(1)."""
    rng = np.random.default_rng(seed)
    Q, R = np.linalg.qr(rng.standard_normal((n, n)))
    Q = Q * np.sign(np.diag(R))
    out = [Q]
    delta = min(1.0, tau * math.sqrt(n / 2.0))
    for _ in range(probes - 1):
        Zp = Q + delta * rng.standard_normal((n, n)) / math.sqrt(n)
        out.append(Zp / np.linalg.norm(Zp, axis=1, keepdims=True))
    return out


def similarities(Z: np.ndarray, *, tau: float, similarity: str) -> np.ndarray:
    """The latent similarity matrix of unit-row or free points (diagonal included)."""
    if similarity == "cosine":
        Zn = Z / np.linalg.norm(Z, axis=1, keepdims=True)
        return (Zn @ Zn.T) / tau
    from dgp._linalg import squared_distances

    return -squared_distances(Z) / (2.0 * tau)


# --------------------------------------------------------------------------------------------
# calling the loss


@dataclass(frozen=True, eq=False)
class Probes:
    """What the backward passes told: per probe point, the pair sensitivities ``T``.

    Attributes
    ----------
    points : tuple of ndarray
        The ``N x N`` probe points (unit rows).
    T : ndarray, shape (P, N, N)
        :math:`\\partial L/\\partial s_{ij} + \\partial L/\\partial s_{ji}`, symmetrised, zero
        diagonal (in units of the loss, with ``tau`` as given).
    values : ndarray, shape (P,)
        The loss values.
    asymmetry : float
        Relative antisymmetric part of the recovered ``C`` (0 for a function of the Gram).
    cosine_residual : float
        How far the gradient is from tangent to the sphere (0 for a cosine loss).
    euclidean_residual : float
        How far the gradient is from translation invariant (0 for a Euclidean loss).
    dtype : str
        The dtype the loss returned.
    """

    points: tuple[np.ndarray, ...]
    T: np.ndarray
    values: np.ndarray
    asymmetry: float
    cosine_residual: float
    euclidean_residual: float
    dtype: str


def call_user(fn: Callable[[], Any], what: str) -> Any:
    """Run user code; whatever it raises becomes a :class:`LossCallError` saying where."""
    try:
        return fn()
    except RecursionError:
        raise LossCallError(f"the loss recursed without end (RecursionError) {what}") from None
    except Exception as exc:  # user code may raise anything: this is the one boundary
        text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise LossCallError(
            f"the loss raised {type(exc).__name__}{': ' + text if text else ''} {what}"
        ) from exc


def describe_call(call: str, n: int, labels: np.ndarray | None) -> str:
    b = n // 2
    lab = "" if labels is None else f", labels ({'x'.join(map(str, labels.shape))})"
    if call == "embeddings":
        return f"(called as loss(embeddings {n}x{n}{lab}))"
    if call == "views":
        return f"(called as loss(features {b}x2x{n}{lab}))"
    return f"(called as loss(z1 {b}x{n}, z2 {b}x{n}{lab}))"


def invoke(loss_fn: Callable[..., Any], Z: Any, labels: Any, call: str) -> Any:
    n = Z.shape[0]
    args: list[Any]
    if call == "embeddings":
        args = [Z]
    elif call == "views":
        args = [Z.reshape(2, n // 2, Z.shape[1]).transpose(0, 1)]
    else:
        args = [Z[: n // 2], Z[n // 2:]]
    if labels is not None:
        args.append(labels)
    return loss_fn(*args)


def probe(
    loss_fn: Callable[..., Any],
    labels: np.ndarray | None,
    *,
    tau: float,
    n: int,
    call: str = "embeddings",
    probes: int = 3,
    seed: int = 0,
) -> Probes:
    """Backward passes of ``loss_fn`` at ``probes`` points, turned into pair sensitivities.

    Parameters
    ----------
    loss_fn : callable
        The loss, called as ``call`` says (see :data:`CALLS`).
    labels : ndarray or None
        What the loss receives as labels (one per sample: ``n`` for ``"embeddings"``,
        ``n // 2`` for the two-view calls), or ``None`` to call it without.
    tau : float
        The loss's temperature.
    n : int
        Number of embeddings (rows); the two-view calls split them into two views.
    call : {"embeddings", "views", "pair"}
    probes : int
        Number of probe points (``>= 2``: the first is orthonormal).
    seed : int

    Raises
    ------
    LossCallError
        If the loss raises, does not return a finite scalar tensor, or gives no gradient.
    ValueError
        On invalid arguments, or if the probes would not fit in memory.
    """
    tau = check_positive(tau, "tau")
    check_choice(call, CALLS, "call")
    n = check_int(n, "n", minimum=4, maximum=MAX_N)
    probes = check_int(probes, "probes", minimum=2, maximum=16)
    if call != "embeddings" and n % 2:
        raise InputError(f"n must be even for a two-view call ({call!r}), got {n}")
    check_probe_memory(n, probes)
    lab = None
    if labels is not None:
        y = np.asarray(labels)
        lab = torch.as_tensor(y) if y.dtype.kind in "iub" else torch.as_tensor(
            y, dtype=torch.float64)
    what = describe_call(call, n, None if labels is None else np.asarray(labels))
    points = probe_points(n, probes, tau, seed)
    Ts, values, asym, cos_r, euc_r = [], [], [], [], []
    dtype = "float64"
    for Zp in points:
        Z = torch.tensor(Zp, dtype=torch.float64, requires_grad=True)
        out = call_user(lambda Z=Z: invoke(loss_fn, Z, lab, call), what)
        if not isinstance(out, torch.Tensor) or out.numel() != 1:
            kind = type(out).__name__ if not isinstance(out, torch.Tensor) else (
                f"a tensor of shape {tuple(out.shape)}")
            raise LossCallError(f"the loss must return a scalar tensor, got {kind} {what}")
        dtype = str(out.dtype).replace("torch.", "")
        value = float(out.detach())
        if not math.isfinite(value):
            raise LossCallError(f"the loss is {value} at the probe embeddings {what}")
        if not out.requires_grad:
            raise LossCallError(
                f"the loss has no gradient with respect to the embeddings {what}: it is detached "
                "from them (computed without autograd, e.g. through numpy or .item())"
            )
        (grad,) = call_user(lambda out=out, Z=Z: torch.autograd.grad(out, Z, allow_unused=True),
                        f"in its backward pass {what}")
        if grad is None:
            raise LossCallError(f"the loss does not depend on the embeddings {what}")
        C = np.linalg.solve(Zp.T, (tau * grad.detach().numpy()).T).T  # tau grad = C Z
        if not np.isfinite(C).all():
            raise LossCallError(f"the loss's gradient is not finite {what}")
        off = ~np.eye(n, dtype=bool)
        scale = max(float(np.abs(C[off]).max()), SCALE_FLOOR)
        asym.append(float(np.abs(C - C.T)[off].max() / scale))
        G = Zp @ Zp.T
        cos_r.append(float(np.abs((C * G).sum(axis=1)).max() / scale))
        euc_r.append(float(np.abs(C.sum(axis=1)).max() / scale))
        T = np.where(off, (C + C.T) / 2.0, 0.0)
        Ts.append(T)
        values.append(value)
    T = np.stack(Ts)
    if not np.abs(T).max() > 0:
        raise LossCallError(
            f"the loss's gradient is zero at every probe {what}: with these labels it has no "
            "positive pair (or does not use the embeddings)"
        )
    return Probes(tuple(points), T, np.array(values), max(asym), max(cos_r), max(euc_r), dtype)


