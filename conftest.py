"""Test configuration shared by tests/ and proofs/: the hypothesis profiles.

The profile is chosen by ``HYPOTHESIS_PROFILE`` and is ``default`` when it is unset, whatever
the environment (CI or not), so the README test line gives the same result everywhere:

- ``default``: derandomized (a fixed, reproducible set of examples), no example database,
  100 examples for a test that does not set its own count;
- ``thorough``: the same, with 1000 examples for a test that does not set its own count (the
  proofs, and tests whose count is written relative to the profile's);
- ``explore``: random examples, a new set each run, to look for new counterexamples (a
  failure prints the ``@reproduce_failure`` blob that replays it).

Every profile has no deadline: the CPUs are shared, so one example's time says nothing. With no
deadline hypothesis allows 30 s of input generation before ``HealthCheck.too_slow``, so no
health check is suppressed here; a test that needs one suppressed says so itself.
"""

import os

from hypothesis import settings

_COMMON = {"database": None, "deadline": None, "print_blob": True}
settings.register_profile("default", derandomize=True, max_examples=100, **_COMMON)
settings.register_profile("thorough", derandomize=True, max_examples=1000, **_COMMON)
settings.register_profile("explore", derandomize=False, max_examples=100, **_COMMON)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))
