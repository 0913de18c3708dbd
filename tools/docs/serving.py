"""The serving claims on the H200 (docs/models.md): each claim's pooled verdict from its committed
evidence, the reading judged and the batches, the roofline ratio, the stacked-model check per
side and the layers below their floor fraction; each claim's picture from its newest evidence;
and HF transformers' models beside flopkb's stack from bench/models_hf.py's results file."""

from __future__ import annotations

from typing import Any

from flopkb.claims import first_clause
from flopkb.evidence.measurement import Measurement
from flopkb.model import EvidenceRecord
from flopkb.verify.experiments.serving.judging import (
    STACK_TOLERANCE,
    reading_rows,
    stacked_like_for_like,
)

from .fmt import band, paragraph, table
from .sources import MissingFigure, Sources

HF_BLOCK = "models-hf"
# the serving claims, in the order docs/models.md describes their experiments
CLAIMS = ("samba/prompt-throughput", "samba/generation-speedup", "nemotron-h/faster-inference",
          "kimi-linear/decoding-throughput", "kimi-linear/decoding-tpot-batch1")


def _reading(e: EvidenceRecord) -> dict[str, Any]:
    data = e.statistics["data"]
    return data["readings"][data["claim_reading"]]


def _figure(e: EvidenceRecord) -> str:
    m = e.measured
    if m is None or m.value is None:
        return "-"
    return f"{m.value:.3g}x" + (f" {band(m.low, m.high)}" if m.low is not None else "")


def _stack_cell(e: EvidenceRecord) -> str:
    """stacked / composed per side, and the same with the stack's norms and residual adds."""
    cells = []
    for side, st in (e.statistics["data"].get("stacked") or {}).items():
        if not st:
            cells.append(f"{side}: not run")
            continue
        like = stacked_like_for_like(st)
        flag = "" if abs(like - 1) <= STACK_TOLERANCE else " **outside 10%**"
        cells.append(f"{side} {st['ratio']:.3f} ({like:.3f} with norms){flag}")
    return "; ".join(cells) or "-"


def _below_floor(e: EvidenceRecord, fraction: float) -> str:
    """The judged reading's layers (the rows the judge reads) below `fraction` of their floor,
    slowest first."""
    rows = [row for row in reading_rows(Measurement(e.statistics["data"], e.sweep), _reading(e))
            if row.get("floor_fraction") is not None and row["floor_fraction"] < fraction]
    rows.sort(key=lambda row: row["floor_fraction"])
    return ", ".join(f"{row['side']} {row['layer_type']} {row['phase']} "
                     f"{row['floor_fraction']:.2f}" for row in rows) or "none"


def _verdict_cell(src: Sources, claim: str, newest: EvidenceRecord) -> str:
    p = src.pooled.get(claim)
    shown = p.text() if p else newest.verdict.value
    if p is not None and p.figure is not None:
        shown += f"; pooled {p.figure.text()}"
    if newest.verdict.value == "error":
        # the refusal's own first clause: why this claim has no figure
        shown += f" ({len(src.runs(claim))} runs): " + first_clause(newest.reason)
    return shown


def _per_run(src: Sources, claim: str, runs: list[EvidenceRecord]) -> str:
    """Each pooled run's figure (the runs on the current kernels), then those of earlier runs
    whose kernel sources have changed since, apart: history, not part of the verdict."""
    if all(_figure(x) == "-" for x in runs):
        return f"no figure in any of {len(runs)} runs"
    p = src.pooled.get(claim)
    pooled_ids = {x.id for x in p.runs} if p is not None and not p.stale else {x.id for x in runs}
    current = [x for x in runs if x.id in pooled_ids]
    earlier = [x for x in runs if x.id not in pooled_ids]
    shown = ", ".join(_figure(x) for x in current)
    if earlier:
        shown += "; earlier kernels: " + ", ".join(_figure(x) for x in earlier)
    return shown


def _runs(src: Sources, claim: str) -> list[EvidenceRecord]:
    """The claim's full runs on the H200, oldest first (the last one is the newest)."""
    runs = src.runs(claim)
    if not runs:
        raise MissingFigure(f"no evidence for {claim}")
    return runs


def block_serving_verdicts(src: Sources) -> str:
    rows = []
    for claim in CLAIMS:
        runs = _runs(src, claim)
        e = runs[-1]
        data = e.statistics["data"]
        r = _reading(e)
        roof = (data.get("roofline") or {}).get(data["claim_reading"])
        per_run = _per_run(src, claim, runs)
        rows.append([
            f"`{claim}`", (e.expected or {}).get("text", "-"), _verdict_cell(src, claim, e),
            per_run, f"{data['claim_reading']}, batch {r['model_batch']} vs "
                     f"{r['baseline_batch']}",
            "-" if roof is None else f"{roof:.3g}x", _stack_cell(e),
            _below_floor(e, float(e.conditions.get("floor_fraction") or 0.33))])
    first = min(x.timestamp for c in CLAIMS for x in src.runs(c))
    ids = {x.id for c in CLAIMS for x in src.runs(c)}
    processes = [r for r in src.listed_runs("run-agreement", "runs") if r["ids"] & ids]
    took = ", ".join(f"{r['duration_s']:.0f} s" for r in processes if r["duration_s"])
    return table(["claim", "claimed", "verdict (pooled)", "each run", "reading judged",
                  "roofline ratio", "stacked / composed", "layers below their floor fraction"],
                 rows) + "\n" + paragraph(
        f"From the committed evidence (`records/evidence/ev-<claim>-h200-sxm-*.yaml`, runs since "
        f"{first:%Y-%m-%d}, each `flopkb verify --gpu --suite models` in its own process"
        + (f"; the suite took {took} per process, calibration and stacked checks included, "
           f"the first on a fresh machine" if took else "") + "). The "
        "roofline ratio is the same reading composed from every layer's floor; a composed ratio "
        "above it x 1.1 is refused. Stacked / composed: one pattern period with RMSNorm and "
        "residuals timed end to end against the sum of its layers timed alone, and against that "
        "sum plus the stack's norms and residual adds (which the composed models leave out).")


# where the pictures of evidence from before the serving experiments drew one are
IMAGES = "docs/img"


def _picture(src: Sources, e: EvidenceRecord) -> str:
    """The picture's path as docs/models.md links it: beside the evidence where its run drew it,
    else in docs/img/ (drawn from the committed record). Neither stops the generator, naming the
    command that draws it: the page never shows an older run's picture under a newer verdict."""
    name = f"{e.id}.png"
    if name in (e.artifacts or []) and (src.root / "records" / "evidence" / name).is_file():
        return f"../records/evidence/{name}"
    if (src.root / IMAGES / name).is_file():
        return f"img/{name}"
    raise MissingFigure(f"no picture of {e.id}: python tools/replot_evidence.py "
                        f"records/evidence/{e.id}.yaml --out {IMAGES}")


def _caption(e: EvidenceRecord) -> str:
    """The claim, its run and evidence, what was claimed and composed, and the verdict."""
    reading = e.statistics["data"]["claim_reading"]
    if _figure(e) != "-":
        verdict = f"composed {_figure(e)} at the {reading} reading: **{e.verdict.value}**"
    else:
        # an error verdict has no figure: the refusal's own first clause says why
        verdict = f"**{e.verdict.value}** at the {reading} reading, " + first_clause(e.reason)
    return paragraph(f"`{e.claim}`, run of {e.timestamp:%Y-%m-%d %H:%M} UTC "
                     f"([evidence](../records/evidence/{e.id}.yaml)): claimed "
                     f"{(e.expected or {}).get('text', '-')}, {verdict}.")


def block_serving_pictures(src: Sources) -> str:
    """Each serving claim's picture (flopkb/verify/experiments/serving/picture.py), from its
    newest full-run evidence on the H200, under a caption with its verdict."""
    parts = []
    for claim in CLAIMS:
        e = _runs(src, claim)[-1]
        parts.append(_caption(e) + f"\n![{claim} on the H200: {e.verdict.value}]"
                     f"({_picture(src, e)})\n")
    return "\n".join(parts)


def _hf_cell(side: dict[str, Any] | None) -> str:
    if not side:
        return "-"
    if side.get("error"):
        return str(side["error"]).split(":")[0]
    return f"{side['tokens_per_s']:.4g} ({side['how']['method']})"


def block_models_hf(src: Sources) -> str:
    path, data = src.json(HF_BLOCK, "hf")
    rows, stacks = [], []
    for name, model in data["models"].items():
        for p in model.get("points", []):
            ratio = p.get("flopkb_over_hf_speed")
            hf = p.get("hf") or ({"error": "no transformers class"}
                                 if (model.get("hf") or {}).get("skipped") else None)
            rows.append([name, p["phase"], str(p["batch"]), str(p["tokens"]),
                         _hf_cell(hf), _hf_cell(p.get("flopkb")),
                         "-" if ratio is None else f"{ratio:.3g}x"])
        for st in model.get("composition", []):
            like = st["ratio_with_glue"]
            stacks.append([name, "+".join(st["kinds"]), st["phase"], str(st["batch"]),
                           str(st["tokens"]), f"{st['stacked_ms']:.4g}", f"{st['composed_ms']:.4g}",
                           f"{st['ratio']:.3f}", f"{like:.3f}"])
    machine = data["machine"]
    return (table(["model", "phase", "B", "L", "HF transformers tok/s", "flopkb stack tok/s",
                   "flopkb / HF"], rows) + "\n"
            + table(["model", "stack", "phase", "B", "L", "stacked ms", "composed ms",
                     "stacked / composed", "with norms"], stacks) + "\n"
            + paragraph(
                f"One pattern period of each model with random weights, bf16, HF transformers "
                f"{data['transformers']} beside flopkb's stack of the serving layers, "
                f"{data['rounds']} interleaved rounds, CUDA-graph replay where capture works "
                f"(the method is in each cell). HF ran its torch fallbacks: causal-conv1d is not "
                f"installed and mamba_ssm's CUDA extension is not built on the GPU machine, so "
                f"HF's Mamba paths are its reference PyTorch code; these rows compare against HF "
                f"as a user without those builds gets it. Source: `{path}` "
                f"({data['started'][:10]}, {machine['gpu']}, torch {machine['torch']}, triton "
                f"{machine['triton']}, `{data['command'].split('python3 ')[-1]}`)."))
