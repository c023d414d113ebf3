"""Test configuration shared by tests/ and proofs/.

Hypothesis is derandomized by default, so the README test line gives the same result in every
environment (CI or not). ``HYPOTHESIS_PROFILE=explore`` opts in to random exploration.
"""

import os

from hypothesis import HealthCheck, settings

_COMMON = {
    "deadline": None,
    "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow],
}
settings.register_profile("default", derandomize=True, database=None, **_COMMON)
settings.register_profile("explore", derandomize=False, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
