#!/usr/bin/env bash
# The README's test command (.ci/run, in a fresh clone of this checkout's HEAD) three times in a
# row, with one CPU-bound process beside it the whole time: on a 2-core machine the tests then get
# one core, as on a busy CI runner. Writes DIR/summary.txt and DIR/log<N>.txt; then
#   python bench/suite_beside_hog.py DIR [DIR ...]   -> bench/results/suite_beside_hog.json
#   bash bench/suite_beside_hog.sh DIR
set -u
dir=${1:?an output folder outside the repository}
src=$(git -C "$(dirname "$0")/.." rev-parse --show-toplevel)
mkdir -p "$dir" && cd "$dir" || exit 1
rev=$(git -C "$src" rev-parse HEAD)
python3 -c 'while True: pass' & hog=$!
echo "hog pid $hog rev $rev start $(date -u +%FT%TZ)" > summary.txt
for i in 1 2 3; do
  rm -rf clone$i; git clone -q "$src" clone$i
  s=$(date +%s)
  bash clone$i/.ci/run > log$i.txt 2>&1; rc=$?
  echo "run $i rc $rc wall $(( $(date +%s) - s )) s: $(tail -1 log$i.txt)" >> summary.txt
done
kill $hog
echo "end $(date -u +%FT%TZ)" >> summary.txt
