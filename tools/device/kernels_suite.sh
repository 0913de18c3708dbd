#!/usr/bin/env bash
# The kernels suite on a lent GPU machine in one call (the device tool allows 600 s a call):
# `verify --gpu` with each side's default implementation, then the records whose evidence was
# taken with every implementation (`--impl all`), in the time left. Evidence comes back as one
# tarball under $OUT. Run from the repository root with .peers/ and .whl/ carried.
#   bash tools/device/kernels_suite.sh                       # the whole suite, as above
#   bash tools/device/kernels_suite.sh "--record selective-ssm-scan" "--claim a/b --impl all"
#                                                            # only these runs, in turn
set -u
# shellcheck source=tools/device/peers_env.sh
. "$(dirname "$0")/peers_env.sh"
start=$(date +%s)
left() { echo $(( ${BUDGET_S:-570} - ($(date +%s) - start) )); }
if [ $# -eq 0 ]; then
  timeout "${DEFAULT_S:-420}" python3 -m flopkb verify --gpu --format json \
    > "$OUT/verify_default.json" 2> "$OUT/verify_default.log"
  echo "default: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/wall.txt"
  set -- "--record gpu-reduction --impl all" "--claim mamba2-ssd/ssd-vs-attention-16k --impl all"
fi
for target in "$@"; do
  t=$(left); [ "$t" -gt 20 ] || break
  name=$(echo "$target" | tr -c 'a-z0-9\n' '_')
  # shellcheck disable=SC2086  # each target is an option string, split on purpose
  timeout "$t" python3 -m flopkb verify --gpu --format json $target \
    > "$OUT/verify$name.json" 2> "$OUT/verify$name.log"
  echo "$target: exit $?, $(( $(date +%s) - start )) s" | tee -a "$OUT/wall.txt"
done
# the runs' JSON and logs go in the tarball too: a device call hands back at most 8 files
tar czf "$OUT/evidence.tgz" records/evidence "$OUT"/verify*.json "$OUT"/verify*.log "$OUT/wall.txt" \
  2>/dev/null
tail -n 12 "$OUT"/verify*.log
