"""Hypothesis profiles: `ci` (default, fast) and `deep` (HYPOTHESIS_PROFILE=deep, long runs)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_QUIET = [HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
settings.register_profile("ci", max_examples=50, deadline=None, suppress_health_check=_QUIET)
settings.register_profile("deep", max_examples=2_000, deadline=None, suppress_health_check=_QUIET)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))
