"""`flopkb schema export [--check]`: write (or compare) the JSON Schema files in `schema/`."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from flopkb.cli.common import (
    FollowSymlinksOption,
    ForceOption,
    FormatOption,
    OutputFormat,
    console,
    emit_json,
    kb_root,
    plain,
    safe_writes,
    write_policy,
)
from flopkb.cli.help import example
from flopkb.schema_export import drift, export

app = typer.Typer(
    help="the published JSON Schema of records", no_args_is_help=True, rich_markup_mode=None
)


@app.command("export", epilog=example("flopkb schema export --check"))
def export_cmd(
    ctx: typer.Context,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="folder to write; default: the KB's schema/")
    ] = None,
    check: Annotated[
        bool,
        typer.Option("--check", help="write nothing; exit 1 when the files differ from the models"),
    ] = False,
    force: ForceOption = False,
    follow_symlinks: FollowSymlinksOption = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Generate schema/*.schema.json (draft 2020-12) from the pydantic models."""
    folder = out or kb_root(ctx) / "schema"
    if check:
        stale = drift(folder)
        if fmt is OutputFormat.json:
            emit_json({"folder": str(folder), "stale": stale, "ok": not stale})
        elif stale:
            console.print(plain(f"stale schema files in {folder}: {', '.join(stale)}"))
            console.print("run `flopkb schema export --force` and commit the result", markup=False)
        else:
            console.print(plain(f"{folder}: up to date"))
        raise typer.Exit(1 if stale else 0)
    with safe_writes(write_policy(ctx, force, follow_symlinks)):
        written = export(folder)
    if fmt is OutputFormat.json:
        emit_json({"folder": str(folder), "written": [str(p) for p in written]})
    else:
        for path in written:
            console.print(plain(f"wrote {path}"))
