#!/usr/bin/env bash
# One device call: HF transformers models at reduced depth beside flopkb's stacked model of the
# same architecture, and the stacked / composed check (bench/models_hf.py --quick), with the
# peers of peers_env.sh (mamba_ssm Triton-only, fla) and the causal-conv1d wheel built on an
# earlier machine on PYTHONPATH. Run from the repository root with .whl/ .peers/ carried.
set -u
t0=$(date +%s)
# shellcheck source=tools/device/peers_env.sh
. "$(dirname "$0")/peers_env.sh" > "$OUT/gpu.txt"  # sourced, not piped: its exports must stay
cat "$OUT/gpu.txt"
# causal-conv1d: its wheel where one is carried (else HF's torch fallback runs, and the JSON says so)
for w in .peers/causal_conv1d-*.whl; do
  [ -f "$w" ] && python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
    --upgrade --target /tmp/site "$w" || echo "no causal-conv1d wheel installed ($w)"
done
python3 -c "import transformers, torch; print('transformers', transformers.__version__, 'torch', torch.__version__)"
timeout 290 python3 bench/models_hf.py --quick --time-limit 200 --out "$OUT/models_hf_h200.json" \
  > "$OUT/models_hf.log" 2>&1
echo "models_hf exit $? at $(( $(date +%s) - t0 )) s"
grep -v -i "warn" "$OUT/models_hf.log" | tail -n 45
