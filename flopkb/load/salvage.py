"""The parts of a record that parsed, so a structural error hides none of the record's other
findings (references, provenance) in the same run.

A record that fails its model is pruned and validated again (a few rounds at most): an unknown
field or a bad optional value is dropped, a list item with an error (a claim row with a bad
`basis`, say) is dropped whole, a missing or bad required field drops its container. A record
whose own required fields (id, kind, prose, ...) are broken cannot be salvaged; `title` and
`history` get placeholders, as no check reads them. The structural findings are reported as
before; the salvaged record only lets the other checks see what is left.
"""

from __future__ import annotations

import copy
from typing import Any

from pydantic import BaseModel, ValidationError

# metadata no check reads: a placeholder keeps the rest of the record checkable
_PLACEHOLDERS: dict[str, Any] = {
    "title": "(invalid title)",
    "history": [{"date": "1970-01-01", "by": "-", "note": "-"}],
}
_ROUNDS = 6


def _existing(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...]:
    """The longest prefix of `loc` that names a value in `data` (pydantic adds union tags)."""
    path: list[Any] = []
    node = data
    for part in loc:
        in_dict = isinstance(node, dict) and part in node
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if not (in_dict or in_list):
            break
        node = node[part]
        path.append(part)
    return tuple(path)


def _prune_path(data: Any, err: dict[str, Any]) -> tuple[Any, ...]:
    """What to remove for one error: the outermost list item holding it (a claim row goes
    whole: a row without its bad `source` would be reported as a cited row with no source),
    else the field itself (a missing field: its container)."""
    loc = _existing(data, tuple(err["loc"]))
    for i, part in enumerate(loc):
        if isinstance(part, int):
            return loc[: i + 1]
    return loc


def _remove(data: dict[str, Any], path: tuple[Any, ...]) -> bool:
    """Remove `path` from `data` (a top-level required field becomes a placeholder or fails)."""
    if not path:
        return False
    if len(path) == 1 and path[0] in _PLACEHOLDERS:
        data[path[0]] = copy.deepcopy(_PLACEHOLDERS[path[0]])
        return True
    parent: Any = data
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if isinstance(parent, list) and isinstance(last, int) and last < len(parent):
        parent[last] = _DROPPED
        return True
    if isinstance(parent, dict) and last in parent:
        del parent[last]
        return True
    return False


class _Dropped:
    """Marks a removed list item until the round ends (indexes of other errors stay valid)."""


_DROPPED = _Dropped()


def _compact(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _compact(v) for k, v in node.items()}
    if isinstance(node, list):
        return [_compact(v) for v in node if v is not _DROPPED]
    return node


def salvage(
    model: type[BaseModel], data: dict[str, Any], error: ValidationError
) -> BaseModel | None:
    """A record of `model` built from what parsed in `data`, or None when too little did."""
    current = copy.deepcopy(data)
    for _ in range(_ROUNDS):
        paths = {_prune_path(current, e) for e in error.errors(include_url=False)}
        # a field the model cannot do without (id, kind, prose, ...): nothing to salvage
        if not all(_remove(current, p) for p in sorted(paths, key=len, reverse=True)):
            return None
        current = _compact(current)
        try:
            return model.model_validate(current)
        except ValidationError as again:
            error = again
    return None
