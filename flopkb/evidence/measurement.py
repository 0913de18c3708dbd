"""What an experiment measured and how it was judged, torch-free: `verify` decides with these and
`flopkb validate` re-derives a stored verdict with the same ones (`flopkb.evidence.rederive`).

`Measurement` is what a hook's `measure` returns (the numbers its `judge` reads, the sweep rows,
a picture's description); `Judgement` is what `judge` gives. `resolve` merges a claim row's
conditions over an experiment's defaults; `judge_ratio` reads a ratio against a ratio or a
qualitative magnitude by the rule of `flopkb.evidence.stats`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flopkb.evidence import stats
from flopkb.evidence.stats import Interval
from flopkb.grammar.magnitude import Magnitude

if TYPE_CHECKING:
    from flopkb.model.experiment import Experiment

# The `pass` condition: forward, backward, or forward+backward (a training step).
PASSES = ("forward", "backward", "forward+backward")
# Conditions a row quotes to say how its source measured, not knobs of a run: recorded beside
# the run as `source_<key>`, never honoured (the run is on the part at hand, with its own code).
SOURCE_CONDITIONS = ("hardware", "engine", "metric", "precision", "published_batch",
                     "compared_with")
ALIASES = {"fwd": "forward", "prefill": "forward", "inference": "forward", "bwd": "backward",
           "training": "forward+backward", "train": "forward+backward",
           "fwd+bwd": "forward+backward", "forward-backward": "forward+backward"}


def normalise(value: Any) -> str | None:
    """A row's `pass` as one of PASSES, or None when it names none of them."""
    text = str(value).strip().lower()
    text = ALIASES.get(text, text)
    return text if text in PASSES else None


@dataclass
class Measurement:
    """What `measure` found: numbers for `judge`, per-point rows, and a plot description."""

    data: dict[str, Any]
    sweep: list[dict[str, Any]] = field(default_factory=list)
    conditions: dict[str, Any] = field(default_factory=dict)
    plot: dict[str, Any] | None = None


@dataclass
class Judgement:
    measured: Interval
    unit: str
    what: str
    verdict: str
    criterion: str
    reason: str | None = None


def resolve(defaults: dict[str, Any], row: dict[str, Any],
            passes: tuple[str, ...] = ("forward",)) -> tuple[dict[str, Any], list[str]]:
    """Merge a claim row's conditions over the experiment's defaults.

    Returns (conditions used, notes on conditions that could not be honoured). `pass` is read
    as forward | backward | forward+backward (aliases in ALIASES); a pass the experiment does
    not measure (`passes`, its module's PASSES) is noted and the forward pass measured.
    """
    cond = dict(defaults)
    notes: list[str] = []
    for key, value in row.items():
        if key == "pass":
            wanted = normalise(value)
            if wanted in passes:
                cond["pass"] = wanted
            else:
                notes.append(f"pass={value} not measured: this experiment measures "
                             f"{', '.join(passes)}")
                cond["pass"] = "forward"
        elif key in SOURCE_CONDITIONS:
            cond[f"source_{key}"] = value
        elif key in defaults:
            cond[key] = value
        else:
            notes.append(f"condition {key}={value} has no knob in this experiment")
    return cond, notes


def size_of(value: Any) -> int:
    """'16K' / '2k' / 4096 -> int (K = 1024)."""
    if isinstance(value, (int, float)):
        return int(value)
    text = str(value).strip().lower()
    scale = {"k": 1024, "m": 1024**2}.get(text[-1:], 1)
    return int(float(text[:-1] if scale > 1 else text) * scale)


def ratio_of(row: dict[str, Any]) -> Interval:
    """A sweep row's ratio with its p10/p90 band (keys ratio, ratio_low, ratio_high)."""
    return Interval(row["ratio"], row["ratio_low"], row["ratio_high"])


def judge_ratio(primary: Interval, mag: Magnitude | None, *, what: str, unit: str = "x",
                threshold: float = 1.0, qualitative: str) -> Judgement:
    """Read a ratio measurement against a ratio magnitude, or a qualitative one by threshold."""
    if mag is None or mag.kind == "qualitative":
        verdict = stats.decide_above(primary, threshold)
        return Judgement(primary, unit, what, verdict, qualitative)
    if mag.kind in {"ratio", "value"}:
        lo, hi = stats.claimed_ratio_interval(mag)
        verdict = stats.decide(primary, lo, hi)
        crit = (f"measured interval inside the claimed {mag.text!r} widened to "
                f"[{_fmt(lo)}, {_fmt(hi)}]")
        return Judgement(primary, unit, what, verdict, crit)
    return Judgement(primary, unit, what, "error", "",
                     reason=f"this experiment measures a ratio; magnitude kind {mag.kind!r} "
                     f"({mag.text!r}) has no reading here")


def primary_ratio_judge(
    what: Callable[[dict[str, Any], dict[str, Any]], str],
) -> Callable[..., Judgement]:
    """The `judge` of a hook whose claim reads the primary row's ratio (`ratio_of`) by
    `judge_ratio`, a qualitative magnitude by its declaration's criterion; `what(primary, cond)`
    says what the ratio is of."""

    def judge(m: Measurement, mag: Any, cond: dict[str, Any], *,
              declaration: Experiment) -> Judgement:
        p = m.data["primary"]
        return judge_ratio(ratio_of(p), mag, what=what(p, cond),
                           qualitative=declaration.qualitative_criterion)

    return judge


def _fmt(x: float | None) -> str:
    return "open" if x is None else f"{x:.3g}"


def point_row(**kw: Any) -> dict[str, Any]:
    return {k: v for k, v in kw.items() if v is not None}
