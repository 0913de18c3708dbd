"""Equivalence, "B computes the same as A": an implementation's outputs and final states against
a reference's, over stated shapes and dtypes, judged against a declared tolerance.

What is stored, per compared tensor of every sweep state (one `entry`): the tensor's name, shape
and dtype, `max_abs_err` = max |got - want| and `max_abs_ref` = max |want| (both in float64), and
`max_rel_err` = max_abs_err / max_abs_ref (relative to the reference's scale, so that elements
near zero do not blow it up); a non-finite error (NaN or inf in the output, a shape mismatch) is
stored as null and read as infinite. The verdict is re-derived from those numbers and the
declaration's `atol` / `rtol` alone (`flopkb.evidence.rederive`):

    tolerance ratio = max_abs_err / (atol + rtol * max_abs_ref)     (non-finite output: inf)

over every entry, the worst one read: confirmed at or under 1 (every tensor within tolerance),
refuted above REFUTE_FACTOR (an error an order of magnitude past the tolerance is a different
function, not rounding), inconclusive between (an error a little past the tolerance may be the
dtype's rounding over a long recurrence; raise the tolerance with a reason, or look).

`errors` needs torch (imported when called); everything else is torch-free, so validate judges
stored evidence with the same functions `verify` decided with.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

from flopkb.evidence import stats
from flopkb.evidence.measurement import Judgement
from flopkb.evidence.stats import Interval

REFUTE_FACTOR = 10.0
UNIT = "x tolerance"


def errors(name: str, got: Any, want: Any) -> dict[str, Any]:
    """One entry: how far `got` is from `want` (same shape, any float dtype), in float64.

    A shape mismatch is an entry with infinite error (it is not the same function); so is a
    non-finite element of `got` where `want` is finite."""
    import torch

    got_t, want_t = torch.as_tensor(got), torch.as_tensor(want)
    entry: dict[str, Any] = {"tensor": name, "shape": list(want_t.shape),
                             "dtype": str(got_t.dtype).removeprefix("torch.")}
    if got_t.shape != want_t.shape:
        entry.update(max_abs_err=None, max_abs_ref=None, max_rel_err=None,
                     note=f"shape {list(got_t.shape)} != reference {list(want_t.shape)}")
        return entry
    g, w = got_t.detach().to(torch.float64), want_t.detach().to(torch.float64)
    ref = float(w.abs().max().item()) if w.numel() else 0.0
    if w.numel() and not bool(torch.isfinite(g[torch.isfinite(w)]).all().item()):
        err = math.inf
    else:
        err = float((g - w).abs().nan_to_num(nan=math.inf).max().item()) if w.numel() else 0.0
    rel = err / ref if ref > 0 else (0.0 if err == 0 else math.inf)
    entry.update(max_abs_err=_stored(err), max_abs_ref=_stored(ref), max_rel_err=_stored(rel))
    return entry


def _stored(x: float) -> float | None:
    # evidence is YAML and JSON: a non-finite error is stored as null, read back as infinite
    return x if math.isfinite(x) else None


def compare(names: Sequence[str], got: Any, want: Any) -> list[dict[str, Any]]:
    """Entries for each named tensor of `got` / `want` (a tensor, or tuples of them in order)."""
    gots = got if isinstance(got, (tuple, list)) else (got,)
    wants = want if isinstance(want, (tuple, list)) else (want,)
    if len(gots) != len(wants):
        return [{"tensor": "outputs", "shape": [], "dtype": "", "max_abs_err": None,
                 "max_abs_ref": None, "max_rel_err": None,
                 "note": f"{len(gots)} outputs vs the reference's {len(wants)}"}]
    labels = list(names) + [f"output{i}" for i in range(len(names), len(gots))]
    return [errors(label, g, w) for label, g, w in zip(labels, gots, wants, strict=False)]


def _number(x: Any) -> float:
    try:
        return float(x)
    except (TypeError, ValueError):
        return math.nan


def tolerance_ratio(entry: dict[str, Any], atol: float, rtol: float) -> float:
    """max_abs_err / (atol + rtol * max_abs_ref) of one stored entry; inf when not finite."""
    err, ref = _number(entry.get("max_abs_err")), _number(entry.get("max_abs_ref"))
    if math.isnan(err) or math.isinf(err):
        return math.inf
    bound = atol + rtol * (0.0 if math.isnan(ref) else abs(ref))
    if bound <= 0:
        return 0.0 if err == 0 else math.inf
    return err / bound


def verdict_of(ratio: float) -> str:
    """The rule of the module docstring on the worst tolerance ratio."""
    if ratio <= 1.0:
        return stats.CONFIRMED
    if ratio > REFUTE_FACTOR:
        return stats.REFUTED
    return stats.INCONCLUSIVE


def entries_of(rows: Iterable[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    """The stored entries under `key` of every sweep row (a malformed one is skipped)."""
    out: list[dict[str, Any]] = []
    for row in rows:
        found = row.get(key) if isinstance(row, dict) else None
        if isinstance(found, list):
            out.extend(e for e in found if isinstance(e, dict))
    return out


def judge_entries(entries: Sequence[dict[str, Any]], atol: float, rtol: float, *,
                  what: str) -> Judgement:
    """The verdict of an equivalence from its stored entries and the declared tolerance."""
    criterion = (f"equivalence: max |impl - ref| <= atol + rtol * max |ref| (atol={atol:g}, "
                 f"rtol={rtol:g}) for every output and state; refuted beyond "
                 f"{REFUTE_FACTOR:g}x that")
    if not entries:
        return Judgement(Interval(None, None, None), UNIT, what, "error", criterion,
                         reason="no equivalence was measured")
    ratios = [tolerance_ratio(e, atol, rtol) for e in entries]
    worst = max(ratios)
    at = entries[ratios.index(worst)]
    shown = None if math.isinf(worst) else worst
    where = (f"{what}; worst: {at.get('tensor')} {at.get('dtype')} {at.get('shape')} "
             f"(max abs {at.get('max_abs_err')!r}, max rel {at.get('max_rel_err')!r})")
    return Judgement(Interval(shown, shown, shown), UNIT, where, verdict_of(worst), criterion)


def conjunction(verdicts: Sequence[str]) -> str:
    """A claim of several parts ("equal, and faster"): refuted when one part is, confirmed when
    all are, an error when one is, else inconclusive."""
    if stats.REFUTED in verdicts:
        return stats.REFUTED
    if "error" in verdicts:
        return "error"
    if verdicts and all(v == stats.CONFIRMED for v in verdicts):
        return stats.CONFIRMED
    return stats.INCONCLUSIVE
