"""A model's serving speed composed from per-layer timings, and the readings that judge a claim.

No torch here: the GPU side (`flopkb.verify.experiments.serving`) times one sublayer of each type
at the claim's shapes; this module multiplies by the architecture's counts
(`flopkb.architecture.cost`'s `sublayer_types`, the same counting as the computed parameters)
and derives:

- prefill time of a batch of `prefill_batch` prompts of L tokens = sum over types t of
  count[t] * prefill[t]; prefill tokens/s = prefill_batch * L / that time;
- decode step time at context L and batch B = sum over t of count[t] * decode[t]; TPOT is that
  time, decode tokens/s per sequence 1 / TPOT, in total B / TPOT;
- end to end for `output` tokens after the prompt: B * output / (prefill time scaled to B prompts
  + output * decode step time), the decode step timed at one context for every step (the
  caller picks it: the longest context, a bound on both models alike).

The embeddings and the output head are not sublayers and are left out of both models alike.
Every figure is an `Interval` (median, p10-sum, p90-sum): medians add, and the band adds the low
ends and the high ends, so a ratio of two composed figures takes its conservative corners.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from flopkb.architecture.cost import compute, roofline, sublayer_types
from flopkb.evidence.stats import Interval
from flopkb.model import ArchitectureRecord

# a timing may be a bare number of seconds or an Interval of seconds
Seconds = float | Interval


class ServingError(ValueError):
    """Timings that cannot be composed: a layer type without a timing, a non-positive time."""


def layer_counts(arch: ArchitectureRecord) -> dict[str, int]:
    """Sublayers of each type in `arch` (the pattern's counts), by layer type name."""
    _, counts = sublayer_types(arch)
    return {t.value: n for t, n in sorted(counts.items(), key=lambda kv: kv[0].value)}


def _interval(name: str, value: Seconds) -> Interval:
    iv = value if isinstance(value, Interval) else Interval(float(value), float(value),
                                                           float(value))
    parts = (iv.value, iv.low, iv.high)
    if any(p is None or not math.isfinite(p) or p <= 0 for p in parts):
        raise ServingError(f"expected a positive finite time for {name}, got {iv.as_dict()}")
    assert iv.low is not None and iv.high is not None and iv.value is not None
    if not iv.low <= iv.value <= iv.high:
        raise ServingError(f"expected low <= value <= high for {name}, got {iv.as_dict()}")
    return iv


def compose_time(
    counts: Mapping[str, int], per_layer: Mapping[str, Seconds], what: str
) -> Interval:
    """sum over types of count * time, as an Interval; every counted type needs a time."""
    missing = sorted(t for t, n in counts.items() if n and t not in per_layer)
    if missing:
        raise ServingError(f"no {what} timing for layer type(s) {', '.join(missing)}")
    value = low = high = 0.0
    for t, n in counts.items():
        if not n:
            continue
        iv = _interval(f"{what}[{t}]", per_layer[t])
        value += n * iv.value  # type: ignore[operator]
        low += n * iv.low  # type: ignore[operator]
        high += n * iv.high  # type: ignore[operator]
    return Interval(value, low, high)


def rate(work: float, seconds: Interval) -> Interval:
    """work / time: the band's low end from the slow end of the time."""
    return Interval(work / seconds.value, work / seconds.high, work / seconds.low)  # type: ignore[operator]


def ratio(num: Interval, den: Interval) -> Interval:
    """num / den of two positive rates, conservative corners."""
    return Interval(num.value / den.value, num.low / den.high, num.high / den.low)  # type: ignore[operator]


@dataclass(frozen=True)
class Composed:
    """One model's composed serving figures (seconds, tokens/s)."""

    architecture: str
    counts: dict[str, int]
    prompt_length: int
    prefill_batch: int
    decode_context: int
    decode_batch: int
    prefill_s: Interval | None  # None: prefill not timed (a decode-only claim)
    decode_step_s: Interval

    def _prefill(self) -> Interval:
        if self.prefill_s is None:
            raise ServingError(f"{self.architecture}: prefill was not timed")
        return self.prefill_s

    @property
    def prefill_tokens_per_s(self) -> Interval:
        return rate(self.prefill_batch * self.prompt_length, self._prefill())

    @property
    def decode_tokens_per_s_per_sequence(self) -> Interval:
        return rate(1.0, self.decode_step_s)

    @property
    def decode_tokens_per_s(self) -> Interval:
        """In total over the batch."""
        return rate(float(self.decode_batch), self.decode_step_s)

    @property
    def tpot_ms(self) -> Interval:
        s = self.decode_step_s
        return Interval(s.value * 1e3, s.low * 1e3, s.high * 1e3)  # type: ignore[operator]

    def end_to_end_tokens_per_s(self, output: int) -> Interval:
        """Output tokens per second of B prompts then `output` decode steps each; the prefill
        time is scaled from the timed prefill batch to B prompts (prompts are independent)."""
        if output < 1:
            raise ServingError(f"expected output tokens >= 1, got {output}")
        scale = self.decode_batch / self.prefill_batch
        p, d = self._prefill(), self.decode_step_s
        total = Interval(p.value * scale + output * d.value,  # type: ignore[operator]
                         p.low * scale + output * d.low,  # type: ignore[operator]
                         p.high * scale + output * d.high)  # type: ignore[operator]
        return rate(float(self.decode_batch * output), total)

    def as_dict(self) -> dict[str, Any]:
        return {
            "architecture": self.architecture, "counts": dict(self.counts),
            "prompt_length": self.prompt_length, "prefill_batch": self.prefill_batch,
            "decode_context": self.decode_context, "decode_batch": self.decode_batch,
            "prefill_s": None if self.prefill_s is None else self.prefill_s.as_dict(),
            "decode_step_s": self.decode_step_s.as_dict(),
            "prefill_tokens_per_s": (None if self.prefill_s is None
                                     else self.prefill_tokens_per_s.as_dict()),
            "decode_tokens_per_s_per_sequence": self.decode_tokens_per_s_per_sequence.as_dict(),
            "decode_tokens_per_s": self.decode_tokens_per_s.as_dict(),
            "tpot_ms": self.tpot_ms.as_dict(),
        }  # fmt: skip


def compose(
    architecture: str,
    counts: Mapping[str, int],
    prefill: Mapping[str, Seconds] | None,
    decode: Mapping[str, Seconds],
    *,
    prompt_length: int,
    decode_context: int,
    decode_batch: int,
    prefill_batch: int = 1,
) -> Composed:
    """Compose one model; `prefill[t]` is one sublayer of type t over `prefill_batch` prompts of
    `prompt_length` tokens, `decode[t]` one sublayer's decode step at `decode_context` and
    `decode_batch` (seconds); `prefill` None leaves prefill out (decode-only claims)."""
    for name, v in (("prompt_length", prompt_length), ("decode_context", decode_context),
                    ("decode_batch", decode_batch), ("prefill_batch", prefill_batch)):
        if not isinstance(v, int) or v < 1:
            raise ServingError(f"expected {name} a positive integer, got {v!r}")
    return Composed(architecture, dict(counts), prompt_length, prefill_batch, decode_context,
                    decode_batch,
                    None if prefill is None else compose_time(counts, prefill, "prefill"),
                    compose_time(counts, decode, "decode"))


def memory_limited_batch(arch: ArchitectureRecord, context: int, accelerator: str,
                         hw: Mapping[str, float | None], cap: int) -> int:
    """The largest batch whose KV cache and state fit beside the weights at `context`
    (`flopkb.architecture.cost.roofline`'s max_batch), at most `cap` (what a run can time)."""
    bound = roofline(compute(arch, context=context), accelerator, hw)
    if bound.max_batch is None:
        if bound.note and "no per-sequence cache" in bound.note:
            return cap
        raise ServingError(f"{arch.id}: no memory-limited batch on {accelerator}: {bound.note}")
    if bound.max_batch < 1:
        raise ServingError(f"{arch.id} does not fit one sequence at context {context} on "
                           f"{accelerator}")
    return min(bound.max_batch, cap)


# What each phase's reading compares: model / baseline of this figure.
PHASES = ("prefill", "decode", "end_to_end")


@dataclass(frozen=True)
class Reading:
    """A claim read at one set of conditions: model / baseline tokens/s."""

    name: str
    what: str
    model: Interval
    baseline: Interval
    model_batch: int
    baseline_batch: int

    @property
    def ratio(self) -> Interval:
        return ratio(self.model, self.baseline)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "what": self.what, "model": self.model.as_dict(),
                "baseline": self.baseline.as_dict(), "ratio": self.ratio.as_dict(),
                "model_batch": self.model_batch, "baseline_batch": self.baseline_batch}


def reading(name: str, phase: str, model: Composed, baseline: Composed,
            output: int | None = None) -> Reading:
    """The tokens/s ratio of `phase`: prefill tokens/s, decode tokens/s in total at each
    model's batch, or end-to-end output tokens/s for `output` tokens."""
    if phase == "prefill":
        m, b = model.prefill_tokens_per_s, baseline.prefill_tokens_per_s
        what = f"prefill tokens/s at L={model.prompt_length}"
    elif phase == "decode":
        m, b = model.decode_tokens_per_s, baseline.decode_tokens_per_s
        what = f"decode tokens/s (total) at context {model.decode_context}"
    elif phase == "end_to_end":
        if output is None:
            raise ServingError("an end-to-end reading needs the output token count")
        m, b = model.end_to_end_tokens_per_s(output), baseline.end_to_end_tokens_per_s(output)
        what = f"output tokens/s, {model.prompt_length} in / {output} out"
    else:
        raise ServingError(f"expected phase in {PHASES}, got {phase!r}")
    if model.decode_batch == baseline.decode_batch:
        what += f", batch {model.decode_batch}"
    else:
        what += f", batch {model.decode_batch} vs {baseline.decode_batch}"
    return Reading(name, what, m, b, model.decode_batch, baseline.decode_batch)
