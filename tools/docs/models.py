"""Model-level figures computed from the architecture records (docs/models.md): parameters,
KV cache, state and roofline bounds per model, and the claim rows whose figure follows from the
architectures alone. Nothing here is measured."""

from __future__ import annotations

from .fmt import paragraph, size, table
from .sources import ACCELERATOR, Sources

# The context at which the model table compares architectures (Samba's 128K prompt length).
MODEL_CONTEXT = 131072


def _gib(value: float) -> str:
    """Bytes in GiB from 1 GiB up, else MiB; three significant digits, never an exponent."""
    x, unit = (value / 2**30, "GiB") if value >= 2**30 else (value / 2**20, "MiB")
    return f"{x:,.0f} {unit}" if x >= 100 else f"{x:.3g} {unit}"


def block_model_table(src: Sources) -> str:
    """Computed parameters of every architecture record and its roofline bounds on the H200."""
    from flopkb.architecture.show import model_show

    kb = src.kb
    rows = []
    for aid in sorted(kb.architectures):
        d = model_show(kb, aid, context=MODEL_CONTEXT, on=[ACCELERATOR])
        c, r = d["computed"], d["rooflines"][ACCELERATOR]
        reported = d["parameters_reported"]
        params = f"{c['parameters'] / 1e9:.2f}B" + (f" ({reported / 1e9:g}B)" if reported else "")
        if "vocabulary" in " ".join(c["assumptions"]):
            params += ", no embeddings"
        rows.append([
            f"`{aid}`", params, f"{c['active_parameters'] / 1e9:.2f}B",
            f"{c['attention_share']:.3g}%", _gib(c["kv_cache_bytes"]), _gib(c["state_bytes"]),
            f"{r['prefill_tokens_per_s']:,.0f}", f"{r['decode_tokens_per_s']:,.0f}",
            "-" if r["max_batch"] is None else str(r["max_batch"]),
        ])  # fmt: skip
    from flopkb.architecture.show import hardware_values
    from flopkb.hardware.model import HardwareModel

    hw = hardware_values(HardwareModel(kb), ACCELERATOR, "bf16")
    head = paragraph(
        f"`flopkb model show ID --context {MODEL_CONTEXT} --on {ACCELERATOR}` for every "
        "architecture record (bf16 weights, KV cache and state; batch 1; computed from the records "
        "by `flopkb.architecture.cost`, reported counts in brackets from each record's source). "
        f"Bounds are rooflines from {ACCELERATOR}'s datasheet values in the KB "
        f"({hw['bf16_tensor_flops']:g} TFLOP/s bf16, {hw['hbm_bandwidth']:g} TB/s, "
        f"{hw['memory_capacity']:g} GB): upper bounds, not measurements. A largest batch of 0: "
        "the bf16 weights alone do not fit on one part:"
    )
    header = ["architecture", "parameters (reported)", "active", "attention layers",
              f"KV at {size(MODEL_CONTEXT)}", "state", "prefill tok/s bound",
              "decode tok/s bound", f"max batch at {size(MODEL_CONTEXT)}"]  # fmt: skip
    return head + "\n" + table(header, rows)


def block_model_claims(src: Sources) -> str:
    """The model-level rows whose figure is computed from architecture records."""
    from flopkb.architecture.show import shown
    from flopkb.claims import list_claims

    kb = src.kb
    rows = []
    for r in list_claims(kb):
        if not r["computed_from_architectures"]:
            continue
        got = "; ".join(f"{c['what']}: {shown(c['value'], c['unit'])}"
                        for c in r["computed_from_architectures"])
        rows.append([f"`{r['claim']}`", r["magnitude"], r["basis"], got])
    return table(["claim", "magnitude", "basis", "computed from the architecture records"], rows)
