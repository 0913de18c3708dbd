#!/usr/bin/env bash
# One device call: Mamba's CUDA scan and causal-conv1d built from their sdists in the background
# (tools/device/build_peers.sh) while the MLA/MoE decode and sliding-window kernels are timed
# beside their peers (bench/kernels_decode_mla_moe.py, bench/kernels_attention_window.py).
# Run from the repository root with .whl/ .peers/ carried.
set -u
t0=$(date +%s)
# shellcheck source=tools/device/peers_env.sh
. "$(dirname "$0")/peers_env.sh" > "$OUT/gpu.txt"  # sourced, not piped: its exports must stay
cat "$OUT/gpu.txt"
MAX_JOBS=6 bash tools/device/build_peers.sh > "$OUT/build.log" 2>&1 &
build=$!
timeout 220 python3 bench/kernels_decode_mla_moe.py --out "$OUT/mla_moe.json" > "$OUT/mla_moe.log" 2>&1
echo "mla_moe exit $? at $(( $(date +%s) - t0 )) s"
timeout 230 python3 bench/kernels_attention_window.py --out "$OUT/attn.json" > "$OUT/attn.log" 2>&1
echo "attn exit $? at $(( $(date +%s) - t0 )) s"
timeout 60 python3 - > "$OUT/probe.txt" 2>&1 <<'PY'
import importlib, torch, transformers
print("torch", torch.__version__, "cuda", torch.version.cuda, "transformers", transformers.__version__)
for name in ("NemotronHForCausalLM", "JambaForCausalLM", "BambaForCausalLM", "Mamba2ForCausalLM",
             "KimiLinearForCausalLM", "LlamaForCausalLM", "MambaForCausalLM"):
    print(name, hasattr(transformers, name))
for mod in ("fla", "mamba_ssm.ops.triton.selective_state_update", "causal_conv1d", "triton"):
    try:
        m = importlib.import_module(mod); print("import ok", mod, getattr(m, "__version__", ""))
    except Exception as e:
        print("import FAIL", mod, type(e).__name__, str(e)[:200])
PY
echo "probe at $(( $(date +%s) - t0 )) s"
left=$(( 560 - ($(date +%s) - t0) ))
( sleep "$left"; kill "$build" 2>/dev/null ) & wait "$build"
echo "build exit $? at $(( $(date +%s) - t0 )) s"
tail -n 25 "$OUT/mla_moe.log"; tail -n 25 "$OUT/attn.log"; tail -n 8 "$OUT/build.log"; cat "$OUT/probe.txt"
