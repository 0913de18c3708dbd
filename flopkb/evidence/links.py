"""Typed links: a claim's magnitude form must be something its experiment produces, and the
claim's class must be what one of the experiment's sides stands for. Torch-free (validate).

- "3x" (ratio) needs a ratio (time, memory or throughput); "20%" a ratio read as percent, a
  share or a roofline fraction; "3:1" a share; "crossover at 2K" a crossover; "Q=64" a setting
  the experiment judges; "740 TFLOP/s" a throughput of the same dimension; "1.7 ms" a time;
  "80 GB" a memory figure; "qualitative" an experiment that declares its qualitative criterion,
  or one that produces an equivalence.
- Absolute magnitudes come from `flopkb.grammar.magnitude` (kind "absolute" with a `dimension`) once
  that grammar has them; this module reads them through `getattr`, so it works before and after.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

RATIOS = frozenset({"time_ratio", "memory_ratio", "throughput_ratio"})
ACCEPTS: dict[str, frozenset[str]] = {
    "ratio": RATIOS,
    "percent": RATIOS | {"share", "roofline_fraction"},
    "proportion": frozenset({"share"}),
    "crossover": frozenset({"crossover"}),
    "value": frozenset({"setting"}),
}
# absolute dimension -> the produced quantity that measures it
BY_DIMENSION = {"flop_rate": "throughput", "byte_rate": "throughput", "token_rate": "throughput",
                "time": "time", "bytes": "memory"}
# the base unit of each absolute dimension (what the magnitude grammar's low/high are in)
BASE_UNIT = {"flop_rate": "FLOP/s", "byte_rate": "B/s", "token_rate": "tokens/s", "time": "s",
             "bytes": "B"}
# Units a throughput declares, by dimension, with the factor to the base unit. A local table, so
# that declarations and the hook-less runner read units without the magnitude grammar's.
_PREFIX = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}
_RATE = re.compile(r"^(?P<p>[kKMGTP]?)(?P<u>FLOP/s|FLOPS|OP/s|OPS|B/s|tokens/s|token/s)$")
_DIMENSION = {"FLOP/s": "flop_rate", "FLOPS": "flop_rate", "OP/s": "flop_rate",
              "OPS": "flop_rate", "B/s": "byte_rate", "tokens/s": "token_rate",
              "token/s": "token_rate"}


@dataclass(frozen=True)
class RateUnit:
    dimension: str
    factor: float
    text: str


def rate_unit(text: str | None) -> RateUnit | None:
    """'TFLOP/s' -> (flop_rate, 1e12); None when it is no rate unit this table knows."""
    if not text:
        return None
    m = _RATE.match(text.strip())
    if m is None:
        return None
    return RateUnit(_DIMENSION[m["u"]], _PREFIX[m["p"]], text.strip())


def produced(decl: Any) -> list[tuple[str, str | None]]:
    """(quantity, dimension or None) of everything a declaration produces."""
    out = []
    for p in getattr(decl, "produces", []) or []:
        unit = rate_unit(p.unit) if p.quantity == "throughput" else None
        out.append((p.quantity, unit.dimension if unit else None))
    return out


def magnitude_mismatch(decl: Any, mag: Any) -> str | None:
    """Why `decl` cannot judge magnitude `mag` (a parsed Magnitude), or None when it can."""
    quantities = produced(decl)
    names = {q for q, _ in quantities}
    shown = ", ".join(sorted(names)) or "nothing"
    if mag.kind == "qualitative":
        # "B computes the same as A" is read by the equivalence itself, against its tolerance
        if getattr(decl, "qualitative", None) is None and "equivalence" not in names:
            return ("the claim is qualitative, and the experiment declares no qualitative "
                    f"criterion (it produces {shown})")
        return None
    dimension = getattr(mag, "dimension", None)
    if mag.kind == "absolute" or dimension is not None:
        want = BY_DIMENSION.get(str(dimension))
        if want is None:
            return f"no experiment quantity measures the dimension {dimension!r}"
        if want == "throughput":
            dims = {d for q, d in quantities if q == "throughput" and d}
            if dimension not in dims:
                of = f" (throughput as {', '.join(sorted(dims))})" if dims else ""
                return (f"{mag.text!r} is a {dimension.replace('_', ' ')}, and the experiment "
                        f"produces {shown}{of}")
            return None
        return None if want in names else (f"{mag.text!r} needs a {want}, and the experiment "
                                           f"produces {shown}")
    accepted = ACCEPTS.get(mag.kind, frozenset())
    if names & accepted:
        return None
    return (f"{mag.text!r} ({mag.kind}) needs one of {', '.join(sorted(accepted))}; the "
            f"experiment produces {shown}")


def subject_mismatch(decl: Any, record_id: str, subject: str | None) -> str | None:
    """Why the claim of class `record_id` is not about what `decl` measures, or None."""
    sides = {s.name: s for s in getattr(decl, "sides", []) or []}
    if subject is not None:
        if subject not in sides:
            return (f"subject {subject!r} is not a side of the experiment (sides: "
                    f"{', '.join(sides) or 'none'})")
        return None
    classes = set(getattr(decl, "subjects", []) or [])
    for side in sides.values():
        classes.update(side.classes)
    if record_id in classes:
        return None
    about = ", ".join(sorted(classes)) or "no class"
    return f"the claim is about {record_id!r}; the experiment's sides stand for {about}"


def link_problem(decl: Any, record_id: str, subject: str | None, mag: Any) -> str | None:
    """Why a claim row cannot be judged by the experiment it links (FKB527 or FKB528's reason),
    or None; `mag` None (it did not parse) skips the magnitude's part."""
    if decl is None:
        return None
    why = magnitude_mismatch(decl, mag) if mag is not None else None
    if why:
        return f"the experiment cannot judge this magnitude (FKB527): {why}"
    why = subject_mismatch(decl, record_id, subject)
    if why:
        return f"the experiment does not measure this claim (FKB528): {why}"
    return None
