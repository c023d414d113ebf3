"""``dgp tour``: the main results on built-in examples, as a short guided walk."""

from __future__ import annotations

import argparse
import shutil
import textwrap
from dataclasses import dataclass

import numpy as np

from dgp.classification import Classification, classify
from dgp.cli._output import add_json_flag, emit_json, table
from dgp.weights import (
    column_normalised_y_aware_weights,
    gaussian_kernel_weights,
    soft_supcon_weights,
    supcon_weights,
    xclr_weights,
)

__all__ = ["DESCRIPTION", "HELP", "TOUR", "add_arguments", "tour_cases"]


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
        Case("SupCon", "zero weights, cosine", supcon_weights(y), "cosine", 0.1, 8),
        Case("SupCon", "zero weights, Euclidean", supcon_weights(y), "euclidean", 0.1, 2),
    ]
    soft_temps = ((0.5, "tau = tau*/2"), (1.0, "tau = tau* (simplex)"), (1.5, "tau = 1.5 tau*"))
    W_soft = soft_supcon_weights(y, eps=eps)
    cases += [Case("Soft SupCon", tag, W_soft, "cosine", f * tau_star, 3) for f, tag in soft_temps]
    ya_temps = ((0.5, "circle, tau R^2 < sigma^2"), (1.0, "circle, tau R^2 = sigma^2"),
                (2.0, "circle, tau R^2 > sigma^2"))
    W_circle = gaussian_kernel_weights(circle, sigma=sigma)
    cases += [Case("y-Aware", tag, W_circle, "cosine", f * tau_c, 2) for f, tag in ya_temps]
    cases += [
        Case("y-Aware", "labels off any sphere", gaussian_kernel_weights(off_sphere, sigma=sigma),
             "cosine", tau_c, 2),
        Case("y-Aware", "column-normalised (public code)",
             column_normalised_y_aware_weights(circle, sigma=sigma), "cosine", tau_c, 2),
    ]
    xclr_temps = ((0.5, "tau = tau_y/2"), (1.0, "tau = tau_y"), (2.0, "tau = 2 tau_y"))
    W_xclr = xclr_weights(label_emb, label_tau=label_tau)
    cases += [Case("X-CLR", tag, W_xclr, "cosine", f * label_tau, 3) for f, tag in xclr_temps]
    W_lin = gaussian_kernel_weights(lin, sigma=sigma)
    cases += [Case("Euclidean-Euclidean", f"3-d labels, d = {d}", W_lin, "euclidean", 0.5, d)
              for d in (2, 3, 11)]
    # a weighting whose row ratios around 0 -> 1 -> 2 -> 0 do not multiply to one
    Wa = np.ones((4, 4))
    Wa[0, 1], Wa[1, 2], Wa[2, 0] = 2.0, 2.0, 2.0
    cases.append(Case("Cycle condition", "asymmetric W, broken cycle", Wa, "cosine", 0.5, 3))
    return cases


TOUR = (
    "dgp tour: what geometry will your weighted contrastive loss give?",
    "A w-InfoNCE loss with weights W can never go below its entropic bound sum_i H(p_i), and it "
    "reaches the bound exactly when the similarities equal log w_ij + c. So W prescribes a "
    "target geometry, and one question decides everything: can points in R^d have it? dgp "
    "answers with one of three verdicts:",
    "  realizable    the bound is reached, by one geometry (unique up to rotation)\n"
    "  degenerate    the bound is reached by many geometries, or only in a limit\n"
    "  inconsistent  no embedding in R^d reaches the bound",
    "The stops below use built-in data; each row is one weighting (here the objective of its "
    "section, with the case named on the row), temperature tau and dimension d.",
)

#: per section: what to look at before the table, and what to take away after it
SECTIONS = {
    "SupCon": (
        "Hard SupCon gives zero weight to other classes: the target asks for s_ij = -inf.",
        "A bounded cosine similarity cannot get there (inconsistent): the true optimum lies\n"
        "above the bound, a convex problem over the class prototypes. A Euclidean latent\n"
        "approaches the bound only by pushing classes apart forever (degenerate).",
    ),
    "Soft SupCon": (
        "Soft SupCon keeps a weight eps across classes (here 3 classes of 8, 4, 2; eps = 0.1).",
        "The target is equiangular with cosine 1 + tau log eps whatever the class sizes:\n"
        "realizable up to tau* = K / ((K-1)(-log eps)), where it is the centred simplex (rank\n"
        "K-1), and inconsistent above it.",
    ),
    "y-Aware": (
        "y-Aware weights pairs by a Gaussian kernel of continuous labels, with a cosine latent;\n"
        "here 12 labels on a circle of radius R = 2, sigma = 1.",
        "The unit sphere can hold the labels' geometry only if they lie on a sphere with\n"
        "tau R^2 <= sigma^2: at equality the target is the label circle itself (rank 2). Off\n"
        "the sphere, or for the column-normalised matrix of public code, no 2-d embedding works.",
    ),
    "X-CLR": (
        "X-CLR's weights are a softmax of label-embedding similarities at temperature tau_y;\n"
        "rows are normalised one by one, yet every cycle balances, so there is a target.",
        "It is the label embeddings themselves exactly at tau = tau_y; below, one more\n"
        "dimension is needed, above, none suffices.",
    ),
    "Euclidean-Euclidean": (
        "The same Gaussian kernel with a Euclidean latent (12 labels in R^3).",
        "The optimum is z = (sqrt(tau)/sigma) y up to a rigid motion: rank 3, so d < 3 is\n"
        "inconsistent and d >= N-1 leaves a whole family of minimisers (degenerate).",
    ),
    "Cycle condition": (
        "A weighting need not be symmetric, but its row ratios must multiply to one around\n"
        "every cycle (Kolmogorov's criterion).",
        "Here 0 -> 1 -> 2 -> 0 breaks it: no symmetric similarity matches the rows, whatever d.",
    ),
}

NEXT = """\
Next:
  dgp classify W.npy --similarity cosine --tau 0.5 --dim 3
      your own N x N weighting
  dgp classify --objective y-aware --labels y.csv --sigma 1 --tau 0.5 --dim 2
      a named objective built from your labels
  add --json for scripts, --plot FILE for a figure (plot extra);
  dgp classify --help for more.
"""

#: the words the reasons use, in plain terms
GLOSSARY = (
    ("target", "the similarities s*_ij = log w_ij + c that reach the bound; c is one free "
     "constant (the softmax ignores a common shift)"),
    ("G(c) PSD", "the target Gram matrix (cosines tau (log w_ij + c), ones on the diagonal) is "
     "positive semidefinite, i.e. some unit vectors have exactly these cosines"),
    ("D(c) an EDM", "the target squared distances -2 tau (log w_ij + c) are those of some "
     "points (a Euclidean distance matrix)"),
    ("rank", "the dimension those vectors or points need"),
    ("end point", "the smallest or largest c that still gives a target (the admissible c form "
     "an interval; inside it every target needs all N dimensions)"),
    ("c = -inf", "an unbounded side of that interval (Euclidean targets allow every small c)"),
    ("cap", "labels lifted off their circle onto a smaller circle of the unit sphere"),
    ("tau*", "Soft SupCon's critical temperature K / ((K-1)(-log eps))"),
    ("Farkas certificate", "a matrix Y >= 0 with <Y, G(c)> < 0 for every c: proof that no c "
     "works"),
    ("near threshold", "decided within the reported tolerance of a critical value: a nearby "
     "temperature may give another verdict"),
)


def used_words(text: str) -> tuple[tuple[str, str], ...]:
    """The entries of :data:`GLOSSARY` whose word ``text`` uses (a glossary of the tour defines
    only what the tour says)."""
    flat = " ".join(text.split())
    return tuple((k, v) for k, v in GLOSSARY if k.split(" (")[0] in flat)


#: ``dgp tour``: its line in ``dgp --help``
HELP = "a guided walk through the main results on built-in examples"

#: ``dgp tour``: what ``dgp tour --help`` says first
DESCRIPTION = (
    "Classify the paper's objectives on built-in example data and print a table "
    "of verdicts with one-line reasons."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    add_json_flag(p)


def _verdict(res: Classification) -> str:
    return res.verdict + (f" (rank {res.rank})" if res.rank is not None else "") + (
        " *" if res.near_threshold else "")


def _width() -> int:
    return max(60, min(120, shutil.get_terminal_size((80, 24)).columns))


def _wrap(text: str, width: int, indent: str) -> str:
    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent,
                         break_on_hyphens=False)


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
    width = _width()
    out = []
    for para in TOUR:
        out.append(para if para.startswith("  ") else _wrap(para, width, ""))
        out.append("")
    sections = list(dict.fromkeys(c.section for c, _ in results))
    for k, section in enumerate(sections, start=1):
        intro, takeaway = SECTIONS.get(section, ("", ""))
        out.append(f"{k}. {section}")
        if intro:
            out.append(_wrap(" ".join(intro.split()), width, "   "))
        rows = [(c, r) for c, r in results if c.section == section]
        header = ["case", "latent", "tau", "d", "verdict"]
        body = [[c.name, c.similarity, f"{c.tau:.4g}", str(c.dim), _verdict(r)] for c, r in rows]
        lines = table(body, header).splitlines()
        out += ["   " + lines[0], "   " + lines[1]]
        for line, (_, r) in zip(lines[2:], rows, strict=True):
            out.append("   " + line)
            out.append(_wrap("why: " + r.reason, width, "      "))
        if takeaway:
            out.append(_wrap("=> " + " ".join(takeaway.split()), width, "   "))
        out.append("")
    if any(r.near_threshold for _, r in results):
        out.append("* decided within tolerance of a critical value (see 'near threshold').\n")
    out.append("Words used above:")
    used = used_words("\n".join(out))
    key_width = max(len(k) for k, _ in used) + 2
    for key, text in used:
        wrapped = textwrap.wrap(text, width=max(30, width - key_width - 2))
        out.append(f"  {key:<{key_width}}{wrapped[0]}")
        out += [" " * (key_width + 2) + w for w in wrapped[1:]]
    out.append("")
    out.append(NEXT.rstrip("\n"))
    print("\n".join(line.rstrip() for line in "\n".join(out).splitlines()))
    return 0
