"""Model-level serving claims: each layer type timed at the claim's shapes by every declared
implementation (`kernels/layers/impls.py`), each checked against the layer's float32 reference
first; the fastest correct one per layer composed by the architecture's pattern counts
(`flopkb.architecture.serving`), read as model / baseline tokens/s, and judged beside its floors.

The hook of the four serving declarations (`experiments/serving-*.yaml`); each declaration's
`point` gives the claim's conditions (the model and baseline architecture records, the phase,
lengths, batch and the reading the claim states) over `DEFAULTS`, its `floor_fraction` the
floor rule's threshold, its sides' `implementations` what is timed. Phases:

- `prefill`: prefill tokens/s of `batch` prompts of `prompt_length`;
- `decode`: decode tokens/s in total at the batch, the step timed at `decode_context`;
- `end_to_end`: output tokens/s of `prompt_length` in / `output_tokens` out.

A generation of n tokens is timed at its mean context (`prompt + n/2`): per-step time is linear in
the context (attention reads L keys; everything else is constant), so n steps at the mean context
take the sum of the n steps' times. Readings: `equal_batch` (both at `batch`) and, where
`memory_limited` is asked for, each model at the largest batch its KV cache and state allow on
`accelerator` (`flopkb.architecture.cost`, at most `max_batch`), and where the declaration names
`control_memory_gb`, the same rule on that much memory (`memory_limited_80gb`: an H100's 80 GB for a
claim published there). The verdict reads `reading`; the others are reported beside it, and the
declaration's `reading_why` (which reading of the source's conditions is judged, and why) is
stated in the verdict. The rules the verdict is read by: `judging`.

Modules: `compose` (conditions, readings, the measurement from per-layer times: pure), `run`
(the device side), `judging` (the verdict), `checks` (the CPU check), `picture` (the claim's
picture as data; `plot_spec` describes it again from the merged rounds, as it holds figures).
"""

from __future__ import annotations

from .checks import cpu_check
from .compose import DEFAULTS, READINGS, LayerTimes, batches, build, setup
from .judging import judge
from .picture import plot_spec
from .run import measure

# execute.py runs one measurement whatever --impl asks: `measure` times every implementation the
# sides declare, per layer, and composes the fastest correct one
TIMES_EVERY_IMPLEMENTATION = True

__all__ = ["DEFAULTS", "READINGS", "LayerTimes", "batches", "build", "cpu_check", "judge",
           "measure", "plot_spec", "setup"]
