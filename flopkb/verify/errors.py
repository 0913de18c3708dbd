"""The errors an experiment raises, torch-free: hook modules import them at module level without
importing the run (`flopkb.verify.context`)."""

from __future__ import annotations


class ExperimentError(RuntimeError):
    """The experiment cannot give a verdict (wrong kernel, impossible timing, missing feature)."""


class TimeLimitError(ExperimentError):
    pass


class PeerUnavailable(RuntimeError):
    """A peer implementation is not installed or fails to build: that combination is recorded
    as `not-run` with this one-line reason, never silently skipped."""
