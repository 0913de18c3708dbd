"""A released model's configuration as data: its layer pattern and sizes, every value sourced.

The same form for every size of a family (as HF transformers configs are): one record per
released model (`nemotron-h-8b`), linked from its class record (`nemotron-h`) through the class's
`architectures` list. Each value is a `Sourced` figure like an accelerator spec: value, source
with a locator (file + key of the released config, or paper section / table), and a note where
sources conflict or a value could not be checked. A value not found stays out (or `null` with a
note); it is never filled in by guess.

The layer pattern is one string, one character per sublayer, each character named in `legend`
(Nemotron-H's `M-M-M-M*-...`). `layer_width` says how many characters make one layer as the
model counts its layers: 1 for Nemotron-H and Samba (a Mamba, an attention and an MLP are each a
layer), 2 for Llama, Jamba, Mixtral and Kimi Linear (each layer is a mixer and an MLP/MoE).
`repeat` repeats the string (Llama-3.1-70B is `*-` 80 times). Where the published order is not
known, `counts` gives how many sublayers of each type there are instead.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, StringConstraints, model_validator

from flopkb.model.base import (
    Kind,
    NonEmpty,
    RecordBase,
    RecordId,
    SourceRef,
    Strict,
    a_number,
)

# Bounds that keep computed figures finite on hostile input (a 10^9-character pattern, a
# d_model of 10^300); far above any released model.
MAX_PATTERN_CHARS = 4096
MAX_REPEAT = 1024
# pattern x repeat: the layers a cost computation walks (Llama-3.1-405B has 252 sublayers)
MAX_SUBLAYERS = 65536
MAX_SIZE = 10**9

Size = Annotated[int, Field(ge=1, le=MAX_SIZE), BeforeValidator(a_number)]


class LayerType(str, Enum):
    """What one sublayer is; `flopkb.architecture.cost` has a cost formula for each."""

    attention = "attention"  # softmax attention (MHA/GQA) over the whole context
    sliding_attention = "sliding_attention"  # softmax attention over the last `sliding_window`
    mla = "mla"  # multi-head latent attention (compressed KV cache)
    mamba1 = "mamba1"  # selective SSM, one state per channel (Gu & Dao 2023)
    mamba2 = "mamba2"  # SSD, one decay per head (Dao & Gu 2024)
    kda = "kda"  # Kimi Delta Attention (gated delta rule, per-channel decay)
    mlp = "mlp"  # dense feed-forward
    moe = "moe"  # mixture-of-experts feed-forward


ATTENTION_TYPES = frozenset({LayerType.attention, LayerType.sliding_attention, LayerType.mla})
RECURRENT_TYPES = frozenset({LayerType.mamba1, LayerType.mamba2, LayerType.kda})
MIXER_TYPES = ATTENTION_TYPES | RECURRENT_TYPES


class SourcedSize(Strict):
    """A whole-number figure (a size, a count) with where it was read."""

    value: Size | None
    source: SourceRef | None = None
    note: str | None = None


class SourcedFlag(Strict):
    value: bool | None
    source: SourceRef | None = None
    note: str | None = None


class SourcedText(Strict):
    value: NonEmpty | None
    source: SourceRef | None = None
    note: str | None = None


class MlpActivation(str, Enum):
    swiglu = "swiglu"  # gated: three matrices (gate, up, down)
    relu2 = "relu2"  # squared ReLU, not gated: two matrices (Nemotron-H)
    gelu = "gelu"


class SourcedActivation(Strict):
    value: MlpActivation | None
    source: SourceRef | None = None
    note: str | None = None


Pattern = Annotated[str, StringConstraints(min_length=1, max_length=MAX_PATTERN_CHARS)]


class Layers(Strict):
    pattern: Pattern | None = Field(
        default=None, description="one character per sublayer, each named in `legend`"
    )
    legend: dict[Annotated[str, StringConstraints(min_length=1, max_length=1)], LayerType] = Field(
        default_factory=dict, description="pattern character -> layer type"
    )
    repeat: Annotated[int, Field(ge=1, le=MAX_REPEAT), BeforeValidator(a_number)] = Field(
        default=1, description="the pattern string repeated this many times"
    )
    layer_width: Annotated[int, Field(ge=1, le=16), BeforeValidator(a_number)] = Field(
        default=1, description="pattern characters per layer, as the model counts its layers"
    )
    counts: dict[LayerType, Size] | None = Field(
        default=None,
        min_length=1,
        description="sublayers per type, where the published order is not known",
    )
    source: SourceRef | None = None
    note: str | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Layers:
        if (self.pattern is None) == (self.counts is None):
            raise ValueError("give the layers as `pattern` (with `legend`) or `counts`, not both")
        if self.pattern is not None:
            unknown = sorted(set(self.pattern) - set(self.legend))
            if unknown:
                raise ValueError(f"pattern characters without a legend entry: {unknown}")
            if len(self.pattern) * self.repeat > MAX_SUBLAYERS:
                raise ValueError(
                    f"pattern x repeat gives {len(self.pattern) * self.repeat} sublayers; "
                    f"at most {MAX_SUBLAYERS}"
                )
            if len(self.pattern) % self.layer_width:
                raise ValueError(
                    f"a pattern of {len(self.pattern)} characters does not split into layers of "
                    f"{self.layer_width}"
                )
        return self


class ArchConfig(Strict):
    """Sizes of a released model; names follow the HF config keys they come from (in notes)."""

    d_model: SourcedSize | None = None
    vocab_size: SourcedSize | None = None
    tied_embeddings: SourcedFlag | None = None
    max_context: SourcedSize | None = None
    attention_heads: SourcedSize | None = None
    kv_heads: SourcedSize | None = None
    head_dim: SourcedSize | None = None
    sliding_window: SourcedSize | None = None
    q_lora_rank: SourcedSize | None = None
    kv_lora_rank: SourcedSize | None = None
    qk_nope_head_dim: SourcedSize | None = None
    qk_rope_head_dim: SourcedSize | None = None
    v_head_dim: SourcedSize | None = None
    mlp_size: SourcedSize | None = None
    mlp_activation: SourcedActivation | None = None
    experts: SourcedSize | None = None
    experts_per_token: SourcedSize | None = None
    shared_experts: SourcedSize | None = None
    expert_mlp_size: SourcedSize | None = None
    moe_every: SourcedSize | None = None
    ssm_kind: SourcedText | None = None
    ssm_state_size: SourcedSize | None = None
    ssm_heads: SourcedSize | None = None
    ssm_head_dim: SourcedSize | None = None
    ssm_expand: SourcedSize | None = None
    ssm_conv_width: SourcedSize | None = None
    ssm_groups: SourcedSize | None = None
    ssm_dt_rank: SourcedSize | None = None
    linear_heads: SourcedSize | None = None
    linear_head_dim: SourcedSize | None = None
    linear_conv_width: SourcedSize | None = None


class ArchitectureRecord(RecordBase):
    kind: Literal[Kind.architecture]
    family: RecordId | None = Field(default=None, description="the class record of the family")
    parameters_reported: Annotated[float, Field(gt=0), BeforeValidator(a_number)] | None = Field(
        default=None, description="total parameter count as the source states it (for comparison)"
    )
    parameters_source: SourceRef | None = None
    layers: Layers
    config: ArchConfig
    sources: list[SourceRef] = Field(default_factory=list)
    notes: str | None = Field(
        default=None, description="conflicts between sources, values not found, caveats"
    )
