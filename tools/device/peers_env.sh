# Sourced by the device scripts: peers installed into /tmp/site only (the lent machine has no
# registry: wheels come carried in .whl/ and .peers/), the repository and them on PYTHONPATH.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site .whl/*.whl .peers/fla_core-*.whl .peers/mamba_ssm-*-py3-none-any.whl \
  .peers/cuda_cccl-*-cp312-*.whl || exit 1
export PYTHONPATH="$PWD:/tmp/site" FLOPKB_CACHE_DIR=/tmp/fcache PYTHONUNBUFFERED=1
# Mamba's CUDA scan: reuse a module built from the sdist on an earlier machine when one is carried
[ -f .peers/flopkb_mamba_selective_scan.so ] && export FLOPKB_MAMBA_EXT=.peers/flopkb_mamba_selective_scan.so
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw --format=csv
