#!/usr/bin/env bash
# Build the compiled peers on a lent GPU machine (the device tool) and hand them back under $OUT,
# so later calls carry them in .peers/ instead of building again (nothing of the peers' code is
# committed; the sdists come from PyPI into the git-ignored .peers/):
#   - Mamba's CUDA selective scan (flopkb/verify/peers/mamba_cuda.py builds it from the
#     mamba-ssm sdist for this GPU only)  -> $OUT/flopkb_mamba_selective_scan.so
#   - causal-conv1d from its sdist, for this GPU's architecture only (its setup.py compiles for
#     nine), debug line info left out to keep the wheel small -> $OUT/causal_conv1d-*.whl
# Run from the repository root with .peers/ carried. Prints what it built and how long it took.
set -u
export PYTHONPATH="$PWD:/tmp/site${PYTHONPATH:+:$PYTHONPATH}" FLOPKB_CACHE_DIR=/tmp/fcache
export MAX_JOBS=${MAX_JOBS:-16}
t0=$(date +%s)
arch=$(python3 -c 'import torch; m, n = torch.cuda.get_device_capability(); print(f"{m}{n}")')
if [ ! -f .peers/flopkb_mamba_selective_scan.so ]; then
  python3 - <<'PY'
import shutil, os
from pathlib import Path
from flopkb.verify.peers import mamba_cuda
module, what = mamba_cuda.build([Path(".")])
print("mamba cuda scan:", what, module.__file__)
shutil.copy(module.__file__, Path(os.environ["OUT"]) / "flopkb_mamba_selective_scan.so")
PY
  echo "mamba scan: $(( $(date +%s) - t0 )) s"
fi
if ! ls .peers/causal_conv1d-*.whl >/dev/null 2>&1; then
  t1=$(date +%s)
  rm -rf /tmp/cc1d && mkdir -p /tmp/cc1d && tar xzf .peers/causal_conv1d-*.tar.gz -C /tmp/cc1d
  src=$(ls -d /tmp/cc1d/causal_conv1d-*)
  ARCH=$arch python3 - "$src/setup.py" <<'PY'
import os, re, sys
path = sys.argv[1]
text = open(path).read()
arch = os.environ["ARCH"]
# every -gencode pair for other architectures out; one for this GPU in
# (each append becomes a `pass` at its own indent, so the version branches stay valid Python)
text = re.sub(r'cc_flag\.append\("(-gencode|arch=compute_\d+,code=sm_\d+)"\)', "pass", text)
text = text.replace('cc_flag = []', f'cc_flag = ["-gencode", "arch=compute_{arch},code=sm_{arch}"]', 1)
text = text.replace('"--ptxas-options=-v",', "").replace('"-lineinfo",', "")
open(path, "w").write(text)
PY
  grep -n "cc_flag = \[" "$src/setup.py" | head -2
  (cd "$src" && CAUSAL_CONV1D_FORCE_BUILD=TRUE python3 -m pip wheel -q --no-deps \
     --no-build-isolation -w "$OUT" . ) || echo "causal-conv1d: build failed"
  echo "causal-conv1d: $(( $(date +%s) - t1 )) s"
fi
ls -la "$OUT"
