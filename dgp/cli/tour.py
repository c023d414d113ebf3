"""``dgp tour``: the main results on built-in examples, as a short guided walk."""

from __future__ import annotations

import argparse
import textwrap
from dataclasses import dataclass

import numpy as np

from dgp.classification import Classification, classify
from dgp.cli._output import emit_json, table
from dgp.weights import (
    column_normalised_y_aware_weights,
    gaussian_kernel_weights,
    soft_supcon_weights,
    supcon_weights,
    xclr_weights,
)

__all__ = ["TOUR", "register", "tour_cases"]


@dataclass(frozen=True)
class Case:
    section: str
    name: str
    W: np.ndarray
    similarity: str
    tau: float
    dim: int


def _circle(n: int, radius: float, centre=(0.0, 0.0), seed: int = 1) -> np.ndarray:
    # unevenly spaced angles, so that row sums of the label kernel differ
    t = np.sort(np.random.default_rng(seed).uniform(0.0, 2 * np.pi, n))
    return np.c_[np.cos(t), np.sin(t)] * radius + np.asarray(centre)


def tour_cases() -> list[Case]:
    """The built-in examples, deterministic (no randomness beyond a fixed seed)."""
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(3), [8, 4, 2])  # three imbalanced classes
    eps = 0.1
    tau_star = 3 / (2 * -np.log(eps))  # K / ((K - 1)(-log eps)) for K = 3
    circle = _circle(12, radius=2.0, centre=(1.0, -0.5))
    sigma = 1.0
    tau_c = sigma**2 / 2.0**2  # tau R^2 = sigma^2
    off_sphere = np.r_[_circle(6, 2.0), _circle(6, 1.0)]
    label_emb = rng.standard_normal((12, 3))
    label_tau = 0.5
    lin = rng.standard_normal((12, 3))
    cases = [
        Case("SupCon", "hard SupCon (zero weights), cosine", supcon_weights(y), "cosine", 0.1, 8),
        Case("SupCon", "hard SupCon, Euclidean latent", supcon_weights(y), "euclidean", 0.1, 2),
    ]
    soft_temps = ((0.5, "tau = tau*/2"), (1.0, "tau = tau* (centred simplex)"), (1.5, "1.5 tau*"))
    for f, tag in soft_temps:
        cases.append(
            Case(
                "Soft SupCon",
                f"Soft SupCon eps=0.1, {tag}",
                soft_supcon_weights(y, eps=eps),
                "cosine",
                f * tau_star,
                3,
            )
        )
    ya_temps = ((0.5, "tau R^2 < sigma^2"), (1.0, "tau R^2 = sigma^2"), (2.0, "tau R^2 > sigma^2"))
    for f, tag in ya_temps:
        cases.append(
            Case(
                "y-Aware",
                f"y-Aware, labels on a circle, {tag}",
                gaussian_kernel_weights(circle, sigma=sigma),
                "cosine",
                f * tau_c,
                2,
            )
        )
    cases.append(
        Case(
            "y-Aware",
            "y-Aware, labels off any sphere",
            gaussian_kernel_weights(off_sphere, sigma=sigma),
            "cosine",
            tau_c,
            2,
        )
    )
    cases.append(
        Case(
            "y-Aware",
            "column-normalised y-Aware (public code)",
            column_normalised_y_aware_weights(circle, sigma=sigma),
            "cosine",
            tau_c,
            2,
        )
    )
    for f, tag in ((0.5, "tau = tau_y/2"), (1.0, "tau = tau_y"), (2.0, "tau = 2 tau_y")):
        cases.append(
            Case(
                "X-CLR",
                f"X-CLR, 3-d label embeddings, {tag}",
                xclr_weights(label_emb, label_tau=label_tau),
                "cosine",
                f * label_tau,
                3,
            )
        )
    for d in (2, 3, 11):
        cases.append(
            Case(
                "Euclidean-Euclidean",
                f"Euclid-Euclid, 3-d labels, d = {d}",
                gaussian_kernel_weights(lin, sigma=sigma),
                "euclidean",
                0.5,
                d,
            )
        )
    # a weighting whose row ratios around 0 -> 1 -> 2 -> 0 do not multiply to one
    Wa = np.ones((4, 4))
    Wa[0, 1], Wa[1, 2], Wa[2, 0] = 2.0, 2.0, 2.0
    cases.append(Case("Cycle condition", "asymmetric W breaking the cycle", Wa, "cosine", 0.5, 3))
    return cases


TOUR = """\
dgp tour: what geometry will your weighted contrastive loss give?

Each row is a weighting W with a latent similarity, a temperature tau and a dimension d. The
entropic bound sum_i H(p_i) is attained iff the similarities equal log w_ij + c; dgp builds that
target and decides whether an embedding in R^d realises it (realizable: unique up to isometry),
realises it in many ways or only in the limit (degenerate), or cannot (inconsistent).
"""

WALK = """\
Reading the table:
- Hard SupCon has zero weights: a bounded cosine similarity cannot reach s = -inf, so the bound
  is out of reach; with a Euclidean latent the classes drift apart forever (degenerate).
- Soft SupCon's target is equiangular with cosine 1 + tau log eps whatever the class sizes: it
  is realisable up to tau* = K / ((K-1)(-log eps)), where it becomes the centred simplex (rank
  K-1), and inconsistent above.
- y-Aware needs labels on a sphere: at tau R^2 = sigma^2 the target is the label circle itself
  (rank 2); off the sphere, or at other temperatures, no 2-d embedding attains the bound.
- The column-normalised y-Aware of public code is a different weighting (w_ij = k_ij / s_j): it
  still satisfies the cycle condition, but its target is no longer the label circle, and here
  no embedding attains its bound.
- X-CLR realises the label embeddings exactly at tau = tau_y.
- Euclidean-Euclidean realises z = (sqrt(tau)/sigma) y: rank p, so d < p is inconsistent and
  d >= N-1 leaves a whole family of minimisers.
- An asymmetric W whose cycle products differ has no symmetric target at all.
Next: `dgp classify --help`, `dgp classify --objective ... --json`.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "tour",
        help="a guided walk through the main results on built-in examples",
        description="Classify the paper's objectives on built-in example data and print a table "
        "of verdicts with one-line reasons.",
    )
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.set_defaults(func=run)


def _short(res: Classification) -> str:
    return textwrap.shorten(res.reason, width=78, placeholder=" ...")


def run(args: argparse.Namespace) -> int:
    results = [
        (case, classify(case.W, similarity=case.similarity, tau=case.tau, dim=case.dim))
        for case in tour_cases()
    ]
    if args.json:
        emit_json(
            {
                "cases": [
                    {"section": c.section, "name": c.name, **r.to_dict()} for c, r in results
                ]
            }
        )
        return 0
    print(TOUR)
    rows = [
        [
            c.name,
            c.similarity,
            f"{c.tau:.4g}",
            str(c.dim),
            r.verdict + (f" (rank {r.rank})" if r.rank is not None else ""),
            _short(r),
        ]
        for c, r in results
    ]
    print(table(rows, ["case", "similarity", "tau", "d", "verdict", "reason"]))
    print()
    print(WALK)
    return 0
