"""Re-derive an evidence record's verdict from what it stores (MLPerf's submission checker:
recompute each result from the raw numbers, never trust the reported one).

Torch-free. For each judgement, the experiment's own `judge` (the function `verify` decided with)
reads the record's stored measurement, merged from its rounds by `flopkb.evidence.rounds` (schema 4)
or the single `statistics.data` + `sweep` a schema 3 record carries, against the claim's CURRENT
magnitude; the verdict and measured interval it gives must be the stored ones. A calibration is
re-decided from its ceilings and the accelerator's datasheet figures.

Problems are values, never raised; `flopkb.check.evidence` turns them into findings.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from flopkb.evidence import hooks, stats
from flopkb.evidence.hashing import judge_changed
from flopkb.evidence.measurement import Measurement
from flopkb.evidence.rounds import merge_rounds
from flopkb.grammar.magnitude import MagnitudeError, parse_magnitude
from flopkb.model import EvidenceRecord, Measured

# Verdicts that measured something: only they are re-derived.
MEASURING = frozenset({"confirmed", "refuted", "inconclusive"})
# Stored figures carry 6 significant digits: recomputed ones agree to better than this.
REL_TOL = 1e-4
ROUNDS_SINCE = 4

MISMATCH, MISSING, LEGACY, INCONSISTENT = "mismatch", "missing", "legacy", "inconsistent"
# evidence naming a judge_revision its experiment never declared (above the current one)
UNKNOWN_REVISION = "unknown-revision"
# quantities a hook-less declaration computes from its stored times alone (generic runner)
FROM_TIMES = frozenset({"time_ratio", "crossover", "time"})


@dataclass(frozen=True)
class Problem:
    """One reason an evidence record's verdict is not what its numbers give."""

    kind: str
    path: tuple[str | int, ...]
    message: str


def _close(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is None and b is None
    try:
        fa, fb = float(a), float(b)
    except (TypeError, ValueError):
        return a == b
    if math.isnan(fa) or math.isnan(fb):
        return math.isnan(fa) and math.isnan(fb)
    return math.isclose(fa, fb, rel_tol=REL_TOL, abs_tol=1e-12)


def same_numbers(a: Any, b: Any) -> bool:
    """Equal structures whose numbers agree to the stored precision."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same_numbers(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_numbers(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return _close(a, b)
    return a == b


def _fmt(m: Measured | None) -> str:
    if m is None:
        return "nothing"
    return f"{m.value} [{m.low}, {m.high}]"


def _effective(verdict: str, applicable: str | None) -> str:
    """The verdict the measurement gave (kept in applicable_verdict under not-applicable)."""
    return applicable if verdict == "not-applicable" and applicable else verdict


def implementation_sensitive(verdicts: list[str], schema_version: int = ROUNDS_SINCE) -> bool:
    """Whether the combinations' verdicts differ beyond the spread their intervals cover.

    Schema 4 (intervals covering the rounds): one combination confirms and another refutes; an
    inconclusive beside either is within the spread. Schema 3 (one round): any two measuring
    verdicts that differ, as verify then decided it."""
    decisive = {v for v in verdicts if v in MEASURING}
    if schema_version < ROUNDS_SINCE:
        return len(decisive) > 1
    return {"confirmed", "refuted"} <= decisive


def consistency(ev: EvidenceRecord) -> list[Problem]:
    """The top-level verdict and measured value are the first judgement's; the
    implementation-sensitive flag is what the judgements' verdicts say."""
    out: list[Problem] = []
    if not ev.judgements:
        return out
    first = ev.judgements[0]
    top = _effective(ev.verdict.value, ev.applicable_verdict.value if ev.applicable_verdict
                     else None)
    if top != first.verdict.value and not (ev.verdict.value == "not-applicable"
                                           and ev.applicable_verdict is None):
        out.append(Problem(INCONSISTENT, ("verdict",),
                           f"verdict {top!r} but judgements[0] says {first.verdict.value!r}"))
    if first.measured is not None and not same_numbers(
            (ev.measured or Measured(value=None, unit="")).model_dump(),
            first.measured.model_dump()):
        out.append(Problem(INCONSISTENT, ("measured",),
                           f"measured {_fmt(ev.measured)} but judgements[0] measured "
                           f"{_fmt(first.measured)}"))
    for base, measured in [((), ev.measured)] + [
            (("judgements", i), j.measured) for i, j in enumerate(ev.judgements)]:
        why = _outside(measured)
        if why:
            out.append(Problem(MISMATCH, (*base, "measured"), why))
    verdicts = [j.verdict.value for j in ev.judgements]
    decisive = {v for v in verdicts if v in MEASURING}
    if ev.implementation_sensitive != implementation_sensitive(verdicts, ev.schema_version):
        out.append(Problem(INCONSISTENT, ("implementation_sensitive",),
                           f"implementation_sensitive is {str(ev.implementation_sensitive).lower()}"
                           f" but the judgements' verdicts are {sorted(decisive) or 'none'}"))
    return out


def _outside(m: Measured | None) -> str | None:
    """Why a stored figure is not inside its own stored interval (None when it is, or has none)."""
    if m is None or m.value is None:
        return None
    low, high = m.low, m.high
    if (low is not None and m.value < low * (1 - REL_TOL)) or (
            high is not None and m.value > high * (1 + REL_TOL)) or (
            low is not None and high is not None and low > high * (1 + REL_TOL)):
        return f"stored measured {_fmt(m)}: the value lies outside its own interval"
    return None


def _round_rows(rounds: list[Any]) -> list[tuple[tuple, dict[str, Any]]]:
    """(path in the record, row) of every row the rounds store: each data.primary, each sweep
    row."""
    out = []
    for ri, r in enumerate(rounds):
        primary = r.data.get("primary")
        if isinstance(primary, dict):
            out.append(((ri, "data", "primary"), primary))
        out += [((ri, "sweep", si), row) for si, row in enumerate(r.sweep)
                if isinstance(row, dict)]
    return out


def _from_times(prod: Any, row: dict[str, Any]) -> tuple[Any, Any, Any] | None:
    """(value, low, high) a hook-less declaration's runner computed `prod` from the row's own
    times (flopkb.evidence.stats.ratio_interval for a ratio), None when the row lacks them."""
    def ms(side: str | None, suffix: str = "") -> Any:
        return row.get(f"{side}{suffix}_ms")

    if prod.quantity == "time":
        parts = (ms(prod.side), ms(prod.side, "_p10"), ms(prod.side, "_p90"))
    else:
        n, d = prod.numerator, prod.denominator
        parts = (ms(n), ms(n, "_p10"), ms(n, "_p90"), ms(d), ms(d, "_p10"), ms(d, "_p90"))
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0
               for x in parts):
        return None
    if prod.quantity == "time":
        return parts
    n_med, n_p10, n_p90, d_med, d_p10, d_p90 = parts
    return n_med / d_med, n_p10 / d_p90, n_p90 / d_p10


def times_problems(kb: Any, ev: EvidenceRecord) -> list[Problem]:
    """Rows of a hook-less declaration's evidence whose stored ratio or time does not follow
    from the stored times beside it (whatever the judge revision: the arithmetic is the
    runner's, not the judge's). Bundled hooks compute their figures their own ways: their rows
    are re-derived through their judge only."""
    catalogue = kb.catalogue()
    if not catalogue.exists(ev.experiment):
        return []
    info = catalogue.get(ev.experiment)
    if info.hook is not None or info.declaration is None:
        return []
    prods = [p for p in info.declaration.produces if p.quantity in FROM_TIMES]
    out: list[Problem] = []
    sources = [(("rounds",), ev.rounds)] + [(("judgements", i, "rounds"), j.rounds)
                                             for i, j in enumerate(ev.judgements) if i > 0]
    for base, rounds in sources:
        for path, row in _round_rows(list(rounds)):
            for prod in prods:
                key = prod.quantity if prod.side is None else f"{prod.quantity}_{prod.side}"
                if key not in row:
                    continue
                want = _from_times(prod, row)
                got = (row.get(key), row.get(f"{key}_low"), row.get(f"{key}_high"))
                if want is None:
                    out.append(Problem(MISMATCH, (*base, *path, key),
                                       f"{key} {got[0]} is stored without the times it is "
                                       "computed from"))
                elif not all(_close(g, w) for g, w in zip(got, want, strict=True)):
                    out.append(Problem(MISMATCH, (*base, *path, key),
                                       f"stored {key} {got[0]} [{got[1]}, {got[2]}] does not "
                                       f"follow from the stored times beside it ({want[0]:.6g} "
                                       f"[{want[1]:.6g}, {want[2]:.6g}])"))
                if len(out) >= 5:
                    return out
    return out


def _source(ev: EvidenceRecord, index: int) -> tuple[dict[str, Any], list[Any]] | None:
    """(data, sweep) judgement `index` was decided from, or None when the record lacks it."""
    rounds = ev.rounds if index == 0 else ev.judgements[index].rounds
    if rounds:
        return merge_rounds([r.model_dump(mode="json") for r in rounds])
    if index == 0 and ev.schema_version < ROUNDS_SINCE:
        data = ev.statistics.get("data")
        if isinstance(data, dict) and (data or ev.sweep):
            return data, list(ev.sweep)
    return None


def _judge(ev: EvidenceRecord, mod: Any, mag: Any, data: dict[str, Any], sweep: list[Any]):
    return mod.judge(Measurement(data, sweep, dict(ev.conditions)), mag, dict(ev.conditions))


def judge_stored(kb: Any, ev: EvidenceRecord, data: dict[str, Any], sweep: list[Any],
                 mag: Any):
    """`ev`'s experiment's own judge on stored (merged) numbers under `ev`'s conditions: the
    reading `rederive` checks a record with, and `flopkb.evidence.pooled` pools runs with. Raises
    LookupError where `judge_module` has no judge to give."""
    mod = judge_module(kb, ev.experiment)
    if mod is None:
        raise LookupError(f"no judge validate may run for {ev.experiment!r}")
    return _judge(ev, mod, mag, data, sweep)


def _one(ev: EvidenceRecord, index: int, verdict: str, measured: Measured | None, mod: Any,
         mag: Any) -> list[Problem]:
    base: tuple[str | int, ...] = () if index == 0 else ("judgements", index)
    where = (*base, "verdict")
    source = _source(ev, index)
    legacy = ev.schema_version < ROUNDS_SINCE
    if source is None:
        if legacy and index > 0:
            # schema 3 kept only the first combination's measurement: nothing to re-derive from
            return []
        return [Problem(MISSING, where,
                        f"verdict {verdict!r} cannot be re-derived: the record stores no "
                        "measurement (" + ("statistics.data and sweep" if legacy else "rounds")
                        + ") to judge again")]
    data, sweep = source
    try:
        again = _judge(ev, mod, mag, data, sweep)
    except Exception as exc:
        # any failure of the experiment's own reading on stored numbers: it cannot re-derive
        kind = LEGACY if legacy else MISSING
        return [Problem(kind, where, f"verdict {verdict!r} cannot be re-derived from the stored "
                        f"measurement ({type(exc).__name__}: {exc})")]
    out: list[Problem] = []
    if again.verdict != verdict:
        out.append(Problem(MISMATCH, where, f"stored verdict {verdict!r}, but its stored "
                           f"measurement against the claim's magnitude gives {again.verdict!r} "
                           f"({again.criterion})"))
    got = again.measured
    if measured is not None and not all(
            _close(x, y) for x, y in ((measured.value, got.value), (measured.low, got.low),
                                      (measured.high, got.high))):
        out.append(Problem(MISMATCH, (*base, "measured"),
                           f"stored measured {_fmt(measured)}, but its stored measurement gives "
                           f"{got.value} [{got.low}, {got.high}]"))
    if index == 0 and ev.rounds and not (same_numbers(ev.statistics.get("data"), data)
                                         and same_numbers(list(ev.sweep), sweep)):
        out.append(Problem(MISMATCH, ("sweep",),
                           "statistics.data and sweep are not the merge of the record's rounds"))
    return out


def _calibration(kb: Any, ev: EvidenceRecord) -> list[Problem]:
    c = ev.ceilings
    if not isinstance(c.get("bf16_tflops"), (int, float)) or not isinstance(
            c.get("copy_gbps"), (int, float)):
        return [Problem(MISSING, ("verdict",), f"calibration verdict {ev.verdict.value!r} cannot "
                        "be re-derived: no measured ceilings")]
    acc = kb.accelerators.get(ev.accelerator) if ev.accelerator else None
    specs = acc.specs if acc else {}
    flops, bw = specs.get("bf16_tensor_flops"), specs.get("hbm_bandwidth")
    again, _ = stats.ceiling_verdict(float(c["bf16_tflops"]), float(c["copy_gbps"]),
                                     flops.value if flops else None, bw.value if bw else None)
    if again != ev.verdict.value:
        return [Problem(MISMATCH, ("verdict",), f"stored verdict {ev.verdict.value!r}, but the "
                        f"stored ceilings against {ev.accelerator}'s datasheet give {again!r}")]
    return []


def judge_module(kb: Any, name: str) -> Any:
    """What reads experiment `name`'s stored numbers, without running any code of the KB: the
    bundled hook module, or the declaration-only runner for a hook-less declaration (the KB's
    own or a bundled one). None for an unknown experiment (FKB502) or one whose hook lives below
    the KB's kernels/: validate never imports the KB's code (FKB517 says so)."""
    catalogue = kb.catalogue()
    if not catalogue.exists(name) or catalogue.get(name).runs_kb_code:
        return None
    return hooks.experiment_module(catalogue.get(name), kb.root, kb_code=False)


def claim_magnitude(kb: Any, ev: EvidenceRecord) -> Any:
    """The current magnitude of the claim `ev` measured, or None when there is nothing to judge
    against: the claim or experiment is unknown (FKB501 / FKB502 report it) or the claim's
    magnitude does not parse (the claim row's own finding, rule 5)."""
    found = kb.claim(ev.claim) if ev.claim else None
    if found is None or not kb.catalogue().exists(ev.experiment):
        return None
    try:
        return parse_magnitude(found[1].magnitude)
    except MagnitudeError:
        return None


def rederive(kb: Any, ev: EvidenceRecord) -> list[Problem]:
    """Every reason `ev`'s verdicts are not what its stored numbers give (empty: they are)."""
    out = consistency(ev)
    top = _effective(ev.verdict.value,
                     ev.applicable_verdict.value if ev.applicable_verdict else None)
    if ev.claim is None:
        if top in MEASURING and ev.ceilings.get("origin", "").startswith("measured"):
            out.extend(_calibration(kb, ev))
        return out
    mag = claim_magnitude(kb, ev)
    if mag is None:
        return out
    out.extend(times_problems(kb, ev))
    changed = judge_changed(kb.catalogue(), ev)
    if changed and changed[0] > changed[1]:
        # a rule never declared: nothing can read it, and it must not pass for a stale one
        out.append(Problem(UNKNOWN_REVISION, ("judge_revision",),
                           f"judge_revision {changed[0]} is above experiment {ev.experiment!r}'s "
                           f"current {changed[1]}: no such judging rule was declared"))
        return out
    if changed:
        # read under an earlier rule: stale (FKB504), not a mismatch with the current judge; it
        # must still store what it measured, or it is a verdict with nothing behind it
        out.extend(_unmeasured(ev))
        return out
    mod = judge_module(kb, ev.experiment)
    if mod is None:
        # the KB's own hook judges it: not run here (FKB517, a note)
        return out
    if top in MEASURING:
        out.extend(_one(ev, 0, top, ev.measured, mod, mag))
    for i, j in enumerate(ev.judgements[1:], start=1):
        if j.verdict.value in MEASURING:
            out.extend(_one(ev, i, j.verdict.value, j.measured, mod, mag))
    return out


def _unmeasured(ev: EvidenceRecord) -> list[Problem]:
    """MISSING for each measuring verdict of `ev` (schema 4) that stores no rounds."""
    if ev.schema_version < ROUNDS_SINCE:
        return []
    top = _effective(ev.verdict.value,
                     ev.applicable_verdict.value if ev.applicable_verdict else None)
    verdicts = [(0, top)] + [(i, j.verdict.value) for i, j in enumerate(ev.judgements)
                             if i > 0]
    return [Problem(MISSING, (() if i == 0 else ("judgements", i)) + ("verdict",),
                    f"verdict {v!r} stores no measurement (rounds): nothing stands behind it")
            for i, v in verdicts if v in MEASURING and _source(ev, i) is None]


def untrusted(kb: Any) -> dict[str, list[Problem]]:
    """evidence id -> its problems, for every evidence record of `kb` that has any."""
    out: dict[str, list[Problem]] = {}
    for eid, ev in sorted(kb.evidence.items()):
        try:
            problems = rederive(kb, ev)
        except Exception as exc:
            # one record's unreadable numbers never stop the others' re-derivation
            problems = [Problem(MISSING, ("verdict",), f"cannot be re-derived "
                                f"({type(exc).__name__}: {exc})")]
        if problems:
            out[eid] = problems
    return out
