"""Rule codes of the loading and structure stage (FKB1xx).

They are plain data here so that the loader does not import the check machinery (which imports the
knowledge base, which imports the loader); `flopkb.check.structure` registers them in `RULES`.
"""

from __future__ import annotations

from flopkb import budget
from flopkb.findings import Finding, Severity

E, W, I = Severity.error, Severity.warning, Severity.info

LOAD_RULES: dict[str, tuple[Severity, str]] = {
    "FKB101": (E, "the file cannot be read (I/O error)"),
    "FKB102": (E, "the file is larger than the size limit (default 1 MiB)"),
    "FKB103": (E, "the file is not valid UTF-8 (located at the first bad byte)"),
    "FKB104": (E, "the file holds a NUL byte or another control character YAML forbids"),
    "FKB105": (E, "YAML syntax error, or more than one document in the file"),
    "FKB106": (E, "a mapping key appears twice (PyYAML would silently keep the last one)"),
    "FKB107": (E, "anchors and aliases are refused (never expanded: no billion laughs)"),
    "FKB108": (E, "a tag outside the YAML core schema (e.g. `!!python/...`); never constructed"),
    "FKB109": (E, "nesting deeper than the limit (default 64 levels)"),
    "FKB110": (E, "the file is empty: a record is a YAML mapping"),
    "FKB111": (E, "the top level is not a mapping"),
    "FKB112": (E, "a mapping key is not a plain scalar"),
    "FKB113": (E, "a non-finite number (.nan, .inf) where only finite figures make sense"),
    "FKB114": (E, f"a number longer than the limit ({budget.MAX_NUMBER_CHARS} characters)"),
    "FKB115": (
        E,
        f"a mapping or list longer than the limit ({budget.MAX_KEYS} keys, "
        f"{budget.MAX_ITEMS} items)",
    ),
    "FKB116": (
        I,
        f"more findings in one file than the limit ({budget.MAX_FINDINGS_PER_FILE}): "
        "the rest are counted, not shown",
    ),
    "FKB117": (E, "a text field is blank (empty or whitespace only)"),
    "FKB118": (
        E,
        "a text value holds a control character (NUL, ESC, DEL, C1; in a one-line field also "
        "tab, CR or LF), written with a YAML escape",
    ),
    "FKB119": (W, "a text value holds a bidirectional control (U+202E, ...): it reorders the text"),
    "FKB120": (E, "`kind` is missing or not one of the record kinds"),
    "FKB121": (E, "a value has the wrong type or form (schema violation)"),
    "FKB122": (E, "an unknown field (with a did-you-mean hint)"),
    "FKB123": (E, "a required field is missing"),
    "FKB124": (E, "an id that does not match ^[a-z0-9][a-z0-9_-]*$ (no `/`, no `..`)"),
    "FKB125": (E, "the record id differs from its file stem"),
    "FKB126": (W, "the record is not in the folder of its kind (records/classes, ...)"),
    "FKB127": (E, "two files define the same record id"),
    "FKB128": (E, "schema_version is not one the validator accepts"),
    "FKB129": (
        E,
        "a schema_version 1 class record carries `flop.hardware_parameters` (added in 2)",
    ),
    # The filesystem walk (flopkb/load/walk.py, safefile.py): located at the entry itself.
    "FKB130": (E, "a FIFO, device or socket where a record file should be; never opened"),
    "FKB131": (E, "a symlink that resolves outside the KB root, dangles or loops; never followed"),
    "FKB132": (E, "a folder that cannot be listed (permissions, I/O); its records go unchecked"),
    "FKB133": (E, "the walk passed its bound (entries: nothing read; depth: folder not walked)"),
    "FKB134": (W, "a symlink to a folder inside the KB; not followed (its files are not walked)"),
    "FKB199": (
        E,
        "internal error loading or checking a record (a bug in flopkb, not in the records); "
        "reported for that record, the others are still checked",
    ),
}


def load_finding(
    code: str,
    file: str,
    line: int,
    column: int,
    record: str | None,
    message: str,
    hint: str | None = None,
) -> Finding:
    """A finding of the loading stage; `line`/`column` 1-based, 0 for the whole file."""
    return Finding(code, LOAD_RULES[code][0], file, line, column, record, message, hint)
