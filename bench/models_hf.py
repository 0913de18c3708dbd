"""HF transformers models at reduced depth beside flopkb's stacked model of the same architecture.

    python bench/models_hf.py --out bench/results/models_hf_h200.json [--quick]
    python bench/models_hf.py --cpu-smoke --out /tmp/smoke.json   (no GPU: proves the script runs)

Models (`MODELS`): NemotronH, KimiLinear, Llama, Jamba, Bamba and Mamba2, each built from
transformers' own config class (`<Name>Config`, base model `<Name>Model`: no LM head, as the
stack has none) with the hyper-parameters of an architecture record (records/architectures/,
each value sourced there to the model's config.json) and the layers of one pattern period
(`layers.stack.stack_kinds`, the same layer types in the same order as the flopkb stack), random
weights, bf16 (Samba, with no transformers class, has the flopkb side and its composition check
only). Every key passed is read back from the built config: a key the installed
transformers does not take is listed under `config_not_taken`, never silently dropped.

Per model, per point: HF and the flopkb stack (kernels/layers/stack.py) built side by side in
this process, then ROUNDS interleaved rounds (the order flips each round), each side timed by
the device clock of `flopkb.verify.timing` (CUDA-graph replay wherever capture works); medians
over rounds. Prefill: tokens/s of `batch` prompts of L tokens (HF with `use_cache=False`).
Decode: tokens/s of one step at a cache of `context` tokens: HF with a `StaticCache` filled by a
real prefill and the step captured in a CUDA graph where HF supports both, else the model's own
cache timed as an eager loop, with the reason (`how`); the flopkb step is graphed or refused.
Beside them, `time_stacked`: the flopkb stack end to end against the sum of its layers timed
alone (the composition check of the serving evidence). Which fast paths HF's modeling modules
saw (mamba_ssm Triton, fla, causal-conv1d, or the torch fallback) is recorded per model. A model
that fails records its error and the run goes on; JSON is rewritten after every model.
"""

from __future__ import annotations

import importlib
import inspect
import os
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

# the interpreter must be chosen before triton is first imported
if "--cpu-smoke" in sys.argv:
    os.environ.setdefault("TRITON_INTERPRET", "1")

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import header, parser, write_json
from flopkb.kb import load_kb
from flopkb.kernelpkg import load_op
from flopkb.model.architecture import SourcedSize
from flopkb.paths import bundled_root
from flopkb.verify.context import Context, Settings
from flopkb.verify.machine import fingerprint

BUILD, STACK = load_op("layers", "_build"), load_op("layers", "stack")
ROUNDS = 3
BUDGET_MS = 200.0  # device time per (side, point, round)
SLOW_CALL_S = 1.0  # a first call longer than this is timed by two calls between events
TIME_LIMIT_S = 200.0  # points past this are skipped (and say so): --quick stays under 240 s
SMOKE_TIME_LIMIT_S = 1800.0  # the Triton interpreter is slow
FULL = {"prefill": [1024, 4096, 16384], "decode": [(1, 4096), (8, 4096), (1, 32768)]}
QUICK = {"prefill": [1024, 4096], "decode": [(1, 4096)]}
SMOKE = {"prefill": [9], "decode": [(2, 7)]}
# substrings of the names transformers' mamba / KDA modeling modules give their fast-kernel
# entry points (module-level functions or flags; where they resolve says which path runs)
FAST_NAMES = ("is_fast_path_available", "selective_state_update", "chunk_scan",
              "split_conv1d_scan", "selective_scan", "mamba_inner", "causal_conv1d", "kda",
              "rmsnormgated", "shortconvolution")
PEER_MODULES = ("mamba_ssm", "mamba_ssm.ops.triton.selective_state_update",
                "mamba_ssm.ops.triton.ssd_combined", "selective_scan_cuda", "causal_conv1d",
                "causal_conv1d_cuda", "fla", "fla.ops.kda")
# --cpu-smoke sizes (record values overridden), small enough for the Triton interpreter
TINY = {
    "nemotron-h-8b": dict(d_model=32, attention_heads=4, kv_heads=2, head_dim=8, mlp_size=24,
                          ssm_heads=8, ssm_head_dim=8, ssm_state_size=5, ssm_groups=2,
                          vocab_size=128),
    "jamba-1-5-mini": dict(d_model=32, attention_heads=4, kv_heads=2, mlp_size=24, experts=4,
                           experts_per_token=2, expert_mlp_size=16, ssm_state_size=5,
                           ssm_dt_rank=3, vocab_size=128),
    "kimi-linear-48b-a3b": dict(d_model=32, attention_heads=4, kv_lora_rank=16,
                                qk_nope_head_dim=8, qk_rope_head_dim=4, v_head_dim=8, experts=6,
                                experts_per_token=2, expert_mlp_size=8, mlp_size=24,
                                linear_heads=2, linear_head_dim=16, vocab_size=128),
    "llama-3-1-8b": dict(d_model=32, attention_heads=4, kv_heads=2, head_dim=8, mlp_size=24,
                         vocab_size=128),
    "samba-1-7b": dict(d_model=32, attention_heads=4, kv_heads=2, sliding_window=8, mlp_size=24,
                       ssm_state_size=5, ssm_dt_rank=3, vocab_size=128),
}


def v(arch: Any, key: str, default: int | None = None) -> int:
    return BUILD.cfg(arch, key, default)


def _nemotron(arch: Any, kinds: list[str]) -> dict[str, Any]:
    char = {"mamba2": "M", "mlp": "-", "attention": "*"}
    return dict(hidden_size=v(arch, "d_model"), hybrid_override_pattern="".join(
                    char[k] for k in kinds),
                num_attention_heads=v(arch, "attention_heads"),
                num_key_value_heads=v(arch, "kv_heads"), head_dim=v(arch, "head_dim"),
                intermediate_size=v(arch, "mlp_size"), mlp_hidden_act="relu2",
                ssm_state_size=v(arch, "ssm_state_size"), mamba_num_heads=v(arch, "ssm_heads"),
                mamba_head_dim=v(arch, "ssm_head_dim"), n_groups=v(arch, "ssm_groups"),
                conv_kernel=v(arch, "ssm_conv_width"), expand=v(arch, "ssm_expand", 2))


def _jamba(arch: Any, kinds: list[str]) -> dict[str, Any]:
    return dict(hidden_size=v(arch, "d_model"), intermediate_size=v(arch, "mlp_size"),
                num_hidden_layers=len(kinds) // 2, num_attention_heads=v(arch, "attention_heads"),
                num_key_value_heads=v(arch, "kv_heads"), num_experts=v(arch, "experts"),
                num_experts_per_tok=v(arch, "experts_per_token"), expert_layer_period=2,
                expert_layer_offset=1, attn_layer_period=8, attn_layer_offset=4,
                mamba_d_state=v(arch, "ssm_state_size"), mamba_d_conv=v(arch, "ssm_conv_width"),
                mamba_expand=v(arch, "ssm_expand"), mamba_dt_rank=v(arch, "ssm_dt_rank"))


def _bamba(arch: Any, kinds: list[str]) -> dict[str, Any]:
    mixers = kinds[::2]
    return dict(hidden_size=v(arch, "d_model"), num_hidden_layers=len(mixers),
                attn_layer_indices=[i for i, k in enumerate(mixers) if k == "attention"],
                num_attention_heads=v(arch, "attention_heads"),
                num_key_value_heads=v(arch, "kv_heads"), intermediate_size=v(arch, "mlp_size"),
                mamba_n_heads=v(arch, "ssm_heads"), mamba_d_head=v(arch, "ssm_head_dim"),
                mamba_n_groups=v(arch, "ssm_groups"), mamba_d_state=v(arch, "ssm_state_size"),
                mamba_d_conv=v(arch, "ssm_conv_width"), mamba_expand=v(arch, "ssm_expand", 2))


def _mamba2(arch: Any, kinds: list[str]) -> dict[str, Any]:
    return dict(hidden_size=v(arch, "d_model"), num_hidden_layers=len(kinds),
                num_heads=v(arch, "ssm_heads"), head_dim=v(arch, "ssm_head_dim"),
                state_size=v(arch, "ssm_state_size"), n_groups=v(arch, "ssm_groups"),
                conv_kernel=v(arch, "ssm_conv_width"), expand=v(arch, "ssm_expand", 2))


def _kimi(arch: Any, kinds: list[str]) -> dict[str, Any]:
    mixers, ffns = kinds[::2], kinds[1::2]
    q_lora = v(arch, "q_lora_rank", 0)
    return dict(hidden_size=v(arch, "d_model"), intermediate_size=v(arch, "mlp_size"),
                moe_intermediate_size=v(arch, "expert_mlp_size"), num_hidden_layers=len(mixers),
                num_attention_heads=v(arch, "attention_heads"),
                num_key_value_heads=v(arch, "attention_heads"),
                kv_lora_rank=v(arch, "kv_lora_rank"), q_lora_rank=q_lora or None,
                qk_nope_head_dim=v(arch, "qk_nope_head_dim"),
                qk_rope_head_dim=v(arch, "qk_rope_head_dim"), v_head_dim=v(arch, "v_head_dim"),
                num_local_experts=v(arch, "experts"),
                num_experts_per_tok=v(arch, "experts_per_token"),
                n_shared_experts=v(arch, "shared_experts", 0),
                linear_num_heads=v(arch, "linear_heads"),
                linear_head_dim=v(arch, "linear_head_dim"),
                linear_conv_kernel_dim=v(arch, "linear_conv_width", 4),
                layer_types=["full_attention" if k == "mla" else "linear_attention"
                             for k in mixers],
                mlp_layer_types=["sparse" if k == "moe" else "dense" for k in ffns])


def _llama(arch: Any, kinds: list[str]) -> dict[str, Any]:
    return dict(hidden_size=v(arch, "d_model"), intermediate_size=v(arch, "mlp_size"),
                num_hidden_layers=len(kinds) // 2, num_attention_heads=v(arch, "attention_heads"),
                num_key_value_heads=v(arch, "kv_heads"), head_dim=v(arch, "head_dim", 128))


# name -> (transformers class prefix, record, flopkb kinds (None: the record's stack), config,
# what differs from the record). Bamba and Mamba2 have no record in the KB: they take
# Nemotron-H 8B's Mamba-2 / attention / MLP sizes.
MODELS: dict[str, tuple[str | None, str, list[str] | None, Callable[..., dict[str, Any]] | None,
                        str]] = {
    "nemotron_h": ("NemotronH", "nemotron-h-8b", None, _nemotron, ""),
    "kimi_linear": ("KimiLinear", "kimi-linear-48b-a3b", None, _kimi, ""),
    "llama": ("Llama", "llama-3-1-8b", None, _llama, ""),
    "samba": (None, "samba-1-7b", None, None,
              "Samba has no transformers class (its checkpoints run remote code): the flopkb "
              "stack and its composition check only"),
    "jamba": ("Jamba", "jamba-1-5-mini", None, _jamba, ""),
    "bamba": ("Bamba", "nemotron-h-8b", ["mamba2", "mlp"] * 3 + ["attention", "mlp"], _bamba,
              "no Bamba record: Nemotron-H 8B's sizes, Bamba's layout (a mixer and a SwiGLU MLP "
              "per layer, attention in the last of 4); the flopkb side's MLP is gated to match"),
    "mamba2": ("Mamba2", "nemotron-h-8b", ["mamba2"] * 4, _mamba2,
               "no Mamba2 record: Nemotron-H 8B's Mamba-2 sizes, 4 Mamba-2 blocks"),
}


def arch_of(kb: Any, name: str, smoke: bool) -> Any:
    """The record the model's sizes come from (tiny under --cpu-smoke; Bamba's MLP gated)."""
    _, rid, _, _, _ = MODELS[name]
    arch = kb.architectures[rid]
    update: dict[str, Any] = {}
    if smoke:
        update |= {k: SourcedSize(value=n) for k, n in TINY[rid].items()}
    if name == "bamba":
        update["mlp_activation"] = None
    if update:
        arch = arch.model_copy(update={"config": arch.config.model_copy(update=update)})
    return arch


def hf_config(transformers: Any, name: str, arch: Any, kinds: list[str],
              max_tokens: int) -> tuple[Any, dict[str, Any]]:
    """transformers' `<Name>Config` from the record, and how: the source, the keys passed, the
    keys the built config does not hold at the value passed."""
    prefix, rid, _, make, differs = MODELS[name]
    if prefix is None or make is None:
        raise ValueError(f"expected a model with a transformers class, got {name!r}")
    kwargs = make(arch, kinds) | {"vocab_size": v(arch, "vocab_size"),
                                  "max_position_embeddings": max(max_tokens, 4096),
                                  "use_cache": True, "pad_token_id": 0}
    config = getattr(transformers, f"{prefix}Config")(**kwargs)
    if {"attention", "sliding_attention", "mla"} & set(kinds):
        config._attn_implementation = "sdpa"  # SDPA as the flopkb side (Mamba2 has none)
    not_taken = {k: repr(getattr(config, k, "<absent>")) for k, want in kwargs.items()
                 if getattr(config, k, "<absent>") != want}
    return config, {"config_class": f"transformers.{prefix}Config", "record": rid,
                    "source": f"records/architectures/{rid}.yaml (values sourced there to the "
                              "model's config.json); layer types of one pattern period",
                    "differs_from_record": differs or None, "config_kwargs": kwargs,
                    "config_not_taken": not_taken}


def resolved(fn: Any, depth: int = 4) -> str:
    """Where `fn` runs: the `implementation` its wrappers closed over (transformers' hub-kernel
    fallbacks pick the peer package or the torch function at import), else its own module."""
    seen = fn
    for _ in range(depth):
        code, cells = getattr(seen, "__code__", None), getattr(seen, "__closure__", None)
        if code is not None and cells:
            free = dict(zip(code.co_freevars, cells, strict=False))
            if "implementation" in free:
                impl = free["implementation"].cell_contents
                return f"{getattr(impl, '__module__', '?')}.{getattr(impl, '__name__', '?')}"
        nxt = getattr(seen, "__wrapped__", None)
        if nxt is None:
            break
        seen = nxt
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__name__', '?')}"


def fast_paths(model: Any) -> dict[str, Any]:
    """What the modeling modules of `model` run for their fast-kernel entry points (the module
    a function resolves to: a peer package, or transformers' own torch fallback; a flag's value),
    and which peer modules import here ('ok' or the error)."""
    out: dict[str, Any] = {}
    for mod_name in sorted({type(m).__module__ for m in model.modules()}):
        mod = sys.modules.get(mod_name)
        if mod is None or not mod_name.startswith("transformers.models."):
            continue
        short = mod_name.rsplit(".", 1)[-1]
        for attr, value in sorted(vars(mod).items()):
            if not any(n in attr.lower() for n in FAST_NAMES):
                continue
            if isinstance(value, bool) or value is None:
                out[f"{short}.{attr}"] = value
            elif callable(value):
                out[f"{short}.{attr}"] = resolved(value)
    for mod_name in PEER_MODULES:
        try:
            importlib.import_module(mod_name)
            out[f"import {mod_name}"] = "ok"
        except Exception as exc:  # an import of a peer fails in many ways; each is recorded
            out[f"import {mod_name}"] = f"{type(exc).__name__}: {str(exc)[:160]}"
    return out


def sync() -> None:
    if torch.cuda.is_available():
        torch.cuda.synchronize()


def timed(fn: Callable[[], Any], *, decode: bool, gpu: bool) -> dict[str, Any]:
    """One side's timing of `fn()`: the device clock on a GPU (decode: graph or refused), the
    CPU wall clock under --cpu-smoke (which proves the script runs; not a figure)."""
    if not gpu:
        fn()
        laps = []
        for _ in range(3):
            began = time.perf_counter()
            fn()
            laps.append((time.perf_counter() - began) * 1e3)
        return {"ms": statistics.median(laps), "method": "cpu wall clock (smoke: not a figure)"}
    from flopkb.verify.timing import time_cuda

    fn()  # the first call compiles / autotunes
    sync()
    began = time.perf_counter()
    fn()  # the second says whether a call is slow
    sync()
    call_s = time.perf_counter() - began
    if call_s > SLOW_CALL_S:
        # a call of seconds (a torch fallback's Python loop over tokens) is far past where launch
        # gaps matter, and a graph of it would take minutes to capture: two calls between events
        if decode:
            from flopkb.verify.timing import CaptureRefused

            raise CaptureRefused(f"one step took {call_s:.2f} s: not captured")
        laps = []
        for _ in range(2):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            laps.append(start.elapsed_time(end))
        return {"ms": statistics.median(laps), "method": "events",
                "note": f"a call took {call_s:.2f} s: timed between events, not graphed"}
    t = time_cuda(lambda: fn(), [()], warmup=3, reps=50, budget_ms=BUDGET_MS,
                  require_graph=decode)
    return {"ms": t.median_ms, "method": t.method, "calls": t.calls,
            **({"eager_ms": t.eager_median_ms} if t.eager_median_ms else {}),
            **({"note": t.note} if t.note else {})}


# cache slots past the context: eager decode steps of a cache that advances its own position write
# there (the cache length before and after timing is recorded, so any drift shows)
CACHE_MARGIN = 2048
CACHE_KWARGS = ("cache", "past_key_values", "cache_params")  # transformers' names, newest first


def cache_length(cache: Any) -> int | None:
    try:
        return int(cache.get_seq_length())
    except Exception:  # a cache class without the method, or one that cannot say
        return None


def hf_decode_step(model: Any, config: Any, batch: int, context: int, vocab: int,
                   device: torch.device) -> tuple[Callable[[], Any], dict[str, Any]]:
    """One HF decode step at a cache of `context` tokens filled by a real prefill: a
    StaticCache where it builds and takes the prefill, else the model's own cache."""
    params = inspect.signature(model.forward).parameters
    key = next((k for k in CACHE_KWARGS if k in params), None)
    if key is None:
        raise ValueError(f"expected a cache argument in {CACHE_KWARGS}, got {list(params)}")
    positions = "cache_position" in params
    ids = torch.randint(0, vocab, (batch, context), device=device)
    how: dict[str, Any] = {"cache_kwarg": key, "cache_position_passed": positions}
    cache = None
    try:
        from transformers import StaticCache

        cache = StaticCache(config=config, max_cache_len=context + CACHE_MARGIN)
        extra = {"cache_position": torch.arange(context, device=device)} if positions else {}
        model(input_ids=ids, use_cache=True, **extra, **{key: cache})
        how["cache"] = f"StaticCache ({type(cache).__name__})"
    except Exception as exc:  # a cache class HF offers not for this model: stated, fallen back
        how["cache"] = f"the model's own (StaticCache: {type(exc).__name__}: {str(exc)[:160]})"
        out = model(input_ids=ids, use_cache=True)
        cache = next((getattr(out, k) for k in CACHE_KWARGS if getattr(out, k, None) is not None),
                     None)
        how["cache"] += f": {type(cache).__name__}"
    how["cache_tokens_after_prefill"] = cache_length(cache)
    step_ids = torch.randint(0, vocab, (batch, 1), device=device)
    extra = {"cache_position": torch.tensor([context], device=device)} if positions else {}

    def step() -> Any:
        return model(input_ids=step_ids, use_cache=True, **extra, **{key: cache}
                     ).last_hidden_state

    step.cache = cache  # type: ignore[attr-defined]
    return step, how


def hf_decode_timed(step: Callable[[], Any], how: dict[str, Any], gpu: bool) -> dict[str, Any]:
    """The HF step graphed where capture works, else an eager loop with the refusal as reason
    (a growing cache drifts by the steps timed: `how['cache']` says which cache ran)."""
    from flopkb.verify.timing import CaptureRefused

    try:
        got = timed(step, decode=True, gpu=gpu)
    except CaptureRefused as exc:  # HF's step cannot be graphed: an eager loop, with the reason
        got = timed(step, decode=False, gpu=gpu)
        got |= {"method": f"eager {got['method']}", "graph_refused": str(exc)[:300]}
    return got | {"cache_tokens_after_timing": cache_length(getattr(step, "cache", None))}


def flopkb_side(ctx: Any, arch: Any, kinds: list[str], phase: str, batch: int,
                tokens: int) -> tuple[Callable[[], Any], Any]:
    s = STACK.build_stack(ctx, arch, phase, batch, tokens, kinds=kinds)
    return (lambda: s.forward(s.x)), s


def interleaved(sides: dict[str, Callable[[], dict[str, Any]]], rounds: int,
                deadline: float = float("inf")) -> dict[str, Any]:
    """Each side once per round, the order flipped every round; medians over rounds. A side
    whose call takes seconds (timed between events) is not repeated, nor is any side with a
    figure once the deadline has passed: `rounds_run` says how many each got."""
    per: dict[str, list[dict[str, Any]]] = {n: [] for n in sides}
    errors: dict[str, str] = {}
    names = list(sides)
    for r in range(rounds):
        for n in names if r % 2 == 0 else names[::-1]:
            done = per[n]
            if n in errors or (done and (done[-1].get("method") == "events"
                                         or time.monotonic() > deadline)):
                continue
            try:
                done.append(sides[n]())
            except Exception as exc:  # one side failing leaves the other's figures standing
                first = str(exc).splitlines()[0][:300] if str(exc) else ""
                errors[n] = f"{type(exc).__name__}: {first}"
    out: dict[str, Any] = {}
    for n, got in per.items():
        if n in errors:
            out[n] = {"error": errors[n]}
        else:
            out[n] = {"ms": statistics.median(g["ms"] for g in got),
                      "round_ms": [g["ms"] for g in got], "rounds_run": len(got),
                      "how": got[-1]}
    return out


def run_model(name: str, kb: Any, transformers: Any, ctx: Any, args: Any, sizes: dict,
              deadline: float) -> dict[str, Any]:
    """Every point of one model: HF and flopkb side by side, then the composition check."""
    gpu = ctx.gpu
    arch = arch_of(kb, name, args.cpu_smoke)
    kinds = MODELS[name][2] or STACK.stack_kinds(arch)
    max_tokens = max([*sizes["prefill"], *(c for _, c in sizes["decode"])]) + 16
    rec: dict[str, Any] = {"arch": arch.id, "kinds": kinds, "points": []}
    model = config = step = fk_fn = None
    vocab = v(arch, "vocab_size", 0)  # HF side only (Samba's record has none)
    if MODELS[name][0] is None:
        rec["hf"] = {"skipped": MODELS[name][4]}
    elif transformers is None:
        rec["hf"] = {"skipped": "transformers is not installed here"}
    else:
        try:
            config, rec["hf"] = hf_config(transformers, name, arch, kinds, max_tokens)
            default = torch.get_default_dtype()
            torch.set_default_dtype(torch.bfloat16)
            try:
                with ctx.device:
                    model = getattr(transformers, f"{MODELS[name][0]}Model")(config).eval()
            finally:
                torch.set_default_dtype(default)
            rec["hf"]["version"] = transformers.__version__
            rec["hf"]["parameters"] = sum(p.numel() for p in model.parameters())
            rec["hf"]["fast_paths"] = fast_paths(model)
        except Exception as exc:  # a model transformers cannot build here: recorded, go on
            rec["hf"] = {**(rec.get("hf") or {}), "error": f"{type(exc).__name__}: {exc}"[:500]}
            model = None
    with torch.no_grad():
        for phase, points in (("prefill", [(1, n) for n in sizes["prefill"]]),
                              ("decode", sizes["decode"])):
            for batch, tokens in points:
                point: dict[str, Any] = {"phase": phase, "batch": batch, "tokens": tokens}
                rec["points"].append(point)
                if time.monotonic() > deadline:
                    point["skipped"] = "time limit"
                    continue
                sides: dict[str, Callable[[], dict[str, Any]]] = {}
                try:
                    fk_fn, _ = flopkb_side(ctx, arch, kinds, phase, batch, tokens)
                    sides["flopkb"] = lambda f=fk_fn, d=phase == "decode": timed(f, decode=d,
                                                                                 gpu=gpu)
                except Exception as exc:
                    point["flopkb"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                if model is not None:
                    try:
                        if phase == "prefill":
                            ids = torch.randint(0, vocab, (batch, tokens), device=ctx.device)
                            sides["hf"] = lambda ids=ids, m=model: timed(
                                lambda: m(input_ids=ids, use_cache=False), decode=False,
                                gpu=gpu)
                        else:
                            step, how = hf_decode_step(model, config, batch, tokens, vocab,
                                                       ctx.device)
                            point["hf_cache"] = how
                            sides["hf"] = lambda step=step, how=how: hf_decode_timed(
                                step, how, gpu)
                    except Exception as exc:
                        point["hf"] = {"error": f"{type(exc).__name__}: {exc}"[:300]}
                point |= interleaved(sides, args.rounds, deadline)
                for side in ("hf", "flopkb"):
                    if point.get(side, {}).get("ms"):
                        point[side]["tokens_per_s"] = (batch * (tokens if phase == "prefill"
                                                                else 1)) / (point[side]["ms"] / 1e3)
                if point.get("hf", {}).get("ms") and point.get("flopkb", {}).get("ms"):
                    point["flopkb_over_hf_speed"] = point["hf"]["ms"] / point["flopkb"]["ms"]
                sides.clear()
                if gpu:
                    torch.cuda.empty_cache()
    # the last point's closures hold the HF model, its cache and a flopkb stack: free them all
    # before the composition check builds its own stack
    model = step = fk_fn = sides = None
    if gpu:
        torch.cuda.empty_cache()
    rec["composition"] = composition(ctx, arch, kinds, sizes, deadline, args.rounds)
    return rec


def composition(ctx: Any, arch: Any, kinds: list[str], sizes: dict, deadline: float,
                rounds: int) -> list[dict[str, Any]]:
    """`time_stacked` at the first prefill length and the first decode point."""
    if not ctx.gpu:
        return [{"skipped": "time_stacked times through the device clock: CUDA only"}]
    out = []
    for phase, batch, tokens in (("prefill", 1, sizes["prefill"][0]),
                                 ("decode", *sizes["decode"][0])):
        if time.monotonic() > deadline:
            out.append({"phase": phase, "skipped": "time limit"})
            continue
        try:
            t = STACK.time_stacked(ctx, arch, phase, batch, tokens, kinds=kinds,
                                   rounds=2 if ctx.quick else max(2, rounds))
            out.append(t.as_dict())
        except Exception as exc:  # e.g. a decode step that cannot be captured: the refusal
            out.append({"phase": phase, "batch": batch, "tokens": tokens,
                        "error": f"{type(exc).__name__}: {exc}"[:400]})
        torch.cuda.empty_cache()
    return out


def table(results: dict[str, Any]) -> str:
    def tps(side: dict[str, Any]) -> str:
        if "tokens_per_s" in side:
            return f"{side['tokens_per_s']:.4g} ({str(side['how'].get('method'))[:12]})"
        return str(side.get("error") or side.get("skipped") or "-")[:40]

    rows = [f"{'model':<12} {'phase':<8} {'B':>3} {'L':>6}  {'HF tok/s':<30} "
            f"{'flopkb tok/s':<30} {'flopkb/HF':>9}"]
    for name, rec in results["models"].items():
        if "error" in rec:
            rows.append(f"{name:<12} error: {rec['error'][:100]}")
            continue
        for p in rec["points"]:
            if p.get("skipped"):
                rows.append(f"{name:<12} {p['phase']:<8} {p['batch']:>3} {p['tokens']:>6}  "
                            f"skipped: {p['skipped']}")
                continue
            ratio = p.get("flopkb_over_hf_speed")
            rows.append(f"{name:<12} {p['phase']:<8} {p['batch']:>3} {p['tokens']:>6}  "
                        f"{tps(p.get('hf', {})):<30} {tps(p.get('flopkb', {})):<30} "
                        f"{f'{ratio:.3g}x' if ratio else '-':>9}")
        hf = rec.get("hf") or {}
        if hf.get("error") or hf.get("skipped"):
            rows.append(f"{name:<12} HF: {str(hf.get('error') or hf.get('skipped'))[:100]}")
        for c in rec.get("composition", []):
            if "ratio" in c:
                rows.append(f"{name:<12} stacked/composed {c['phase']} B={c['batch']} "
                            f"L={c['tokens']}: {c['stacked_ms']:.4g} / {c['composed_ms']:.4g} "
                            f"ms = {c['ratio']:.3f} (with norms + adds "
                            f"{c['glue_ms']:.3g} ms: {c['ratio_with_glue']:.3f})")
            else:
                why = str(c.get("error") or c.get("skipped"))[:90]
                rows.append(f"{name:<12} stacked/composed {c.get('phase', '')}: {why}")
    return "\n".join(rows)


def main() -> int:
    ap = parser(__doc__, out=None, rounds=ROUNDS, quick=True)
    ap.add_argument("--cpu-smoke", action="store_true",
                    help="tiny configs on the CPU (TRITON_INTERPRET=1): proves the script runs")
    ap.add_argument("--models", default=",".join(MODELS), help="comma list of " + ", ".join(MODELS))
    ap.add_argument("--time-limit", type=float, default=None,
                    help=f"seconds after which remaining points are skipped, and say so "
                         f"(default {TIME_LIMIT_S:g}; --cpu-smoke {SMOKE_TIME_LIMIT_S:g})")
    args = ap.parse_args()
    names = [n for n in args.models.split(",") if n]
    if bad := [n for n in names if n not in MODELS]:
        print(f"unknown models {bad}; known: {list(MODELS)}", file=sys.stderr)
        return 2
    gpu = not args.cpu_smoke
    if gpu and not torch.cuda.is_available():
        print("bench/models_hf.py needs a CUDA GPU (or --cpu-smoke)", file=sys.stderr)
        return 2
    sizes = SMOKE if args.cpu_smoke else QUICK if args.quick else FULL
    if args.cpu_smoke:
        BUILD.BACKEND = {"flash": "math", "masked": "math"}
        args.rounds = min(args.rounds, 2)
    try:
        import transformers
    except ImportError:
        transformers = None
    kb, _ = load_kb(bundled_root())
    ctx = Context(gpu=gpu, quick=args.quick or args.cpu_smoke,
                  settings=Settings.for_mode(args.quick or args.cpu_smoke))
    began = time.monotonic()
    limit = args.time_limit or (SMOKE_TIME_LIMIT_S if args.cpu_smoke else TIME_LIMIT_S)
    deadline = began + limit
    results: dict[str, Any] = header(machine=fingerprint(), sizes=sizes, rounds=args.rounds,
                                     budget_ms=BUDGET_MS, models={},
                                     transformers=getattr(transformers, "__version__", None))
    for name in names:
        t0 = time.monotonic()
        try:
            rec = run_model(name, kb, transformers, ctx, args, sizes, deadline)
        except Exception as exc:  # one model failing leaves the others to run
            rec = {"error": f"{type(exc).__name__}: {exc}"[:500],
                   "traceback": traceback.format_exc()[-2000:]}
        rec["seconds"] = time.monotonic() - t0
        results["models"][name] = rec
        results["seconds"] = time.monotonic() - began
        if args.out:
            write_json(args.out, results)
        if gpu:
            torch.cuda.empty_cache()
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
