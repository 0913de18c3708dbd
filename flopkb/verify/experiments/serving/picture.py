"""The serving claim's picture as data (`flopkb.verify.plots` draws it), from the measurement
alone, so a committed record is drawn the same way (tools/replot_evidence.py calls `plot_spec`):

- upper panel: one bar per layer type and side, the time of one layer at the judged reading
  (prefill, or the decode step at each side's batch of that reading), its fastest correct
  implementation with p10/p90 bars, the layer's floor as a black line across it, and floor / time
  printed over it (the figure the floor rule reads);
- lower panel: the composed model / baseline tokens/s ratio of every reading with its p10/p90
  interval, the judged one named, each beside its roofline ratio (the same reading composed from
  the floors) and the line above which the judge refuses a ratio as implausible; the claim drawn.

The experiment measures at one context length, so nothing here is a curve over length.
"""

from __future__ import annotations

from typing import Any

from flopkb.evidence.measurement import Measurement
from flopkb.grammar.text import LABEL_BREAK, plain

from .judging import ROOFLINE_SLACK, reading_rows

SIDES = ("model", "baseline")
TIMES = "\u00d7"  # the multiplication sign of "mamba1 x12" (12 layers of that type)


def counts_of(data: dict[str, Any]) -> dict[str, dict[str, int]]:
    """side -> layer type -> layers of that type in the architecture (its pattern's counts)."""
    composed = data.get("composed") or {}
    name = data.get("claim_reading")
    return {side: dict((composed.get(f"{name}/{side}") or {}).get("counts") or {})
            for side in SIDES}


def row_label(row: dict[str, Any], counts: dict[str, dict[str, int]]) -> str:
    """A sweep row's bar label: side, layer type with its count, phase (and decode batch); unique
    per row, as the picture's filter keeps rows by it."""
    count = counts.get(row["side"], {}).get(row["layer_type"])
    phase = "prefill" if row["phase"] == "prefill" else f"decode B={row.get('batch')}"
    kind = f"{row['layer_type']}{f' {TIMES}{count}' if count else ''}"
    return LABEL_BREAK.join((row["side"], kind, phase))


def labelled(rows: list[dict[str, Any]], data: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweep rows, each with its `label` (the experiment's rows and a committed record's)."""
    counts = counts_of(data)
    return [{**row, "label": row_label(row, counts)} for row in rows]


def _tokens(n: int) -> str:
    """128K for a power-of-two multiple of 1024, else 66,048."""
    return plain(n) if n % 1024 == 0 else f"{n:,}"


def _what(setup: dict[str, Any], reading: dict[str, Any]) -> str:
    """What the bars time, in words: the phase at the claim's one length and the batches."""
    batches = reading["model_batch"], reading["baseline_batch"]
    batch = f"batch {batches[0]}" if batches[0] == batches[1] else \
        f"model batch {batches[0]}, baseline {batches[1]}"
    prompt = (f"prefill of {setup.get('batch', 1)} {TIMES} "
              f"{_tokens(setup.get('prompt_length') or 1)} tokens")
    context = _tokens(setup["decode_context"])
    phase = setup.get("phase")
    if phase == "prefill":
        return prompt
    if phase == "decode" and setup.get("generated_tokens"):
        return (f"the decode step at context {context}, the mean context of a "
                f"{_tokens(setup['generated_tokens'])}-token generation ({batch})")
    if phase == "decode":
        return f"the decode step at context {context} ({batch})"
    return f"{prompt}, then the decode step at the generation's mean context {context} ({batch})"


def _reading_points(data: dict[str, Any]) -> list[dict[str, Any]]:
    """One lower-panel point per reading: its ratio with p10/p90, its roofline ratio and the
    implausibility line (roofline x ROOFLINE_SLACK)."""
    points = []
    for name, r in data["readings"].items():
        batches = r["model_batch"], r["baseline_batch"]
        at = f"B={batches[0]}" if batches[0] == batches[1] else f"B={batches[0]} vs {batches[1]}"
        judged = f"{LABEL_BREAK}(judged)" if name == data["claim_reading"] else ""
        ratio = r["ratio"]
        point = {"reading": f"{name}{LABEL_BREAK}{at}{judged}", "ratio": ratio["value"],
                 "ratio_low": ratio["low"], "ratio_high": ratio["high"]}
        roof = (data.get("roofline") or {}).get(name)
        if roof is not None:
            point.update(roofline=roof, refused_above=roof * ROOFLINE_SLACK)
        points.append(point)
    return points


def plot_spec(data: dict[str, Any], rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The picture of one serving measurement (its `data` and sweep `rows`); None without the
    judged reading (the judge reports that as an error)."""
    name = data.get("claim_reading")
    if name not in (data.get("readings") or {}):
        return None
    reading, setup = data["readings"][name], data["setup"]
    judged = reading_rows(Measurement(data, labelled(rows, data)), reading)
    times = [float(r[c]) for r in judged for c in ("ms", "floor_ms") if r.get(c)]
    above = any(r.get("faster_than_floor") for r in judged)
    title = (f"One layer of each type, judged {name} reading: {_what(setup, reading)}. "
             "Measured at this one length only: no curve over length. Bars: each layer's "
             f"fastest correct implementation ({TIMES}N: layers of that type in the model); "
             "% over a bar: floor / time" + (" (above 100%: faster than its HBM floor, its "
                                             "weights served from L2)" if above else "") + ".")
    return {
        "kind": "bars", "x": "label", "filter": {"label": [r["label"] for r in judged]},
        "series": {"one layer, p10/p90": "ms"},
        "colour_by": "side",
        "colour_names": {side: f"{side}:{LABEL_BREAK}{setup[key]}" for side, key in
                         (("model", "model"), ("baseline", "baseline_architecture"))},
        "marks": {"the layer's floor": "floor_ms"},
        "bar_text": {"column": "floor_fraction", "format": "{:.0%}"},
        # layers an order of magnitude apart (a prefill beside a decode step) read on a log axis
        "logy": bool(times) and max(times) / min(times) > 8,
        "ylabel": "time of one layer (ms)", "title": title,
        "measure_rows": _reading_points(data), "measure_x": "reading",
        "measure_legend": "composed ratio, p10/p90", "measure_text": "{:.3g}x",
        "measure_marks": {f"roofline ratio{LABEL_BREAK}(layers at their floors)": "roofline",
                          f"roofline x {ROOFLINE_SLACK:g}: above,{LABEL_BREAK}"
                          "refused as implausible":
                          "refused_above"},
        "measure_label": "model / baseline tokens/s (x)",
    }
