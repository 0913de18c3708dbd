"""What to type when an optional extra is missing: a pip command that works however flopkb was
installed (from a clone, from a git URL), because no package index carries flopkb.

The hint installs the extra's own requirements, read from flopkb's installed metadata, rather
than `pip install 'flopkb[kernels]'` (which asks an index for flopkb and fails).
"""

from __future__ import annotations

import re
from importlib import metadata

# `torch>=2.4; extra == 'kernels'` (quotes of either kind, spaces as pip writes them)
_EXTRA_MARKER = re.compile(r"""^(?P<req>[^;]+);\s*extra\s*==\s*["'](?P<extra>[\w.-]+)["']\s*$""")


def extra_requirements(extra: str, requires: list[str] | None = None) -> list[str]:
    """The requirements flopkb's metadata lists for `extra` (`requires`: the metadata's
    Requires-Dist lines, read from the installed distribution when not given)."""
    if requires is None:
        try:
            requires = metadata.requires("flopkb") or []
        except metadata.PackageNotFoundError:
            requires = []
    out = []
    for line in requires:
        match = _EXTRA_MARKER.match(line.strip())
        if match and match["extra"] == extra:
            out.append(match["req"].strip())
    return out


def install_hint(extra: str, requires: list[str] | None = None) -> str:
    """`pip install 'torch>=2.4' ...` for `extra`; from a clone, `pip install -e '.[extra]'`."""
    reqs = extra_requirements(extra, requires)
    if not reqs:
        return f"in the flopkb clone: pip install -e '.[{extra}]'"
    return "pip install " + " ".join(f"'{r}'" for r in reqs)
