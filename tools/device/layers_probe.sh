#!/usr/bin/env bash
# One device call for the per-layer kernel work (issue 24): Mamba's CUDA scan built from the sdist
# (returned as $OUT/flopkb_mamba_selective_scan.so for later calls to carry), the MLA launch sweep
# twice (two processes), the sliding-window bench beside compiled flex_attention, every serving
# layer implementation of Samba's prefill claim timed as verify times it, and where the Mamba-1
# prefill layer's time goes (torch.profiler). Run from the repository root with .whl/ .peers/
# carried.
set -u
t0=$(date +%s)
# shellcheck source=tools/device/peers_env.sh
. "$(dirname "$0")/peers_env.sh" > "$OUT/gpu.txt"
cat "$OUT/gpu.txt"
at() { echo "$1 exit $2 at $(( $(date +%s) - t0 )) s" | tee -a "$OUT/wall.txt"; }
if [ -z "${FLOPKB_MAMBA_EXT:-}" ]; then
  python3 - > "$OUT/build.log" 2>&1 <<'PY'
import os, shutil
from pathlib import Path
from flopkb.verify.peers import mamba_cuda
module, what = mamba_cuda.build([Path(".")])
print("mamba cuda scan:", what, module.__file__)
shutil.copy(module.__file__, Path(os.environ["OUT"]) / "flopkb_mamba_selective_scan.so")
PY
  at build $?
  [ -f "$OUT/flopkb_mamba_selective_scan.so" ] && export FLOPKB_MAMBA_EXT="$OUT/flopkb_mamba_selective_scan.so"
fi
for run in 1 2; do
  timeout 90 python3 bench/kernels_decode_mla_moe.py --sections mla --wide \
    --out "$OUT/decode_mla_wide_h200_$run.json" > "$OUT/decode_mla_wide_h200_$run.log" 2>&1
  at "mla wide $run" $?
done
timeout 200 python3 bench/kernels_attention_window.py \
  --out "$OUT/attention_window_h200.json" > "$OUT/attention_window_h200.log" 2>&1
at window $?
timeout 120 python3 bench/serving_layers.py --claims serving-samba-prompt --rounds 3 \
  --out "$OUT/serving_layers_samba_prompt_h200.json" > "$OUT/serving_layers_samba_prompt_h200.log" 2>&1
at "serving layers" $?
timeout 90 python3 bench/serving_layer_profile.py --claims serving-samba-prompt --kinds mamba1 \
  --out "$OUT/serving_layer_profile_h200.json" > "$OUT/serving_layer_profile_h200.log" 2>&1
at profile $?
tail -n 5 "$OUT/build.log" 2>/dev/null; tail -n 6 "$OUT"/decode_mla_wide_h200_*.log
tail -n 20 "$OUT/attention_window_h200.log"; tail -n 14 "$OUT/serving_layers_samba_prompt_h200.log"
cat "$OUT/serving_layer_profile_h200.log"
