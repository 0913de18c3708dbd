"""The experiments `flopkb verify` knows, as plain data: importing this module never imports torch.

`flopkb validate` uses it to check that an evidence record or a claim row's `verify.experiment`
names an experiment that exists, and `hashing` uses `kernels` to hash the kernel sources an
experiment runs. The code of experiment NAME lives in `flopkb/verify/experiments/<module>.py` and
is imported only when the experiment runs.

`kernels` entries are paths relative to the KB's `kernels/` folder; an entry ending in "/" stands
for every kernel source below that folder (`*.py`, `*.cu`, `*.cuh`), so a kernel module added or
renamed inside an operator's folder still counts towards the hash.
"""

from __future__ import annotations

from dataclasses import dataclass

from flopkb.verify.impls import Side


@dataclass(frozen=True)
class ExperimentInfo:
    """What an experiment runs and measures, and how it reads a claim's magnitude."""

    name: str
    module: str
    title: str
    claims: tuple[str, ...]
    kernels: tuple[str, ...]
    measures: str
    criterion: str
    sweep: str
    time_limit_s: float = 60.0
    needs: tuple[str, ...] = ()
    # the sides of the comparison and the implementations that can run each (default first);
    # an experiment with no sides runs one fixed combination
    sides: tuple[Side, ...] = ()


_SSM = ("_ssm_common.py",)
# kernels/_platform.py decides Hopper-only paths (TMA) for the Triton GEMM
_PLATFORM = ("_platform.py",)
# The sides that several experiments share.
SSD_SIDE = Side("ssd", ("bundled", "mamba_ssm", "fla"))
SCAN_SIDE = Side("scan", ("bundled", "mamba_cuda"))
# D1 and D3 are about CCCL's own levels: CUB first, our atomic / fixed-order pair beside it.
REDUCTION_SIDE = Side("reduction", ("cub", "bundled"))
_REDUCTION = ("reduction/atomic.py", "reduction/ordered.py", "reduction/_partial.py",
              "reduction/_checks.py", "reduction/reference.py")
_CUB = ("reduction/cub.py", "reduction/cub_levels.cu")

EXPERIMENTS: dict[str, ExperimentInfo] = {
    info.name: info
    for info in (
        ExperimentInfo(
            name="calibration",
            module="calibration",
            title="Measured ceilings: bf16 GEMM peak (cuBLAS, random data), device copy bandwidth",
            claims=(),
            kernels=("gemm/cublas.py",),
            measures="bf16 TFLOP/s of an 8192^3 cuBLAS product; GB/s of a 2 GiB device copy "
            "(bytes read + written)",
            criterion="no claim: the ceilings every roofline floor of the run is computed from",
            sweep="none",
            time_limit_s=30,
        ),
        ExperimentInfo(
            name="scan-vs-matmul-schedule",
            module="schedule",
            title="Same SSD math, scan schedule vs chunked (tensor-core) schedule",
            claims=("A1",),
            kernels=("ssd/", *_SSM),
            measures="time ratio t(ssd_scan) / t(ssd_chunked) on identical inputs, and each "
            "schedule's fraction of the bf16 tensor peak",
            criterion="qualitative: confirmed when the ratio interval lies above 1 + tolerance "
            "(the scan schedule is slower on the same math), refuted when it lies below 1",
            sweep="state size N in {64, 128} x sequence length",
            time_limit_s=35,
            sides=(Side("schedules", ("bundled", "fla")),),
        ),
        ExperimentInfo(
            name="ssd-vs-scan",
            module="ssd_vs_scan",
            title="SSD chunked vs Mamba-1 fused selective scan at equal state size",
            claims=("A2",),
            kernels=("ssd/", "selective_scan/", *_SSM),
            measures="time ratio t(selective_scan, D = H*P channels) / t(ssd_chunked)",
            criterion="ratio interval vs the claimed range widened by the tolerance",
            sweep="state size N in {16, 64, 128, 256} at the reference length; sequence length",
            time_limit_s=45,
            sides=(SSD_SIDE, SCAN_SIDE),
        ),
        ExperimentInfo(
            name="ssd-vs-attention",
            module="ssd_vs_attention",
            title="SSD chunked vs causal FlashAttention-2 (torch SDPA, flash backend)",
            claims=("A3",),
            kernels=("ssd/", "attention/", *_SSM),
            measures="ratio t(attention) / t(ssd) over sequence length at fixed tokens; the "
            "crossover length where the ratio crosses 1 (log-log interpolation)",
            criterion="'crossover at L': crossover interval inside [L/sqrt2, L*sqrt2]; "
            "'Rx at L': ratio at L vs R widened by the tolerance",
            sweep="sequence length 512 .. 16K at fixed batch*length; each also as a training step",
            time_limit_s=90,
            sides=(SSD_SIDE, Side("attention", ("sdpa",))),
        ),
        ExperimentInfo(
            name="scan-vs-mlp",
            module="scan_vs_mlp",
            title="Mamba-1 layer (projections + selective scan) vs MLP layer of the same width",
            claims=("A4",),
            kernels=("selective_scan/", "gemm/cublas.py", *_SSM),
            measures="time ratio t(in_proj + scan + out_proj) / t(MLP up + down), forward, "
            "d_model d, expand 2, MLP 4d",
            criterion="qualitative 'slower': ratio interval above 1 + tolerance",
            sweep="state size N in {16, 64}; forward and forward+backward",
            time_limit_s=45,
            sides=(SCAN_SIDE, Side("mlp", ("cublas",))),
        ),
        ExperimentInfo(
            name="decay-granularity",
            module="decay_granularity",
            title="Chunked SSD with one decay per head vs one decay per state channel",
            claims=("A5",),
            kernels=("ssd/", *_SSM),
            measures="time ratio t(per-channel decay) / t(scalar decay), same shapes",
            criterion="qualitative 'shared decay is cheaper': ratio interval above 1 + tolerance",
            sweep="state size N in {64, 128} x sequence length",
            time_limit_s=30,
            sides=(Side("kernels", ("bundled", "fla")),),
        ),
        ExperimentInfo(
            name="roofline-efficiency",
            module="roofline",
            title="Fraction of roofline: selective scan vs elementwise vs GEMM",
            claims=("A6",),
            kernels=("selective_scan/", "elementwise/", "gemm/cublas.py", *_SSM),
            measures="t(scan) / (scan FLOPs / GEMM-achieved FLOP/s): how far a FLOP count at GEMM "
            "efficiency under-predicts the scan's time; roofline fractions of all three",
            criterion="qualitative 'predicts poorly': misprediction factor interval above 2",
            sweep="sequence length at fixed tokens; state size N in {16, 64}",
            time_limit_s=30,
            sides=(SCAN_SIDE, Side("gemm", ("cublas",))),
        ),
        ExperimentInfo(
            name="ssd-matmul-share",
            module="matmul_share",
            title="Share of chunked-SSD time spent in its matmul stages",
            claims=("B1",),
            kernels=("ssd/", *_SSM),
            measures="sum of matmul-stage times / sum of all stage times of ssd_chunked",
            criterion="'dominated by matmuls': share interval above 0.5",
            sweep="state size N in {64, 128, 256}",
            time_limit_s=25,
        ),
        ExperimentInfo(
            name="ssd-head-dim-memory",
            module="head_dim_memory",
            title="Peak memory of an SSD training step at head dimension 64 vs 128, equal width",
            claims=("B2",),
            kernels=("ssd/", *_SSM),
            measures="device memory a forward+backward step adds (max_memory_allocated minus "
            "what was allocated before it) at P=128 over P=64, width H*P fixed",
            criterion="'raises VRAM pressure': ratio above 1.05 confirms, below 1 refutes",
            sweep="P in {64, 128} at equal width; P=128 at the P=64 head count",
            time_limit_s=30,
            sides=(SSD_SIDE,),
        ),
        ExperimentInfo(
            name="chunked-vs-quadratic",
            module="chunked_vs_quadratic",
            title="Chunked SSD vs the quadratic (attention-like) SSD form over sequence length",
            claims=("B3",),
            kernels=("ssd/", *_SSM),
            measures="ratio t(chunked) / t(quadratic) over sequence length; crossover length",
            criterion="qualitative: confirmed when quadratic is faster (ratio interval > 1) at "
            "the shortest length and slower (< 1) at the longest, i.e. a crossover exists",
            sweep="sequence length 64 .. 8K at fixed batch*heads",
            time_limit_s=35,
        ),
        ExperimentInfo(
            name="chunk-size-sweep",
            module="chunk_size",
            title="Chunked SSD time over chunk size Q",
            claims=("B4",),
            kernels=("ssd/", *_SSM),
            measures="time per chunk size; ratio t(Q_claimed) / t(best Q)",
            criterion="confirmed when the claimed Q is within the tolerance of the best Q "
            "(ratio interval <= 1 + tol), refuted when clearly slower",
            sweep="chunk size Q in {32, 64, 128, 256} x state size",
            time_limit_s=30,
            sides=(Side("ssd", ("bundled", "mamba_ssm")),),
        ),
        ExperimentInfo(
            name="kernel-vs-pytorch",
            module="kernel_vs_pytorch",
            title="Dedicated SSD kernel vs plain PyTorch",
            claims=("B5",),
            kernels=("ssd/", *_SSM),
            measures="time ratio t(plain PyTorch SSD) / t(ssd_chunked kernel)",
            criterion="qualitative 'kernel delivers the speedup': ratio interval above "
            "1 + tolerance",
            sweep="sequence length",
            time_limit_s=30,
            sides=(SSD_SIDE, Side("pytorch", ("torch",))),
        ),
        ExperimentInfo(
            name="gemm-ruggedness",
            module="ruggedness",
            title="bf16 GEMM throughput over nearby shapes (alignment sweep)",
            claims=("C2",),
            kernels=("gemm/", *_PLATFORM),
            measures="max/min TFLOP/s over square shapes within 4% of a base size (cuBLAS); "
            "coefficient of variation; the Triton GEMM alongside",
            criterion="qualitative 'rugged': swing factor interval above 1.25 while the roofline "
            "predicts under 1.04 across the same shapes",
            sweep="M = N = K over base + {-64 .. +64} incl. odd and power-of-two-aligned sizes",
            time_limit_s=35,
        ),
        ExperimentInfo(
            name="lowrank-vs-dense",
            module="lowrank",
            title="Low-rank pair (x U) V vs the dense product",
            claims=("C3",),
            kernels=("gemm/", *_PLATFORM),
            measures="speedup t(dense) / t(low rank) and its efficiency relative to the FLOP ratio",
            criterion="qualitative 'efficient': low rank faster (ratio interval above 1 + tol) at "
            "rank K/4, reported where it stops holding over the rank sweep",
            sweep="rank r in {K/16, K/8, K/4, K/2}",
            time_limit_s=20,
        ),
        ExperimentInfo(
            name="int8-native-vs-emulated",
            module="int8",
            title="Native INT8 tensor-core GEMM vs INT8 emulated on bf16 tensor cores",
            claims=("C4",),
            kernels=("gemm/", *_PLATFORM),
            measures="time ratio t(emulated) / t(native) for torch._int_mm and the Triton int8 dot",
            criterion="qualitative 'native beats emulated': ratio interval above 1 + tolerance; "
            "INT4 parts are not applicable where int4_tensor_ops is null",
            sweep="square sizes 2048 .. 8192",
            time_limit_s=30,
            needs=("int8_tensor_ops",),
        ),
        ExperimentInfo(
            name="reduction-determinism",
            module="determinism",
            title="Float sums at CCCL's determinism levels: distinct bitwise results over repeats",
            claims=("D1",),
            kernels=(*_REDUCTION, *_CUB),
            measures="number of distinct bitwise results over repeated runs, per level (CUB's "
            "not_guaranteed, run_to_run, gpu_to_gpu) or per bundled sum (atomic, fixed order); "
            "beside them a scatter-add (index_add_) without and with torch's deterministic mode: "
            "distinct results and time",
            criterion="cub: confirmed when run_to_run and gpu_to_gpu each give exactly 1 result "
            "and the levels are told apart, refuted when either gives more (not_guaranteed's "
            "count is reported, not required above 1); bundled: confirmed when the atomic sum "
            "gives > 1 and the fixed-order one exactly 1, refuted when the fixed-order one varies",
            sweep="element count 1M .. 64M; scatter-add 16M into 4096 bins",
            # the first use builds cub_levels.cu (about 20-40 s of nvcc), cached after
            time_limit_s=60,
            sides=(REDUCTION_SIDE,),
        ),
        ExperimentInfo(
            name="determinism-overhead",
            module="determinism_overhead",
            title="Cost of a stricter determinism level: CUB gpu_to_gpu vs run_to_run",
            claims=("D3",),
            kernels=(*_REDUCTION, *_CUB, "reduction/cost.py"),
            measures="time ratio t(gpu_to_gpu) / t(run_to_run) of CUB's single-phase Sum, "
            "event-timed (it allocates per call: no CUDA graph); bundled: t(fixed order) / "
            "t(atomic), graph-timed",
            criterion="qualitative 'has an overhead': ratio interval above 1 + tolerance at the "
            "claim's point (or the first larger size that is not launch-bound), refuted when "
            "below 1; the '20-30%' row: percent overhead at the large "
            "inputs (64M and 256M fp32, launch-bound points excluded) inside the claimed range "
            "widened by the tolerance (cub only; not applicable to the bundled pair)",
            sweep="element count 1M .. 256M",
            time_limit_s=60,
            sides=(REDUCTION_SIDE,),
        ),
        ExperimentInfo(
            name="reduction-partition-simulation",
            module="partition_sim",
            title="run_to_run across parts, simulated on one GPU: the partition follows sm_count",
            claims=("D2",),
            kernels=("reduction/partitioned.py", *_REDUCTION, *_CUB),
            measures="distinct bitwise sums over the even-share partitions the KB's SM counts "
            "imply (bundled fixed-order sum), or over rotations of the input (CUB run_to_run vs "
            "gpu_to_gpu); each configuration repeated",
            criterion="a SIMULATION (conditions.simulation: true, never backs basis: measured): "
            "confirmed when the partitions (rotations) give more than one bit pattern while each "
            "repeats (and CUB's gpu_to_gpu gives one); inconclusive otherwise; never refuted",
            sweep="one grid per distinct SM count in the KB, 64M fp32, 3 inputs",
            time_limit_s=60,
            sides=(Side("reduction", ("bundled", "cub")),),
        ),
    )
}


def experiment_exists(name: str) -> bool:
    return name in EXPERIMENTS


def get(name: str) -> ExperimentInfo:
    """The experiment called `name`; KeyError names the known ones."""
    try:
        return EXPERIMENTS[name]
    except KeyError:
        raise KeyError(f"no experiment {name!r}; known: {', '.join(sorted(EXPERIMENTS))}") from None
