"""The runner of hook-less experiments: everything it does comes from the declaration.

For each state of the sweep (the cartesian product of the declared axes, the claim's point first;
with --quick the point alone, or the crossover axis through it) it makes the inputs, runs the
implementation chosen for each side, checks its output against its reference (a fast wrong kernel
never confirms anything), times it with `Context.time` (device events, warm-up, median of many
repetitions, the roofline floor from the side's FLOP and byte formulas), and computes the produced
quantities. `judge` reads the claim's magnitude against the quantity that matches its form, with
the verdict rule of `flopkb.evidence.stats`.

Callables are resolved here, at run time, as `flopkb.evidence.declared` resolved them statically:
`torch...:name` from torch, anything else from the KB's kernels/ (or the bundled ones).
"""

from __future__ import annotations

import importlib
import itertools
import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

from flopkb.evidence import equivalence, links, stats
from flopkb.evidence.measurement import Judgement, Measurement
from flopkb.evidence.stats import Interval, ratio_interval
from flopkb.grammar.formula import parse_formula
from flopkb.kernelpkg import kernels_root, load_module
from flopkb.model.experiment import Experiment, Implementation, Input, Produced, Side
from flopkb.verify.errors import ExperimentError

if TYPE_CHECKING:
    from flopkb.verify.context import Context

# How a state is named in timing labels and sweep rows: the axis values, in declared order.
STATE_SEP = ", "


def resolve_callable(spec: str, kb_root: Path | None) -> Any:
    """The function `module:function` names (torch's, or the KB's / bundled kernels')."""
    module, _, function = spec.partition(":")
    if module == "torch" or module.startswith("torch."):
        loaded = importlib.import_module(module)
    else:
        loaded = load_module(module, kernels_root(kb_root, module.split(".")[0]))
    try:
        return getattr(loaded, function)
    except AttributeError:
        raise ExperimentError(f"{spec}: {module} defines no {function!r}") from None


def _formula_value(text: str | None, state: dict[str, Any]) -> float:
    if not text:
        return 0.0
    return parse_formula(text).evaluate({k: float(v) for k, v in state.items()
                                         if isinstance(v, (int, float))})


class DeclaredExperiment:
    """The experiment-module protocol (DEFAULTS, PASSES, cpu_check, measure, judge) of one
    hook-less declaration."""

    PASSES = ("forward",)

    def __init__(self, decl: Experiment, kb_root: Path | None) -> None:
        self.decl = decl
        self.kb_root = kb_root
        self.DEFAULTS: dict[str, Any] = {name: values[0] for name, values in decl.axes.items()}
        self.DEFAULTS.update(decl.point)

    # ----- inputs, implementations -----

    def _inputs(self, state: dict[str, Any], device: Any) -> tuple:
        return tuple(self._make(inp, state, device) for inp in self.decl.inputs)

    def _make(self, inp: Input, state: dict[str, Any], device: Any) -> Any:
        import torch

        shape = tuple(int(state[d]) if isinstance(d, str) else int(d) for d in inp.shape)
        dtype = getattr(torch, inp.dtype)
        gen = torch.Generator(device=torch.device(device)).manual_seed(inp.seed)
        if ":" in inp.maker:
            return resolve_callable(inp.maker, self.kb_root)(shape, dtype, gen, device)
        if inp.distribution == "ones":
            return torch.ones(shape, dtype=dtype, device=device) * inp.scale
        if dtype.is_floating_point:
            if inp.distribution == "uniform":
                base = torch.rand(shape, generator=gen, device=device)
            else:
                base = torch.randn(shape, generator=gen, device=device)
                if inp.distribution == "positive":
                    # away from zero: a positive input that may divide or take a log
                    base = base.abs() + 0.1
            return (base * inp.scale).to(dtype)
        # integers: uniform in [-128, 128), or [1, 128) when positive (int8's range)
        low = 1 if inp.distribution == "positive" else -128
        return torch.randint(low, 128, shape, generator=gen, device=device, dtype=dtype)

    def _impl(self, side: Side, name: str) -> Implementation:
        for imp in side.implementations:
            if imp.name == name:
                return imp
        return side.implementations[0]

    def _equivalent(self, side: str) -> Produced | None:
        """The equivalence produced on `side`, if any: its outputs are the measurement."""
        return next((p for p in self.decl.produces
                     if p.quantity == "equivalence" and p.side == side), None)

    def _run_checked(self, ctx: Context, side: Side, imp: Implementation, args: tuple,
                     label: str) -> tuple[Any, list[dict[str, Any]]]:
        """(the implementation's function, its equivalence entries): an equivalence side's
        outputs are compared and kept (the claim's measurement, judged later); any other side's
        are checked against the reference first (a mismatch ends the experiment)."""
        fn = resolve_callable(imp.call or "", self.kb_root)
        ref = resolve_callable(imp.reference or side.reference or "", self.kb_root)
        out = fn(*args)
        expected = ref(*args)
        prod = self._equivalent(side.name)
        entries: list[dict[str, Any]] = []
        if prod is None:
            ctx.check(f"{side.name}.{imp.name} {label}".strip(), out, expected,
                      tol=imp.tolerance)
        else:
            entries = equivalence.compare(prod.outputs, out, expected)
        ctx.describe_impl(side.name, f"{imp.name} ({imp.call})")
        return fn, entries

    # ----- the protocol -----

    def cpu_check(self, ctx: Context) -> None:
        """Every implementation of every side against its reference, at the CPU point."""
        state = {**self.DEFAULTS, **self.decl.cpu_point}
        args = self._inputs(state, ctx.device)
        for side in self.decl.sides:
            for imp in side.implementations:
                # one implementation's mismatch is its own row: the others are still checked
                before = len(ctx.checks)
                try:
                    _, entries = self._run_checked(ctx, side, imp, args, _label(state))
                except ExperimentError as exc:
                    if len(ctx.checks) == before:
                        ctx.checks.append({"kernel": f"{side.name}.{imp.name} {_label(state)}",
                                           "ok": False, "error": str(exc)})
                else:
                    prod = self._equivalent(side.name)
                    if prod is not None:
                        _check_equivalent(ctx, f"{side.name}.{imp.name} {_label(state)}", prod,
                                          entries)
                for row in ctx.checks[before:]:
                    row.update(side=side.name, implementation=imp.name)

    def states(self, cond: dict[str, Any], quick: bool) -> list[dict[str, Any]]:
        """The sweep: the claim's point first, then the rest of the cartesian product of the
        axes (quick: the point, or the crossover axis through it)."""
        point = {name: cond.get(name, values[0]) for name, values in self.decl.axes.items()}
        crossing = [p.axis for p in self.decl.produces if p.quantity == "crossover" and p.axis]
        if quick:
            if not crossing:
                return [point]
            axis = crossing[0]
            line = [{**point, axis: v} for v in self.decl.axes[axis]]
            return [point] + [s for s in line if s != point]
        names = list(self.decl.axes)
        product = [dict(zip(names, combo, strict=True))
                   for combo in itertools.product(*(self.decl.axes[n] for n in names))]
        return [point] + [s for s in product if s != point]

    def measure(self, ctx: Context, cond: dict[str, Any]) -> Measurement:
        rows: list[dict[str, Any]] = []
        for state, guarded in ctx.sweep(self.states(cond, ctx.quick), rows):
            with guarded:
                rows.append(self._state(ctx, state))
        if not rows:
            raise ExperimentError("no sweep state could be measured")
        return Measurement({"primary": rows[0]}, rows, dict(cond), self._plot(rows[0]))

    def _state(self, ctx: Context, state: dict[str, Any]) -> dict[str, Any]:
        args = self._inputs(state, ctx.device)
        label = _label(state)
        row: dict[str, Any] = dict(state)
        timings = {}
        # an experiment that only produces equivalences times nothing
        timed = any(p.quantity != "equivalence" for p in self.decl.produces)
        for side in self.decl.sides:
            imp = self._impl(side, ctx.impls.get(side.name, side.implementations[0].name))
            fn, entries = self._run_checked(ctx, side, imp, args, label)
            if self._equivalent(side.name) is not None:
                row[f"equivalence_{side.name}"] = entries
                row[f"max_rel_err_{side.name}"] = max(
                    (e["max_rel_err"] for e in entries if e.get("max_rel_err") is not None),
                    default=None)
            if not timed:
                continue
            flops = _formula_value(side.flops, state)
            nbytes = _formula_value(side.bytes, state)
            t = ctx.time(f"{side.name} {label}", fn, [args], flops=flops, nbytes=nbytes, **state)
            timings[side.name] = t
            row[f"{side.name}_ms"] = t.median_ms
            row[f"{side.name}_p10_ms"], row[f"{side.name}_p90_ms"] = t.p10_ms, t.p90_ms
            if ctx.ceilings is not None and (flops or nbytes):
                row[f"{side.name}_floor_ms"] = ctx.ceilings.floor_ms(flops, nbytes)
        for prod in self.decl.produces:
            if prod.quantity == "equivalence":
                continue
            interval = self._quantity(prod, timings, row, state)
            if interval is not None:
                key = _key(prod)
                row[key], row[f"{key}_low"], row[f"{key}_high"] = (
                    interval.value, interval.low, interval.high)
        return row

    def _quantity(self, prod: Produced, timings: dict[str, Any], row: dict[str, Any],
                  state: dict[str, Any]) -> Interval | None:
        if prod.quantity in {"time_ratio", "crossover"}:
            return ratio_interval(timings[prod.numerator], timings[prod.denominator])
        t = timings[prod.side]
        if prod.quantity == "time":
            return Interval(t.median_ms, t.p10_ms, t.p90_ms)
        if prod.quantity == "throughput":
            unit = links.rate_unit(prod.unit)
            scale = unit.factor if unit else 1.0
            work = _formula_value(prod.work, state) / scale
            return Interval(work / (t.median_ms / 1e3), work / (t.p90_ms / 1e3),
                            work / (t.p10_ms / 1e3))
        if prod.quantity == "roofline_fraction":
            floor = row.get(f"{prod.side}_floor_ms")
            if floor is None:
                return None
            return Interval(floor / t.median_ms, floor / t.p90_ms, floor / t.p10_ms)
        return None

    def _plot(self, point: dict[str, Any]) -> dict[str, Any] | None:
        """Each side's time along one axis (the crossover's, else the first) through the
        claim's point, the other axes held at the point."""
        if not self.decl.axes:
            return None
        if all(p.quantity == "equivalence" for p in self.decl.produces):
            return {"kind": "lines", "x": next(iter(self.decl.axes)), "ylabel":
                    "max |impl - ref| / max |ref|", "xlabel": next(iter(self.decl.axes)),
                    "series": {p.side: f"max_rel_err_{p.side}" for p in self.decl.produces},
                    "logy": True, "filter": {k: point[k] for k in list(self.decl.axes)[1:]}}
        crossing = [p.axis for p in self.decl.produces if p.quantity == "crossover" and p.axis]
        x = crossing[0] if crossing else next(iter(self.decl.axes))
        return {"kind": "lines", "x": x, "xlabel": x, "ylabel": "time (ms)",
                "series": {s.name: f"{s.name}_ms" for s in self.decl.sides}, "logy": True,
                "filter": {k: point[k] for k in self.decl.axes if k != x}}

    def judge(self, m: Measurement, mag: Any, cond: dict[str, Any]) -> Judgement:
        return judge_declared(self.decl, m, mag)


def _label(state: dict[str, Any]) -> str:
    return STATE_SEP.join(f"{k}={v}" for k, v in state.items())


def _key(prod: Produced) -> str:
    return prod.quantity if prod.side is None else f"{prod.quantity}_{prod.side}"


def _pick(decl: Experiment, mag: Any) -> Produced | None:
    """The produced quantity that reads `mag` (the first that the typed-link rule accepts)."""
    for prod in decl.produces:
        probe = decl.model_copy(update={"produces": [prod]})
        if links.magnitude_mismatch(probe, mag) is None:
            return prod
    return None


def _claimed(mag: Any) -> tuple[float | None, float | None]:
    """The claimed interval of a ratio, percent, proportion or value claim, widened by the
    tolerance (an absolute claim's is `stats.absolute_interval`)."""
    if stats.best_case(mag):
        # `up to Rx`: the best case the claim says is reached (stats.claimed_ratio_interval)
        return stats.claimed_ratio_interval(mag)
    figures = tuple(getattr(mag, "figures", ()) or ())
    if figures and not _plain_number(figures[0]):
        figures = ()  # a figure this reading cannot place: no half-unit of rounding
    return stats.claimed_interval(mag.low, mag.high, mag.bound, figures)


def _plain_number(text: str) -> bool:
    try:
        float(text.replace(",", ""))
    except ValueError:
        return False
    return True


def _check_equivalent(ctx: Context, label: str, prod: Produced,
                      entries: list[dict[str, Any]]) -> None:
    """The CPU check of an equivalence side: within its declared tolerance, else an error."""
    found = equivalence.judge_entries(entries, prod.atol or 0.0, prod.rtol or 0.0, what=label)
    ok = found.verdict == stats.CONFIRMED
    ctx.checks.append({"kernel": label, "shape": entries[0]["shape"] if entries else [],
                       "dtype": entries[0]["dtype"] if entries else "",
                       "error": found.measured.value, "tolerance": 1.0, "ok": ok})
    if not ok:
        raise ExperimentError(f"{label} is not equivalent to its reference: {found.what}")


def judge_equivalences(decl: Experiment, m: Measurement) -> list[Judgement]:
    """One judgement per declared equivalence, over every sweep state stored."""
    out = []
    for prod in decl.produces:
        if prod.quantity == "equivalence":
            entries = equivalence.entries_of(m.sweep or [m.data.get("primary", {})],
                                             f"equivalence_{prod.side}")
            out.append(equivalence.judge_entries(
                entries, prod.atol or 0.0, prod.rtol or 0.0,
                what=f"side {prod.side} vs its reference over {len(m.sweep) or 1} states"))
    return out


def judge_declared(decl: Experiment, m: Measurement, mag: Any) -> Judgement:
    """The verdict of one claim from a hook-less experiment's measurement: the quantity that
    reads its magnitude, and every declared equivalence (a claim about a kernel that is not
    equivalent to its reference is never confirmed)."""
    equal = judge_equivalences(decl, m)
    rest = [p for p in decl.produces if p.quantity != "equivalence"]
    if not rest:
        if len(equal) == 1:
            return equal[0]
        return _joined(equal[0], equal[1:])
    base = _judge_quantity(decl.model_copy(update={"produces": rest}), m, mag)
    return _joined(base, equal) if equal and base.verdict != "error" else base


def _joined(first: Judgement, more: list[Judgement]) -> Judgement:
    parts = [first, *more]
    verdict = equivalence.conjunction([j.verdict for j in parts])
    return Judgement(first.measured, first.unit, "; ".join(j.what for j in parts), verdict,
                     " and ".join(j.criterion for j in parts),
                     next((j.reason for j in parts if j.reason), None))


def _judge_quantity(decl: Experiment, m: Measurement, mag: Any) -> Judgement:
    primary = m.data["primary"]
    if mag is None or mag.kind == "qualitative":
        return _qualitative(decl, primary)
    prod = _pick(decl, mag)
    if prod is None:
        why = links.magnitude_mismatch(decl, mag)
        return Judgement(Interval(None, None, None), "", "", "error", "", reason=why)
    key = _key(prod)
    if prod.quantity == "crossover":
        axis = prod.axis or ""
        line = [r for r in m.sweep
                if all(r.get(k) == primary.get(k) for k in decl.axes if k != axis)]
        line.sort(key=lambda r: float(r[axis]))
        measured = stats.crossover([float(r[axis]) for r in line],
                                   [Interval(r[key], r[f"{key}_low"], r[f"{key}_high"])
                                    for r in line])
        verdict = stats.decide_crossover(measured, float(mag.low))
        return Judgement(measured, axis, f"crossover of t({prod.numerator}) / "
                         f"t({prod.denominator}) over {axis}", verdict,
                         f"crossover interval inside [{mag.low:g}/sqrt2, {mag.low:g}*sqrt2]")
    if key not in primary:
        return Judgement(Interval(None, None, None), "", "", "error", "",
                         reason=f"{prod.quantity} was not measured at the claim's point")
    measured = Interval(primary[key], primary[f"{key}_low"], primary[f"{key}_high"])
    unit, what = _describe(prod)
    dimension = getattr(mag, "dimension", None)
    if mag.kind == "percent":
        # a time ratio quoted as a percentage is an overhead: (ratio - 1) x 100
        shift = 1.0 if prod.quantity in links.RATIOS else 0.0
        measured = Interval(*((None if x is None else (x - shift) * 100)
                              for x in (measured.value, measured.low, measured.high)))
        unit = "%"
    if dimension is not None or mag.kind == "absolute":
        # compare in base units: the measured figure in the declared unit x its factor, against
        # the one rule for absolute claims (`from A to B` judged at B with B's rounding)
        factor = _base_factor(prod)
        measured = Interval(*((None if x is None else x * factor)
                              for x in (measured.value, measured.low, measured.high)))
        unit = links.BASE_UNIT.get(str(dimension), unit)
        lo, hi = stats.absolute_interval(mag)
    else:
        lo, hi = _claimed(mag)
    verdict = stats.decide(measured, lo, hi)
    return Judgement(measured, unit, what, verdict,
                     f"measured interval inside the claimed {mag.text!r} widened to "
                     f"[{_fmt(lo)}, {_fmt(hi)}]")


def _base_factor(prod: Produced) -> float:
    if prod.quantity == "throughput":
        unit = links.rate_unit(prod.unit)
        return unit.factor if unit else 1.0
    if prod.quantity == "time":
        # measured in ms; the base unit of time is the second
        return 1e-3
    return 1.0


def _describe(prod: Produced) -> tuple[str, str]:
    if prod.quantity in {"time_ratio", "crossover"}:
        return "x", f"t({prod.numerator}) / t({prod.denominator})"
    if prod.quantity == "throughput":
        return prod.unit or "", f"{prod.work} per second, {prod.side}"
    if prod.quantity == "time":
        return "ms", f"median time of {prod.side}"
    return "", f"{prod.quantity} of {prod.side}"


def _qualitative(decl: Experiment, primary: dict[str, Any]) -> Judgement:
    q = decl.qualitative
    if q is None or (q.above is None and q.below is None) or not decl.produces:
        return Judgement(Interval(None, None, None), "", "", "error", "",
                         reason="a qualitative claim needs the experiment's qualitative "
                         "threshold (`qualitative: {criterion, above | below}`)")
    prod = decl.produces[0]
    key = _key(prod)
    measured = Interval(primary.get(key), primary.get(f"{key}_low"), primary.get(f"{key}_high"))
    if measured.value is None or (isinstance(measured.value, float) and math.isnan(measured.value)):
        return Judgement(measured, "", "", "error", q.criterion,
                         reason=f"{prod.quantity} was not measured at the claim's point")
    unit, what = _describe(prod)
    if q.above is not None:
        verdict = stats.decide_above(measured, q.above)
    else:
        verdict = stats.decide_below(measured, q.below)  # type: ignore[arg-type]
    return Judgement(measured, unit, what, verdict, f"qualitative: {q.criterion}")


def _fmt(x: float | None) -> str:
    return "open" if x is None else f"{x:.4g}"
