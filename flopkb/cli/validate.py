"""`flopkb validate [PATHS]`: parse options, call `flopkb.validate`, print, exit 0/1/2.

Settings come from the config found with the KB (`[tool.flopkb]` or flopkb.toml); each flag
given on the command line overrides its key. `--isolated` reads no config file at all (CI on an
untrusted pull request: the PR can edit the config too). The summary names the config used.
"""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from flopkb.cli.common import fail, kb_location, kb_location_of_files
from flopkb.config import Config
from flopkb.escape import visible
from flopkb.load import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, Limits
from flopkb.report import FORMATTERS
from flopkb.selection import Selection, SelectionError
from flopkb.staged import Staged, StagedError, staged_deletions
from flopkb.validate import ValidationInputError
from flopkb.validate import validate as validate_paths

# One choice per formatter, so a new format needs one edit (in flopkb/report.py).
ValidateFormat = Enum("ValidateFormat", {name: name for name in FORMATTERS}, type=str)


def _codes(values: list[str] | None) -> tuple[str, ...] | None:
    """`--select FKB2,FKB301 --select FKB4` -> ("FKB2", "FKB301", "FKB4"); None: not given."""
    if values is None:
        return None
    return tuple(c.strip() for v in values for c in v.split(",") if c.strip())


def validate(
    ctx: typer.Context,
    paths: Annotated[
        list[Path] | None,
        typer.Argument(help="KB roots, records folders or record files; default: the KB"),
    ] = None,
    fmt: Annotated[
        ValidateFormat,
        typer.Option(
            "--format",
            "-f",
            help="text for people, json for scripts, github annotations, sarif for code scanning",
        ),
    ] = ValidateFormat.text,
    strict: Annotated[
        bool | None, typer.Option("--strict/--no-strict", help="warnings fail too (exit 1)")
    ] = None,
    select: Annotated[
        list[str] | None,
        typer.Option("--select", help="only these rule codes or prefixes (FKB2,FKB301)"),
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option("--ignore", help="leave out these rule codes or prefixes")
    ] = None,
    exclude: Annotated[
        list[str] | None,
        typer.Option("--exclude", help="glob of record paths (relative to the KB root) to skip"),
    ] = None,
    quiet: Annotated[
        bool, typer.Option("--quiet", "-q", help="text: findings only, no summary line")
    ] = False,
    changed: Annotated[
        bool,
        typer.Option(
            "--changed",
            help="pre-commit: PATHS are the changed files; also report the records that "
            "reference them or a record file deleted in the git index, the records they "
            "reference (evidence -> its claim), and what a changed experiments/ or kernels/ "
            "file feeds (its declarations, their claims and evidence)",
        ),
    ] = False,
    require_signed: Annotated[
        bool | None,
        typer.Option("--require-signed/--no-require-signed",
                     help="unsigned or wrongly signed evidence is an error (the KB's "
                     "allowed_signers; config key require_signed)"),
    ] = None,
    isolated: Annotated[
        bool,
        typer.Option(
            "--isolated",
            help="read no config file (flopkb.toml, [tool.flopkb]): the built-in rules only, "
            "for CI on untrusted pull requests",
        ),
    ] = False,
    max_bytes: Annotated[
        int, typer.Option("--max-bytes", min=1, help="size limit per file")
    ] = DEFAULT_MAX_BYTES,
    max_depth: Annotated[
        int, typer.Option("--max-depth", min=1, help="nesting limit")
    ] = DEFAULT_MAX_DEPTH,
) -> None:
    """Check records: structure, references, provenance. Exit 0 clean, 1 findings, 2 usage."""
    given = list(paths or [])
    for path in given:
        if not path.exists():
            fail(f"no such file or folder: {path}")
    if given:
        where = kb_location_of_files(ctx, given[0], isolated)
    else:
        where = kb_location(ctx, isolated=isolated)
    config = where.config if where is not None else Config()
    selection = Selection(
        select=_codes(select) if select is not None else config.select,
        ignore=_codes(ignore) if ignore is not None else config.ignore,
        from_config=(select is None and bool(config.select))
        or (ignore is None and bool(config.ignore)),
    )
    if changed and where is None:
        fail("--changed needs a KB: no records/ folder or flopkb config found above the files")
    staged = Staged()
    if changed and where is not None:
        try:
            staged = staged_deletions(where.root, Limits(max_bytes=max_bytes, max_depth=max_depth))
        except StagedError as exc:
            fail(f"--changed needs a git repository to find deleted records: {exc}")
    targets = given if (given or changed) else [where.root]  # type: ignore[union-attr]
    try:
        result = validate_paths(
            targets,
            strict=config.strict if strict is None else strict,
            limits=Limits(max_bytes=max_bytes, max_depth=max_depth),
            kb_root=where.root if where is not None else None,
            kb_info=where.as_dict() if where is not None else None,
            selection=selection,
            exclude=tuple(exclude) if exclude is not None else config.exclude,
            changed=changed,
            deleted=staged.deleted,
            deleted_referenced=staged.referenced,
            deleted_sources=staged.sources,
            require_signed=config.require_signed if require_signed is None else require_signed,
        )
    except (ValidationInputError, SelectionError) as exc:
        from_config = selection.from_config or (exclude is None and bool(config.exclude))
        fail(f"{exc} (from {config.file})" if from_config else str(exc))
    out = FORMATTERS[fmt.value](result)
    if fmt.value == "text":
        lines = out.splitlines(keepends=True)
        if quiet:
            out = "".join(lines[:-1])
        else:
            if where is None:
                checked = "files outside any KB" + ("; --isolated" if isolated else "")
            else:
                checked = where.summary()
            out = "".join(lines[:-1]) + lines[-1].rstrip("\n") + f"; {visible(checked)}\n"
    sys.stdout.write(out)
    raise typer.Exit(result.exit_code)
