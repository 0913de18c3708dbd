"""bench/models_hf.py without a GPU: the HF configs follow the flopkb stack's layout, keys a
config class does not take are listed, rounds interleave and a failing side stays apart, the
fast-path resolver reads what a wrapper runs, and the script's --cpu-smoke run writes its JSON."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench import models_hf as mh
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.paths import bundled_root

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def kwargs_of(kb, name: str) -> tuple[list[str], dict]:
    arch = mh.arch_of(kb, name, smoke=False)
    kinds = mh.MODELS[name][2] or mh.STACK.stack_kinds(arch)
    return kinds, mh.MODELS[name][3](arch, kinds)


def test_the_hf_configs_follow_the_stack_layout(kb) -> None:
    kinds, kw = kwargs_of(kb, "nemotron_h")
    assert kw["hybrid_override_pattern"] == "M-M*" and kw["mamba_num_heads"] == 128
    kinds, kw = kwargs_of(kb, "jamba")
    assert kw["num_hidden_layers"] == 8 == len(kinds) // 2
    for i in range(8):  # HF places attention and experts by period and offset
        attn = i % kw["attn_layer_period"] == kw["attn_layer_offset"]
        moe = i % kw["expert_layer_period"] == kw["expert_layer_offset"]
        assert (kinds[2 * i] == "attention") == attn and (kinds[2 * i + 1] == "moe") == moe
    kinds, kw = kwargs_of(kb, "bamba")
    assert kw["attn_layer_indices"] == [3] and kw["num_hidden_layers"] == 4
    kinds, kw = kwargs_of(kb, "kimi_linear")
    assert kw["layer_types"] == ["linear_attention"] * 3 + ["full_attention"]
    assert kw["mlp_layer_types"] == ["dense", "sparse", "sparse", "sparse"]
    assert kw["q_lora_rank"] is None and kw["num_local_experts"] == 256
    kinds, kw = kwargs_of(kb, "mamba2")
    assert kw["num_heads"] * kw["head_dim"] == kw["hidden_size"] * kw["expand"]
    kinds, kw = kwargs_of(kb, "llama")
    assert kinds == ["attention", "mlp"] * 4 and kw["num_hidden_layers"] == 4


def test_a_key_the_config_class_drops_is_listed(kb) -> None:
    class LlamaConfig:
        def __init__(self, **kw) -> None:
            kw.pop("head_dim")
            self.__dict__.update(kw)

    arch = mh.arch_of(kb, "llama", smoke=False)
    config, how = mh.hf_config(SimpleNamespace(LlamaConfig=LlamaConfig), "llama", arch,
                               ["attention", "mlp"] * 4, 40000)
    assert how["config_not_taken"] == {"head_dim": "'<absent>'"}
    assert config.max_position_embeddings == 40000 and config._attn_implementation == "sdpa"
    assert how["config_kwargs"]["hidden_size"] == 4096


def test_rounds_interleave_and_a_failing_side_stays_apart() -> None:
    calls: list[str] = []

    def side(name: str, ms: float, fail_at: int | None = None):
        def run() -> dict:
            calls.append(name)
            if fail_at is not None and calls.count(name) == fail_at:
                raise RuntimeError("out of memory\nmore")
            return {"ms": ms + len(calls)}
        return run

    got = mh.interleaved({"hf": side("hf", 10.0), "flopkb": side("flopkb", 1.0, fail_at=2)}, 3)
    assert calls == ["hf", "flopkb", "flopkb", "hf", "hf"]
    assert got["flopkb"] == {"error": "RuntimeError: out of memory"}
    assert got["hf"]["round_ms"] == [11.0, 14.0, 15.0] and got["hf"]["ms"] == 14.0
    calls.clear()
    slow = {"ms": 2000.0, "method": "events"}
    got = mh.interleaved({"hf": lambda: calls.append("hf") or slow, "flopkb": side("flopkb", 1.0)},
                         3)
    assert calls == ["hf", "flopkb", "flopkb", "flopkb"] and got["hf"]["rounds_run"] == 1
    calls.clear()
    got = mh.interleaved({"hf": side("hf", 0.0), "flopkb": side("flopkb", 0.0)}, 3, deadline=0)
    assert calls == ["hf", "flopkb"] and got["flopkb"]["rounds_run"] == 1


def test_the_resolver_reads_what_a_wrapper_closed_over() -> None:
    def torch_path(x):
        return x

    def decorate(fn):
        implementation = json.dumps  # a "peer" picked at import

        @functools.wraps(fn)
        def wrapped(*a):
            return implementation(*a)
        return wrapped

    assert mh.resolved(decorate(torch_path)) == "json.dumps"
    assert mh.resolved(torch_path).endswith("test_models_hf.torch_path")


def test_the_cpu_smoke_run_writes_its_json(tmp_path) -> None:
    out = tmp_path / "smoke.json"
    done = subprocess.run([sys.executable, str(ROOT / "bench" / "models_hf.py"), "--cpu-smoke",
                           "--models", "llama", "--out", str(out)], capture_output=True,
                          text=True, timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    data = json.loads(out.read_text())
    rec = data["models"]["llama"]
    assert rec["kinds"] == ["attention", "mlp"] * 4
    assert [(p["phase"], p["tokens"]) for p in rec["points"]] == [("prefill", 9), ("decode", 7)]
    for p in rec["points"]:
        assert p["flopkb"]["tokens_per_s"] > 0
        if data["transformers"] is None:
            assert rec["hf"] == {"skipped": "transformers is not installed here"}
        else:
            assert p["hf"]["tokens_per_s"] > 0
    assert done.stdout.splitlines()[-1].startswith("llama")


def test_a_model_without_a_transformers_class_runs_its_flopkb_side(kb, monkeypatch) -> None:
    built: list[tuple] = []

    def fake_side(ctx, arch, kinds, phase, batch, tokens):
        built.append((phase, batch, tokens, tuple(kinds)))
        return (lambda: None), None

    monkeypatch.setattr(mh, "flopkb_side", fake_side)
    monkeypatch.setattr(mh, "timed", lambda fn, decode, gpu: {"ms": 4.0 if decode else 8.0})
    args = SimpleNamespace(cpu_smoke=False, rounds=2)
    sizes = {"prefill": [1024], "decode": [(8, 4096)]}
    rec = mh.run_model("samba", kb, SimpleNamespace(), SimpleNamespace(gpu=False), args, sizes,
                       float("inf"))
    assert rec["hf"]["skipped"].startswith("Samba has no transformers class")
    kinds = ("mamba1", "mlp", "sliding_attention", "mlp")
    assert built == [("prefill", 1, 1024, kinds), ("decode", 8, 4096, kinds)]
    prefill, decode = rec["points"]
    assert "hf" not in prefill and prefill["flopkb"]["round_ms"] == [8.0, 8.0]
    assert prefill["flopkb"]["tokens_per_s"] == pytest.approx(1024 / 8e-3)
    assert decode["flopkb"]["tokens_per_s"] == pytest.approx(8 / 4e-3)
    assert rec["composition"][0]["skipped"].startswith("time_stacked times")
