"""The positive-pair rates and their certificate: the anchor rate against exact integer
arithmetic (at sizes where the former difference of log-gammas lost five digits), the
certificate's two-sided check of the anchor rate against the batch rate, computed independently,
and what a map of verdicts (``PhaseMap``) says of certificates."""

from __future__ import annotations

import dataclasses
import json
import math
from fractions import Fraction

import numpy as np
import pytest

import dgp
from dgp.prototypes import positive_pair_rates
from dgp.prototypes._rates import rates_certificate
from dgp.solver import BatchSpec


def _exact_anchor_rate(N: int, n: int, B: int) -> float:
    """``1 - C(N - n, B - 1) / C(N - 1, B - 1)`` in integers, rounded once."""
    if N - n < B - 1:
        return 1.0
    return float(1 - Fraction(math.comb(N - n, B - 1), math.comb(N - 1, B - 1)))


@pytest.mark.parametrize(("sizes", "B"), [([500, 50, 5], 64), ([7, 3, 2], 5),
                                          ([10**7, 3, 2], 4096), ([10**6, 40, 2], 1000)])
def test_uniform_anchor_rate_is_exact_to_rounding(sizes, B):
    """Against exact integer arithmetic: within 1e-10 relative (the log-gamma difference was
    off by 5e-5 for the class of 2 at N = 10^7, B = 4096)."""
    r = positive_pair_rates(sizes, batch_size=B)
    N = sum(sizes)
    exact = [_exact_anchor_rate(N, n, B) for n in sizes]
    np.testing.assert_allclose(r.anchor_rate, exact, rtol=1e-10, atol=0)


def _exact_batch_rate(N: int, n: int, B: int) -> float:
    """``P(X >= 2)`` of a hypergeometric draw of ``B`` from ``N`` holding ``n``, in integers."""
    total = math.comb(N, B)
    none_or_one = math.comb(N - n, B) + n * math.comb(N - n, B - 1)
    return float(Fraction(total - none_or_one, total))


@pytest.mark.parametrize(("sizes", "B"), [([500, 50, 5], 64), ([7, 3, 2], 5), ([3, 3], 6),
                                          ([10**7, 3, 2], 4096), ([10**8, 2, 2], 512)])
def test_uniform_batch_rate_is_exact_to_rounding(sizes, B):
    """``P(X_k >= 2)`` against exact integer arithmetic, within 1e-9 relative: the class of 2
    in 10^8 samples keeps its B(B - 1) / N(N - 1) (``1 - pmf(0) - pmf(1)`` of scipy's
    hypergeometric, which the rates used, was off by a factor of 6 there)."""
    r = positive_pair_rates(sizes, batch_size=B)
    N = sum(sizes)
    exact = [_exact_batch_rate(N, n, B) for n in sizes]
    np.testing.assert_allclose(r.batch_rate, exact, rtol=1e-9, atol=0)
    assert r.certificate.check() == ()


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("sampler", ["uniform", "class-balanced", "m-per-class"])
def test_certificate_holds_for_every_sampler(seed, sampler):
    rng = np.random.default_rng(seed)
    K = int(rng.integers(2, 9))
    sizes = rng.integers(2, 60, size=K).tolist()
    m = 2 if sampler == "m-per-class" else None
    B = 2 * int(rng.integers(1, K)) + (0 if m else 1)  # m-per-class: 1 to K - 1 classes of 2
    B = max(B, 4 if m else 3)
    r = positive_pair_rates(sizes, batch_size=B, sampler=sampler, samples_per_class=m)
    c = r.certificate
    assert c.check() == () and c.lower_slack >= -c.atol and c.upper_slack >= -c.atol
    d = json.loads(json.dumps(r.to_dict()))
    assert list(d["certificate"])[:3] == ["kind", "statement", "certified"]
    assert d["certificate"]["kind"] == "exact" and d["certificate"]["certified"] is True
    if sampler != "uniform":  # the uniform rates beside them carry their own
        assert d["uniform"]["certificate"]["certified"] is True


def test_a_class_of_two_meets_the_lower_bound_exactly():
    """A class of 2 in a batch holds 0, 1 or 2 of its samples: E[X 1{X >= 2}] = 2 P(X = 2),
    so the lower slack is zero to rounding; the upper one is not."""
    c = positive_pair_rates([30, 2], batch_size=8).certificate
    assert abs(c.lower_slack) <= c.atol and c.upper_slack > 0.01


@pytest.mark.parametrize("corrupt", ["batch", "anchor", "per"])
def test_certificate_refuses_rates_that_disagree(corrupt):
    """A rate off by 1% (or expected anchors that do not sum to the batch) fails the check:
    the certificate compares computations, it does not restate them."""
    n = np.array([30, 2])
    spec = BatchSpec(8, "uniform", None, "mean", "drop")
    r = positive_pair_rates(n, batch_size=8)
    anchor, batch, per = r.anchor_rate.copy(), r.batch_rate.copy(), r.anchors_per_batch.copy()
    if corrupt == "batch":
        batch[1] *= 1.01
    elif corrupt == "anchor":
        anchor[1] *= 0.99
    else:
        per[0] += 0.5
    cert = rates_certificate(spec, anchor, batch, per)
    assert cert.check() and not cert.to_dict()["certified"]
    assert rates_certificate(spec, r.anchor_rate, r.batch_rate, r.anchors_per_batch).check() == ()
    assert dataclasses.replace(r, certificate=cert).to_dict()["certificate"]["certified"] is False


def test_prototypes_with_batches_carry_the_rates_certificate():
    p = dgp.supcon_prototypes([6, 3, 2], tau=0.5, batch_size=5)
    d = p.to_dict()["positive_pairs"]
    assert d["certificate"]["certified"] is True and d["certificate"]["kind"] == "exact"
    assert dgp.supcon_prototypes([6, 3, 2], tau=0.5).to_dict()["positive_pairs"] is None


def test_phase_map_says_it_has_no_certificate_of_its_own():
    """A map's cells keep their verdicts, not their certificates: the map's ``certificate`` is
    None (its JSON has none: tests/test_result_blocks.py), and a cell's verdict is what
    dgp.classify certifies at the cell's parameters."""
    labels = [0, 0, 0, 1, 1, 2, 2]
    pm = dgp.phase("supcon", labels, grid={"tau": [0.2, 1.0]}, dim=2)
    assert pm.certificate is None
    d = pm.to_dict()
    assert "certificate" not in d
    for cell in pm.cells:
        res = dgp.classify_objective("supcon", labels, tau=cell["tau"], dim=2)
        assert res.verdict == cell["verdict"]
        block = res.to_dict()["certificate"]
        assert {"kind", "statement", "certified"} <= set(block)


def test_certificate_reports_the_log_gamma_fallback_losing_digits(monkeypatch):
    """Beyond the direct sums' budget the rates come from differences of log-gammas, which lose
    digits at N = 10^7 (5e-5 of a class of 2's anchor rate) that both rates share, so the
    two-sided check need not see them: the certificate is then not certified (``summed``
    false), not widened; within the budget the same rates certify."""
    import dgp.solver._pair_rates as rates

    sizes = [10**7, 3, 2]
    assert positive_pair_rates(sizes, batch_size=4096).certificate.check() == ()
    monkeypatch.setattr(rates, "DIRECT_SUM_MAX_TERMS", 10)
    r = positive_pair_rates(sizes, batch_size=4096)
    assert not r.certificate.summed and r.to_dict()["certificate"]["certified"] is False
    exact = _exact_anchor_rate(sum(sizes), 2, 4096)
    # beyond the sums: scipy's hypergeometric tails (not our products, so not certified), to
    # within 1e-6 of the exact rate where differences of log-gammas lost 5e-5 of it
    assert abs(r.anchor_rate[2] / exact - 1) < 1e-6
