"""Evidence pictures: claim and GPU in the title, the claim drawn, the verdict written, p10/p90
bars, crossovers marked, plain log ticks, searchable SVG text."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("matplotlib")

import matplotlib.pyplot as plt
from matplotlib.container import ErrorbarContainer

from flopkb.grammar.text import plain, plain_g
from flopkb.kb import load_files
from flopkb.paths import bundled_root
from flopkb.verify import plots
from flopkb.verify.plots import ClaimView
from tools import replot_evidence as replot

LENGTHS = [512, 1024, 2048, 4096, 8192, 16384]
# attention time grows ~T, SSD stays flat: they cross near 620 tokens
ROWS = [
    {"seq_len": t, "attention_ms": 0.45 * t / 620, "ssd_ms": 0.45, "ratio": t / 620,
     "ratio_low": t / 620 * 0.98, "ratio_high": t / 620 * 1.02}
    for t in LENGTHS
]
SPEC = {"kind": "lines", "x": "seq_len", "xlabel": "sequence length", "ylabel": "time (ms)",
        "series": {"attention": "attention_ms", "SSD": "ssd_ms"}, "logx": True, "logy": True,
        "vline": 620.0, "vline_label": "crossover"}
CROSSOVER = ClaimView(
    claim="mamba2-ssd/ssd-attention-crossover", experiment="ssd-vs-attention",
    gpu="NVIDIA H200", accelerator="h200-sxm", verdict="refuted",
    expected={"text": "crossover at 2K", "kind": "crossover", "low": 2048, "high": 2048,
              "condition": {}},
    measured={"value": 620.0, "low": 609.0, "high": 633.0, "unit": "tokens",
              "what": "sequence length where t(attention) / t(SSD) crosses 1"},
    criterion="crossover interval inside [1448, 2896]",
)
BAND = ClaimView(
    claim="mamba2-ssd/ssd-vs-fused-scan", experiment="ssd-vs-scan", gpu="NVIDIA H200",
    accelerator="h200-sxm", verdict="confirmed",
    expected={"text": "2-8x", "kind": "ratio", "low": 2.0, "high": 8.0, "condition": {}},
    measured={"value": 4096 / 620, "low": 4096 / 620 * 0.98, "high": 4096 / 620 * 1.02,
              "unit": "x", "what": "t(attention) / t(SSD) at T=4096"},
)


@pytest.mark.parametrize(
    ("value", "text"),
    [(512, "512"), (1024, "1K"), (2048, "2K"), (16384, "16K"), (16777216, "16M"), (0.5, "0.5"),
     (4063, "4063"), (10_000, "10k"), (2.5, "2.5"), (1, "1"), (0.05, "0.05")],
)
def test_plain_tick_labels(value: float, text: str) -> None:
    assert plain(value) == text


def _texts(fig: Any) -> list[str]:
    return [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]


def test_crossover_claim_is_drawn_with_its_verdict() -> None:
    fig = plots.figure(SPEC, ROWS, CROSSOVER)
    try:
        texts = _texts(fig)
        assert "mamba2-ssd/ssd-attention-crossover on NVIDIA H200 (h200-sxm)" in texts
        assert "REFUTED" in texts
        assert any("claimed: crossover at 2K" in t and "620 tokens [609, 633]" in t for t in texts)
        main, measure = fig.axes[:2]
        for ax in (main, measure):
            labels = ax.get_legend_handles_labels()[1]
            assert "claimed crossover at 2K" in labels
            assert "measured crossover 620 [609, 633]" in labels
            lines = {line.get_label(): line.get_xdata() for line in ax.get_lines()}
            assert list(lines["claimed crossover at 2K"]) == [2048, 2048]
            # the legend sits right of the data, never over it
            legend = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
            assert legend.x0 >= ax.get_window_extent().x1
        # p10/p90 bars on the measured ratio, parity drawn
        bars = [c for c in measure.containers if isinstance(c, ErrorbarContainer)]
        assert bars and "parity (1x)" in measure.get_legend_handles_labels()[1]
        # plain tick labels on the log axes
        fig.canvas.draw()
        xticks = [t.get_text() for t in measure.get_xticklabels()]
        assert xticks == ["512", "1K", "2K", "4K", "8K", "16K"]
        yticks = [t.get_text() for t in main.get_yticklabels() if t.get_text()]
        assert yticks and not any("$" in t or "10^" in t for t in yticks)
    finally:
        plt.close(fig)


def test_a_claimed_band_is_shaded_and_the_judged_point_starred() -> None:
    fig = plots.figure(SPEC, ROWS, BAND)
    try:
        measure = fig.axes[1]
        labels = measure.get_legend_handles_labels()[1]
        assert "claimed 2-8x" in labels and "judged point" in labels
        band = next(p for p in measure.patches if p.get_label() == "claimed 2-8x")
        # axhspan: a rectangle spanning the axes' width from y = 2 to y = 8 in data units
        assert (band.get_y(), band.get_y() + band.get_height()) == (2.0, 8.0)
        star = next(line for line in measure.get_lines() if line.get_label() == "judged point")
        assert list(star.get_xdata()) == [4096.0]
        assert "CONFIRMED" in _texts(fig)
    finally:
        plt.close(fig)


def test_a_claimed_point_at_a_length_is_marked() -> None:
    view = ClaimView(claim="a/b", experiment="ssd-vs-attention", gpu="G", accelerator=None,
                     verdict="refuted",
                     expected={"text": "6x at 16K", "kind": "ratio", "low": 6.0, "high": 6.0,
                               "condition": {"at": 16384}},
                     measured={"value": 16384 / 620, "low": 25.0, "high": 27.0, "unit": "x"})
    fig = plots.figure(SPEC, ROWS, view)
    try:
        marker = next(c for c in fig.axes[1].containers
                      if isinstance(c, ErrorbarContainer) and c.get_label() == "claimed 6x at 16K")
        assert list(marker.lines[0].get_xdata()) == [16384]
        assert list(marker.lines[0].get_ydata()) == [6.0]
    finally:
        plt.close(fig)


def test_svg_text_is_searchable(tmp_path: Path) -> None:
    path = plots.render(SPEC, ROWS, tmp_path / "claim.svg", CROSSOVER)
    assert path is not None
    root = ET.parse(path).getroot()
    text = " ".join("".join(el.itertext()) for el in root.iter() if el.tag.endswith("text"))
    for wanted in ("mamba2-ssd/ssd-attention-crossover", "REFUTED", "claimed crossover at 2K",
                   "1K", "16K"):
        assert wanted in text


def test_every_committed_evidence_with_a_sweep_can_be_replotted(tmp_path: Path) -> None:
    from flopkb.verify.experiments.serving import picture as serving_picture
    from flopkb.verify.record import jsonable

    paths = sorted((bundled_root() / "records" / "evidence").glob("ev-*.yaml"))
    kb, findings = load_files(paths)
    assert not findings
    # evidence that stored `plot: null` comes from an experiment that drew no picture then; D2's
    # bundled partitions are drawn since (partition_sim.PLOT), its committed rows too
    drawn = [ev for ev in kb.evidence.values()
             if ev.sweep and not ("plot" in ev.statistics and ev.statistics["plot"] is None)]
    drawn += [ev for ev in kb.evidence.values() if replot._partition_rows(ev)]
    # the serving experiments' too, by their experiment's own description (serving.picture)
    # (those written before the serving picture existed stored none; the later ones stored the
    # description their run drew, the one the experiment's function gives from the record again)
    serving = [ev for ev in kb.evidence.values() if replot._serving(ev)]
    unstored = [ev for ev in serving if ev.statistics["plot"] is None]
    stored = [ev for ev in serving if ev.statistics["plot"] is not None]
    assert unstored and stored
    for ev in stored:
        # (the record stores figures rounded as every statistic is: record.jsonable)
        redrawn = jsonable(serving_picture.plot_spec(ev.statistics["data"], ev.sweep))
        assert ev.statistics["plot"] == redrawn
    drawn += unstored
    assert drawn and all(replot.spec_of(ev) is not None for ev in drawn)
    crossover = [p for p in paths if "ssd-attention-crossover" in p.name]
    written = replot.replot(crossover, tmp_path)
    assert sorted(p.name for p in written) == sorted(c.stem + ".png" for c in crossover)
    assert written[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_run_draws_one_picture_per_claim_named_like_its_evidence(tmp_path: Path) -> None:
    from flopkb.evidence.catalogue import for_kb
    from flopkb.evidence.measurement import Judgement, Measurement
    from flopkb.evidence.stats import Interval
    from flopkb.grammar.magnitude import parse_magnitude
    from flopkb.kb import load_kb
    from flopkb.verify import record as rec
    from flopkb.verify.plan import Target
    from flopkb.verify.session import Session

    kb, _ = load_kb(bundled_root())
    cls, row = kb.claim(CROSSOVER.claim)
    target = Target(CROSSOVER.claim, cls, row, parse_magnitude(row.magnitude))
    session = Session(kb, tmp_path, "h200-sxm", {"gpu": "NVIDIA H200"}, "flopkb verify --gpu")
    m = CROSSOVER.measured
    judgement = Judgement(Interval.from_dict(m), m["unit"], m["what"],
                          "refuted", CROSSOVER.criterion)
    entry = {"m": Measurement({}, ROWS, {}, SPEC), "combo": {}, "timings": {}, "checks": [],
             "described": {}, "notes": [], "duration": 1.0, "rounds": []}
    reading = rec.Reading(target, {}, [], [rec.Combo(entry, "refuted", None, judgement)],
                          "refuted", None, None, False)
    drawn = rec.claim_record(session, for_kb(None).get("ssd-vs-attention"),
                             {"ssd/chunked.py": "0" * 64}, reading, {})
    assert drawn.artifacts == [f"{drawn.id}.png"]
    assert (tmp_path / drawn.artifacts[0]).read_bytes()[:4] == b"\x89PNG"
    assert drawn.measured.value == m["value"] and drawn.verdict.value == "refuted"
    # a picture that cannot be drawn costs the evidence nothing, and says why
    bare = drawn.model_copy(update={"artifacts": []})
    broken = rec.with_plot(session, bare, {"kind": "lines", "x": "no_such_column",
                                           "series": {"SSD": "ssd_ms"}})
    assert broken.artifacts == [] and "plot_error" in broken.statistics


def test_each_claim_of_one_experiment_shows_its_own_quantity() -> None:
    """scan-benchmark judges the crossover on t(attention)/t(scan) and the speed-up on
    t(pytorch)/t(scan): `measure_by_kind` picks the lower panel per claim (the speed-up's picture
    once showed the attention ratio under a 40x claim line)."""
    rows = [dict(r, pytorch_ratio=10.0 + i, pytorch_ratio_low=9.0 + i, pytorch_ratio_high=11.0 + i)
            for i, r in enumerate(ROWS)]
    spec = dict(SPEC, measure_by_kind={"crossover": "ratio", "ratio": "pytorch_ratio"})
    speedup = ClaimView(
        claim="selective-ssm-scan/fused-scan-vs-pytorch", experiment="scan-benchmark", gpu="G",
        accelerator=None, verdict="refuted",
        expected={"text": "up to 20-40x", "kind": "ratio", "low": None, "high": 40.0,
                  "condition": {}},
        measured={"value": 15.0, "low": 14.0, "high": 16.0, "unit": "x",
                  "what": "t(unfused PyTorch scan) / t(fused scan), largest over L"})
    for view, want in ((speedup, [10.0 + i for i in range(len(ROWS))]),
                       (CROSSOVER, [r["ratio"] for r in ROWS])):
        fig = plots.figure(spec, rows, view)
        try:
            measure = fig.axes[1]
            series = next(c for c in measure.containers if isinstance(c, ErrorbarContainer))
            assert list(series.lines[0].get_ydata()) == pytest.approx(want)
        finally:
            plt.close(fig)


@pytest.mark.parametrize(("value", "text"), [(19577.8, "19600"), (999.0, "999"),
                                             (1234.5, "1230"), (0.0123, "0.0123"),
                                             (2.5e10, "2.5e+10"), (999.5, "1000")])
def test_header_figures_never_use_exponents_for_thousands(value: float, text: str) -> None:
    assert plain_g(value, 3) == text


def test_a_category_chart_can_ask_for_no_measure_panel() -> None:
    """non-matmul-cost's rows (fma chain, exp chain) sweep nothing: a second panel over row numbers
    drew a line from one to the other."""
    rows = [{"chain": "fma", "ratio": 12.0, "ratio_low": 11.0, "ratio_high": 16.0},
            {"chain": "exp", "ratio": 42.0, "ratio_low": 41.0, "ratio_high": 49.0}]
    spec = {"kind": "category", "xlabel": "", "ylabel": "ratio",
            "categories": {"ratio": {"fma": 12.0, "exp": 42.0}}, "logy": False}
    for panel, axes in ((None, 2), (False, 1)):
        fig = plots.figure({**spec, **({} if panel is None else {"measure_panel": panel})}, rows,
                           BAND)
        try:
            assert len(fig.axes) == axes
        finally:
            plt.close(fig)


def test_bars_coloured_by_a_column_with_marks_text_and_their_own_measure_points() -> None:
    """The serving pictures' pieces, general: bars kept by a list filter and coloured by side, a
    floor line across each bar, floor / time over it, a log axis; a second panel of composed
    points (one per reading, not per row) with their own marks, and the claim drawn on it even
    when an error verdict measured nothing."""
    rows = [{"label": f"{side}\n{kind}", "side": side, "ms": ms, "ms_low": 0.9 * ms,
             "ms_high": 1.1 * ms, "floor_ms": ms / 4, "floor_fraction": 0.25}
            for side, kind, ms in (("model", "scan", 50.0), ("model", "mlp", 0.5),
                                   ("baseline", "attention", 200.0), ("baseline", "mlp", 0.5))]
    rows.append({**rows[0], "label": "model\nscan at another batch"})
    spec = {"kind": "bars", "x": "label", "filter": {"label": [r["label"] for r in rows[:4]]},
            "series": {"one layer": "ms"}, "colour_by": "side",
            "colour_names": {"model": "model: m", "baseline": "baseline: b"},
            "marks": {"floor": "floor_ms"}, "bar_text": {"column": "floor_fraction",
                                                         "format": "{:.0%}"},
            "logy": True, "title": "what the bars are",
            "measure_rows": [{"reading": "a", "ratio": 2.0, "ratio_low": 1.9, "ratio_high": 2.1,
                              "roof": 2.5},
                             {"reading": "b (judged)", "ratio": 3.0, "ratio_low": 2.9,
                              "ratio_high": 3.1, "roof": 2.6}],
            "measure_x": "reading", "measure_marks": {"roofline": "roof"},
            "measure_text": "{:.3g}x"}
    error = ClaimView(claim="a/b", experiment="serving-x", gpu="G", accelerator=None,
                      verdict="error", reason="implausible: above the roofline",
                      expected={"text": "up to 6x", "kind": "ratio", "low": None, "high": 6.0,
                                "unit": "x", "condition": {}})
    fig = plots.figure(spec, rows, error)
    try:
        bars, points = fig.axes[:2]
        fig.canvas.draw()
        assert [t.get_text() for t in bars.get_xticklabels()] == [r["label"] for r in rows[:4]]
        assert bars.get_legend_handles_labels()[1] == ["floor", "model: m", "baseline: b"]
        assert {p.get_facecolor() for p in bars.patches[:2]} != \
            {p.get_facecolor() for p in bars.patches[2:4]}
        floor = next(c for c in bars.collections if c.get_label() == "floor")
        assert [seg[0][1] for seg in floor.get_segments()] == [12.5, 0.125, 50.0, 0.125]
        texts = _texts(fig)
        assert texts.count("25%") == 4 and "what the bars are" in texts
        assert bars.get_yscale() == "log" and bars.get_ylim()[0] > 0
        # the points over their own categories, unjoined, their values printed, the claim drawn
        assert [t.get_text() for t in points.get_xticklabels()] == ["a", "b (judged)"]
        series = next(c for c in points.containers if isinstance(c, ErrorbarContainer))
        assert series.lines[0].get_linestyle() == "None"
        assert "2x" in texts and "3x" in texts
        labels = points.get_legend_handles_labels()[1]
        assert "roofline" in labels and "claimed up to 6x" in labels
        assert any("implausible: above the roofline" in t for t in texts)
    finally:
        plt.close(fig)


def test_many_bars_described_in_words_widen_the_figure() -> None:
    """Ten bars of three-line labels (Nemotron-H's prefill and decode layers, both sides) ran
    into each other in 9 inches: each bar keeps room for its longest label line."""
    rows = [{"label": f"baseline\nattention \u00d732\ndecode B={b}", "ms": 1.0}
            for b in range(10)]
    spec = {"kind": "bars", "x": "label", "series": {"one layer": "ms"}}
    assert plots._figure_width(spec, rows[:5]) == 9.0
    assert plots._figure_width(spec, rows) > 12.0
    assert plots._figure_width({**spec, "kind": "lines"}, rows) == 9.0
