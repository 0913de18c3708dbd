# H100 dry run of the models suite on the patched tree (batches sized to the H100's 80 GB), then the
# SSD forward at Nemotron-H's Mamba-2 shape in the time left.
set -u
. tools/device/peers_env.sh > $OUT/env.txt 2>&1
mkdir -p $OUT/d; touch /tmp/m2; sleep 1; start=$(date +%s)
timeout 420 python3 -m flopkb verify --gpu --suite models --format json > $OUT/d/verify_models.json 2> $OUT/d/verify_models.log
echo "models: exit $?, $(( $(date +%s) - start )) s" | tee -a $OUT/d/wall.txt
t=$(( 560 - ($(date +%s) - start) ))
if [ "$t" -gt 60 ]; then
  timeout $t python3 bench/kernels_ssd_fwd.py --out $OUT/d/ssd_fwd_nemotron_h100.json --heads 128 --groups 8 \
    --dstates 128 --steps 65536 --configs q64_seq,q128_seq,q256_seq,q256 > $OUT/d/ssd_fwd_nemotron_h100.log 2>&1
  echo "ssd: exit $?, $(( $(date +%s) - start )) s" | tee -a $OUT/d/wall.txt
fi
find records/evidence -newer /tmp/m2 -type f > /tmp/list
tar czf $OUT/dryrun_models.tgz -T /tmp/list $OUT/d 2>/dev/null
tail -25 $OUT/d/verify_models.log
