"""How the committed verify runs agree, claim by claim: each run's verdict and figure, whether
each value lies inside the other runs' bands, the pooled figure, and the spread of one run's
rounds against the spread between runs."""

from __future__ import annotations

import statistics
from typing import Any

from flopkb.model import EvidenceRecord, Measured

from .fmt import band, paragraph, table
from .readings import value_text
from .sources import ACCELERATOR, Sources
from .verdicts import CLAIMS

BLOCK = "run-agreement"

def _run_cell(e: EvidenceRecord, stale: bool) -> str:
    m = e.measured
    figure = (f" {value_text(m)} {band(m.low, m.high)}" if m is not None and m.value is not None
              and m.low is not None and m.high is not None else "")
    return f"{e.verdict.value}{figure}" + (" (stale)" if stale else "")


def _inside(m: Measured | None, other: Measured | None) -> bool | None:
    """Whether `m`'s value lies in `other`'s band (None: one of them has no band)."""
    if m is None or other is None or None in (m.value, other.low, other.high):
        return None
    return other.low <= m.value <= other.high


def _when(run: dict[str, Any]) -> str:
    return run["start"].strftime("%Y-%m-%d %H:%M")


def _columns(src: Sources) -> list[dict[str, Any]]:
    """The runs the agreement table shows: those with a fresh record of a table claim."""
    fresh = {e.id for p in src.pooled.values() for e in p.runs if not p.stale}
    wanted = {e.id for c in CLAIMS for e in src.runs(c)}
    return [r for r in src.verify_runs(BLOCK) if r["ids"] & wanted & fresh]


def _round_values(src: Sources, e: EvidenceRecord) -> list[float]:
    """Each of `e`'s rounds judged alone (the value a one-round run would have reported)."""
    from flopkb.evidence.rederive import judge_stored
    from flopkb.evidence.rounds import merge_rounds
    from flopkb.grammar.magnitude import parse_magnitude

    mag = parse_magnitude((e.expected or {}).get("text") or "qualitative")
    out = []
    for r in e.rounds:
        data, sweep = merge_rounds([r.model_dump(mode="json")])
        m = judge_stored(src.kb, e, data, sweep, mag).measured
        if m is not None and m.value is not None:
            out.append(float(m.value))
    return out


def _spread(values: list[float]) -> float | None:
    mid = statistics.median(values) if values else 0
    return (max(values) - min(values)) / abs(mid) if len(values) > 1 and mid else None


def agreement_rows(src: Sources) -> tuple[list[str], list[list[str]]]:
    """One row per claim: each run's verdict and figure, whether the verdicts agree, whether each
    run's value lies inside every other run's band, and the pooled figure."""
    columns = _columns(src)
    fresh = {e.id for p in src.pooled.values() for e in p.runs if not p.stale}
    rows = []
    for claim, label in CLAIMS.items():
        runs = [e for e in src.runs(claim) if e.id in fresh]
        cells = []
        for col in columns:
            mine = [e for e in runs if e.id in col["ids"]]
            cells.append(_run_cell(mine[0], False) if mine else "-")
        verdicts = {e.verdict.value for e in runs}
        agree = "-" if len(runs) < 2 else ("yes" if len(verdicts) == 1 else "**no**")
        inside = [_inside(a.measured, b.measured) for a in runs for b in runs if a is not b]
        figures = ("-" if len(runs) < 2 or None in inside
                   else "yes" if all(inside) else "**no**")
        p = src.pooled.get(claim)
        rows.append([f"`{claim}` ({label})", *cells, agree, figures,
                     p.figure.text() if p is not None and p.figure else "-"])
    heads = [f"run {_when(c)}" for c in columns]
    return heads, rows


def spread_rows(src: Sources) -> list[list[str]]:
    """Per claim with two or more runs that store rounds: the spread of its rounds inside each
    run against the spread of the runs' values, both relative to the median."""
    fresh = {e.id for p in src.pooled.values() for e in p.runs if not p.stale}
    rows = []
    for claim, label in CLAIMS.items():
        runs = [e for e in src.runs(claim) if e.id in fresh and e.rounds and e.measured]
        if len(runs) < 2:
            continue
        within = [x for x in (_spread(_round_values(src, e)) for e in runs) if x is not None]
        between = _spread([float(e.measured.value) for e in runs])
        if not within or between is None:
            continue
        w = max(within)
        rows.append([f"`{claim}` ({label})", str(len(runs)), f"{100 * w:.1f}%",
                     f"{100 * between:.1f}%", "yes" if between > w else "no"])
    return rows


def block_run_agreement(src: Sources) -> str:
    heads, rows = agreement_rows(src)
    text = table(["claim (A1-D4)", *heads, "verdicts agree",
                  "each value inside the other runs' bands", "pooled over the runs' rounds"],
                 rows)
    both = [r for r in rows if r[len(heads) + 1] != "-"]
    same = sum(1 for r in both if r[len(heads) + 1] == "yes")
    held = sum(1 for r in both if r[len(heads) + 2] == "yes")
    legend = "; ".join(
        f"{_when(c)}: `{c['command']}`" + (f" (`{c['json']}`, {c['duration_s']:.0f} s)"
                                           if c["json"] else "")
        for c in _columns(src))
    spread = spread_rows(src)
    beyond = [r for r in spread if r[-1] == "yes"]
    worst = max(beyond, key=lambda r: float(r[3].rstrip("%")) / max(float(r[2].rstrip("%")),
                                                                        1e-9), default=None)
    return (text + "\n" + paragraph(
        f"From the committed evidence on {ACCELERATOR} (`records/evidence/`; {legend}): of the "
        f"{len(both)} claims measured in more than one run whose kernels are the current ones, "
        f"the verdicts agree for {same} and each run's value lies inside every other run's band "
        f"for {held}. A run's band is its rounds merged (three rounds since 2026-12-02; the "
        "2026-12-01 run had one), so a value outside another run's band is a shift between "
        "processes or machines that no round inside one process saw. The last column merges "
        "every run's rounds as one run merges its own and judges them again: that interval "
        "covers the runs' spread, and it is what `flopkb claims` shows beside the verdict.")
        + "\n" + table(["claim", "runs with rounds", "largest spread of one run's rounds",
                           "spread of the runs' values", "runs spread wider"], spread)
        + "\n" + paragraph(
        f"Spreads are (max - min) / median, each round judged alone. For {len(beyond)} of the "
        f"{len(spread)} claims the runs' values spread wider than the rounds inside any one run"
        + (f" (most: {worst[0]}, {worst[3]} between runs against {worst[2]} within one)"
           if worst else "") + "."))

