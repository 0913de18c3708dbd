# H100 dry run of the stale kernel-suite claims on the patched tree (evidence is H100's, not landed).
set -u
. tools/device/peers_env.sh > $OUT/env.txt 2>&1
mkdir -p $OUT/d; nvidia-smi > $OUT/d/h100.gpu.txt 2>&1
touch /tmp/m; sleep 1; start=$(date +%s)
left() { echo $(( 540 - ($(date +%s) - start) )); }
for target in "--record mamba2-ssd" "--record selective-ssm-scan" "--claim samba/mamba-trains-slower-than-mlp" \
    "--claim gated-linear-attention/shared-decay-tensor-core-friendly"; do
  t=$(left); [ "$t" -gt 20 ] || break
  name=$(echo "$target" | tr -c 'a-z0-9\n' '_')
  timeout "$t" python3 -m flopkb verify --gpu --format json $target > "$OUT/d/verify$name.json" 2> "$OUT/d/verify$name.log"
  echo "$target: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/d/wall.txt"
done
find records/evidence -newer /tmp/m -type f > /tmp/list
tar czf $OUT/dryrun_kernels.tgz -T /tmp/list $OUT/d 2>/dev/null
for f in $OUT/d/verify*.log; do echo "== $f"; tail -6 $f; done
