#!/usr/bin/env bash
# The models suite on a lent GPU machine in one call: `verify --gpu --suite models` (the serving
# claims), then the per-layer serving bench (bench/serving_layers.py) in the time left. Evidence
# and logs come back as one tarball under $OUT. Run from the repository root with .whl/ .peers/
# carried.   bash tools/device/models_suite.sh [extra verify options, e.g. "--claim a/b"]
set -u
# shellcheck source=tools/device/peers_env.sh
. "$(dirname "$0")/peers_env.sh"
start=$(date +%s)
left() { echo $(( ${BUDGET_S:-570} - ($(date +%s) - start) )); }
mkdir -p "$OUT/logs"
# shellcheck disable=SC2068  # extra options split on purpose
timeout "${MODELS_S:-360}" python3 -m flopkb verify --gpu --suite models --format json $@ \
  > "$OUT/logs/verify_models.json" 2> "$OUT/logs/verify_models.log"
echo "models suite: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/logs/wall.txt"
t=$(( $(left) - 10 ))
if [ "${LAYERS:-1}" = 1 ] && [ "$t" -gt 40 ]; then
  timeout "$t" python3 bench/serving_layers.py --rounds "${LAYER_ROUNDS:-3}" \
    --out "$OUT/logs/serving_layers_h200.json" > "$OUT/logs/serving_layers.log" 2>&1
  echo "serving layers: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/logs/wall.txt"
fi
tar czf "$OUT/evidence.tgz" records/evidence "$OUT/logs" 2>/dev/null
tail -n 25 "$OUT/logs/verify_models.log"; tail -n 8 "$OUT/logs/serving_layers.log" 2>/dev/null
