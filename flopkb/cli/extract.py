"""`flopkb extract RECORD`: candidate hardware-parameter rows from a record's prose, as YAML."""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from flopkb.cli.common import (
    FormatOption,
    OutputFormat,
    emit_json,
    err_console,
    fail,
    kb_location,
    kb_root,
    plain,
)
from flopkb.escape import guard_lines, visible
from flopkb.extract import Extraction, NotAClassRecord, extract_record, to_yaml
from flopkb.findings import Severity
from flopkb.hardware.model import UnknownRecord
from flopkb.kb import load_kb
from flopkb.report import text_line


def extract(
    ctx: typer.Context,
    record: Annotated[str, typer.Argument(help="class record id, e.g. mamba2-ssd")],
    show_all: Annotated[
        bool,
        typer.Option(
            "--all",
            help="also show, commented out, candidates whose sentence a row already quotes",
        ),
    ] = False,
    fmt: FormatOption = OutputFormat.text,
) -> None:
    """Propose rows (verbatim effect, lifted magnitude, guessed quantity, basis unverified).

    Exit 1 when the record has errors (listed on stderr; its prose is still read).
    """
    kb, findings = load_kb(kb_root(ctx))
    try:
        result = extract_record(kb, findings, record)
    except NotAClassRecord as exc:
        if record in kb.records or record in kb.unloaded:
            fail(str(exc))
        fail(str(UnknownRecord("class", record, kb.classes)))
    if fmt is OutputFormat.json:
        emit_json(result.as_dict())
    else:
        _print_text(result, show_all)
        # a YAML comment, so that the output still pastes as it is
        sys.stdout.write(guard_lines(f"# {visible(kb_location(ctx).describe())}\n"))
        _print_problems(result)
    if any(f.severity is Severity.error for f in result.problems):
        raise typer.Exit(1)


def _print_text(result: Extraction, show_all: bool) -> None:
    record = visible(result.record)
    if not result.has_prose:
        sys.stdout.write(f"# no prose could be read from {record} (its findings say why)\n")
        return
    lines = [f"# {_count(len(result.candidates), 'new candidate row')} for {record}"]
    if result.quoted:
        where = "commented out at the end" if show_all else "left out; --all shows them"
        more = _count(len(result.quoted), "more candidate")
        lines.append(f"# {more} repeat sentences its rows already quote ({where})")
    lines.append("# paste under flop.hardware_parameters")
    sys.stdout.write("\n".join(lines) + "\n")
    # to_yaml double-quotes (and so escapes) any text that needs it: guard_lines' escapes are
    # YAML escapes there, and the listing pastes back to the very text of the prose
    if result.candidates:
        sys.stdout.write(guard_lines(to_yaml(result.candidates)))
    if show_all:
        for quoted in result.quoted:
            sys.stdout.write(f"# already quoted by row {visible(', '.join(quoted.rows))}:\n")
            for line in to_yaml([quoted.candidate]).splitlines():
                sys.stdout.write(guard_lines(f"#   {line}\n"))


def _print_problems(result: Extraction) -> None:
    if not result.problems:
        return
    errors = any(f.severity is Severity.error for f in result.problems)
    state = "does not validate" if errors else "has warnings"
    if not result.has_prose:
        how = "no prose could be read"
    elif not result.loaded:
        how = "its prose was read from the YAML as written"
    else:
        how = "candidates above"
    err_console.print(
        plain(
            f"flopkb: {result.record} {state} "
            f"({_count(len(result.problems), 'finding')}; {how}):"
        ),
        highlight=False,
    )
    for finding in result.problems:
        # text_line has escaped the finding already
        err_console.print(text_line(finding), markup=False, highlight=False, soft_wrap=True)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"
