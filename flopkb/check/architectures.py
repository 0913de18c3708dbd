"""Architecture records and the model-level claim figures computed from them.

Every value of an architecture record is sourced with a locator (as accelerator specs are); its
references resolve; its layer types have the sizes their cost formulas need; the parameter count
computed from it lies near the one its source reports (a typo in a size shows here). A claim row
with `derived_from` names an architecture-level computed value (`flopkb.architecture.show`): the
value must agree with the row's magnitude within the magnitude's rounding (92% covers [91.5, 92.5]).
"""

from __future__ import annotations

from collections.abc import Iterator

from flopkb.architecture.cost import ArchitectureError, compute
from flopkb.architecture.show import derived_values, shown
from flopkb.check.base import CheckContext, check
from flopkb.findings import Finding
from flopkb.grammar.magnitude import Magnitude, MagnitudeError, parse_magnitude
from flopkb.model import ArchitectureRecord, ClassRecord

# How far the computed count may lie from the reported one before a size is suspect: the cost
# formulas leave out biases and small vectors, and reported counts are rounded (8B, 47B).
PARAMETER_TOLERANCE = 0.10
MAGNITUDE_UNIT = {"percent": "%", "ratio": "x", "proportion": ":"}


def _sourced(ctx: CheckContext, arch: ArchitectureRecord) -> Iterator[Finding]:
    known = ctx.kb.sources.keys() | ctx.kb.unloaded.keys()
    refs = [(("layers", "source"), arch.layers.source)]
    refs += [
        (("config", key, "source"), getattr(arch.config, key).source)
        for key in type(arch.config).model_fields
        if getattr(arch.config, key) is not None
    ]
    refs += [(("sources", i), ref) for i, ref in enumerate(arch.sources)]
    if arch.parameters_source is not None:
        refs.append((("parameters_source",), arch.parameters_source))
    for path, ref in refs:
        if ref is None or not (ref.locator or "").strip():
            what = ".".join(str(p) for p in path[:-1] or path)
            yield ctx.finding(
                "FKB901", arch.id, path, f"{what} has no source with a locator",
                "cite the config file and key, or the paper's section or table",
            )  # fmt: skip
        if ref is not None and ref.id not in known:
            yield ctx.finding("FKB902", arch.id, (*path, "id"), f"no source record {ref.id!r}")
    family = arch.family
    if family is not None and family not in ctx.kb.classes and family not in ctx.kb.unloaded:
        yield ctx.finding("FKB902", arch.id, ("family",), f"no class record {family!r}")


def _computable(ctx: CheckContext, arch: ArchitectureRecord) -> Iterator[Finding]:
    try:
        costs = compute(arch)
    except ArchitectureError as exc:
        yield ctx.finding("FKB903", arch.id, ("config",), str(exc))
        return
    reported = arch.parameters_reported
    if reported and costs.parameters and arch.config.vocab_size is not None:
        off = abs(costs.parameters - reported) / reported
        if off > PARAMETER_TOLERANCE:
            yield ctx.finding(
                "FKB906", arch.id, ("parameters_reported",),
                f"computed {costs.parameters:.4g} parameters, the source reports {reported:.4g} "
                f"({off:.0%} apart)", "check the sizes against the config",
            )  # fmt: skip


def _tolerance(figure: str) -> float:
    """Half a unit in the last written digit: 92 -> 0.5, 3.73 -> 0.005."""
    decimals = len(figure.partition(".")[2])
    return 0.5 * 10.0**-decimals


def _agrees(mag: Magnitude, value: float) -> bool:
    figures = list(mag.figures)
    if mag.kind == "proportion":
        b = mag.condition["b"]
        return abs(value - mag.low) <= _tolerance(figures[0]) / b  # type: ignore[operator]
    tol_low = _tolerance(figures[0]) if figures else 0.0
    tol_high = _tolerance(figures[1] if len(figures) > 1 and mag.bound == "range" else figures[0])
    if mag.bound == "approx":
        # "~20%": the rounding, or a tenth of the figure, whichever is wider
        tol_low = tol_high = max(tol_low, 0.1 * abs(mag.low or 0.0))
    if mag.low is not None and value < mag.low - tol_low:
        return False
    return not (mag.high is not None and value > mag.high + tol_high)


def _rows(ctx: CheckContext, rid: str, record: ClassRecord) -> Iterator[Finding]:
    kb = ctx.kb
    for i, name in enumerate(record.architectures):
        if name not in kb.architectures and name not in kb.unloaded:
            yield ctx.finding(
                "FKB902", rid, ("architectures", i), f"no architecture record {name!r}"
            )
    for i, row in enumerate(record.flop.hardware_parameters):
        spec = row.derived_from
        if spec is None:
            continue
        at = ("flop", "hardware_parameters", i, "derived_from")
        missing = [a for a in spec.architectures if a not in kb.architectures]
        if missing:
            for name in missing:
                if name not in kb.unloaded:
                    yield ctx.finding("FKB902", rid, (*at, "architectures"),
                                      f"no architecture record {name!r}")  # fmt: skip
            continue
        try:
            mag = parse_magnitude(row.magnitude)
        except MagnitudeError:
            continue  # the magnitude checks report it
        values = derived_values(kb, spec)
        for got in values:
            if got.error is not None or got.value is None:
                yield ctx.finding("FKB905", rid, at, f"{got.label}: {got.error}")
                continue
            if MAGNITUDE_UNIT.get(mag.kind) != got.unit:
                yield ctx.finding(
                    "FKB905", rid, (*at, "value"),
                    f"{spec.value.value} is in {got.unit!r}, the magnitude {row.magnitude!r} "
                    f"is {mag.kind}",
                )  # fmt: skip
                continue
            if not _agrees(mag, got.value):
                yield ctx.finding(
                    "FKB904", rid, (*at, "value"),
                    f"the magnitude says {row.magnitude!r}; computed {got.label}: "
                    f"{shown(got.value, got.unit)}",
                    "correct the figure, or the architecture record it is computed from",
                )  # fmt: skip


@check
def architecture_checks(ctx: CheckContext) -> Iterator[Finding]:
    """FKB901-FKB906 over architecture records and the rows that name them."""
    for aid, arch in sorted(ctx.kb.architectures.items()):
        yield from ctx.isolated(aid, _sourced(ctx, arch))
        yield from ctx.isolated(aid, _computable(ctx, arch))
    for rid, record in sorted(ctx.kb.classes.items()):
        yield from ctx.isolated(rid, _rows(ctx, rid, record))
