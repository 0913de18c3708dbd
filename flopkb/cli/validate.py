"""`flopkb validate [PATHS]`: parse options, call `flopkb.validate`, print, exit 0/1/2."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from flopkb.cli.common import fail as _fail
from flopkb.cli.common import kb_root
from flopkb.load import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, Limits
from flopkb.report import FORMATTERS
from flopkb.validate import ValidationInputError
from flopkb.validate import validate as validate_paths

# One choice per formatter, so a new format needs one edit (in flopkb/report.py).
ValidateFormat = Enum("ValidateFormat", {name: name for name in FORMATTERS}, type=str)


def validate(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(
            help="KB roots, records folders or record files; default: the KB (see --kb)"
        ),
    ] = None,
    fmt: Annotated[
        ValidateFormat,
        typer.Option(
            "--format", "-f", help="text for people, json for scripts, github for CI annotations"
        ),
    ] = ValidateFormat.text,
    strict: Annotated[bool, typer.Option("--strict", help="warnings fail too (exit 1)")] = False,
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", min=1, help="size limit per file")
    ] = DEFAULT_MAX_BYTES,
    max_depth: Annotated[
        int, typer.Option("--max-depth", min=1, help="nesting limit")
    ] = DEFAULT_MAX_DEPTH,
) -> None:
    """Check records: structure, references, provenance. Exit 0 clean, 1 findings, 2 usage."""
    targets = list(paths) if paths else [kb_root(ctx)]
    try:
        result = validate_paths(
            targets, strict=strict, limits=Limits(max_bytes=max_bytes, max_depth=max_depth)
        )
    except ValidationInputError as exc:
        _fail(str(exc))
    sys.stdout.write(FORMATTERS[fmt.value](result))
    raise typer.Exit(result.exit_code)
