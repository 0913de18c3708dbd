"""The verdict tables of docs/results.md: the A1-D4 claims (pooled verdict, the newest run's
measured value, where each claim holds and stops, the other implementations) and the measured
claims declared after them."""

from __future__ import annotations

from flopkb.model import EvidenceRecord

from .claim_notes import NOTES
from .fmt import paragraph, table
from .readings import value_text
from .sources import ACCELERATOR, Sources

# The labels of the starting material (A1-D4), in the order the tables list the claims.
CLAIMS = {
    "selective-ssm-scan/scan-misses-tensor-cores": "A1",
    "mamba2-ssd/ssd-vs-fused-scan": "A2",
    "mamba2-ssd/ssd-attention-crossover": "A3",
    "mamba2-ssd/ssd-vs-attention-16k": "A3",
    "samba/mamba-trains-slower-than-mlp": "A4",
    "gated-linear-attention/shared-decay-tensor-core-friendly": "A5",
    "selective-ssm-scan/flops-predict-time-poorly": "A6",
    "mamba2-ssd/training-matmul-dominated": "B1",
    "mamba2-ssd/head-dim-vram-pressure": "B2",
    "mamba2-ssd/quadratic-wins-short": "B3",
    "mamba2-ssd/default-chunk-size": "B4",
    "mamba2-ssd/kernel-vs-pytorch": "B5",
    "dense-gemm/gemm-ruggedness": "C2",
    "low-rank-gemm/lowrank-efficient-consumer": "C3",
    "int8-gemm/int8-native-beats-emulated": "C4",
    "gpu-reduction/determinism-levels": "D1",
    "gpu-reduction/run-to-run-not-cross-hardware": "D2",
    "gpu-reduction/gpu-to-gpu-overhead": "D3",
    "gpu-reduction/gpu-to-gpu-overhead-figure": "D3",
}



def other_judgements(e: EvidenceRecord) -> str:
    """Every judgement after the first (the one `verdict` reports), named by the sides it swaps:
    `ssd=mamba_ssm: confirmed 4.89x; ssd=fla: ...`."""
    if len(e.judgements) < 2:
        return "-"
    first = e.judgements[0].combination
    parts = []
    for j in e.judgements[1:]:
        swapped = ", ".join(f"{side}={impl}" for side, impl in j.combination.items()
                            if first.get(side) != impl)
        parts.append(f"{swapped}: {j.verdict.value} {value_text(j.measured)}".rstrip())
    return "; ".join(parts)


def widest(src: Sources, claim: str) -> EvidenceRecord | None:
    """The newest run of `claim` that judged several implementations (None: none did)."""
    found = [e for e in src.runs(claim) if len(e.judgements) > 1]
    return found[-1] if found else None


def verdict_rows(src: Sources) -> list[list[str]]:
    rows = []
    for claim, label in CLAIMS.items():
        e = src.of(claim)
        expected = (e.expected or {}).get("text", "-")
        p = src.pooled.get(claim)
        verdict = p.text() if p else e.verdict.value
        what, note = NOTES[claim](e)
        shown = f"**{verdict}**" if verdict.startswith(("refuted", "disagreeing")) else verdict
        if p is not None and p.implementation_sensitive:
            shown += ", **implementation-sensitive**"
        if p is not None and p.figure is not None:
            shown += f"; pooled {p.figure.text()}"
        wide = widest(src, claim)
        others_cell = (f"{other_judgements(wide)} ({wide.timestamp.date().isoformat()} run)"
                       if wide is not None else "-")
        rows.append([f"`{claim}` ({label})", expected, e.conditions.get("pass", "-"), shown, what,
                     note, others_cell])
    return rows



def block_verdicts(src: Sources) -> str:
    text = table(["claim (A1-D4)", "magnitude", "pass", "verdict", "measured [p10/p90 band]",
                  "conditions; where it holds and where it stops",
                  "other implementations: verdict, measured"], verdict_rows(src))
    # the sides whose default is a library (the algorithm the claim is about), read off the
    # newest run that judged the bundled kernels beside it
    wide = {claim: w for claim in CLAIMS if (w := widest(src, claim)) is not None}
    sensitive = [f"`{claim}` ({CLAIMS[claim]})" for claim in CLAIMS
                 if claim in src.pooled and src.pooled[claim].implementation_sensitive]
    # claims whose reported (first) judgement is not on the bundled kernels, where they exist
    first_peer = sorted({(impl, f"{CLAIMS[claim]}{' figure' if 'figure' in claim else ''}")
                         for claim, e in wide.items()
                         for side, impl in e.judgements[0].combination.items()
                         if impl != "bundled" and any(j.combination.get(side) == "bundled"
                                                      for j in e.judgements[1:])})
    peers = "; ".join(f"{impl} for {', '.join(lab for i, lab in first_peer if i == impl)}"
                      for impl in dict.fromkeys(i for i, _ in first_peer))
    sentence = (
        "The verdict column is pooled over every run whose kernels are the current ones (as "
        "`flopkb claims` shows it, with the number of runs that agree, and the pooled figure: "
        "every run's rounds merged and judged again, an interval that covers the spread between "
        "runs); the measured column is the newest run's first judgement: the bundled kernels"
        + (f", except {peers} (the algorithm the claim is about)" if peers else "")
        + "; the last column names the sides the other judgements swap, from the newest run "
        "that judged several implementations. "
        + (f"Implementation-sensitive (the verdict changes with the implementation): "
           f"{', '.join(sensitive)}." if sensitive else "No claim is implementation-sensitive.")
    )
    return text + "\n" + paragraph(sentence)



def block_other_verdicts(src: Sources) -> str:
    """Measured claims outside the A1-D4 table (the kernel-level rows declared later), pooled."""
    from flopkb.claims import list_claims

    rows = []
    for r in list_claims(src.kb):
        p = src.pooled.get(r["claim"])
        if r["claim"] in CLAIMS or p is None:
            continue
        verdict = p.text()
        shown = f"**{verdict}**" if verdict.startswith(("refuted", "disagreeing")) else verdict
        figure = p.figure.text() if p.figure else "-"
        why = r.get("not_verifiable") or ""
        rows.append([f"`{r['claim']}`", r["magnitude"], shown, figure, why or "-"])
    if not rows:
        return paragraph("No other claim has evidence on this part.")
    return table(["claim", "magnitude", f"verdict on {ACCELERATOR}", "pooled over the runs' rounds",
                  "judged where"], rows) + "\n" + paragraph(
        "Rows declared after the A1-D4 table (their experiments are YAML declarations like the "
        "rest), pooled over the same runs. Each refutation is of the claim's figure on this part "
        "with the bundled kernels; docs/verify.md gives each experiment's criterion.")

