"""The two exceptions an experiment's code raises, in a module of their own that imports nothing.

Code under a KB's kernels/ (an op's `bench.py`, the serving layers) raises these without importing
the run machinery; `flopkb.verify.context` re-exports both, so either import works.
"""

from __future__ import annotations


class ExperimentError(RuntimeError):
    """The experiment cannot give a verdict (wrong kernel, impossible timing, missing feature)."""


class PeerUnavailable(RuntimeError):
    """A peer implementation is not installed or fails to build: that combination is recorded
    as `not-run` with this one-line reason, never silently skipped."""
