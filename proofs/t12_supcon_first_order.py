r"""Theorem (SupCon's first-order geometry under imbalance). For small :math:`\tau` the optimal
SupCon prototype Gram is

.. math::

    G_{cc'} = -\frac{1}{K-1} - \tau\Big(\log\omega_{cc'} - \overline{\log\omega}\Big) + O(\tau^2),
    \qquad \omega_{cc'} = n_c n_{c'}\Big(\frac{1}{n_c - 1} + \frac{1}{n_{c'} - 1}\Big),

with :math:`\overline{\log\omega}` the mean over the :math:`K(K-1)/2` pairs: the regular simplex
for balanced classes, minority pairs (smaller :math:`\omega`) more similar otherwise.

Derivation (checked with sympy): expanding
:math:`n_c\log((n_c - 1) + \sum_{c'} n_{c'}e^{(G_{cc'} - 1)/\tau})` to first order in the
exponentials gives the pair coefficient :math:`\omega_{cc'}`; writing
:math:`G = S + \tau H` around the simplex ``S``, minimising
:math:`\sum_{c<c'}\omega_{cc'}e^{h_{cc'}}` subject to :math:`\sum h_{cc'} = 0` (the first-order
elliptope constraint) gives :math:`h = \overline{\log\omega} - \log\omega` by Lagrange.

Checked by properties for long-tailed and size-2 classes: an independent Burer–Monteiro
minimiser of the prototype objective (written from its definition) agrees with the certified
solver of :mod:`dgp.prototypes` and lies within :math:`2\tau^2` of
:func:`dgp.prototypes.first_order_gram`, while the first-order correction itself is of order
:math:`\tau`; balanced sizes give the simplex exactly.
"""

from __future__ import annotations

import numpy as np
import sympy as sp
from hypothesis import given
from hypothesis import strategies as st

from dgp import strategies as ds
from dgp.proofs import _reference as ref
from dgp.proofs._theorem import Theorem, property_settings
from dgp.prototypes import first_order_gram, supcon_prototypes

THEOREM = Theorem(
    id="supcon-first-order",
    statement="SupCon prototypes for small tau: G_cc' = -1/(K-1) - tau (log w_cc' - mean log w) "
    "+ O(tau^2), w_cc' = n_c n_c' (1/(n_c - 1) + 1/(n_c' - 1)); the simplex when balanced.",
    method="both",
)


def test_symbolic_pair_coefficient():
    """d/dx at x = 0 of n_c log((n_c - 1) + n_c' x) + n_c' log((n_c' - 1) + n_c x) is omega."""
    n1, n2, x = sp.symbols("n1 n2 x", positive=True)
    f = n1 * sp.log((n1 - 1) + n2 * x) + n2 * sp.log((n2 - 1) + n1 * x)
    coeff = sp.diff(f, x).subs(x, 0)
    omega = n1 * n2 * (1 / (n1 - 1) + 1 / (n2 - 1))
    assert sp.simplify(coeff - omega) == 0


def test_symbolic_lagrange_solution():
    """argmin sum_k omega_k e^{h_k} s.t. sum_k h_k = 0 is h_k = mean(log omega) - log omega_k."""
    h = sp.symbols("h0:3", real=True)
    w = sp.symbols("w0:3", positive=True)
    lam = sp.symbols("lam", real=True)
    lagr = sum(wk * sp.exp(hk) for wk, hk in zip(w, h, strict=True)) - lam * sum(h)
    # stationarity: w_k e^{h_k} = lam, i.e. h_k = log lam - log w_k; the constraint fixes lam
    sol_h = [sp.log(lam) - sp.log(wk) for wk in w]
    for hk, sk in zip(h, sol_h, strict=True):
        assert sp.simplify(sp.diff(lagr, hk).subs(hk, sk)) == 0
    lam_val = sp.solve(sp.Eq(sum(sol_h), 0), lam)[0]
    mean_log = sum(sp.log(wk) for wk in w) / 3
    for wk, sk in zip(w, sol_h, strict=True):
        val = sp.expand_log(sk.subs(lam, lam_val), force=True)
        assert sp.simplify(val - (mean_log - sp.log(wk))) == 0


@property_settings()
@given(
    sizes=st.one_of(
        ds.long_tailed_sizes(min_classes=3, max_classes=4, max_size=10),
        ds.sizes_with_near_singletons(min_classes=3, max_classes=4, max_size=10),
    ),
    tau=st.sampled_from([0.05, 0.08, 0.1]),
)
def test_property_first_order_within_tau_squared(sizes, tau):
    """|G_opt - G_first_order| <= 2 tau^2 (G_opt from an independent minimiser)."""
    K = len(sizes)
    G_own = ref.supcon_prototype_optimum(sizes, tau)
    G_fo = first_order_gram(sizes, tau=tau)
    G_pkg = supcon_prototypes(sizes, tau=tau, method="numeric").gram
    assert np.abs(G_own - G_pkg).max() <= 1e-6
    assert np.abs(G_own - G_fo).max() <= 2.0 * tau**2
    # the correction is first order: the simplex alone is off by order tau when imbalanced
    n = np.asarray(sizes, float)
    logw = np.log(np.outer(n, n) * (1 / (n[:, None] - 1) + 1 / (n[None, :] - 1)))
    iu = np.triu_indices(K, 1)
    spread = float(np.abs(logw[iu] - logw[iu].mean()).max())
    S = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(S, 1.0)
    assert abs(np.abs(G_own - S).max() - tau * spread) <= 2.0 * tau**2


@property_settings()
@given(sizes=ds.balanced_sizes(), tau=ds.temperatures(0.02, 1.0))
def test_property_balanced_simplex(sizes, tau):
    """Balanced classes: the first-order Gram is the regular simplex exactly."""
    K = len(sizes)
    S = np.full((K, K), -1.0 / (K - 1))
    np.fill_diagonal(S, 1.0)
    assert np.abs(first_order_gram(sizes, tau=tau) - S).max() <= 1e-12
