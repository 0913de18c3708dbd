"""Independent rounds of one measurement, merged into what the experiment's `judge` reads.

Torch-free, so `flopkb validate` merges the rounds an evidence record stores exactly as `verify`
did. The rule (docs/verify.md, "Rounds"): the merged value of a number is the median over the
rounds; the lower edge of a band (`low`, `*_low`, `*_p10`, `p10_*`) is the minimum over the
rounds and the upper edge (`high`, `*_high`, `*_p90`, `p90_*`) the maximum, so a merged interval
covers the spread between rounds as well as within each. A flag set in any round holds (a point
launch-bound in one round is never read); a text takes the value most rounds gave.

Sweep rows are matched by position when every round measured the same points (the usual case),
else by their leading whole-number and text columns (the swept axes).
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Sequence
from typing import Any

# Rounds per claim point. docs/verify.md ("Rounds") says why three, from the committed H200 runs.
ROUNDS = 3


def _edge(key: str) -> str | None:
    """'low' / 'high' when `key` names an edge of a band, else None."""
    if key == "low" or key.endswith(("_low", "_p10")) or key.startswith("p10_"):
        return "low"
    if key == "high" or key.endswith(("_high", "_p90")) or key.startswith("p90_"):
        return "high"
    return None


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _merge_values(values: list[Any], edge: str | None) -> Any:
    return _merge_present([v for v in values if v is not None], len(values), edge)


def _merge_present(present: list[Any], rounds: int, edge: str | None) -> Any:
    """Merge the values `rounds` rounds gave (`present`: the ones not missing, in round order)."""
    if not present:
        return None
    if edge is not None and len(present) < rounds:
        # an open edge in one round stays open: the merged band must cover that round
        return None
    if all(isinstance(v, dict) for v in present):
        return merge_data(present)
    if all(isinstance(v, list) for v in present):
        return _merge_lists(present)
    if all(isinstance(v, bool) for v in present):
        return any(present)
    if all(_number(v) for v in present):
        if all(v == present[0] for v in present):
            return present[0]
        if edge == "low":
            return min(present)
        if edge == "high":
            return max(present)
        return statistics.median(present)
    texts = Counter(str(v) for v in present)
    best = max(texts.values())
    return next(v for v in present if texts[str(v)] == best)


def merge_data(rounds: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Merge the same dict from several rounds key by key (keys any round has, in the order they
    first appear). One pass over the rounds: a record whose rounds each carry other keys (a
    hostile one) costs their total size, not keys x rounds."""
    present: dict[str, list[Any]] = {}
    for d in rounds:
        for k, v in d.items():
            column = present.setdefault(k, [])
            if v is not None:
                column.append(v)
    return {k: _merge_present(vals, len(rounds), _edge(k)) for k, vals in present.items()}


def _identity(row: Any) -> tuple:
    """A sweep row's swept axes: its leading whole-number and text columns."""
    if not isinstance(row, dict):
        return (repr(row),)
    out = []
    for key, value in row.items():
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            break
        out.append((key, value))
    return tuple(out)


def _merge_lists(lists: list[list[Any]]) -> list[Any]:
    if all(len(x) == len(lists[0]) for x in lists):
        return [_merge_values(list(items), None) for items in zip(*lists, strict=True)]
    order: list[tuple] = []
    groups: dict[tuple, list[Any]] = {}
    for rows in lists:
        for row in rows:
            key = _identity(row)
            if key not in groups:
                order.append(key)
            groups.setdefault(key, []).append(row)
    return [_merge_values(groups[key], None) for key in order]


def merge_rounds(rounds: Sequence[dict[str, Any]]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(data, sweep) of several rounds' `{"data", "sweep"}`, merged by the module's rule."""
    if not rounds:
        raise ValueError("expected at least one round, got none")
    data = merge_data([r.get("data") or {} for r in rounds])
    sweep = _merge_lists([list(r.get("sweep") or []) for r in rounds])
    return data, sweep
