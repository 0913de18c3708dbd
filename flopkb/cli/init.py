"""`flopkb init [DIR]`: scaffold a new KB (see flopkb.scaffold); existing files are kept."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer

from flopkb.cli.common import FormatOption, OutputFormat, console, emit_json, failing_on
from flopkb.plural import count
from flopkb.scaffold import InitError, init_kb


def init(
    directory: Annotated[
        Path, typer.Argument(metavar="DIR", help="the new KB's folder (default: this one)")
    ] = Path("."),
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """A new KB: records/ with a folder per kind, the bundled quantities (copied, so
    `quantity: hbm_bandwidth` resolves), a sourced example accelerator, an example class,
    flopkb.toml and the JSON Schema. A file that exists is kept, never replaced."""
    with failing_on(InitError):
        result = init_kb(directory)
    if fmt is OutputFormat.json:
        return emit_json(result.as_dict())
    data = result.as_dict()
    for name in data["written"]:
        console.print(f"wrote {name}", markup=False, highlight=False)
    for name in data["kept"]:
        console.print(
            f"kept {name} (it, or a record of its id, exists: not written)",
            markup=False, highlight=False,
        )  # fmt: skip
    # a command the user can paste, whatever the folder's name
    where = "" if directory == Path(".") else f"cd {shlex.quote(str(directory))} && "
    console.print(
        f"{count(len(result.written), 'file')} written, {len(result.kept)} kept in "
        f"{directory}; next: {where}flopkb validate",
        markup=False, highlight=False,
    )  # fmt: skip
