#!/usr/bin/env bash
# The final `flopkb verify --gpu --impl all` on a lent GPU machine (the device tool), run from the
# repository root with .peers/ and .whl/ carried. Peers are installed into /tmp/site only; the
# evidence is written to records/evidence there and comes back as one tarball under $OUT.
#   bash tools/device/final_verify.sh            # verify --impl all
#   bash tools/device/final_verify.sh portable   # verify --portable --memory-budget 24 (4090-sized)
set -u
# shellcheck source=tools/device/peers_env.sh
. "$(dirname "$0")/peers_env.sh"
mode=${1:-all}
start=$(date +%s)
if [ "$mode" = portable ]; then
  timeout "${VERIFY_TIMEOUT:-540}" python3 -m flopkb verify --gpu --portable --memory-budget 24 --out /tmp/ev-portable \
    --format json > "$OUT/verify_portable.json" 2> "$OUT/verify_portable.log"
  rc=$?
  tar czf "$OUT/evidence_portable.tgz" -C /tmp ev-portable
else
  timeout "${VERIFY_TIMEOUT:-540}" python3 -m flopkb verify --gpu --impl all --format json > "$OUT/verify_all.json" \
    2> "$OUT/verify_all.log"
  rc=$?
  tar czf "$OUT/evidence.tgz" records/evidence
fi
echo "verify $mode: exit $rc, $(( $(date +%s) - start )) s wall" | tee -a "$OUT/verify_$mode.wall"
tail -40 "$OUT"/verify_*.log
