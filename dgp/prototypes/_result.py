"""Result classes of :func:`dgp.supcon_prototypes`, with readable text and notebook display."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any, ClassVar

import numpy as np

from dgp.constants import LOSS_RESOLUTION
from dgp.display import SUMMARY_TABLE_MAX, format_nats, format_summary, html_summary
from dgp.geometry import canonical_frame, embedding_from_gram
from dgp.prototypes._closed_forms import equiangular_gram
from dgp.prototypes._collapse import MinorityCollapse, equiangular_verdict, minority_collapse
from dgp.prototypes._ident import Identifiability, pm95, settled_identifiability
from dgp.prototypes._rates import PositivePairRates, rates_for_spec
from dgp.prototypes._summary import (
    body_pairs,
    classes_pairs,
    gram_cells,
    gram_summary,
    lead_pairs,
)
from dgp.records import Convergence, Record, closing_items, gram_included, gram_omitted
from dgp.resources import check_memory
from dgp.solver import (
    Z95,
    BatchPrediction,
    KKTCertificate,
    LiftCertificate,
    RankDCertificate,
    paired_loss_verdict,
)
from dgp.solver._batch_result import BatchCertificate

__all__ = [
    "GRAM_JSON_MAX_K",
    "BatchPrediction",
    "FirstOrderApproximation",
    "Prototypes",
    "gram_summary",
]

#: largest number of classes whose K x K Gram ``to_dict`` includes by default (a 500 x 500 Gram
#: is about 5 MB of JSON); beyond it the JSON says how to ask for it
GRAM_JSON_MAX_K = 500


@dataclass(frozen=True, eq=False)
class FirstOrderApproximation(Record):
    """What the first-order formula is and is not.

    Attributes
    ----------
    min_eigenvalue : float
        Smallest eigenvalue of the first-order Gram.
    psd_defect : float
        ``max(0, -min_eigenvalue)``: how far it is from being a Gram of unit vectors.
    projected_gram : ndarray or None
        The nearest point of the elliptope (Frobenius), ``None`` when too large to compute.
    distance : float or None
        Frobenius distance from the first-order Gram to ``projected_gram``.
    converged : bool
        Whether the projection converged to tolerance (else it is feasible but not nearest).
    note : str
    """

    min_eigenvalue: float
    psd_defect: float
    projected_gram: np.ndarray | None
    distance: float | None
    converged: bool
    note: str

    #: ``to_dict(gram=True)`` adds the projected Gram
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"gram": False}

    def json_items(self, options):
        yield from (("min_eigenvalue", self.min_eigenvalue), ("psd_defect", self.psd_defect),
                    ("distance", self.distance), ("converged", self.converged),
                    ("note", self.note))
        if options["gram"] and self.projected_gram is not None:
            yield "projected_gram", self.projected_gram


@dataclass(frozen=True, eq=False)
class Prototypes(Record):
    """The optimal prototype Gram of SupCon / Soft SupCon and how it was obtained.

    Attributes
    ----------
    objective : str
        ``"supcon"`` or ``"soft-supcon"``.
    sizes : tuple of int
        Class sizes ``n_1..n_K``.
    tau : float
    eps : float or None
        Soft SupCon cross-class weight (``None`` for SupCon).
    method : str
        ``"closed-form"``, ``"numeric"`` (certified solver) or ``"first-order"`` (an
        approximation).
    loss : float
        Full batch: the w-InfoNCE loss of the collapsed configuration, summed over all ``N``
        anchors (nats). With a batch size: the expected batch loss under the stated reduction.
        For ``first-order``: the loss at the projected Gram, an upper bound on the optimum.
    entropic_bound : float
        :math:`\\sum_i H(p_i)` (nats) of the same objective (expected, for batches).
    excess_loss : float
        ``loss - entropic_bound`` without cancellation (it can be :math:`10^{-50}` at small
        ``tau``, or underflow to 0 while ``log_excess_loss`` stays finite).
    log_excess_loss : float
        Natural log of ``excess_loss`` (``-inf`` where the bound is attained).
    kkt_residual : float or None
        The certificate's residual; ``None`` for closed forms (proved, not converged) and
        approximations.
    certificate : KKTCertificate, RankDCertificate, BatchCertificate or None
        The KKT certificate of the Gram (of the solve; of a closed form, computed from its
        equiangular structure at any ``K``, up to
        :data:`~dgp.constants.EQUIANGULAR_KKT_MAX_GROUPS` distinct class sizes; of a
        first-order Gram's projection: its residual says how far from optimal); a point on
        factors: its rank-d certificate (``rank_d``); a stochastic prediction: its
        expected-batch certificate (a lower bound at its confidence, the gap); ``None`` for a
        first-order Gram not projected and a closed form of more distinct sizes (its
        executable proof certifies it).
    collapse : LiftCertificate or None
        Optimality of the collapsed configuration for the ``N x N`` problem, and uniqueness.
    rank : int
        Rank of the prototype Gram (the embedding dimension it needs).
    unique : bool or None
        Whether the ``N x N`` minimiser is unique up to rotation (``None``: undecided).
    stop_reason : str
        Why the solver stopped, or which closed form applies.
    equiangular : float or None
        The common off-diagonal cosine when the Gram is equiangular.
    matrix : ndarray or None
        The Gram when it is not equiangular (use :attr:`gram`).
    approximation : FirstOrderApproximation or None
        For ``first-order``.
    batch : BatchPrediction or None
        For mini-batch predictions.
    identifiability : Identifiability or None
        The loss gaps to the simplex (and, for batches, to the full-batch prediction) per
        anchor and what the loss pins; ``None`` above ``K = 1500`` classes and for
        ``first-order``. Computed on first read from :attr:`search_identifiability` (in a
        fixed dimension the sublevel probe runs then, 0.3 to 0.9 s).
    search_identifiability : Identifiability or None
        The same as found by the solve: the gaps and the search's own solutions compared,
        before the sublevel probe.
    dim : int or None
        The dimension the prototypes are constrained to (``None``: free dimension).
    lower_bound : float or None
        With ``dim``: a certified lower bound (nats, same units as ``loss``) on the optimum in
        ``R^dim``: the largest of the entropic bound, the free-dimension optimum's certified
        loss and the convex (dual) bound at the point itself; ``loss - lower_bound`` is the gap.
    factor : ndarray or None
        ``K x dim`` unit rows with Gram :attr:`gram`, kept by a rank-``dim`` solve of many
        classes (then :attr:`embedding` is this factor, no eigendecomposition needed).
    rank_d : RankDCertificate or None
        With ``dim`` below the free optimum's rank: first- and second-order certificates of
        the rank-``dim`` point (:func:`dgp.solver.rank_d_certificate`).
    minority : MinorityCollapse or None
        The minority-collapse verdict where the path that made the prediction computed it
        (from independent runs, with paired intervals); else ``None`` and
        :attr:`minority_collapse` computes it from the Gram and its intervals.
    classes : tuple or None
        The class labels, in class order (class ``k``, of size ``sizes[k]``, is
        ``classes[k]``; sorted, as :class:`dgp.Problem` numbers them), when the problem was
        built from labels (``dgp.Problem(objective=..., labels=...)``, ``dgp supcon --labels``);
        ``None`` from class sizes. The text summary names the classes with them.
    """

    objective: str
    sizes: tuple[int, ...]
    tau: float
    eps: float | None
    method: str
    loss: float
    entropic_bound: float
    excess_loss: float
    log_excess_loss: float
    kkt_residual: float | None
    certificate: KKTCertificate | RankDCertificate | BatchCertificate | None
    collapse: LiftCertificate | None
    rank: int
    unique: bool | None
    stop_reason: str
    equiangular: float | None = None
    matrix: np.ndarray | None = None
    approximation: FirstOrderApproximation | None = None
    batch: BatchPrediction | None = None
    search_identifiability: Identifiability | None = None
    dim: int | None = None
    lower_bound: float | None = None
    rank_d: RankDCertificate | None = None
    factor: np.ndarray | None = None
    minority: MinorityCollapse | None = None
    classes: tuple[Any, ...] | None = None

    #: whether :attr:`identifiability` settles what the loss pins (a ReLU head's result
    #: reports its own)
    SETTLES_IDENTIFIABILITY: ClassVar[bool] = True

    @cached_property
    def identifiability(self) -> Identifiability | None:
        # documented in the class's Attributes (a docstring here would take its row away): in a
        # fixed dimension or with batches, settled from this result's own fields at
        # LOSS_RESOLUTION (settled_identifiability), on first read
        if self.SETTLES_IDENTIFIABILITY:
            return settled_identifiability(self, LOSS_RESOLUTION)
        return self.search_identifiability

    @property
    def K(self) -> int:
        """Number of classes."""
        return len(self.sizes)

    @cached_property
    def gram(self) -> np.ndarray:
        """The ``K x K`` prototype Gram :math:`G_{cc'} = \\langle\\mu_c, \\mu_{c'}\\rangle`
        (built on first access for equiangular closed forms).

        Raises
        ------
        ValueError
            If an equiangular Gram would not fit in memory (use :attr:`equiangular`).
        """
        if self.matrix is not None:
            return self.matrix
        check_memory(
            8 * self.K**2,
            what=f"the {self.K} x {self.K} prototype Gram",
            hint=f"it is equiangular: every off-diagonal cosine is {self.equiangular!r} "
            "(attribute equiangular)",
        )
        return equiangular_gram(self.K, float(self.equiangular))

    @cached_property
    def embedding(self) -> np.ndarray:
        """Prototype vectors ``K x rank`` with ``Z Z^T = gram`` (for ``first-order``: of the
        projected Gram, the nearest Gram of unit vectors), signs fixed.

        Raises
        ------
        ValueError
            As :attr:`gram`.
        """
        if self.factor is not None:  # a rank-dim solve's own factor: no eigendecomposition
            return self.factor
        G = self.gram
        if self.approximation is not None and self.approximation.projected_gram is not None:
            G = self.approximation.projected_gram
        # a solved Gram is PSD to within its certificate's primal residual, not to roundoff
        # (a KKT or ReLU certificate has one; a rank-d or expected-batch one has none)
        slack = getattr(self.certificate, "primal_residual", 0.0)
        return embedding_from_gram(G, rank=self.rank, psd_atol=slack)

    @cached_property
    def prototypes(self) -> np.ndarray:
        """The prototypes as fixed targets: ``K x dim`` unit rows (``K x rank`` without ``dim``)
        with Gram :attr:`gram`, in the canonical orientation of
        :func:`dgp.geometry.canonical_frame` (class 0 on the first axis, class 1 in the first
        coordinate plane, ...: the same array for the same Gram).

        Raises
        ------
        ValueError
            As :attr:`gram`.
        """
        d = self.rank if self.dim is None else self.dim
        Z = self.embedding
        if Z.shape[1] < d:
            Z = np.hstack([Z, np.zeros((Z.shape[0], d - Z.shape[1]))])
        Z = canonical_frame(Z[:, :d])
        return Z / np.linalg.norm(Z, axis=1, keepdims=True)

    @cached_property
    def minority_collapse(self) -> MinorityCollapse:
        """Whether the tail classes' prototypes lean together beyond the prediction's noise
        (:class:`~dgp.prototypes.MinorityCollapse`: the largest third of the classes against
        the smallest third, with 95% intervals where the prediction comes from sampled
        batches; ``collapsed`` is ``None`` where the loss does not pin the cosines)."""
        if self.minority is not None:
            return self.minority
        if self.equiangular is not None:
            return equiangular_verdict(self.sizes, self.equiangular)
        interval = None if self.batch is None else self.batch.gram_interval
        exact = ("first-order approximation, no interval" if self.method == "first-order" else
                 "exact: full batch, no sampling error" if self.batch is None else
                 "exact: every batch composition, no sampling error" if self.batch.exact else
                 "exact: a closed form, no sampling error")
        return minority_collapse(self.gram, self.sizes, interval=interval,
                                 pinned=self.cosines_pinned, exact=exact,
                                 df=None if self.batch is None else self.batch.replicates)

    @property
    def cosines_pinned(self) -> bool | None:
        """Whether the loss pins the pairwise cosines (:attr:`identifiability`): ``None``
        where undecided; ``False`` in a dimension with ``K > dim + 1`` where nothing was
        compared."""
        ident = self.identifiability
        if ident is not None and ident.pinned and "pairwise cosines" in ident.pinned:
            return bool(ident.pinned["pairwise cosines"])
        return None if self.dim is None or self.K <= self.dim + 1 else False

    @cached_property
    def full_batch_minority_collapse(self) -> MinorityCollapse | None:
        """With batches: the verdict of the full-batch prediction (in the same dimension), what
        batching changes; ``None`` without batches."""
        if self.batch is None:
            return None
        pinned = None if self.dim is None or self.K <= self.dim + 1 else False
        return minority_collapse(self.batch.full_batch_gram, self.sizes, pinned=pinned,
                                 exact="exact: full batch, no sampling error")

    @cached_property
    def positive_pairs(self) -> PositivePairRates | None:
        """With batches: the per-class positive-pair rates of the sampler and batch size
        (:func:`~dgp.prototypes.positive_pair_rates`; for another sampler than uniform, with
        uniform's beside them); ``None`` for the full batch."""
        return None if self.batch is None else rates_for_spec(np.asarray(self.sizes),
                                                              self.batch.spec)

    def _summary_pairs(self) -> list[tuple[str, str]]:
        """The body of the summaries (:func:`~dgp.prototypes._summary.body_pairs`), with what
        the loss does not pin said as such: where the pairwise cosines are free among
        near-optimal solutions, no cosine and no per-pair movement is presented as a finding
        (the loss, its interval and the bound are); numbers averaged over sampled
        compositions carry their 95% interval."""
        pairs = body_pairs(self)
        out = []
        for key, text in pairs:
            if key == "cosines" and self.cosines_pinned is False:
                text = self._free_cosines()
            elif key == "moved" and self.cosines_pinned is False:
                key, text = "full batch", self._full_batch_loss()
            elif key == "excess" and self._sampled_compositions():
                text = self._sampled_excess()
            elif key == "method" and self._sampled_closed_form():
                text += ("; certified for the expectation by its proof, not by the sampled "
                         "compositions (their KKT certificate measures the sample's noise)")
            out.append((key, text))
        return out

    def _free_cosines(self) -> str:
        ident = self.identifiability
        spread = {} if ident is None or not ident.spread else ident.spread
        undecided = bool(ident is not None and ident.pinned
                         and ident.pinned.get("pairwise cosines", False) is None)
        if "cosine_max" in spread and ident.resolution is not None:
            lead = ("not known to be pinned (near the threshold)" if undecided else
                    "not pinned by the loss")
            return (f"{lead}: near-optimal solutions (within "
                    f"{ident.resolution:.2g} nats/anchor) differ by up to "
                    f"{spread['cosine_max']:.2g} (RMS {spread['cosine_rms']:.2g}); no single "
                    "cosine is a prediction (what is: the loss, its interval and the bound)")
        why = (f"K > dim + 1 in R^{self.dim}" if self.dim is not None
               and len(self.sizes) > self.dim + 1 else "the optimum is not shown unique")
        return (f"not known to be pinned: {why} and no other near-optimal solution compared; "
                "no single cosine is a prediction (what is: the loss and its bound)")

    def _full_batch_loss(self) -> str:
        """The full-batch prediction against this one by the loss (pinned), not by cosines."""
        if self.batch.kept_full_batch:  # no paired gap: this point against itself
            return ("its prediction is this one: no stochastic run was lower beyond noise on "
                    "the selection batches, so no change of the loss from batching was "
                    "detected here (a longer run may still beat it by less than that noise)"
                    + ("" if self.batch.runs_interval is None else
                       f"; {self.batch.moved_beyond_interval} of its cosines lie beyond the "
                       "runs' own 95% intervals (about their mean)"))
        ident = self.identifiability
        free = (ident.spread or {}).get("cosine_max") if ident is not None else None
        shift = f"its Gram differs by up to {self.batch.shift:.3g}"
        if free is None:  # said only where near-optimal solutions were compared
            shift += (", and whether the loss leaves that free is not known (no other "
                      "near-optimal solution compared)")
        else:
            shift += (f", {'within' if self.batch.shift <= free else 'beyond'} what "
                      f"near-optimal solutions differ by ({free:.3g})")
        if ident is None or ident.full_batch_gap is None:
            return shift
        gap, se = ident.full_batch_gap, ident.full_batch_gap_se
        half = 0.0 if se is None else Z95 * se
        verdict = paired_loss_verdict(gap, half)
        return (f"its expected batch loss is {gap:+.2g}{pm95(se)} nats/anchor above this one "
                f"(paired, held-out batches): {verdict}; {shift}")

    def _sampled_closed_form(self) -> bool:
        """A closed form reported on sampled compositions: its proof certifies the optimum of
        the expectation over every composition; its ``certificate`` is of the sample."""
        return (self.method == "closed-form" and self.batch is not None
                and not self.batch.exact and self.certificate is not None
                and not isinstance(self.certificate, BatchCertificate))

    def _sampled_closed_form_statement(self) -> str:
        return ("the optimum of the expected batch loss over every composition (a closed form, "
                "from its proof: " + self.stop_reason + "); the KKT certificate beside it "
                f"(certificate, scope 'sampled compositions') is of the average over the "
                f"{self.batch.drawn} compositions drawn, which the closed form is not fitted "
                "to: its residual measures that sample's noise, not the closed form's "
                "optimality")

    def _certificate_json(self) -> Any:
        """The certificate as JSON; for a closed form on sampled compositions, with its scope
        said (the sample, not the expectation the closed form solves), so that its
        ``certified`` and :attr:`convergence`'s never read as a contradiction."""
        if not self._sampled_closed_form():
            return self.certificate
        d = self.certificate.to_dict()
        d["scope"] = "sampled compositions"
        d["statement"] = (
            f"of the average over the {self.batch.drawn} compositions drawn, not of the "
            "expectation, whose optimum the closed form is by its proof (see convergence); "
            + d["statement"])
        return d

    def _sampled_compositions(self) -> bool:
        """The loss and its bound are averages over sampled compositions (not exact, not
        optimised on fresh batches)."""
        b = self.batch
        return b is not None and not b.exact and b.estimate is None

    def _sampled_excess(self) -> str:
        b = self.batch
        ex = format_nats(self.excess_loss, self.log_excess_loss)
        fitted = ("the closed form is not fitted to them" if self.method == "closed-form" else
                  "in-sample: the prediction was fitted to them")
        return (f"{ex}{pm95(b.excess_se)} nats above the entropic bound "
                f"{self.entropic_bound:.6g}, both averages over {b.drawn} sampled compositions "
                f"({fitted})")

    def summary(self, gram: bool | None = None) -> str:
        """The text summary: the lead (minority collapse; with batches the positive-pair rates
        and what the sampler changes), then how it was solved, loss, bounds and cosines, and
        for a problem built from labels the class each index stands for (all of them with
        ``gram=True``, else the first and last three beyond 12 classes); ``gram``: with the
        Gram table (``None``: when ``K <= 8``)."""
        text = format_summary(self._title(), lead_pairs(self) + self._summary_pairs()
                              + classes_pairs(self, every=bool(gram)))
        if gram or (gram is None and self.K <= SUMMARY_TABLE_MAX):
            cells = gram_cells(self)
            width = max(10, 2 + max(len(v) for row in cells for v in row))
            head = "".join(f"{f'c{c}':>{width}}" for c in range(self.K))
            rows = [f"  {'':6}{head}"] + [
                f"  {f'c{c}':<6}" + "".join(f"{v:>{width}}" for v in cells[c])
                for c in range(self.K)
            ]
            text += "\n  prototype Gram" + self.gram_note() + ":\n" + "\n".join(rows)
        return text

    def gram_note(self) -> str:
        """What a printed Gram's caption says of its entries' errors (text, HTML and ``dgp
        supcon``): where they come from runs on sampled batches, that each carries the
        half-width of its 95% interval, or why none was measured; nothing where the entries
        are exact or a closed form's."""
        b = self.batch
        if b is not None and b.unmeasured:
            return f" (found on sampled batches; {b.unmeasured})"
        if (b is not None and b.gram_interval is not None
                and bool(np.any(b.gram_interval[1] > b.gram_interval[0]))):
            return (" (each entry ± the half-width of its 95% interval over independent runs)"
                    if not b.restarts else
                    " (each entry ± the half-width of its 95% interval over runs, "
                    f"{b.restarts} of them these prototypes' run and its restarts on other "
                    "batch streams)")
        return ""

    def _title(self) -> str:
        name = "SupCon" if self.eps is None else f"Soft SupCon (eps = {self.eps:g})"
        return f"{name} prototypes: K = {self.K}, N = {sum(self.sizes)}, tau = {self.tau:g}"

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        small = self.K <= SUMMARY_TABLE_MAX
        labels = [f"c{c} (n={n})" for c, n in enumerate(self.sizes)] if small else None
        return html_summary(
            self._title(),
            lead_pairs(self) + self._summary_pairs() + classes_pairs(self),
            # each sampled entry with its interval's half-width
            cells=gram_cells(self) if small else None, labels=labels,
            caption="prototype Gram (cosines)" + self.gram_note(),
        )

    @property
    def convergence(self) -> Convergence:
        """How the solve ended (:class:`dgp.records.Convergence`): closed forms need none,
        numeric results are returned only when the acceptance rule holds, a first-order
        approximation is not a solution; a rank-``dim`` point is certified when it is first-
        and second-order critical (:attr:`rank_d`); others where the certificate's conclusion
        holds (``certified``) and its numbers support it."""
        cert = self.certificate
        if self.rank_d is not None:  # a rank-d point: certified first and second order
            r = self.rank_d
            what = (f"a first- and second-order critical point of the loss over Grams of rank "
                    f"<= {r.dim} (residual: the Riemannian gradient); "
                    + ("also the global optimum (the dual is PSD)" if r.global_optimal else
                       "not proven globally optimal: see lower_bound and gap"))
            return Convergence(success=r.first_order, status=self.stop_reason,
                               residual=self.kkt_residual,
                               certified=r.first_order and r.second_order and not r.check(),
                               certifies=what)
        if self.method == "first-order":
            what = "nothing: a first-order approximation (the loss is an upper bound)"
        elif self._sampled_closed_form():
            what = self._sampled_closed_form_statement()
        elif self.method == "closed-form":
            what = "the optimum (a closed form)"
        else:
            what = ("the optimum over the elliptope, within the certificate's gap_bound "
                    "(KKT: residual is the certificate's kkt_residual)")
        return Convergence(
            success=self.method != "first-order",
            status=self.stop_reason,
            residual=self.kkt_residual,
            certified=self.method == "closed-form" or (
                cert is not None and bool(cert.certified) and not cert.check()),
            certifies=what,
        )

    #: ``gram=None`` includes the ``K x K`` Gram for ``K <= GRAM_JSON_MAX_K`` (500) and
    #: otherwise sets ``gram`` to ``None`` with ``gram_omitted`` saying why and how to get it
    #: (``gram=True``); ``gram_summary`` is always there. ``embedding=True`` adds the prototype
    #: vectors.
    JSON_OPTIONS: ClassVar[dict[str, Any]] = {"gram": None, "embedding": False}

    def json_items(self, options):
        """``objective``, ``sizes``, ``classes``, ``tau``, ``eps``, ``minority_collapse``,
        ``positive_pairs`` (with batches), ``gram``, ``loss``, ``method``, ``kkt_residual`` and
        the other attributes (``JSON_OPTIONS``)."""
        include = gram_included(self.K, GRAM_JSON_MAX_K, options["gram"])
        yield from (("objective", self.objective), ("sizes", self.sizes),
                    ("classes", self.classes), ("tau", self.tau),
                    ("eps", self.eps), ("minority_collapse", self.minority_collapse),
                    ("positive_pairs", self.positive_pairs),
                    ("gram", self.gram if include else None),
                    ("loss", self.loss))
        if self.dim is not None:
            yield from (("lower_bound", self.lower_bound), ("dim", self.dim),
                        ("gap", None if self.lower_bound is None
                         else max(0.0, self.loss - self.lower_bound)))
        yield from (("method", self.method),
                    ("kkt_residual", self.kkt_residual), ("entropic_bound", self.entropic_bound),
                    ("excess_loss", self.excess_loss), ("log_excess_loss", self.log_excess_loss),
                    ("rank", self.rank), ("unique", self.unique),
                    ("stop_reason", self.stop_reason), ("equiangular", self.equiangular),
                    ("certificate", self._certificate_json()), ("collapse", self.collapse))
        if not include:
            yield "gram_omitted", gram_omitted(
                self.K, "K", GRAM_JSON_MAX_K, " classes (about 20 bytes per entry as JSON)"
            ) + ("" if self.equiangular is None
                 else f"; it is equiangular with off-diagonal cosine {self.equiangular!r}")
        if self.equiangular is None:
            yield "gram_summary", gram_summary(
                self.gram, None if self.batch is None else self.batch.gram_interval)
        else:
            yield "gram_summary", {"equiangular": self.equiangular,
                                   "simplex_cosine": -1.0 / (self.K - 1)}
        if self.approximation is not None:
            yield "approximation", self.approximation.to_dict(gram=include)
        if self.batch is not None:
            yield "batch", self.batch.to_dict(gram=include)
        yield "identifiability", self.identifiability
        yield from closing_items(self, options)
