r"""Experiments that train CNNs with mini-batches and test the predicted geometry.

Each experiment is a falsifiable comparison: the prediction is computed by dgp before training,
several seeds are trained (each seed draws its own training and held-out images, initialisation
and batches), and the learned geometry is scored against the prediction **and** against the
alternative the prediction competes with, on the training images and on held-out images. The
report says which one the runs support, with the criterion used.

``supcon-imbalance``
    SupCon on balanced and on tenfold-imbalanced classes: the learned class prototypes (the
    normalised means of the normalised embeddings of a class) against
    :func:`dgp.supcon_prototypes` and against the regular simplex, at the experiment's
    temperature and at :math:`\tau = 0.1`; the "minority classes closer" statistic; and the
    control: the same labels on noise inputs, which must not confirm the prediction.
``batch-size``
    The same imbalanced SupCon at batch sizes ``B`` in {16, 32, 64, 256}: the learned prototypes
    against the full-batch and the expected-batch predictions.
``soft-supcon-tau``
    Soft SupCon across :math:`\tau^* = K / ((K-1)(-\log\varepsilon))` on a grid of multiples of
    it: :math:`\tau^*` located from the onset of spread of the held-out cosines (a change point
    with a Student-t interval over seeds), the equiangular :math:`\rho = 1 + \tau\log\varepsilon`
    below it, a size-dependent geometry above it.
``continuous-labels``
    Digits rotated by a random angle :math:`\theta`: with the label :math:`(\cos\theta,
    \sin\theta)` on the circle, Euclidean–Euclidean, y-Aware and X-CLR (label temperature
    consistent and mismatched); with the angle in :math:`[0, \pi)` as a label on no sphere,
    y-Aware (inconsistent) and Euclidean–Euclidean; each against the labels' own geometry and
    against its prediction; linear-probe and k-NN :math:`R^2` of the held-out angle.
``controls``
    Noise inputs (the free-point regime: an encoder can memorise them, nothing transfers), an
    untrained encoder and raw pixels, scored like the trained image runs.
``long-tail-targets``
    MNIST made long-tailed (ratio 100): the same encoder trained with dgp's imbalance-aware
    targets (:class:`dgp.torch.TargetedSupConLoss` with :func:`dgp.supcon_prototypes`), TSC's
    uniform targets (Hungarian-assigned) and plain SupCon; held-out balanced and tail accuracy of
    a nearest-class-mean probe, paired by seed, under a decision rule stated before the numbers,
    with the targets' loss gap as identifiability and a permuted-label control. Run by name
    only (:data:`NOT_IN_ALL`).
``sample-batch``
    A sample-level weighting (y-Aware's kernel of the rotation angle, on no sphere) on 2000
    rotated MNIST digits in batches of 256: the expected-batch prediction
    (:func:`dgp.optimum` with ``batch_size`` and ``dim``) against the full-batch one, where
    their expected batch losses differ beyond noise, and the same on noise inputs.

**Evidence that can fail** (:mod:`~dgp.torch.experiments.statistics`):

* Convergence is a property of the run alone: its training loss stopped decreasing
  (:func:`~dgp.torch.experiments.statistics.plateau`), never its distance to the prediction.
  Every verdict uses every run, and is shown over the converged runs beside it.
* Identifiability: for every comparison, the alternative's expected batch loss excess over the
  prediction, per anchor with its standard error. Within what training resolves (the run-to-run
  spread of the final loss) the comparison is ``uninformative``, whatever the geometry shows;
  the other way round (the alternative has the lower loss, or the runs beat the prediction's
  loss) it is ``against``.
* Decisions use held-out samples, up to a common pull of the held-out cosines towards 1 and
  corrected by a label-permutation null (what embeddings that carry no information about the
  labels would score), with the split-half noise ceiling of the held-out Gram reported beside
  the distances (``neither`` beyond three ceilings), Holm-corrected over an experiment's
  comparisons.
* The controls (noise inputs) must come out undecided or against the prediction.

Layout: :mod:`~dgp.torch.experiments.base` (budgets, the options every experiment takes,
results, data, one trained run, an experiment under way),
:mod:`~dgp.torch.experiments.statistics` (summaries and verdicts),
:mod:`~dgp.torch.experiments.scoring` (prototype geometry and loss excess), and one module per
experiment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

from dgp.errors import InputError, check_choice
from dgp.torch import data as datasets
from dgp.torch.experiments.base import (
    FULL,
    MNIST_CPU,
    MODES,
    QUICK,
    Budget,
    Experiment,
    RunArtifacts,
    RunOptions,
)
from dgp.torch.experiments.batches import BATCH_SIZES, batch_size, steps_for_batch
from dgp.torch.experiments.continuous import continuous_labels
from dgp.torch.experiments.control_inputs import controls
from dgp.torch.experiments.imbalance import supcon_imbalance
from dgp.torch.experiments.long_tail import long_tail_targets
from dgp.torch.experiments.sample_batch import sample_batch
from dgp.torch.experiments.scoring import (
    gram_embedding,
    loss_excess,
    prototype_gram,
    regular_simplex,
)
from dgp.torch.experiments.statistics import summarise
from dgp.torch.experiments.temperature import TAU_MULTIPLES, soft_supcon_tau
from dgp.torch.training import cpu_threads

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "BATCH_SIZES",
    "EXPERIMENTS",
    "FULL",
    "MNIST_CPU",
    "MODES",
    "NEEDS",
    "NOT_IN_ALL",
    "OPTIONS",
    "QUICK",
    "TAU_MULTIPLES",
    "Budget",
    "Experiment",
    "RunArtifacts",
    "applicable",
    "batch_size",
    "continuous_labels",
    "controls",
    "gram_embedding",
    "long_tail_targets",
    "loss_excess",
    "prototype_gram",
    "regular_simplex",
    "run_all",
    "run_experiment",
    "sample_batch",
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
    "sample-batch": sample_batch,
    "long-tail-targets": long_tail_targets,
}
#: what each experiment needs of the user's data (``--data``): ``"classes"`` (integer class
#: labels), ``"images"`` (images to rotate) or ``"continuous"`` (continuous labels, or images
#: to rotate)
NEEDS: dict[str, str] = {
    "supcon-imbalance": "classes",
    "batch-size": "classes",
    "soft-supcon-tau": "classes",
    "continuous-labels": "continuous",
    "controls": "classes",
    "sample-batch": "images",
    "long-tail-targets": "classes",
}
#: experiments that ``run_all`` (``dgp verify all``) leaves out unless named in ``only``:
#: long-tail-targets trains 25 CNNs on MNIST (the ``mnist`` extra) in every mode
NOT_IN_ALL: frozenset[str] = frozenset({"long-tail-targets"})
#: options that belong to one experiment: option -> the experiment that takes it
OPTIONS: dict[str, str] = {"taus": "soft-supcon-tau"}


def run_experiment(
    name: str, *, taus: Sequence[float] | None = None, **run: Unpack[RunOptions]
) -> Experiment:
    """Run a named experiment (a key of :data:`EXPERIMENTS`) with the options ``run``
    (:class:`~dgp.torch.experiments.base.RunOptions`).

    ``budget`` (one of :data:`MODES`, or your own :class:`Budget`) replaces the quick or full
    budget; ``taus`` are the multiples of tau* of ``soft-supcon-tau`` (default
    :data:`TAU_MULTIPLES`). Torch's CPU threads are set to ``$DGP_TORCH_THREADS`` (default 1)
    for the duration.

    Raises
    ------
    ValueError
        If ``name`` is unknown, ``seed`` is negative, ``taus`` is given for another experiment,
        or the data do not fit the experiment.
    ImportError
        If the mode needs MNIST and the ``mnist`` extra is not installed.
    """
    check_choice(name, tuple(EXPERIMENTS), "experiment")
    seed = run.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int | np.integer) or seed < 0:
        raise InputError(f"seed must be a non-negative integer, got {seed!r}")
    options: dict = {}
    if taus is not None:
        if name != OPTIONS["taus"]:
            raise InputError(f"taus applies to {OPTIONS['taus']} only, not to {name}")
        options["multiples"] = tuple(float(t) for t in taus)
    with cpu_threads():  # small matrices: one thread, no contention (see cpu_threads)
        return EXPERIMENTS[name](**{**run, "seed": int(seed)}, **options)


def applicable(name: str, data: datasets.Dataset | None) -> str | None:
    """Why experiment ``name`` cannot run on ``data`` (None when it can)."""
    if data is None:
        return None
    needs = NEEDS[check_choice(name, tuple(EXPERIMENTS), "experiment")]
    if needs == "images" and not data.images:
        return "needs images to rotate"
    if needs == "continuous" and data.classes and not data.images:
        return "needs continuous labels, or images to rotate"
    if needs == "classes" and not data.classes:
        return "needs integer class labels"
    return None


def run_all(
    *,
    taus: Sequence[float] | None = None,
    only: Sequence[str] | None = None,
    **run: Unpack[RunOptions],
) -> Iterator[tuple[str, Experiment | str]]:
    """Run every experiment that fits the data (or those of ``only``), sharing identical training
    runs between them (through ``run["cache"]``, a fresh one when not given); those of
    :data:`NOT_IN_ALL` only when ``only`` names them.

    Yields ``(name, Experiment)``, or ``(name, reason)`` for an experiment the data do not fit.

    Raises
    ------
    ValueError, ImportError
        As :func:`run_experiment`.
    """
    run = {**run, "cache": {} if run.get("cache") is None else run["cache"]}
    for name in only or [n for n in EXPERIMENTS if n not in NOT_IN_ALL]:
        why = applicable(name, run.get("data"))
        if why is not None:
            yield name, why
            continue
        yield name, run_experiment(name, taus=taus if name == OPTIONS["taus"] else None, **run)
