"""Shared pytest configuration.

Hypothesis settings profiles, selected by the ``HYPOTHESIS_PROFILE`` environment
variable (DEVELOPERS.md, "Property tests"):

* ``ci`` (default): few examples per property, so the property suite
  (``tests/test_properties.py``, which also derandomises itself under this profile)
  stays within about 30 s and CI runs are reproducible;
* ``soak``: many examples and fresh randomness, for a long local run
  (``HYPOTHESIS_PROFILE=soak python -m pytest tests/test_properties.py``).

Tests that pin their own ``max_examples`` keep it under both profiles.
"""

import os

from hypothesis import HealthCheck, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large]

settings.register_profile("ci", max_examples=15, deadline=None, suppress_health_check=_SLOW_OK,
                          print_blob=True)
settings.register_profile("soak", max_examples=300, deadline=None, suppress_health_check=_SLOW_OK,
                          print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
