"""Plain values -> pydantic records; every ValidationError becomes a finding at its YAML node.

The model is chosen by `kind` first (so errors speak about one kind, not a union of all of them).
Unknown fields get a did-you-mean hint from the fields the model allows at that place.
"""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from flopkb import budget
from flopkb.findings import Finding
from flopkb.load.locate import Locator
from flopkb.load.salvage import salvage
from flopkb.load.yamlfile import Document, Limits, compose_node
from flopkb.model import MODEL_BY_KIND, Kind, RecordBase
from flopkb.rules import finding_of

_KINDS = [k.value for k in Kind]
_MAX_SHOWN = 60
# The pattern of `flopkb.model.base.Text`: a blank text field is FKB117, not a generic FKB121.
_BLANK_PATTERN = r"\S"


def dotted(loc: tuple[str | int, ...]) -> str:
    """`("flop", "hardware_parameters", 0, "effect")` -> `flop.hardware_parameters[0].effect`.

    A key longer than `_MAX_SHOWN` characters is cut: a message never echoes a megabyte of key.
    """
    out = ""
    for part in loc:
        if isinstance(part, str) and len(part) > _MAX_SHOWN:
            part = part[: _MAX_SHOWN - 3] + "..."
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(record)"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model inside `list[M]`, `dict[str, M]`, `M | None`, `Annotated[M, ...]`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = get_origin(annotation)
    if origin in (list, dict, Union, types.UnionType, typing.Annotated, tuple, set, frozenset):
        for arg in get_args(annotation):
            if (found := _model_in(arg)) is not None:
                return found
    return None


def fields_at(model: type[BaseModel], loc: tuple[str | int, ...]) -> list[str]:
    """The field names the model allows at `loc` (empty when `loc` leaves the models)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None:
            return []
        if isinstance(part, int) or part not in current.model_fields:
            # list indexes and dict keys stay inside the same annotation's model
            continue
        current = _model_in(current.model_fields[part].annotation)
    return sorted(current.model_fields) if current is not None else []


def to_record(
    doc: Document, stem: str, limits: Limits | None = None
) -> tuple[RecordBase | None, list[Finding]]:
    """Validate `doc.data` against the model of its kind; findings carry file:line:col.

    With structural findings, the record returned (if any) is what parsed (see `salvage`).

    A document read by a worker process comes without its node tree; it is composed again here
    only when there is something to locate.
    """
    data = doc.data
    assert data is not None
    if doc.node is None:
        try:
            record = MODEL_BY_KIND[Kind(data.get("kind"))].model_validate(data)
        except (ValueError, KeyError):
            doc.node = compose_node(doc.path, limits or Limits())
        else:
            return record, []
    record_id = data.get("id") if isinstance(data.get("id"), str) else stem
    findings: list[Finding] = []
    locator = Locator(doc.node)

    def add(code: str, loc: tuple[str | int, ...], message: str, hint: str | None = None) -> None:
        line, column = locator.locate(loc)
        findings.append(finding_of(code, doc.display, line, column, record_id, message, hint))

    kind = data.get("kind")
    if kind not in _KINDS:
        close = difflib.get_close_matches(str(kind), _KINDS, n=1) if isinstance(kind, str) else []
        hint = f"did you mean {close[0]!r}?" if close else None
        if "kind" not in data:
            add("FKB120", (), f"missing `kind`; expected one of {', '.join(_KINDS)}", hint)
        else:
            add(
                "FKB120",
                ("kind",),
                f"unknown kind {_shown(kind)}; expected one of {', '.join(_KINDS)}",
                hint,
            )
        return None, findings
    model = MODEL_BY_KIND[Kind(kind)]
    try:
        return model.model_validate(data), findings
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        # pydantic reports every bad item of a 250,000-item list; show the first ones, count the
        # rest (validate caps findings per file anyway: this saves locating what it would cut)
        for err in errors[: budget.MAX_FINDINGS_PER_FILE]:
            findings.append(_finding(doc, locator, record_id, model, err))
        if len(errors) > budget.MAX_FINDINGS_PER_FILE:
            cut = len(errors) - budget.MAX_FINDINGS_PER_FILE
            # located at the first finding not shown: "from here on"
            add(
                "FKB116", tuple(errors[budget.MAX_FINDINGS_PER_FILE]["loc"]),
                f"{cut} more schema findings in this file not shown "
                f"(at most {budget.MAX_FINDINGS_PER_FILE} per file)",
                "fix the ones shown and run again",
            )  # fmt: skip
        # the parts that parsed are still checked (references, provenance) in this run
        return salvage(model, data, exc), findings  # type: ignore[return-value]


def _finding(
    doc: Document, locator: Locator, record_id: str, model: type[BaseModel], err: Any
) -> Finding:
    loc: tuple[str | int, ...] = tuple(err["loc"])
    kind: str = err["type"]
    where = dotted(loc)
    hint = None
    if "[key]" in loc:
        cut = loc.index("[key]")
        parent, key = loc[: cut - 1], loc[cut - 1]
        line, column = locator.locate_key(parent, str(key))
        code, message = "FKB121", f"{dotted(parent)}: key {_shown(key)}: {err['msg']}"
    else:
        line, column = locator.locate(loc)
        if kind == "string_pattern_mismatch" and (err.get("ctx") or {}).get(
            "pattern"
        ) == _BLANK_PATTERN:
            code, message = "FKB117", f"{where}: blank text (got {_shown(err['input'])})"
            hint = "write the text, or drop the field where it is optional"
        elif kind == "extra_forbidden":
            allowed = fields_at(model, loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), allowed, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}?" if close else f"allowed: {', '.join(allowed)}"
            code, message = "FKB122", f"{where}: unknown field {_shown(str(loc[-1]))}"
        elif kind == "missing":
            code, message = "FKB123", f"{where}: required field missing"
        elif loc and loc[-1] == "id" and kind == "string_pattern_mismatch":
            code = "FKB124"
            message = f"{where}: {_shown(err['input'])} is not a valid id"
            hint = "ids match ^[a-z0-9][a-z0-9_-]*$: lowercase, digits, '-' and '_'; no '/' or '..'"
        else:
            code, message = "FKB121", f"{where}: {err['msg']} (got {_shown(err['input'])})"
    return finding_of(code, doc.display, line, column, record_id, message, hint)
