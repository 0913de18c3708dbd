"""Two forms of one linear-attention recurrence compute the same (outputs and final states):
the `equivalence` quantity (flopkb.evidence.equivalence), one hook for three declarations, each
naming its `form` in its `point`:

- `kda-dplr` (Kimi Linear): KDA, S_t = (I - beta k k^T) Diag(exp g) S_{t-1} + beta k v^T, against
  the general DPLR recurrence with a = exp(g) * k, b = -beta k (and k -> beta k). Sides `kda`
  (bundled naive recurrence, or fla's chunk_kda with its fused_recurrent_kda beside it) and
  `dplr` (bundled naive DPLR, or fla's chunk_dplr_delta_rule).
- `lightning` (Lightning Attention-2): the intra-block exact masked attention + inter-block state
  split against plain causal linear attention with the same per-head decay. Side `blocked`
  (bundled, or fla's chunk_simple_gla, the same split); reference: the naive recurrence.
- `hgrn2`: HGRN2's recurrence as an elementwise scan against its chunked linear-attention form
  (keys 1 - f, decays log f). Side `chunked` (bundled, or fla's chunk_gla) against the scan;
  the time ratio t(scan) / t(chunked) at the training shape is judged too (above 1.05).

The tolerance is the declaration's (`produces: [{quantity: equivalence, atol, rtol}]`), read by
`judge` from the declaration it is handed, never from the evidence record.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flopkb.evidence import equivalence, stats
from flopkb.evidence.measurement import Judgement, Measurement, point_row, ratio_of
from flopkb.evidence.stats import Interval, ratio_interval
from flopkb.verify.errors import PeerUnavailable

if TYPE_CHECKING:
    from flopkb.verify.context import Context

DEFAULTS: dict[str, Any] = {"form": "kda-dplr", "seq_len": 512, "heads": 8, "head_dim": 64,
                            "batch": 1, "chunk_size": 64, "pass": "forward"}
FORMS = ("kda-dplr", "lightning", "hgrn2")
# the dtypes every form is compared in, the claim's point first
DTYPES = ("float32", "bfloat16")
CPU = {"batch": 2, "seq_len": 37, "heads": 3, "head_dim": 8}
OUTPUTS = ("o", "state")
Forms = tuple[Callable[..., Any], Callable[..., Any], str]


def _inputs(ctx: Context, form: str, shape: dict[str, int], dtype: str, seed: int) -> tuple:
    """Random inputs of `form` [B, T, H, K]: unit-norm keys and beta in (0, 1) keep the delta
    rule contractive; decays in (-0.1, 0] (HGRN2: forget gates lower-bounded, (-0.05, 0])."""
    import torch
    import torch.nn.functional as F

    b, t, h, d = (int(shape[k]) for k in ("batch", "seq_len", "heads", "head_dim"))
    dev = ctx.device
    gen = torch.Generator(device=dev).manual_seed(seed)
    dt = getattr(torch, dtype)

    def rnd(*size: int) -> Any:
        return torch.randn(*size, generator=gen, device=dev)

    q = rnd(b, t, h, d)
    if form == "kda-dplr":
        k = F.normalize(rnd(b, t, h, d), dim=-1)
        g = -0.1 * F.softplus(rnd(b, t, h, d))
        beta = torch.sigmoid(rnd(b, t, h))
        return (*(x.to(dt).contiguous() for x in (q, k, rnd(b, t, h, d))), g, beta)
    if form == "lightning":
        k = rnd(b, t, h, d) * d ** -0.5
        decay = -0.2 * torch.rand(h, generator=gen, device=dev)
        return (q.to(dt), k.to(dt).contiguous(), rnd(b, t, h, d).to(dt), decay)
    log_f = -0.05 * torch.rand(b, t, h, d, generator=gen, device=dev)
    return (q.to(dt), log_f, rnd(b, t, h, d).to(dt))


def _bundled(ctx: Context, form: str, chunk: int) -> Forms:
    """(implementation, reference, description) of the bundled forms."""
    naive = ctx.load("linear_forms", "reference")
    chunked = ctx.load("linear_forms", "chunked")
    if form == "kda-dplr":
        def kda(q, k, v, g, beta):
            return naive.kda_recurrent(q, k, v, g, beta, q.shape[-1] ** -0.5)

        def dplr(q, k, v, g, beta):
            return naive.dplr_recurrent(*naive.kda_as_dplr(q, k, v, g, beta),
                                        q.shape[-1] ** -0.5)

        return kda, dplr, "bundled naive KDA vs naive DPLR"
    if form == "lightning":
        def blocked(q, k, v, decay):
            return chunked.lightning_blocked(q, k, v, decay, q.shape[-1] ** -0.5, chunk)

        def plain(q, k, v, decay):
            return naive.decayed_linear_attention(q, k, v, decay, q.shape[-1] ** -0.5)

        return blocked, plain, f"bundled blocked (block {chunk}) vs naive linear attention"
    return (lambda q, f, x: chunked.hgrn2_chunked(q, f, x, chunk), naive.hgrn2_scan,
            f"bundled chunked (chunk {chunk}) vs elementwise scan")


def _fla(ctx: Context, form: str, side: str) -> Callable[..., Any]:
    """fla's implementation of `side` (raises PeerUnavailable without fla)."""
    try:
        if form == "kda-dplr" and side == "kda":
            from fla.ops.kda import chunk_kda, fused_recurrent_kda  # type: ignore[import-not-found]

            def kda(q, k, v, g, beta):
                o, s = chunk_kda(q=q, k=k, v=v, g=g, beta=beta, scale=q.shape[-1] ** -0.5,
                                 output_final_state=True)[:2]
                o2, s2 = fused_recurrent_kda(q=q, k=k, v=v, g=g, beta=beta,
                                             scale=q.shape[-1] ** -0.5,
                                             output_final_state=True)[:2]
                return o, s, o2, s2

            return kda
        if form == "kda-dplr":
            from fla.ops.generalized_delta_rule import (  # type: ignore[import-not-found]
                chunk_dplr_delta_rule,
            )

            naive = ctx.load("linear_forms", "reference")

            def dplr(q, k, v, g, beta):
                qq, kk, vv, a, b, gk = naive.kda_as_dplr(q, k, v, g, beta)
                return chunk_dplr_delta_rule(q=qq, k=kk, v=vv, a=a, b=b, gk=gk,
                                             scale=q.shape[-1] ** -0.5,
                                             output_final_state=True)[:2]

            return dplr
        if form == "lightning":
            from fla.ops.simple_gla import chunk_simple_gla  # type: ignore[import-not-found]

            def blocked(q, k, v, decay):
                g = decay[None, None, :].expand(q.shape[0], q.shape[1], -1).contiguous()
                return chunk_simple_gla(q, k, v, g=g, scale=q.shape[-1] ** -0.5,
                                        output_final_state=True)[:2]

            return blocked
        from fla.ops.gla import chunk_gla  # type: ignore[import-not-found]

        def gla(q, log_f, x):
            k = (1 - log_f.exp()).to(q.dtype)
            return chunk_gla(q, k, x, g=log_f, scale=1.0, output_final_state=True)[:2]

        return gla
    except ImportError as exc:
        raise PeerUnavailable(f"fla not importable ({type(exc).__name__}: {exc})") from None


def _sides(ctx: Context, form: str, chunk: int) -> Forms:
    impl, ref, text = _bundled(ctx, form, chunk)
    first, second = {"kda-dplr": ("kda", "dplr"), "lightning": ("blocked", ""),
                     "hgrn2": ("chunked", "")}[form]
    if ctx.impl(first) == "fla":
        impl = _fla(ctx, form, first)
        text += f"; {first} side: peer:{_version()}"
    if second and ctx.impl(second) == "fla":
        ref = _fla(ctx, form, second)
        text += f"; {second} side: peer:{_version()}"
    ctx.describe_impl(first, text)
    return impl, ref, text


def _version() -> str:
    from flopkb.verify.peers import version

    return f"fla-core {version('fla-core')}"


def _form(cond: dict[str, Any]) -> str:
    form = str(cond.get("form", ""))
    if form not in FORMS:
        raise ValueError(f"expected form one of {', '.join(FORMS)}, got {form!r}")
    return form


def cpu_check(ctx: Context) -> None:
    import torch

    for form in FORMS:
        impl, ref, _ = _bundled(ctx, form, 16)
        args = _inputs(ctx, form, CPU, "float32", 0)
        got, want = impl(*args), ref(*args)
        for name, a, b in zip(OUTPUTS, got, want, strict=True):
            ctx.check(f"linear_forms {form} {name}", a, b.to(torch.float32))


def _names(got: tuple) -> list[str]:
    # fla's KDA side also returns fused_recurrent_kda's pair, compared with the same reference
    return list(OUTPUTS) + (["o (fused_recurrent_kda)", "state (fused_recurrent_kda)"]
                            if len(got) == 4 else [])


def _record_checks(ctx: Context, form: str, entries: list[dict[str, Any]],
                   tol: tuple[float, float] | None) -> None:
    """Each compared tensor in the evidence's correctness list: ok within the declared
    tolerance (or, with none handed, when its error is finite). Never raised: a mismatch here
    is the measurement, judged (refuted), not a broken run."""
    for e in entries:
        ratio = equivalence.tolerance_ratio(e, *tol) if tol else (
            0.0 if e.get("max_abs_err") is not None else float("inf"))
        ctx.checks.append({"kernel": f"linear_forms {form} {e['tensor']} (equivalence)",
                           "shape": e["shape"], "dtype": e["dtype"],
                           "error": e.get("max_rel_err"), "tolerance": tol[1] if tol else None,
                           "ok": ratio <= 1.0})


def measure(ctx: Context, cond: dict[str, Any], *, declaration: Any = None) -> Measurement:
    form = _form(cond)
    chunk = int(cond["chunk_size"])
    impl, ref, _ = _sides(ctx, form, chunk)
    shape = {k: int(cond[k]) for k in ("batch", "seq_len", "heads", "head_dim")}
    tol = _tolerance(declaration)
    rows: list[dict[str, Any]] = []
    for dtype, guarded in ctx.sweep(DTYPES[:1] if ctx.quick else DTYPES, rows):
        with guarded:
            args = _inputs(ctx, form, shape, dtype, ctx.seed(len(rows)))
            got, want = impl(*args), ref(*args)
            names = _names(got)
            wants = tuple(want) * (len(got) // len(want))
            entries = equivalence.compare(names, got, wants)
            _record_checks(ctx, form, entries, tol)
            row = point_row(seq_len=shape["seq_len"], dtype=dtype, label=f"{dtype}",
                            equivalence=entries,
                            max_rel_err=max((e["max_rel_err"] for e in entries
                                             if e.get("max_rel_err") is not None), default=None))
            if tol is not None:  # what the verdict reads: the worst entry against the tolerance
                row["tolerance_fraction"] = max(
                    (equivalence.tolerance_ratio(e, *tol) for e in entries), default=None)
            if form == "hgrn2" and dtype == DTYPES[0]:
                row.update(_times(ctx, impl, ref, args, shape, chunk))
            rows.append(row)
    plot = _picture(tol is not None)
    return Measurement({"primary": rows[0]}, rows, dict(cond), plot)


def _times(ctx: Context, chunked: Any, scan: Any, args: tuple, shape: dict[str, int], chunk: int
           ) -> dict[str, Any]:
    """t(scan) / t(chunked) of the two HGRN2 forms on the same inputs, each against its floor
    (kernels/linear_forms/cost.py's FLOPs; bytes: the three inputs read, o and S written)."""
    cost = ctx.load("linear_forms", "cost")
    b, t, h, d = (shape[k] for k in ("batch", "seq_len", "heads", "head_dim"))
    nbytes = sum(x.numel() * x.element_size() for x in args) + 4 * b * h * d * (t + d)

    t_c = ctx.time(f"chunked form, hgrn2 T={t}", chunked, [args], nbytes=nbytes,
                   flops=cost.chunked_flops(b, t, h, d, d, chunk), **shape)
    t_s = ctx.time(f"scan form, hgrn2 T={t}", scan, [args], nbytes=nbytes,
                   flops=cost.recurrent_flops("hgrn2", b, t, h, d, d), **shape)
    r = ratio_interval(t_s, t_c)
    return {"scan_ms": t_s.median_ms, "chunked_ms": t_c.median_ms, "ratio": r.value,
            "ratio_low": r.low, "ratio_high": r.high}


def _picture(with_tolerance: bool) -> dict[str, Any]:
    """Bars per input dtype: the worst output or state against the declared tolerance, with the
    limit drawn at 1 (the margin the verdict reads); without a tolerance, the bare relative
    error."""
    if not with_tolerance:
        return {"kind": "bars", "x": "label", "xlabel": "input dtype", "logy": True,
                "ylabel": "max |impl - ref| / max |ref|",
                "series": {"outputs and state": "max_rel_err"}}
    return {"kind": "bars", "x": "label", "xlabel": "input dtype", "logy": True,
            "ylabel": "max |impl - ref| / (atol + rtol max |ref|)",
            "series": {"worst output or state": "tolerance_fraction"}, "hline": 1.0,
            "hline_label": "declared tolerance (above: not equal)"}


def _tolerance(declaration: Any) -> tuple[float, float] | None:
    for prod in getattr(declaration, "produces", None) or []:
        if prod.quantity == "equivalence" and prod.atol is not None and prod.rtol is not None:
            return float(prod.atol), float(prod.rtol)
    return None


def judge(m: Measurement, mag: Any, cond: dict[str, Any], *, declaration: Any = None
          ) -> Judgement:
    form = _form(cond)
    tol = _tolerance(declaration)
    if tol is None:
        return Judgement(Interval(None, None, None), equivalence.UNIT, form, "error", "",
                         reason="the declaration states no equivalence tolerance (atol, rtol)")
    entries = equivalence.entries_of(m.sweep or [m.data["primary"]], "equivalence")
    equal = equivalence.judge_entries(entries, *tol, what=f"{form}: outputs and final state, "
                                      f"{len(entries)} tensors over {len(m.sweep)} dtypes")
    p = m.data["primary"]
    if form != "hgrn2":
        return equal
    if "ratio" not in p:
        return Judgement(equal.measured, equal.unit, equal.what, "error", equal.criterion,
                         reason="the scan / chunked time ratio was not measured")
    faster = stats.decide_above(ratio_of(p), 1.0)
    return Judgement(ratio_of(p), "x", f"t(elementwise scan) / t(chunked linear-attention form)"
                     f", T={p['seq_len']}; {equal.what} ({equal.verdict}, worst "
                     f"{equal.measured.value} x tolerance)",
                     equivalence.conjunction([equal.verdict, faster]),
                     f"{equal.criterion}; and the chunked form faster: ratio interval above 1.05")
