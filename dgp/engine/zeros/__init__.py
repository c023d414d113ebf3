r"""Zero weights: the bound needs :math:`q_{ij} \to 0` where :math:`w_{ij} = 0`.

**Cosine.** The similarity is bounded, so :math:`q_{ij} \ge e^{-2/\tau}/(N-1) > 0`: the bound is
neither attained nor approached (inconsistent).

**Euclidean.** With :math:`s_{ij} = -D_{ij}/2\tau`, :math:`D_{ij} = |z_i - z_j|^2`, a sequence of
embeddings approaches the bound iff every row's softmax tends to its target row, i.e. (one scale
:math:`a_i` per row, :math:`P_i` the positive weights of row :math:`i`)

.. math::

    D_{ij} = a_i - 2\tau L_{ij} + o(1)\quad (j \in P_i), \qquad
    D_{il} - a_i \to +\infty\quad (l \notin P_i \cup \{i\}).

Every sample is the centre of a sphere (radius :math:`\sqrt{a_i}`) through its positives with
every other sample outside. The bound is never attained with a zero weight. Consequences, all
decided exactly (``proofs/t22_zero_patterns.py``):

1. *Mutual cycle condition.* A mutual pair (:math:`w_{ij}, w_{ji} > 0`) fixes
   :math:`a_i - a_j \to 2\tau(L_{ij} - L_{ji})`: the positive weights must satisfy the cycle
   condition on the cycle space of the mutual graph (a fundamental cycle of a spanning tree is
   reported when they do not).
2. *Scale order.* A one-way pair (:math:`w_{ij} > 0 = w_{ji}`) forces :math:`a_i - a_j \to
   +\infty`: no cycle of mutual and one-way steps with a one-way step may exist (the one-way
   weights must form a directed acyclic graph on the mutual components).
3. *Decoupling.* Support components (joined by positive weights either way) are independent:
   translating them apart by more than all their scales changes nothing else.
4. *Symmetric components.* A complete block may keep a bounded scale: it is approached iff its
   own target :math:`D(c)` fits, i.e. :math:`\operatorname{rank} D(c_{\max}) \le d` (as before).
   Any other component has one diverging scale :math:`\alpha`; rescaled by
   :math:`\alpha^{-1/2}`, its limit has unit distance on positive pairs and distance
   :math:`\ge 1` on the others (the *leading-order problem*, a unit-ball contact problem). It is
   approached whenever some :math:`X_0` has unit positive pairs, every other pair
   :math:`> 1`, and :math:`\delta_{ij} = -2\tau\ell_{ij}` in the image of its rigidity map
   (:math:`Y` with :math:`2\langle x_i - x_j, y_i - y_j\rangle = \delta_{ij}`): then
   :math:`Z(t) = X_0/t + tY`. Exact in :math:`d = 1` (paths only) and for components of at most
   :math:`d + 1` samples (always); otherwise obstructions (a clique of more than :math:`d + 1`
   samples, the kissing number, the planar neighbourhood and wheel rules, common neighbours,
   packing) prove inconsistency, a numerical search for :math:`X_0` proves approach.
5. *Pure sources.* A sample no sample gives positive weight to is peeled (repeatedly); the
   symmetric core left is necessary (an obstruction of the core decides the component). A pure
   source with one positive :math:`j` is placed at :math:`z_j(t) + \rho u/t^q` with :math:`j`
   exposed in direction :math:`u` at leading order and :math:`q` above every power placed
   before: its row then sees every other sample farther than :math:`j` by a diverging amount
   and every other row sees it beyond its scale.
6. What remains is *not decided exactly*: the leading-order problem contains penny-graph
   recognition (NP-hard) and strict kissing configurations (open in most dimensions), and other
   one-way weights (a source with several positives, one-way weights into a sample that others
   weight) add nested scales. Such components are reported with ``decided: false`` and the
   verdict of a numerical minimisation of the loss (small components), never silently.

**Layout.** One module per job, each importing only the ones listed before it:
:mod:`~dgp.engine.zeros._pattern` (the pattern and the decision records),
:mod:`~dgp.engine.zeros._split` (its support components, each a problem of its own numbered
``0..n_c - 1``: the reduction :class:`~dgp.engine.zeros._split.ZeroComponents`, whose inverse
lifts a component's samples back), :mod:`~dgp.engine.zeros._order` (cycle condition and scale
order),
:mod:`~dgp.engine.zeros._rigidity` (the family :math:`X_0/t + tY`),
:mod:`~dgp.engine.zeros._obstructions`, :mod:`~dgp.engine.zeros._search` (numerical searches),
:mod:`~dgp.engine.zeros._components` (one support component),
:mod:`~dgp.engine.zeros._decide` (the whole pattern), :mod:`~dgp.engine.zeros._families`
(the diverging family and its gaps), :mod:`~dgp.engine.zeros._classify` (the verdict) and
:mod:`~dgp.engine.zeros._sparse` (sparse input). Their thresholds are those of the one
tolerance policy, :class:`dgp.tolerance.Tolerance`.
"""

from dgp.engine.zeros._classify import classify_pattern, classify_zeros
from dgp.engine.zeros._decide import decide_pattern
from dgp.engine.zeros._families import pattern_gap
from dgp.engine.zeros._obstructions import KISSING_NUMBERS, kissing_bound
from dgp.engine.zeros._pattern import ComponentDecision, ZeroPattern, sub_weights
from dgp.engine.zeros._sparse import classify_sparse, sparse_pattern

__all__ = [
    "KISSING_NUMBERS",
    "ComponentDecision",
    "ZeroPattern",
    "classify_pattern",
    "classify_sparse",
    "classify_zeros",
    "decide_pattern",
    "kissing_bound",
    "pattern_gap",
    "sparse_pattern",
    "sub_weights",
]
