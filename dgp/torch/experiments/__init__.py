r"""Experiments that train CNNs with mini-batches and test the predicted geometry.

Each experiment is a falsifiable comparison: the prediction is computed by dgp before training,
several seeds are trained (each seed draws its own training and held-out images, initialisation
and batches), and the learned geometry is scored against the prediction **and** against the
alternative the prediction competes with, on the training images and on held-out images. The
report says which one the runs support, with the criterion used.

``supcon-imbalance``
    SupCon on balanced and on tenfold-imbalanced classes: the learned class prototypes (the
    normalised means of the normalised embeddings of a class) against
    :func:`dgp.supcon_prototypes` and against the regular simplex; the "minority classes
    closer" statistic (mean cosine among the three smallest classes minus that among the three
    largest), learned and predicted; a noise-input row beside the image rows.
``batch-size``
    The same imbalanced SupCon at batch sizes ``B`` in {16, 32, 64, 256}: the learned prototypes
    against the full-batch and the expected-batch predictions.
``soft-supcon-tau``
    Soft SupCon across :math:`\tau^* = K / ((K-1)(-\log\varepsilon))`: below it the prototypes are
    equiangular at :math:`\rho = 1 + \tau\log\varepsilon` whatever the class sizes, at it the
    simplex, above it a size-dependent geometry.
``continuous-labels``
    Digits rotated by a random angle :math:`\theta`, the label :math:`(\cos\theta, \sin\theta)`
    on the circle: Euclidean–Euclidean, y-Aware and X-CLR (label temperature consistent and
    mismatched) against the labels' own geometry and against the predicted optimum in ``d``
    dimensions; linear-probe and k-NN :math:`R^2` of the held-out angle.
``controls``
    Noise inputs (the free-point regime: an encoder can memorise them, nothing transfers), an
    untrained encoder and raw pixels, scored like the trained image runs.

Convergence. Training minimises the expected loss of a random batch. For every trained run the
excess of that loss over the prediction's, :math:`\mathbb E_b[L_b(Z) - L_b(Z^*)]` per anchor
(with :math:`Z^*` the predicted embedding of each training sample), is estimated on the same
random batches for both (``loss_excess``, with its standard error); a run converged when the
excess is below ``converge_tol`` nats per anchor. Runs that did not converge are reported but
left out of the means, standard deviations and verdicts.

Layout: :mod:`~dgp.torch.experiments.base` (budgets, results, data, one trained run),
:mod:`~dgp.torch.experiments.statistics` (summaries and verdicts),
:mod:`~dgp.torch.experiments.scoring` (prototype geometry and loss excess), and one module per
experiment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np

from dgp.errors import check_choice
from dgp.torch import data as datasets
from dgp.torch.experiments.base import FULL, QUICK, Budget, Experiment, RunArtifacts
from dgp.torch.experiments.batches import BATCH_SIZES, batch_size, steps_for_batch
from dgp.torch.experiments.continuous import continuous_labels
from dgp.torch.experiments.control_inputs import controls
from dgp.torch.experiments.imbalance import supcon_imbalance
from dgp.torch.experiments.scoring import (
    gram_embedding,
    loss_excess,
    prototype_gram,
    regular_simplex,
)
from dgp.torch.experiments.statistics import summarise
from dgp.torch.experiments.temperature import soft_supcon_tau
from dgp.torch.training import cpu_threads

__all__ = [
    "BATCH_SIZES",
    "EXPERIMENTS",
    "FULL",
    "QUICK",
    "Budget",
    "Experiment",
    "RunArtifacts",
    "applicable",
    "batch_size",
    "continuous_labels",
    "controls",
    "gram_embedding",
    "loss_excess",
    "prototype_gram",
    "regular_simplex",
    "run_all",
    "run_experiment",
    "soft_supcon_tau",
    "steps_for_batch",
    "summarise",
    "supcon_imbalance",
]

# ----------------------------------------------------------------------------------------------
# registry

EXPERIMENTS: dict[str, Callable[..., Experiment]] = {
    "supcon-imbalance": supcon_imbalance,
    "batch-size": batch_size,
    "soft-supcon-tau": soft_supcon_tau,
    "continuous-labels": continuous_labels,
    "controls": controls,
}


def run_experiment(
    name: str,
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
    cache: dict | None = None,
) -> Experiment:
    """Run a named experiment (a key of :data:`EXPERIMENTS`).

    Torch's CPU threads are set to ``$DGP_TORCH_THREADS`` (default 1) for the duration.

    Raises
    ------
    ValueError
        If ``name`` is unknown, ``seed`` is negative, or the data do not fit the experiment.
    ImportError
        If full mode needs MNIST and the ``mnist`` extra is not installed.
    """
    check_choice(name, tuple(EXPERIMENTS), "experiment")
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    with cpu_threads():  # small matrices: one thread, no contention (see cpu_threads)
        return EXPERIMENTS[name](
            quick=quick, seed=int(seed), device=device, progress=progress, data=data, cache=cache
        )


def applicable(name: str, data: datasets.Dataset | None) -> str | None:
    """Why experiment ``name`` cannot run on ``data`` (None when it can)."""
    if data is None:
        return None
    if name == "continuous-labels":
        if data.classes and not data.images:
            return "needs continuous labels, or images to rotate"
        return None
    if not data.classes:
        return "needs integer class labels"
    return None


def run_all(
    *,
    quick: bool = True,
    seed: int = 0,
    device: str = "auto",
    progress: bool | None = None,
    data: datasets.Dataset | None = None,
) -> Iterator[tuple[str, Experiment | str]]:
    """Run every experiment that fits the data, sharing identical training runs between them.

    Yields ``(name, Experiment)``, or ``(name, reason)`` for an experiment the data do not fit.

    Raises
    ------
    ValueError, ImportError
        As :func:`run_experiment`.
    """
    cache: dict = {}
    for name in EXPERIMENTS:
        why = applicable(name, data)
        if why is not None:
            yield name, why
            continue
        yield name, run_experiment(
            name, quick=quick, seed=seed, device=device, progress=progress, data=data,
            cache=cache,
        )
