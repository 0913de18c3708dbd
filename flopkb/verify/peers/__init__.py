"""Peer libraries, loaded only when a combination asks for them; never bundled or copied.

Each loader returns the peer's entry points or raises `PeerUnavailable` with one line saying what
is missing (not installed, no source to build from, a failed build), which the runner records as
`not-run` for that combination.
"""

from __future__ import annotations

from importlib import metadata


def version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"
