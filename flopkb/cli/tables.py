"""Tables whose ids never break mid-word, whatever the terminal width.

rich folds a cell at any character when its column gets narrower than a word, which cut
`mamba2-ssd/default-chunk-size` into `mamba2-ssd/default-c` + `hunk-size`. Here every column is at
least as wide as its longest word; when that does not fit, `record/row` ids fold after the `/`
(`mamba2-ssd/` over `default-chunk-size`) and the rules between columns go; when even that does not
fit, each row is shown as a block of `column: value` lines, wrapped at spaces.
A column added with `whole=True` (values, magnitudes, ratios) never breaks a cell at all: "crossover
at 2K" and "n/a" stay on one line. JSON output always carries the full ids.

Title, headers and cells are record text: escaped (`flopkb.escape.visible`) and handed to rich as
`Text`, never as markup, so `[link=...]` or `[/x]` in a record shows as written.
"""

from __future__ import annotations

import re
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, RenderResult
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from flopkb.escape import visible

# `record/row` ids (lowercase, as ids are): fold after the slash, never inside a name; units
# such as `TFLOP/s` and the word `n/a` stay whole
_SLASHED = re.compile(
    r"(?<![A-Za-z0-9_-])(?!n/a(?![A-Za-z0-9_-]))([a-z0-9][a-z0-9_-]*/)(?=[a-z0-9])"
)


def _words(cell: str) -> list[str]:
    return cell.split()


def _folded(cell: str) -> str:
    return _SLASHED.sub("\\1\n", cell)


def _cell(value: str | list[str] | None) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return visible(value)
    return "\n".join(visible(item) for item in value)


class IdTable:
    """A rich Table built on demand (same `add_column` / `add_row` calls), see the module doc."""

    def __init__(self, title: str | None = None, **table_kwargs: Any) -> None:
        self.title = visible(title) if title is not None else None
        self.table_kwargs = table_kwargs
        self.columns: list[tuple[str, dict[str, Any]]] = []
        self.rows: list[tuple[list[str], dict[str, Any]]] = []

    def add_column(self, header: str, whole: bool = False, **kwargs: Any) -> None:
        """`whole`: a cell of this column is never broken (its width is its longest line)."""
        kwargs.pop("overflow", None)
        if whole:
            kwargs["no_wrap"] = True
        self.columns.append((visible(header), kwargs))

    def _whole(self, index: int) -> bool:
        return bool(self.columns[index][1].get("no_wrap"))

    def add_row(self, *cells: str | list[str] | None, **kwargs: Any) -> None:
        """A row; a cell given as a list shows one item a line (a line break inside an item is
        shown escaped, as every control character is)."""
        self.rows.append(([_cell(c) for c in cells], kwargs))

    def _cells(self, fold: bool) -> list[list[str]]:
        """Cells by column, header first; ids folded after their slashes when `fold`."""
        out = []
        for index, (header, _) in enumerate(self.columns):
            cells = [row[index] if index < len(row) else "" for row, _ in self.rows]
            fold_here = fold and not self._whole(index)
            out.append([header, *(_folded(c) if fold_here else c for c in cells)])
        return out

    def _table(self, widths: list[int], fold: bool, compact: bool) -> Table:
        kwargs = dict(self.table_kwargs)
        if compact:
            # no outer edge, no vertical rules: fewer columns of text spent on lines
            kwargs.update(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
        table = Table(title=Text(self.title) if self.title is not None else None, **kwargs)
        for (header, column_kwargs), width in zip(self.columns, widths, strict=True):
            table.add_column(Text(header), overflow="fold", width=width, **column_kwargs)
        for row, row_kwargs in self.rows:
            cells = (
                Text(_folded(c) if fold and not self._whole(i) else c) for i, c in enumerate(row)
            )
            table.add_row(*cells, **row_kwargs)
        return table

    def _fit(
        self, console: Console, options: ConsoleOptions, fold: bool, compact: bool
    ) -> Table | None:
        """The table with column widths chosen here (never below a column's longest word, so
        rich never cuts one), or None when the words alone are wider than the console."""
        columns = self._cells(fold)
        lines = [[line for cell in cells for line in cell.splitlines()] for cells in columns]
        most = [max((len(ln) for ln in col), default=1) for col in lines]
        # a whole column needs its longest line; any other its longest word
        words = [max((len(w) for ln in col for w in ln.split()), default=1) for col in lines]
        least = [most[i] if self._whole(i) else words[i] for i in range(len(lines))]
        # what the borders and padding take: a table of 1-wide columns measures n + overhead
        probe = self._table([1] * len(columns), fold, compact)
        overhead = Measurement.get(console, options, probe).maximum - len(columns)
        room = options.max_width - overhead
        if sum(least) > room:
            return None
        spare = room - sum(least)
        wants = [m - n for m, n in zip(most, least, strict=True)]
        if sum(wants) <= spare:
            widths = most
        else:
            widths = [n + spare * w // sum(wants) for n, w in zip(least, wants, strict=True)]
        return self._table(widths, fold, compact)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for fold, compact in ((False, False), (True, False), (True, True)):
            table = self._fit(console, options, fold, compact)
            if table is not None:
                yield from console.render(table, options)
                return
        yield from self._as_list(options.max_width)

    def _as_list(self, width: int) -> RenderResult:
        """Too narrow for columns: one block per row, `header: value` lines wrapped at spaces."""
        if self.title:
            yield Text(str(self.title), style="italic")
        headers = [header for header, _ in self.columns]
        for row, kwargs in self.rows:
            style = kwargs.get("style") or ""
            yield Text(row[0] if row else "", style=f"bold {style}".strip())
            for index, (header, cell) in enumerate(zip(headers[1:], row[1:], strict=False), 1):
                line = f"  {header}: {cell or '-'}"
                if self._whole(index) and len(line) > width:
                    # a whole cell moves to a line of its own rather than break
                    yield Text(f"  {header}:", style=style)
                    yield Text(f"    {cell}", style=style, no_wrap=True, overflow="fold")
                else:
                    yield Text(line, style=style)
