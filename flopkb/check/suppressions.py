"""Registers FKB701 (an unused inline suppression); `flopkb.suppression` reports it."""

from __future__ import annotations

from flopkb.check.base import rule
from flopkb.findings import Severity
from flopkb.suppression import UNUSED, UNUSED_SUMMARY

FKB701 = rule(UNUSED, Severity.warning, UNUSED_SUMMARY)
