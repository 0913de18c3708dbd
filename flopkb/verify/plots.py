"""One picture per claim and run, saved beside its evidence (matplotlib, optional).

A picture answers "what was claimed, what was measured, so what is the verdict?" at a glance:

- a header naming the claim and the GPU, with the claimed magnitude, the measured value and its
  p10/p90 band, and the verdict written in a coloured badge; the verdict rule as a footer;
- the main panel: the experiment's own sweep, as the experiment describes it (below);
- a second panel, when the sweep carries the judged quantity per point (a column `c` with
  `c_low` / `c_high`, the p10/p90 band: `ratio`, `speedup`, `share`, `misprediction`): that
  quantity over the sweep with p10/p90 bars, the judged point starred, parity (1x) for ratios,
  and the claimed band (`2-8x`) or point (`6x at 16K`) drawn on it;
- claimed crossovers (`crossover at 2K`) and values (`Q=64`) as a red dashed vertical line, the
  measured crossover as a solid line with its p10/p90 span shaded, on every panel;
- log axes with plain tick labels (512, 1K, 2K; 0.5, 1, 2), and legends outside the data.

Experiments describe their main panel as data (`Measurement.plot`) over their sweep rows, so the
experiment modules stay free of plotting code:

- kind "lines" / "bars": x column `x`, one series per `series` {label: column}; optional `filter`
  {column: value, or a list of the values kept}, `logx`, `logy`, `vline` (+ `vline_label`),
  `hline` (+ `hline_label`, its legend entry), `markers`, `title` (above the main panel: what
  the picture shows);
- kind "bars" also: `colour_by` a column (each bar coloured by its row's value, one legend entry per
  value, named by `colour_names` {value: label}); `marks` {label: column}, a short line across each
  row's bars at that column's value (a floor, a bound); `bar_text` {"column", "format"}, a figure
  printed over each bar (`"{:.0%}"`);
- kind "lines" with `group` and `y`: one line per distinct value of the `group` column;
- kind "stacked": stacked bars of the `series` columns over `x`;
- kind "category": grouped bars of {group: {category: value}} in `categories`.
- any kind: `measure_by_kind` {magnitude kind: column} names the judged column per claim when one
  experiment judges different claims on different columns (scan-benchmark: the crossover on
  `ratio`, the speed-up on `pytorch_ratio`); `measure_panel: false` draws no second panel (a
  category chart whose rows sweep nothing: a panel over row numbers would join unrelated points).
- any kind: `measure_rows`, the second panel's own points (a figure composed from the sweep, one
  per reading, not one per sweep row): rows holding the judged column with its `_low`/`_high`,
  drawn as unjoined points over the categories of their `measure_x` column, with `measure_marks`
  {label: column} as short lines at each point; `measure_legend` names the points,
  `measure_text` a format ("{:.3g}x") prints each point's value beside it.

A series column `c` gets p10/p90 bars when the rows also hold `c_low`/`c_high`, or, for a time
`<stem>_ms` (or `ms`), `<stem>_p10_ms`/`<stem>_p90_ms` (or `p10_ms`/`p90_ms`).
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flopkb.atomic import atomic_path
from flopkb.grammar.text import LABEL_BREAK, plain, plain_g

VERDICT_COLOURS = {
    "confirmed": "#2ca02c",
    "refuted": "#d62728",
    "inconclusive": "#ff7f0e",
    "not-applicable": "#7f7f7f",
    "error": "#7f7f7f",
    "not-run": "#7f7f7f",
}
# characters of the header's third line (experiment; measured = ...) that fit the 10-inch figure
HEADER_CHARS = 128
# the margins beside the panels, inches: the y label left, the legends right
LEFT_IN, RIGHT_IN = 0.81, 2.52
CLAIM_COLOUR = "#d62728"
MEASURED_COLOUR = "#1f1f1f"
# Columns that hold the judged quantity per sweep point, in the order they are looked for.
MEASURE_COLUMNS = ("ratio", "speedup", "share", "misprediction")
# Names of swept columns for axes and legends.
AXIS_NAMES = {"seq_len": "sequence length", "state_dim": "state size N", "elements": "elements",
              "size": "M = N = K", "rank": "rank r", "chunk_size": "chunk size Q"}
MEASURE_LABELS = {
    "speedup": "speedup",
    "share": "share of time",
    "misprediction": "time / FLOP-count prediction",
}


@dataclass(frozen=True)
class ClaimView:
    """What the picture says about the claim beside the sweep (the evidence record's fields)."""

    claim: str | None
    experiment: str
    gpu: str | None
    accelerator: str | None
    verdict: str
    expected: dict[str, Any] | None = None
    measured: dict[str, Any] | None = None
    criterion: str | None = None
    quick: bool = False
    # why there is no measured value (an error verdict): the header says it in the value's place
    reason: str | None = None

    @classmethod
    def of(cls, evidence: Any) -> ClaimView:
        """The view of an EvidenceRecord (what verify wrote, or a committed record re-plotted)."""
        measured = evidence.measured.model_dump(mode="json") if evidence.measured else None
        return cls(
            claim=evidence.claim,
            experiment=evidence.experiment,
            gpu=(evidence.machine or {}).get("gpu"),
            accelerator=evidence.accelerator,
            verdict=evidence.verdict.value,
            expected=evidence.expected,
            measured=measured,
            criterion=evidence.criterion,
            quick=bool((evidence.conditions or {}).get("quick")),
            reason=evidence.reason,
        )


def render(
    spec: dict[str, Any], rows: list[dict[str, Any]], path: Path, view: ClaimView
) -> Path | None:
    """Draw the picture of one claim into `path` (PNG or SVG by suffix); None without matplotlib.

    SVG text stays text (`svg.fonttype: none`), so the claim id and figures can be searched.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    fig = figure(spec, rows, view)
    try:
        with plt.rc_context({"svg.fonttype": "none"}), atomic_path(path) as tmp:
            fig.savefig(tmp, format=path.suffix.lstrip(".") or "png")
    finally:
        plt.close(fig)
    return path


def figure(spec: dict[str, Any], rows: list[dict[str, Any]], view: ClaimView) -> Any:
    """The matplotlib Figure of one claim (needs matplotlib; the caller closes it)."""
    import matplotlib.pyplot as plt

    flt = spec.get("filter", {})
    rows = [r for r in rows if all(_kept(r.get(k), v) for k, v in flt.items())]
    kind = spec.get("kind", "lines")
    x = spec.get("x")
    if kind in {"bars", "stacked"} and rows and _numeric(rows, x):
        rows = sorted(rows, key=lambda r: r[x])
    # the second panel's points: the spec's own (a composed figure) or the sweep's rows
    own_points = spec.get("measure_rows") is not None
    points = (spec.get("measure_rows") or []) if own_points else rows
    measure = _measure_column(spec, points, view)
    on_main = measure is not None and not own_points and measure in _series_columns(spec)
    second = measure is not None and not on_main
    # the verdict rule's lines at the foot (see _header) push the panels up, so that a long
    # rule never runs into the x label; the title's lines push the panels down
    rule_lines = len(_rule_lines(view))
    width = _figure_width(spec, rows)
    title = _title_lines(spec, width)
    # two panels with their own categories each need room for the upper one's tick labels
    gap = 0.9 if second and own_points else 0.0
    with plt.rc_context({"font.size": 9}):
        height = (6.6 if second else 4.8) + 0.14 * max(0, rule_lines - 1) + 0.16 * len(title) \
            + gap
        fig = plt.figure(figsize=(width, height), dpi=110)
        # the margins stay the same in inches however wide the figure
        grid = fig.add_gridspec(2 if second else 1, 1, height_ratios=[3, 2] if second else [1],
                                left=LEFT_IN / width, right=1 - RIGHT_IN / width,
                                top=1 - (1.05 + 0.16 * len(title) + (0.1 if title else 0)) / height,
                                bottom=0.06 + (0.6 + 0.14 * max(0, rule_lines - 1)) / height,
                                hspace=0.45 if own_points else 0.1 if kind != "category" else 0.3)
        ax = fig.add_subplot(grid[0])
        positions = _draw_main(ax, spec, rows)
        if title:
            ax.set_title("\n".join(title), fontsize=8.5, loc="left", color="#333333")
        swept = [float(r[x]) for r in rows] if positions is None and _numeric(rows, x) else []
        ticks = [(ax, swept)]
        if second and measure is not None:
            shared = bool(swept) and not own_points
            mx = fig.add_subplot(grid[1], sharex=ax if shared else None)
            ticks.append((mx, _draw_measure(mx, spec, points, measure, view, positions)))
            if not own_points and (shared or kind in {"bars", "stacked"}):
                # the same x below: one set of tick labels, under the lower panel
                ax.set_xlabel("")
                ax.tick_params(labelbottom=False)
        elif on_main and measure is not None:
            _overlay_measure(ax, rows, measure, view, swept)
        for panel, xs in ticks:
            if xs or positions is None:
                _draw_vertical_claims(panel, spec, view)
            _plain_ticks(panel, xs)
            panel.grid(True, alpha=0.3)
            handles, labels = panel.get_legend_handles_labels()
            if handles:
                panel.legend(handles, labels, loc="upper left", bbox_to_anchor=(1.02, 1.0),
                             fontsize=8, frameon=False, borderaxespad=0.0)
        _header(fig, view)
    return fig


def _figure_width(spec: dict[str, Any], rows: list[dict[str, Any]]) -> float:
    """9 inches; wider for a bar chart whose bars need more room for their labels than 9 inches
    give (0.065 inch a character of a 7.5-point label line, one spare)."""
    if spec.get("kind") != "bars" or not rows:
        return 9.0
    lines = [line for r in rows for line in _label(r.get(spec.get("x"))).splitlines()]
    per_bar = max(0.81, 0.065 * (max(map(len, lines), default=0) + 1))
    return max(9.0, LEFT_IN + RIGHT_IN + per_bar * len(rows) * len(spec.get("series") or {}))


def _kept(value: Any, wanted: Any) -> bool:
    """A filter's test: one of the listed values, or equal to the one value."""
    return value in wanted if isinstance(wanted, list) else value == wanted


def _title_lines(spec: dict[str, Any], width: float) -> list[str]:
    """The title wrapped to the panel's width (`width`: the figure's, inches; 8.5-point text)."""
    chars = int((width - LEFT_IN - RIGHT_IN) * 17)
    return textwrap.wrap(spec["title"], width=chars) if spec.get("title") else []


def _numeric(rows: list[dict[str, Any]], column: str | None) -> bool:
    return column is not None and all(
        isinstance(r.get(column), int | float) and not isinstance(r.get(column), bool) for r in rows
    )


def _series_columns(spec: dict[str, Any]) -> list[str]:
    if "group" in spec:
        return [spec["y"]]
    return list(spec.get("series", {}).values())


def _measure_column(spec: dict[str, Any], rows: list[dict[str, Any]],
                    view: ClaimView | None = None) -> str | None:
    """The column of the judged quantity per point. An experiment that judges different claims on
    different columns names them by the claim's magnitude kind (`measure_by_kind`), so a claim's
    picture never shows another claim's quantity."""
    if not rows or spec.get("measure_panel") is False:
        return None
    by_kind = spec.get("measure_by_kind") or {}
    kind = ((view.expected if view else None) or {}).get("kind")
    if kind in by_kind:
        column = by_kind[kind]
        return column if _numeric(rows, column) else None
    for column in MEASURE_COLUMNS:
        if _numeric(rows, column) and f"{column}_low" in rows[0] and f"{column}_high" in rows[0]:
            return column
    return None


def _band(rows: list[dict[str, Any]], column: str) -> tuple[list[float], list[float]] | None:
    """p10/p90 corner columns of `column` (see the module docstring), when every row has them."""
    stem = column[: -len("_ms")] if column.endswith("_ms") else None
    for low, high in (
        (f"{column}_low", f"{column}_high"),
        (f"{stem}_p10_ms", f"{stem}_p90_ms") if stem else ("", ""),
        ("p10_ms", "p90_ms") if column == "ms" else ("", ""),
    ):
        if low and _numeric(rows, low) and _numeric(rows, high):
            return [float(r[low]) for r in rows], [float(r[high]) for r in rows]
    return None


def _errorbar(ax: Any, xs: Sequence[float], ys: Sequence[float],
              band: tuple[list[float], list[float]] | None, **style: Any) -> None:
    if band is None:
        ax.plot(xs, ys, **style)
        return
    ax.errorbar(xs, ys, yerr=_yerr(ys, band), capsize=3, elinewidth=1, **style)


def _yerr(ys: Sequence[float], band: tuple[list[float], list[float]]) -> list[list[float]]:
    lows, highs = band
    return [[max(0.0, y - lo) for y, lo in zip(ys, lows, strict=True)],
            [max(0.0, hi - y) for y, hi in zip(ys, highs, strict=True)]]


def _draw_main(ax: Any, spec: dict[str, Any], rows: list[dict[str, Any]]) -> list[str] | None:
    """The experiment's own panel; returns the category labels when x is categorical."""
    kind = spec.get("kind", "lines")
    positions: list[str] | None = None
    if kind == "category":
        groups = spec["categories"]
        positions = list(next(iter(groups.values())).keys())
        width = 0.8 / max(1, len(groups))
        for i, (label, values) in enumerate(groups.items()):
            xs = [j + (i - (len(groups) - 1) / 2) * width for j in range(len(positions))]
            ax.bar(xs, [values.get(c) or 0 for c in positions], width, label=label)
        ax.set_xticks(range(len(positions)), positions)
    elif kind in {"bars", "stacked"}:
        positions = [_label(r.get(spec["x"])) for r in rows]
        series = spec["series"]
        width = 0.6 if kind == "stacked" else 0.8 / max(1, len(series))
        bottom = [0.0] * len(rows)
        tops = [0.0] * len(rows)
        for i, (label, col) in enumerate(series.items()):
            vals = [float(r.get(col) or 0) for r in rows]
            if kind == "stacked":
                ax.bar(range(len(rows)), vals, width, bottom=bottom, label=label)
                bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
            else:
                xs = [j + (i - (len(series) - 1) / 2) * width for j in range(len(rows))]
                band = _band(rows, col)
                _grouped_bars(ax, spec, rows, xs, vals, band, width, label)
                highs = band[1] if band else vals
                tops = [max(t, h) for t, h in zip(tops, highs, strict=True)]
        # a bar described in words (several lines) gets the smaller font _figure_width allows
        words = any("\n" in p for p in positions)
        ax.set_xticks(range(len(rows)), positions, fontsize=7.5 if words else 9)
        if kind == "bars":
            tops = _draw_marks(ax, [float(j) for j in range(len(rows))], rows,
                               spec.get("marks") or {}, 0.8, tops)
            if spec.get("logy"):
                _log_bar_bottom(ax, rows, spec)
            _bar_text(ax, spec, rows, tops)
    elif "group" in spec:
        for value in sorted({r[spec["group"]] for r in rows}):
            pts = sorted((r for r in rows if r[spec["group"]] == value), key=lambda r: r[spec["x"]])
            _errorbar(ax, [r[spec["x"]] for r in pts], [r[spec["y"]] for r in pts],
                      _band(pts, spec["y"]), marker="o",
                      label=f"{AXIS_NAMES.get(spec['group'], spec['group'])} {plain(value)}")
    else:
        for label, col in spec["series"].items():
            pts = sorted((r for r in rows if r.get(col) is not None), key=lambda r: r[spec["x"]])
            _errorbar(ax, [r[spec["x"]] for r in pts], [r[col] for r in pts], _band(pts, col),
                      marker="o", label=label)
    if spec.get("logx") and positions is None:
        ax.set_xscale("log", base=2)
    if spec.get("logy"):
        ax.set_yscale("log")
    if spec.get("hline") is not None:
        _hline(ax, float(spec["hline"]), spec.get("hline_label"), bool(spec.get("logy")))
    ax.set_xlabel(spec.get("xlabel", ""))
    ax.set_ylabel(spec.get("ylabel", ""))
    return positions


def _grouped_bars(ax: Any, spec: dict[str, Any], rows: list[dict[str, Any]], xs: list[float],
                  vals: list[float], band: tuple[list[float], list[float]] | None, width: float,
                  label: str) -> None:
    """One series' bars with p10/p90 bars; with `colour_by`, one call (and legend entry) per
    value of that column, so the legend names the colours."""
    yerr = _yerr(vals, band) if band else None
    column = spec.get("colour_by")
    if not column:
        ax.bar(xs, vals, width, label=label, capsize=3, yerr=yerr)
        return
    names = spec.get("colour_names") or {}
    values = list(dict.fromkeys(r.get(column) for r in rows))
    for n, value in enumerate(values):
        at = [j for j, r in enumerate(rows) if r.get(column) == value]
        ax.bar([xs[j] for j in at], [vals[j] for j in at], width, color=f"C{n}", capsize=3,
               label=_label(names.get(str(value), str(value))),
               yerr=[[yerr[0][j] for j in at], [yerr[1][j] for j in at]] if yerr else None)


# the width of a `measure_marks` line, in categories (a bar's marks span the bar group's 0.8)
MARK_WIDTH = 0.5
# the styles of `marks` / `measure_marks`, in the order they are named
MARK_STYLES = ({"colors": "#111111", "linestyles": "solid", "linewidth": 2.4},
               {"colors": "#666666", "linestyles": "dashed", "linewidth": 1.4},
               {"colors": "#9467bd", "linestyles": "dotted", "linewidth": 1.6})


def _draw_marks(ax: Any, xs: list[float], rows: list[dict[str, Any]], marks: dict[str, str],
                width: float, tops: list[float]) -> list[float]:
    """Each mark {label: column} as a short line across each row's position at the column's
    value; returns `tops` raised to the marks (where text over them starts)."""
    tops = list(tops)
    for n, (label, column) in enumerate(marks.items()):
        at = [j for j, r in enumerate(rows) if _number(r.get(column))]
        if not at:
            continue
        ys = [float(rows[j][column]) for j in at]
        ax.hlines(ys, [xs[j] - width / 2 for j in at], [xs[j] + width / 2 for j in at],
                  label=_label(label), zorder=4, **MARK_STYLES[n % len(MARK_STYLES)])
        for j, y in zip(at, ys, strict=True):
            tops[j] = max(tops[j], y)
    return tops


def _log_bar_bottom(ax: Any, rows: list[dict[str, Any]], spec: dict[str, Any]) -> None:
    """Bars on a log axis start at zero, which it cannot show: the axis starts a little below
    the lowest bar, p10 or mark instead."""
    columns = [*spec["series"].values(), *(spec.get("marks") or {}).values()]
    columns += [f"{c}_low" for c in spec["series"].values()]
    values = [float(r[c]) for r in rows for c in columns if _number(r.get(c)) and r[c] > 0]
    if values:
        ax.set_ylim(min(values) / 1.6, ax.get_ylim()[1])


def _point_text(ax: Any, spec: dict[str, Any], xs: list[float], ys: list[float]) -> None:
    """`measure_text`'s figure at each (x, y), left-aligned: right of the second panel's own
    points ("{:.3g}x")."""
    fmt = spec.get("measure_text")
    for x, y in zip(xs, ys, strict=True) if fmt else ():
        ax.annotate(fmt.format(y), (x, y), xytext=(2, 0), textcoords="offset points",
                    ha="left", va="center", fontsize=8.5, fontweight="bold", color="#1f1f1f")


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _bar_text(ax: Any, spec: dict[str, Any], rows: list[dict[str, Any]], tops: list[float]
              ) -> None:
    """`bar_text`'s figure over each bar (above its p10/p90 bar and marks), with the headroom
    it needs inside the axes."""
    text = spec.get("bar_text")
    if not text:
        return
    for j, r in enumerate(rows):
        value = r.get(text["column"])
        if _number(value):
            ax.annotate(text.get("format", "{:.3g}").format(value), (j, tops[j]),
                        xytext=(0, 2), textcoords="offset points", ha="center", va="bottom",
                        fontsize=7.5, color="#333333")
    low, high = ax.get_ylim()
    # a log axis needs its top raised by a factor, a linear one by a share of its span
    ax.set_ylim(low, high * 1.8 if spec.get("logy") else high + 0.08 * (high - low))


def _label(value: Any) -> str:
    """A tick label: a number plainly, a text with its LABEL_BREAK parts on lines of their own."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return plain(value)
    return str(value).replace(LABEL_BREAK, "\n")


def _sweep_axes(rows: list[dict[str, Any]]) -> tuple[str | None, str | None]:
    """The swept integer columns of `rows` (shapes, lengths): the first as x, the next to group."""
    swept = [k for k in rows[0] if isinstance(rows[0][k], int) and not isinstance(rows[0][k], bool)
             and _numeric(rows, k) and len({r[k] for r in rows}) > 1]
    return (swept[0] if swept else None), (swept[1] if len(swept) > 1 else None)


def _draw_measure(ax: Any, spec: dict[str, Any], rows: list[dict[str, Any]], column: str,
                  view: ClaimView, positions: list[str] | None) -> list[float]:
    """The judged quantity over the sweep with p10/p90 bars; returns the x values drawn at."""
    style = {"marker": "o", "color": "#4c72b0"}
    kind = spec.get("kind", "lines")
    own = spec.get("measure_rows") is not None
    if own or kind in {"bars", "stacked"}:
        xs = [float(j) for j in range(len(rows))]
        if own:
            # the points are readings, not a sweep: drawn unjoined, over their own categories
            positions = [_label(r.get(spec.get("measure_x"))) for r in rows]
            style["linestyle"] = "none"
            style["markersize"] = 7
        _errorbar(ax, xs, [float(r[column]) for r in rows], _band(rows, column),
                  label=spec.get("measure_legend", "measured, p10/p90 bars"), **style)
        if own:
            marks = spec.get("measure_marks") or {}
            _draw_marks(ax, xs, rows, marks, MARK_WIDTH, [0.0] * len(rows))
            # the value clear of the marks' lines, right of their ends
            clear = (MARK_WIDTH / 2 if marks else 0.0) + 0.03
            _point_text(ax, spec, [x + clear for x in xs], [float(r[column]) for r in rows])
        ax.set_xticks(range(len(rows)), positions or [])
        ax.set_xlim(-0.5, len(rows) - 0.5)
        ax.set_xlabel(spec.get("measure_xlabel", "") if own else spec.get("xlabel", ""))
        drawn, numeric_x = xs, False
    else:
        x = spec.get("x") if _numeric(rows, spec.get("x")) else None
        group = None
        if x is None:
            x, group = _sweep_axes(rows)
        if x is None:
            rows = [dict(r, _point=i) for i, r in enumerate(rows)]
            x = "_point"
        groups = sorted({r[group] for r in rows}) if group else [None]
        for n, value in enumerate(groups):
            pts = sorted((r for r in rows if group is None or r[group] == value),
                         key=lambda r: r[x])
            label = "measured, p10/p90 bars"
            if group is not None:
                label = f"{AXIS_NAMES.get(group, group)} {plain(value)}, p10/p90 bars"
            colour = style["color"] if n == 0 else f"C{n + 1}"
            _errorbar(ax, [float(r[x]) for r in pts], [float(r[column]) for r in pts],
                      _band(pts, column), marker="o", color=colour, label=label)
        drawn = [float(r[x]) for r in rows]
        numeric_x = x != "_point"
        if numeric_x and _powers_of_two(drawn) and len(set(drawn)) > 2:
            ax.set_xscale("log", base=2)
        ax.set_xlabel(spec.get("xlabel", "") if x == spec.get("x")
                      else AXIS_NAMES.get(x, "point" if x == "_point" else x))
    values = [float(r[c]) for r in rows for c in (column, f"{column}_low", f"{column}_high")]
    values += [float(r[c]) for r in rows for c in (spec.get("measure_marks") or {}).values()
               if own and _number(r.get(c))]
    if min(values) > 0 and max(values) / min(values) > 8:
        ax.set_yscale("log")
    _overlay_measure(ax, rows, column, view, drawn)
    # the lower panel is short: a long quantity name wraps instead of running into the panel above
    label = spec.get("measure_label") or _measure_label(column, view)
    ax.set_ylabel("\n".join(textwrap.wrap(label, 24)))
    return drawn if numeric_x else []


def _powers_of_two(xs: list[float]) -> bool:
    return all(x > 0 and float(x).is_integer() and int(x) & (int(x) - 1) == 0 for x in xs)


def _measure_label(column: str, view: ClaimView) -> str:
    what = (view.measured or {}).get("what") or ""
    found = re.search(r"t(?:\([^)]*\)|_\w+)\s*/\s*t(?:\([^)]*\)|_\w+)", what)
    if column == "ratio" or column.endswith("_ratio"):
        return f"{found.group(0)} (x)" if found and len(found.group(0)) <= 40 else "ratio (x)"
    return MEASURE_LABELS.get(column, column)


def _overlay_measure(ax: Any, rows: list[dict[str, Any]], column: str, view: ClaimView,
                     xs: list[float]) -> None:
    """On the panel showing `column`: parity, the claimed band or point, the judged point."""
    lows = [float(r.get(f"{column}_low", r[column])) for r in rows]
    if (column in {"ratio", "speedup", "misprediction"} or column.endswith("_ratio")) and lows \
            and min(lows) <= 4:
        ax.axhline(1.0, color="grey", linewidth=1, linestyle=":", label="parity (1x)")
    expected, measured = view.expected or {}, view.measured or {}
    low, high = expected.get("low"), expected.get("high")
    percent = expected.get("unit") == "%" and column == "ratio"
    if percent:
        # an overhead claimed in percent, drawn on the time-ratio panel as 1 + p/100
        low, high = (None if v is None else 1 + v / 100 for v in (low, high))
    # an error verdict has no measured value: the claim is still drawn on a ratio panel
    unit = measured.get("unit") or expected.get("unit")
    if (expected.get("kind") == "ratio" and unit == "x") or percent:
        at = (expected.get("condition") or {}).get("at")
        text = f"claimed {expected.get('text')}"
        if at is not None and low is not None:
            ax.errorbar([at], [low], yerr=[[0.0], [(high or low) - low]], marker="X",
                        markersize=10, color=CLAIM_COLOUR, linestyle="none", label=text, zorder=5)
        elif low is not None and high is not None and high > low:
            ax.axhspan(low, high, color=CLAIM_COLOUR, alpha=0.12, label=text)
        elif low is not None or high is not None:
            ax.axhline(low if low is not None else high, color=CLAIM_COLOUR, linestyle="--",
                       linewidth=1.2, label=text)
    value = measured.get("value")
    if value is not None and measured.get("unit") != "tokens":
        for x, r in zip(xs, rows, strict=True):
            if math.isclose(float(r[column]), value, rel_tol=1e-4):
                ax.plot([x], [value], marker="*", markersize=15, color=MEASURED_COLOUR,
                        linestyle="none", label="judged point", zorder=6)
                break


def _draw_vertical_claims(ax: Any, spec: dict[str, Any], view: ClaimView) -> None:
    """Claimed crossover / value lines and the measured crossover with its p10/p90 span."""
    expected, measured = view.expected or {}, view.measured or {}
    if expected.get("kind") in {"crossover", "value"} and expected.get("low") is not None:
        ax.axvline(float(expected["low"]), color=CLAIM_COLOUR, linestyle="--", linewidth=1.5,
                   label=f"claimed {expected.get('text')}")
    cross = spec.get("vline")
    if cross is None and measured.get("unit") == "tokens":
        cross = measured.get("value")
    if cross is None:
        return
    label = f"measured {spec.get('vline_label', 'crossover')} {plain(round(cross))}"
    if measured.get("unit") == "tokens" and measured.get("value") is not None and \
            math.isclose(measured["value"], cross, rel_tol=1e-3):
        low, high = measured.get("low"), measured.get("high")
        if low is not None and high is not None:
            ax.axvspan(low, high, color=MEASURED_COLOUR, alpha=0.12)
            label += f" [{plain(round(low))}, {plain(round(high))}]"
    ax.axvline(cross, color=MEASURED_COLOUR, linewidth=1.5, label=label)


def _nice_log_ticks(low: float, high: float) -> list[float]:
    if low <= 0 or high <= low:
        return []
    ticks: list[float] = []
    for subs in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10.0**k for k in range(math.floor(math.log10(low)),
                                            math.ceil(math.log10(high)) + 1)
                 for m in subs if low <= m * 10.0**k <= high]
        if len(ticks) >= 3:
            return ticks
    return ticks


def _plain_ticks(ax: Any, swept: list[float]) -> None:
    """Plain tick labels: on a log x the swept values (or powers of two), 1-2-5 steps on a log y."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

    formatter = FuncFormatter(lambda v, _: plain(v))
    if ax.get_yscale() == "log":
        low, high = ax.get_ylim()
        ticks = _nice_log_ticks(low, high)
        if ticks:
            ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_major_formatter(formatter)
        ax.yaxis.set_minor_formatter(NullFormatter())
        ax.set_ylim(low, high)
    if ax.get_xscale() == "log":
        low, high = ax.get_xlim()
        xs = sorted({x for x in swept if low <= x <= high})
        if not 2 <= len(xs) <= 12:
            xs = [2.0**k for k in range(math.ceil(math.log2(low)), math.floor(math.log2(high)) + 1)]
        ax.xaxis.set_major_locator(FixedLocator(xs))
        ax.xaxis.set_major_formatter(formatter)
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlim(low, high)
    elif swept:
        ax.xaxis.set_major_formatter(formatter)


def _interval(m: dict[str, Any]) -> str:
    value, low, high = m.get("value"), m.get("low"), m.get("high")
    unit = m.get("unit") or ""
    sep = "" if unit == "x" else " "
    digits = 3
    # enough digits that a narrow band does not print as [121, 121]
    while digits < 6 and low is not None and high is not None and low != high and \
            f"{low:.{digits}g}" == f"{high:.{digits}g}":
        digits += 1
    text = f"{plain_g(value, digits)}{sep}{unit}" if value is not None else "-"
    if low is not None and high is not None and (low, high) != (value, value):
        text += f" [{plain_g(low, digits)}, {plain_g(high, digits)}] (p10/p90)"
    return text


def _rule_lines(view: ClaimView) -> list[str]:
    """The verdict rule at the picture's foot, wrapped (none without a criterion)."""
    return textwrap.wrap(f"verdict rule: {view.criterion}", width=150) if view.criterion else []


def _header(fig: Any, view: ClaimView) -> None:
    """Title (claim on GPU); the verdict badge, claimed and measured; what was measured."""
    height = fig.get_figheight()
    line = 0.24 / height  # one line of 9-point text, in figure coordinates

    gpu = view.gpu or "unknown GPU"
    on = f"{gpu} ({view.accelerator})" if view.accelerator else gpu
    name = view.claim or f"{view.experiment} (no claim)"
    fig.text(0.02, 1 - 0.6 * line, f"{name} on {on}", fontsize=11, fontweight="bold", va="top")
    colour = VERDICT_COLOURS.get(view.verdict, "#7f7f7f")
    badge = fig.text(0.025, 1 - 2.05 * line, view.verdict.upper(), fontsize=9, fontweight="bold",
                     color="white", va="top",
                     bbox={"boxstyle": "round,pad=0.3", "facecolor": colour, "edgecolor": colour})
    fig.canvas.draw()
    right = fig.transFigure.inverted().transform(
        badge.get_window_extent(fig.canvas.get_renderer()).corners()[-1])[0]
    claimed = (view.expected or {}).get("text") or "-"
    second = f"claimed: {claimed}"
    if view.measured:
        second += f"    measured: {_interval(view.measured)}"
    fig.text(right + 0.02, 1 - 2.05 * line, second, fontsize=9.5, va="top")
    third = f"experiment {view.experiment}{' (quick run)' if view.quick else ''}"
    what = (view.measured or {}).get("what")
    if what:
        third += f";  measured = {what}"
    elif view.reason and view.verdict == "error":
        third += f";  {view.reason}"
    if len(third) > HEADER_CHARS:
        # the header has one line for this; the whole text is in the evidence record
        third = third[:HEADER_CHARS - 1].rstrip() + "…"
    fig.text(0.02, 1 - 3.3 * line, third, fontsize=8, va="top", color="#444444")
    if view.criterion:
        rule = "\n".join(_rule_lines(view))
        fig.text(0.02, 0.012, rule, fontsize=8, va="bottom", color="#444444")


def _hline(ax: Any, y: float, label: str | None, logy: bool) -> None:
    """A reference level across the panel, always in view. A labelled one is a limit the
    reader measures the bars against (a tolerance): drawn darker, in the legend."""
    if label:
        ax.axhline(y, color="black", linestyle="--", linewidth=1.2, label=label)
    else:
        ax.axhline(y, color="grey", linestyle=":", linewidth=1)
    low, high = ax.get_ylim()
    if y > high:
        ax.set_ylim(low, y * 2 if logy else y + 0.05 * (y - low))
    elif y < low:
        ax.set_ylim(y / 2 if logy else y - 0.05 * (high - y), high)
