"""Which page holds which generated block, and the pages written whole. Each block appears on
exactly one page (tests/docs/test_generated_pages.py says so), so no table is written twice."""

from __future__ import annotations

from collections.abc import Callable

from . import (
    agreement,
    decode,
    kb,
    kernels,
    models,
    rules,
    runs,
    serving,
    speed,
    ssd_forward,
    verdicts,
)
from .markers import regenerate
from .sources import Sources

BLOCKS: dict[str, Callable[[Sources], str]] = {
    # docs/results.md: the verdicts on the H200 and the runs behind them
    "verify-run": runs.block_verify_run,
    "verdicts": verdicts.block_verdicts,
    "other-verdicts": verdicts.block_other_verdicts,
    "run-agreement": agreement.block_run_agreement,
    "recheck": runs.block_recheck,
    "torchrun": runs.block_torchrun,
    # docs/kernels.md: the bundled kernels beside their peers
    "kernels": kernels.block_kernels,
    "kernel-notes": kernels.block_kernel_notes,
    "ssd-forward": ssd_forward.block_ssd_forward,
    "decode-kernels": decode.block_decode_kernels,
    # docs/performance.md: how fast the tools run on the CPU
    "cpu-times": speed.block_cpu_times,
    "suite-beside-hog": speed.block_suite_beside_hog,
    "validate-table": speed.block_validate_table,
    "graph-speed": speed.block_graph_speed,
    "walk-read": speed.block_walk_read,
    "hostile-inputs": speed.block_hostile_inputs,
    # docs/models.md: computed from the architecture records; the serving claims' verdicts
    "model-table": models.block_model_table,
    "model-claims": models.block_model_claims,
    "serving-verdicts": serving.block_serving_verdicts,
    "serving-pictures": serving.block_serving_pictures,
    "models-hf": serving.block_models_hf,
    # the user pages' few figures
    "calibration": runs.block_calibration,
    "plan-time": speed.block_plan_time,
    "kb-counts": kb.block_kb_counts,
    "graph-status": kb.block_graph_status,
    # docs/validate.md: figures quoted inside its sentences (inline blocks)
    "dated-records": kb.block_dated_records,
    "schema-versions": kb.block_schema_versions,
}

# Pages with generated blocks between hand-written text.
MARKED = ("docs/results.md", "docs/kernels.md", "docs/performance.md", "docs/models.md",
          "docs/verify.md", "docs/kb.md", "docs/graph.md", "docs/validate.md")
# Pages the generator writes whole.
WHOLE: dict[str, Callable[[], str]] = {rules.PATH: rules.page}


def generated(path: str, text: str, src: Sources) -> str:
    """What the generator makes of the page at `path` whose current text is `text`."""
    if path in WHOLE:
        return WHOLE[path]()
    return regenerate(text, src, BLOCKS)
