"""One verdict for a paired difference of expected batch losses (the full-batch prediction's
minus the batch prediction's), shared by ``dgp.optimum``'s and ``dgp.supcon_prototypes``'
summaries: beyond noise or not, and, below the loss resolution that training resolves, said to
be of no consequence for a trained run (a referee's D5: "+4.7e-06 ± 1.7e-07 ... batching
changes the loss beyond noise" led a summary, 100 times under that resolution)."""

from __future__ import annotations

import pytest

from dgp.constants import LOSS_RESOLUTION
from dgp.solver import paired_loss_verdict


@pytest.mark.parametrize("excess, half, beyond, consequence", [
    (0.01, 0.001, "batching changes the loss", True),
    (4.7e-6, 3.3e-7, "batching changes the loss", False),
    (-0.01, 0.001, "the full-batch prediction does better", True),
    (-2e-4, 1e-5, "the full-batch prediction does better", False),
    (1e-3, 2e-3, None, None),
    (-1e-3, 2e-3, None, None),
])
def test_the_verdict_of_a_paired_difference(excess, half, beyond, consequence):
    said = paired_loss_verdict(excess, half)
    if beyond is None:
        assert said == "no difference beyond noise"
        return
    assert said.startswith(beyond) and "beyond noise" in said
    assert ("cannot tell the two apart" in said) == (not consequence)


def test_the_resolution_is_the_boundary_and_the_sign_does_not_matter():
    below, above = LOSS_RESOLUTION * (1 - 1e-9), LOSS_RESOLUTION * (1 + 1e-9)
    for sign in (1, -1):
        assert "cannot tell" in paired_loss_verdict(sign * below, 0.0)
        assert "cannot tell" not in paired_loss_verdict(sign * above, 0.0)
