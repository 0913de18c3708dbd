"""Experiment declarations: what `flopkb verify` runs, written as data in a KB's `experiments/`.

One YAML file per experiment, file stem == `id`, beside `records/` and `kernels/`. The bundled
experiments are declared the same way (the bundled KB's `experiments/` folder). A declaration
names the sides of the comparison and the implementations that can run each (default first),
the inputs, each implementation's correctness reference, the quantity it produces, the sweep
axes and the claim's point. Where a declaration cannot say what to do, `hook` names the Python
module that does it (the module protocol of `flopkb.verify.experiments`).

Callables are written `module:function`: `torch...` modules are torch's; any other module is
a path below the KB's `kernels/` folder (`rmsnorm.fused:rmsnorm` is
`kernels/rmsnorm/fused.py`'s `rmsnorm`), falling back to the bundled kernels when the KB has
no such operator folder. Nothing here imports torch.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, StringConstraints, field_validator, model_validator

from flopkb.model.base import NonEmpty, RecordId, Strict

EXPERIMENT_FORMAT = 1
Name = Annotated[str, StringConstraints(pattern=r"^[a-z0-9][a-z0-9_-]*$", max_length=80)]
Identifier = Annotated[str, StringConstraints(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", max_length=64)]
# `package.module:function`: dotted identifiers, one colon, one function name
Callable = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*:[A-Za-z_][A-Za-z0-9_]*$",
        max_length=200,
    ),
]
HookName = Annotated[
    str,
    StringConstraints(
        pattern=r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*(:[A-Za-z_][A-Za-z0-9_]*)?$",
        max_length=200,
    ),
]
Scalar = str | int | float | bool
Quantity = Literal[
    "time_ratio", "memory_ratio", "throughput_ratio", "crossover", "throughput", "time",
    "memory", "roofline_fraction", "share", "distinct_results", "setting", "equivalence",
]
Dtype = Literal["float64", "float32", "float16", "bfloat16", "int64", "int32", "int8"]
Distribution = Literal["normal", "uniform", "positive", "ones"]
# sweep states (the cartesian product of the axes) one declaration may ask for
MAX_STATES = 4096
# what the declaration-only (hook-less) runner computes; the rest need a hook
GENERIC_QUANTITIES = frozenset({"time_ratio", "throughput", "time", "crossover",
                                "roofline_fraction", "equivalence"})


class Implementation(Strict):
    """One implementation of a side. A bare name in YAML (`bundled`, `mamba_ssm`) is an
    implementation a hook knows how to run; `call` makes it runnable without a hook."""

    name: Name
    call: Callable | None = Field(default=None, description="module:function that runs it")
    reference: Callable | None = Field(
        default=None, description="its correctness reference (default: the side's reference)"
    )
    tolerance: float | None = Field(default=None, gt=0, le=1,
                                    description="relative L2 error allowed against the reference")


class Side(Strict):
    """One side of the comparison: its implementations (default first)."""

    name: Name
    # a bare name is shorthand for {name: ...}; the schema says both (see _bare_names)
    implementations: list[Implementation | Name] = Field(min_length=1, max_length=16)
    reference: Callable | None = Field(default=None,
                                       description="correctness reference of every implementation")
    classes: list[RecordId] = Field(
        default_factory=list,
        description="class records this side stands for: a claim of one of them may link here",
    )
    flops: str | None = Field(default=None, description="FLOPs per call, over the axis names")
    bytes: str | None = Field(default=None, description="bytes moved per call, over the axes")

    @field_validator("implementations", mode="after")
    @classmethod
    def _bare_names(cls, value: list[Implementation | str]) -> list[Implementation]:
        return [Implementation(name=v) if isinstance(v, str) else v for v in value]


class Input(Strict):
    """One input every implementation receives, in order."""

    name: Identifier
    maker: str = Field(default="tensor", max_length=200,
                       description="a bundled input maker, or module:function of the KB")
    shape: list[int | Identifier] = Field(default_factory=list, max_length=8,
                                          description="sizes or axis names")
    dtype: Dtype = "float32"
    distribution: Distribution = "normal"
    scale: float = 1.0
    seed: int = Field(default=0, ge=0)


class Produced(Strict):
    """A quantity the experiment produces, and how the hook-less runner computes it."""

    quantity: Quantity
    numerator: Name | None = Field(default=None, description="time_ratio: t(numerator) / ...")
    denominator: Name | None = Field(default=None, description="time_ratio: ... / t(denominator)")
    side: Name | None = Field(default=None, description="throughput, time, roofline_fraction")
    work: str | None = Field(default=None, description="throughput: work per call over the axes")
    unit: str | None = Field(default=None, max_length=40,
                             description="throughput: the unit of the work per second")
    axis: Identifier | None = Field(default=None, description="crossover: the swept axis")
    # equivalence (flopkb.evidence.equivalence): each output within atol + rtol * max |ref|
    atol: float | None = Field(default=None, ge=0, le=1e6,
                               description="equivalence: absolute tolerance")
    rtol: float | None = Field(default=None, ge=0, le=1e6,
                               description="equivalence: tolerance relative to max |reference|")
    outputs: list[Identifier] = Field(
        default_factory=list, max_length=16,
        description="equivalence: names of the outputs compared, in order (e.g. [o, state])",
    )

    @model_validator(mode="after")
    def _tolerance(self) -> Produced:
        # an equivalence without its tolerance could not be judged again from stored numbers
        if self.quantity == "equivalence" and (self.atol is None or self.rtol is None):
            raise ValueError("equivalence needs its tolerance: atol and rtol")
        if self.quantity != "equivalence" and (
                self.atol is not None or self.rtol is not None or self.outputs):
            raise ValueError("atol, rtol and outputs belong to an equivalence")
        return self


class Qualitative(Strict):
    """How a qualitative claim is judged: the text, and for the hook-less runner a threshold."""

    criterion: NonEmpty
    above: float | None = Field(default=None,
                                description="confirmed above this (x 1.05), refuted below it")
    below: float | None = Field(default=None, description="confirmed at or under this")


class Experiment(Strict):
    """One experiment `flopkb verify` can run."""

    format: Literal[1] = Field(default=EXPERIMENT_FORMAT, description="declaration format")
    id: RecordId
    title: NonEmpty
    hook: HookName | None = Field(
        default=None, description="Python module doing what the declaration cannot say"
    )
    claims: list[NonEmpty] = Field(default_factory=list,
                                   description="labels of the claims it was written for")
    kernels: list[NonEmpty] = Field(
        default_factory=list,
        description="paths below kernels/ hashed into the evidence (a trailing / is a folder)",
    )
    measures: NonEmpty
    criterion: NonEmpty
    sweep: NonEmpty = "none"
    time_limit_s: float = Field(default=60.0, gt=0, le=3600)
    # Evidence records the revision it was judged under; raising it stales that evidence rather
    # than letting re-derivation call a verdict read by the old rule a forgery.
    judge_revision: int = Field(
        default=1, ge=1, le=1_000_000,
        description="raise it when the way a verdict is read changes (reading point, criterion, "
        "tolerance): evidence judged under another revision is stale, not re-derived",
    )
    # the serving hook's floor rule: a layer timed below this fraction of its floor does not
    # judge the claim while an implementation of it that might be faster was not run
    floor_fraction: float | None = Field(
        default=None, gt=0, le=1,
        description="a layer below this fraction of its roofline floor does not judge the "
        "claim while a declared implementation of it was not run (serving experiments)",
    )
    # `verify --gpu` runs the `kernels` suite unless `--suite` names others: the model-level
    # serving experiments (`models`) take minutes each and would push the default run past 10
    suite: Identifier = Field(
        default="kernels", description="the suite it belongs to (verify --suite NAME)"
    )
    needs: list[RecordId] = Field(default_factory=list,
                                  description="quantities the accelerator must have")
    subjects: list[RecordId] = Field(
        default_factory=list, description="class records it is about, besides its sides' classes"
    )
    sides: list[Side] = Field(default_factory=list, max_length=8)
    inputs: list[Input] = Field(default_factory=list, max_length=32)
    axes: dict[Identifier, list[Scalar]] = Field(default_factory=dict)
    point: dict[Identifier, Scalar] = Field(
        default_factory=dict, description="the claim's point: where the verdict is read"
    )
    cpu_point: dict[Identifier, Scalar] = Field(
        default_factory=dict, description="small sizes for the CPU correctness check"
    )
    # a bare quantity name is shorthand for {quantity: ...}
    produces: list[Produced | Quantity] = Field(default_factory=list, max_length=8)
    qualitative: Qualitative | None = None

    @property
    def qualitative_criterion(self) -> str:
        """The text a qualitative verdict of this experiment states: its `qualitative.criterion`,
        the one place a hook's criterion is written. '' without a qualitative block: no
        qualitative claim may link it then (FKB527), and a figure is read by its own criterion."""
        return self.qualitative.criterion if self.qualitative is not None else ""

    @field_validator("produces", mode="after")
    @classmethod
    def _bare_quantities(cls, value: list[Produced | str]) -> list[Produced]:
        return [Produced(quantity=v) if isinstance(v, str) else v for v in value]

    @field_validator("axes")
    @classmethod
    def _axes_bounded(cls, value: dict[str, list[Scalar]]) -> dict[str, list[Scalar]]:
        states = 1
        for name, values in value.items():
            if not values:
                raise ValueError(f"axis {name!r} has no values")
            if len(values) > 64:
                raise ValueError(f"axis {name!r} has {len(values)} values; at most 64")
            states *= len(values)
        # the sweep is the cartesian product: bounded before anything enumerates it
        if states > MAX_STATES:
            raise ValueError(f"the axes make {states} sweep states; at most {MAX_STATES}")
        return value
