#!/usr/bin/env bash
# One `flopkb verify --gpu` run (the default suite, bundled kernels, the default rounds) in a
# process of its own, for the run-to-run agreement table, then optionally the SSD forward bench
# with whatever time is left. Run from the repository root on a lent GPU machine (the device
# tool) with .whl/ and .peers/ carried:
#   bash tools/device/stability_run.sh RUN_ID [BUDGET_S] [EXTRA...]
# RUN_ID names the evidence tarball ($OUT/evidence_RUN_ID.tgz) and the verify JSON/log; BUDGET_S
# (default 560) bounds the whole script; EXTRA steps run after verify while time is left:
#   fwd      bench/kernels_ssd_fwd.py (its arguments from $FWD_ARGS)
#   bwd2k    bench/kernels_ssd_bwd.py at T=2K (q256, q128 beside mamba_ssm and fla, 3 rounds)
#   implall  verify --impl all on the A3 claims (the implementation-sensitive example)
#   verify2  another verify process (RUN_ID-b, RUN_ID-c, ... for each one asked)
# VERIFY_ARGS (e.g. "--record gpu-reduction") narrows every verify process to those claims.
set -u
run=${1:?run id}; budget=${2:-560}; shift 2 || shift $#
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl .peers/fla_core-*.whl .peers/mamba_ssm-*-py3-none-any.whl \
  .peers/cuda_cccl-*-cp312-*.whl || exit 1
export PYTHONPATH="$PWD:/tmp/site" FLOPKB_CACHE_DIR=/tmp/fcache PYTHONUNBUFFERED=1
[ -f .peers/flopkb_mamba_selective_scan.so ] && export FLOPKB_MAMBA_EXT=.peers/flopkb_mamba_selective_scan.so
nvidia-smi --query-gpu=name,serial,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv \
  | tee "$OUT/gpu_$run.txt"
one_verify() {  # $1 = id, $2 = seconds
  # into the KB's own records/evidence (verify then writes each record's schema header line, as
  # the bundled records carry it); the tarball holds only the files this run wrote
  local id=$1 s=$(date +%s)
  touch "/tmp/start-$id"
  timeout "$2" python3 -m flopkb verify --gpu --format json ${VERIFY_ARGS:-} \
    > "$OUT/verify_$id.json" 2> "$OUT/verify_$id.log"
  echo "verify $id: exit $?, $(( $(date +%s) - s )) s wall" | tee -a "$OUT/verify_$id.log"
  find records/evidence -type f -newer "/tmp/start-$id" -print0 \
    | tar czf "$OUT/evidence_$id.tgz" --null -T -
}
one_verify "$run" $(( $(left) - 20 ))
again=(b c d e f g h)
for extra in "$@"; do
  l=$(left)
  [ "$l" -gt 60 ] || { echo "skipped $extra: ${l} s left"; continue; }
  case $extra in
    verify2) one_verify "$run-${again[0]}" $(( l - 20 )); again=("${again[@]:1}") ;;
    fwd) timeout $(( l - 10 )) python3 bench/kernels_ssd_fwd.py --out "$OUT/ssd_fwd_$run.json" \
           ${FWD_ARGS:-} > "$OUT/ssd_fwd_$run.log" 2>&1; echo "fwd bench: exit $?" ;;
    bwd2k) timeout $(( l - 10 )) python3 bench/kernels_ssd_bwd.py --out "$OUT/ssd_bwd_2k_$run.json" \
           --variants q256,q128 --steps 2048 --rounds 3 2>&1 | tail -5
           echo "bwd2k bench: exit $?" ;;
    implall) s=$(date +%s)
      touch "/tmp/start-$run-impl"
      timeout $(( l - 10 )) python3 -m flopkb verify --gpu --impl all --format json \
        --claim mamba2-ssd/ssd-vs-attention-16k \
        > "$OUT/verify_$run-impl.json" 2> "$OUT/verify_$run-impl.log"
      echo "verify $run-impl: exit $?, $(( $(date +%s) - s )) s wall" | tee -a "$OUT/verify_$run-impl.log"
      find records/evidence -type f -newer "/tmp/start-$run-impl" -print0 \
        | tar czf "$OUT/evidence_$run-impl.tgz" --null -T - ;;
  esac
done
grep -h 'verify\|confirmed\|refuted\|inconclusive\|error' "$OUT"/verify_*.log | tail -60
