"""The serving measurement from per-layer timings, pure (tests drive it with fake times): the
claim's conditions read, the batches of each reading, each layer's fastest correct
implementation picked, the model composed from those and from the layers' floors (the roofline
ratio), every implementation's time and floor fraction kept in the sweep rows, and the claim's
picture described (`picture`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from flopkb.architecture.serving import compose, layer_counts, memory_limited_batch, reading
from flopkb.architecture.show import hardware_values
from flopkb.evidence.measurement import Measurement, size_of
from flopkb.evidence.stats import Interval
from flopkb.hardware.model import HardwareModel
from flopkb.verify.errors import ExperimentError

from .picture import labelled, plot_spec

READINGS = ("equal_batch", "memory_limited")
SIDES = (("model", "model"), ("baseline", "baseline_architecture"))
# what every serving declaration shares; its `point` names the rest (flopkb.verify.runner)
DEFAULTS: dict[str, Any] = {
    "batch": 1, "reading": "equal_batch", "accelerator": "h200-sxm", "max_batch": 64,
    "control_memory_gb": None, "reading_why": "",
}


@dataclass
class LayerTimes:
    """One layer type's timings in one phase (and batch): seconds per implementation that ran
    and passed its check, the implementations declared but not run here (`skipped`, name ->
    why: a peer absent, a build that failed), the decode steps refused for not being
    graph-capturable (`refused`), the floor (seconds; None without ceilings) and the work it is
    computed from."""

    impls: dict[str, Interval]
    skipped: dict[str, str] = field(default_factory=dict)
    floor_s: float | None = None
    work: dict[str, float] = field(default_factory=dict)
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def chosen(self) -> str:
        """The fastest implementation by median."""
        return min(self.impls, key=lambda n: self.impls[n].value)  # type: ignore[arg-type, return-value]

    @property
    def default(self) -> str:
        """The first timed implementation in the layer table's order (its default)."""
        return next(iter(self.impls))


def as_layer(t: LayerTimes | Interval) -> LayerTimes:
    """A bare Interval is one bundled implementation without a floor."""
    return t if isinstance(t, LayerTimes) else LayerTimes({"bundled": t})


def setup(cond: dict[str, Any]) -> dict[str, Any]:
    """The conditions as numbers: sizes like '128K' read (K = 1024), the phase checked."""
    s = dict(cond)
    if "input_tokens" in s:  # the end-to-end claims' name for the prompt length
        s["prompt_length"] = s["input_tokens"]
    for key in ("prompt_length", "batch", "output_tokens", "generated_tokens", "max_batch",
                "context_length", "control_memory_gb"):
        if s.get(key) is not None:
            s[key] = size_of(s[key])
    if s["phase"] not in ("prefill", "decode", "end_to_end"):
        raise ExperimentError(f"unknown phase {s['phase']!r}")
    if s["reading"] not in READINGS:
        raise ExperimentError(f"unknown reading {s['reading']!r}; expected one of {READINGS}")
    if s["phase"] == "decode":
        if s.get("generated_tokens"):
            # a generation of n tokens after a short prompt, timed at its mean context
            s["decode_context"] = max(1, s.get("prompt_length", 0) + s["generated_tokens"] // 2)
        else:
            s["decode_context"] = s["context_length"]
    elif s["phase"] == "end_to_end":
        s["decode_context"] = s["prompt_length"] + s["output_tokens"] // 2
    else:
        s["decode_context"] = s["prompt_length"]
    return s


def _memory_readings(s: dict[str, Any], kb: Any) -> dict[str, tuple[str, dict[str, Any]]]:
    """memory-limited reading -> (what its batches are sized for, the hardware values they are
    sized with): `memory_limited` on the declared `accelerator`, and with `control_memory_gb` the
    same rule on that much memory (`memory_limited_<N>gb`). Empty when no reading asks."""
    if not (s["reading"] == "memory_limited" or s.get("also_memory_limited")):
        return {}
    hw = hardware_values(HardwareModel(kb), s["accelerator"], "bf16")
    gb = hw["memory_capacity"]
    out = {"memory_limited": (str(s["accelerator"]) + (f" ({gb:g} GB)" if gb else ""), hw)}
    if s.get("control_memory_gb"):
        control = float(s["control_memory_gb"])
        out[f"memory_limited_{control:g}gb"] = (f"{control:g} GB",
                                                {**hw, "memory_capacity": control})
    return out


def batches(s: dict[str, Any], kb: Any) -> dict[str, dict[str, int]]:
    """reading -> side -> batch: `equal_batch` at the declared batch, each memory-limited reading
    at each model's largest batch on the memory it is sized for (`_memory_readings`)."""
    out = {"equal_batch": {"model": s["batch"], "baseline": s["batch"]}}
    for name, (_, hw) in _memory_readings(s, kb).items():
        out[name] = _largest_batches(s, kb, hw)
    return out


def memory_sizes(s: dict[str, Any], kb: Any) -> dict[str, tuple[str, float | None]]:
    """reading -> (what its batches are sized for, GB; None where the part states no memory),
    for the memory-limited readings `batches` makes."""
    return {name: (what, hw["memory_capacity"])
            for name, (what, hw) in _memory_readings(s, kb).items()}


def _largest_batches(s: dict[str, Any], kb: Any, hw: Any) -> dict[str, int]:
    return {side: memory_limited_batch(kb.architectures[s[key]], s["decode_context"],
                                       s["accelerator"], hw, s["max_batch"])
            for side, key in SIDES}


def _pick(table: dict[str, Any], how: str) -> dict[str, Interval] | None:
    """type -> seconds of each layer's `how` implementation: 'chosen', 'default' or 'floor'
    (None when a layer has no floor)."""
    out: dict[str, Interval] = {}
    for t, raw in table.items():
        lt = as_layer(raw)
        if how == "floor":
            if lt.floor_s is None:
                return None
            out[t] = Interval(lt.floor_s, lt.floor_s, lt.floor_s)
        else:
            out[t] = lt.impls[lt.chosen if how == "chosen" else lt.default]
    return out


def _readings(s: dict[str, Any], times: dict[str, Any], kb: Any,
              per_reading: dict[str, dict[str, int]], how: str
              ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    readings: dict[str, Any] = {}
    composed: dict[str, Any] = {}
    for name, sides in per_reading.items():
        both = {}
        for side, key in SIDES:
            arch, t = kb.architectures[s[key]], times[side]
            pre = _pick(t["prefill"], how) if t.get("prefill") else None
            dec = _pick(t["decode"][sides[side]], how) if s["phase"] != "prefill" else pre
            if dec is None or (s["phase"] != "decode" and pre is None):
                return None
            both[side] = compose(arch.id, layer_counts(arch), pre, dec,
                                 prompt_length=max(1, s.get("prompt_length") or 1),
                                 decode_context=s["decode_context"], decode_batch=sides[side],
                                 prefill_batch=s["batch"])
            composed[f"{name}/{side}"] = both[side].as_dict()
        readings[name] = reading(name, s["phase"], both["model"], both["baseline"],
                                 s.get("output_tokens")).as_dict()
    return readings, composed


def _tables(per: dict[str, Any]) -> list[tuple[str, int | None, dict[str, Any]]]:
    out: list[tuple[str, int | None, dict[str, Any]]] = []
    if per.get("prefill"):
        out.append(("prefill", None, per["prefill"]))
    for batch, table in (per.get("decode") or {}).items():
        out.append(("decode", batch, table))
    return out


def _ms(iv: Interval) -> dict[str, float]:
    return {"ms": iv.value * 1e3, "ms_low": iv.low * 1e3, "ms_high": iv.high * 1e3}  # type: ignore[operator]


def layer_row(side: str, phase: str, batch: int | None, kind: str, lt: LayerTimes
              ) -> dict[str, Any]:
    """One sweep row: the chosen implementation's time, its floor and achieved fraction, and
    every implementation's time and floor fraction."""
    best = lt.impls[lt.chosen]
    row: dict[str, Any] = {"side": side, "phase": phase, "layer_type": kind}
    if batch:
        row["batch"] = batch
    row.update(_ms(best), implementation=lt.chosen, default=lt.default)
    if lt.floor_s is not None:
        row["floor_ms"] = lt.floor_s * 1e3
        row["floor_fraction"] = lt.floor_s / best.value  # type: ignore[operator]
        # faster than the bytes it must read from HBM: served from L2 (its weights, replayed
        # back to back), which a whole model streaming every layer's weights would not be
        row["faster_than_floor"] = row["floor_fraction"] > 1.0
    row["implementations"] = {
        n: {**_ms(iv), **({"floor_fraction": lt.floor_s / iv.value}  # type: ignore[operator]
                          if lt.floor_s is not None else {})}
        for n, iv in lt.impls.items()}
    if lt.skipped:
        row["skipped"] = dict(lt.skipped)
    if lt.refused:
        row["refused"] = dict(lt.refused)
    row.update(lt.work)
    return row


def build(s: dict[str, Any], times: dict[str, Any], kb: Any,
          per_reading: dict[str, dict[str, int]]) -> Measurement:
    """The Measurement from per-layer times: times[side]['prefill'] {type: LayerTimes or
    Interval} or None, times[side]['decode'][batch] {type: ...}. Readings compose each layer's
    fastest implementation; `default_readings` each layer's default; `roofline` the floors."""
    readings, composed = _readings(s, times, kb, per_reading, "chosen")  # type: ignore[misc]
    default = _readings(s, times, kb, per_reading, "default")
    floors = _readings(s, times, kb, per_reading, "floor")
    rows = [layer_row(side, phase, batch, t, as_layer(lt))
            for side, per in times.items() for phase, batch, table in _tables(per)
            for t, lt in table.items()]
    data = {"setup": {k: v for k, v in s.items() if isinstance(v, (int, float, str))},
            "readings": readings, "claim_reading": s["reading"], "composed": composed,
            "default_readings": {n: r["ratio"] for n, r in default[0].items()} if default
            else {},
            "roofline": {n: r["ratio"]["value"] for n, r in floors[0].items()} if floors
            else {}}
    # each row labelled for its bar, and the picture described (the record's `statistics.plot`)
    rows = labelled(rows, data)
    return Measurement(data, rows, dict(s), plot=plot_spec(data, rows))
