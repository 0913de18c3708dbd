#!/usr/bin/env bash
# The landing run of the pending patches on a lent H200, one device call per step, run from the
# repository root with .peers/ and .whl/ carried (needs_h200: the serving suite sizes its batches
# to the H200's 141 GB). Evidence written by the step and its logs come back as one tarball
# (the device tool returns at most 8 files a call).
#   bash tools/device/pending/land.sh kernels     # verify --gpu --stale: the 17 kernel-suite claims
#   bash tools/device/pending/land.sh models 1    # verify --gpu --suite models, process 1 (then 2, 3)
set -u
. tools/device/peers_env.sh > "$OUT/env.txt" 2>&1
step=$1 run=${2:-1}
mkdir -p "$OUT/d"; nvidia-smi > "$OUT/d/gpu.txt" 2>&1
touch /tmp/land_mark; sleep 1; start=$(date +%s)
if [ "$step" = kernels ]; then
  name=verify_h200_stale
  timeout 560 python3 -m flopkb verify --gpu --stale --format json > "$OUT/d/$name.json" 2> "$OUT/d/$name.log"
else
  name=verify_h200_models_run$run
  timeout 560 python3 -m flopkb verify --gpu --suite models --format json > "$OUT/d/$name.json" 2> "$OUT/d/$name.log"
fi
echo "$step $run: exit $?, $(( $(date +%s) - start )) s" | tee "$OUT/d/wall.txt"
find records/evidence -newer /tmp/land_mark -type f > /tmp/land_list
tar czf "$OUT/$name.tgz" -T /tmp/land_list "$OUT/d" 2>/dev/null
tail -n 25 "$OUT/d/$name.log"
