"""The bundled kernels beside their peers on the H200 (docs/kernels.md): the selective scan,
SSD, CUB's determinism levels and the dense kernels, each from its benchmark's results file
(bench/kernels_scan_bwd.py, kernels_ssd_bwd.py, reduction_levels.py, kernels_dense.py), and how
close the kernels come to their rooflines."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from .fmt import paragraph, size, slash, table
from .readings import row_of_measured
from .sources import ROOT, MissingFigure, Sources

BLOCK = "kernels"

def _target(ratios: list[float], limit: float, op: str) -> str:
    ok = all(r <= limit for r in ratios) if op == "<=" else all(r >= limit for r in ratios)
    return "met" if ok else "missed"


def _target_at(ratios: list[float], limit: float, shapes: list[str]) -> str:
    """`met`, or which of the measured shapes miss a `<= limit` target."""
    missed = [s for r, s in zip(ratios, shapes, strict=True) if r > limit]
    if not missed:
        return "met"
    return f"**missed** at {len(missed)} of {len(ratios)} shapes ({', '.join(missed)})"


# The selective scan's default forward variant, as `_launch_forward` (kernels/selective_scan/
# scan.py) picks it: narrow one-warp programs for states up to SMALL_STATE when softplus + bias
# are tiled (the layer's call), the tiled softplus otherwise with them, the base kernel without.
SCAN_SOURCE = Path("kernels") / "selective_scan" / "scan.py"
SCAN_BACKWARD_DEFAULT = "bd_quarter_w1"  # kernels/selective_scan/backward.py: "the default"


def _small_state(src: Sources) -> int:
    # the kernel code of this checkout, not a measured source
    found = re.search(r"^SMALL_STATE = (\d+)", (ROOT / SCAN_SOURCE).read_text(), re.M)
    if found is None:
        raise MissingFigure(f"{SCAN_SOURCE}: no SMALL_STATE")
    return int(found.group(1))


def _scan_forward_default(shape: dict[str, Any], small: int) -> str:
    if shape["layer"]:
        return "sp_tile_bd_quarter_w1" if shape["N"] <= small else "sp_tile"
    return "base"


def _scan_rows(src: Sources) -> tuple[str, list[list[str]], str]:
    path, data = src.json(BLOCK, "scan")
    small = _small_state(src)
    rows, notes = [], []
    for layer in (False, True):
        shapes = [s for s in data["shapes"] if s["shape"]["layer"] == layer]
        if not shapes:
            continue
        labels = [f"D={s['shape']['D']} N={s['shape']['N']}" for s in shapes]
        first = shapes[0]["shape"]
        where = f"B={first['B']}, T={first['T']}; {' / '.join(labels)}"
        names = [_scan_forward_default(s["shape"], small) for s in shapes]
        for s, name in zip(shapes, names, strict=True):
            if not s["impls"].get(f"ours:fwd:{name}", {}).get("correct"):
                raise MissingFigure(f"{path}: no correct ours:fwd:{name} at {s['shape']}")
        fwd = [s["impls"][f"ours:fwd:{n}"]["ms"]["fwd"] for s, n in zip(shapes, names,
                                                                       strict=True)]
        peer = [s["impls"]["mamba_cuda"]["ms"]["fwd"] for s in shapes]
        train = [s["impls"][f"ours:train:{SCAN_BACKWARD_DEFAULT}"]["ms"]["fwd+bwd"]
                 for s in shapes]
        peer_train = [s["impls"]["mamba_cuda"]["ms"]["fwd+bwd"] for s in shapes]
        r_fwd = [a / b for a, b in zip(fwd, peer, strict=True)]
        r_train = [a / b for a, b in zip(train, peer_train, strict=True)]
        d2048 = [r for r, s in zip(r_train, shapes, strict=True) if s["shape"]["D"] == 2048]
        call = "layer call (softplus + bias)" if layer else "plain call"
        by_n: dict[str, list[str]] = {}
        for s, n in zip(shapes, names, strict=True):
            by_n.setdefault(n, []).append(f"N={s['shape']['N']}")
        variants = (f"`{names[0]}`" if len(by_n) == 1 else ", ".join(
            f"`{n}` at {'/'.join(dict.fromkeys(at))}" for n, at in by_n.items()))
        rows.append([f"selective scan forward, {call}; default variant {variants}", where,
                     f"{slash(fwd, '.2f')} ms",
                     f"Mamba CUDA `selective_scan_cuda` {slash(peer, '.2f')}",
                     f"{slash(r_fwd, '.2f')}x",
                     f"≤ 1.05x: {_target(r_fwd, 1.05, '<=')}"])
        rows.append([f"selective scan forward+backward, {call} (backward "
                     f"`{SCAN_BACKWARD_DEFAULT}`)", "same", f"{slash(train, '.2f')} ms",
                     f"Mamba CUDA fwd+bwd {slash(peer_train, '.2f')}",
                     f"{slash(r_train, '.2f')}x",
                     f"≤ 1.2x at D=2048: {_target(d2048, 1.2, '<=')}"])
        measured = {(s["shape"]["D"], s["shape"]["N"]) for s in shapes}
        gone = [f"D={d} N={n}" for d in (2048, 4096) for n in (16, 64) if (d, n) not in measured]
        if gone and not layer:
            notes.append(f"{', '.join(gone)} is not in this run")
    return path, rows, "; ".join(notes)


def _ssd_rows(src: Sources) -> tuple[str, list[list[str]], str]:
    path, data = src.json(BLOCK, "ssd")
    shapes = sorted(data["shapes"], key=lambda s: (s["shape"]["N"], s["shape"]["T"]))
    labels = [f"N={s['shape']['N']} T={size(s['shape']['T'])}" for s in shapes]
    first = shapes[0]["shape"]

    def row(s: dict[str, Any], name: str) -> dict[str, Any]:
        found = next((r for r in s["rows"] if r["name"] == name), None)
        if found is None or not found.get("check", {}).get("correct", True):
            raise MissingFigure(f"{path}: no correct {name} at {s['shape']}")
        return found

    def ms(name: str, p: str) -> list[float]:
        return [row(s, name)["timing"][p]["median_ms"] for s in shapes]

    ours, mamba, fla = "ours:q256", "mamba_ssm:chunk256", "fla:chunk_simple_gla"
    cfg = row(shapes[0], ours)["config"]
    peer = row(shapes[0], mamba)
    f_row = row(shapes[0], fla)
    fwd, m_fwd, f_fwd = ms(ours, "fwd"), ms(mamba, "fwd"), ms(fla, "fwd")
    tr, m_tr = ms(ours, "fwd_bwd"), ms(mamba, "fwd_bwd")
    r_m, r_f = [a / b for a, b in zip(fwd, m_fwd, strict=True)], [
        a / b for a, b in zip(fwd, f_fwd, strict=True)]
    r_tr = [a / b for a, b in zip(tr, m_tr, strict=True)]
    refusal = (f_row.get("not_run_passes") or {}).get("fwd_bwd")
    no_d = "without the D" in f_row.get("map", "")
    where = (f"B·T={size(first['B'] * first['T'])}, H={first['H']}, P={first['P']}; "
             f"{' / '.join(labels)}")
    name = f"chunk {cfg['chunk_size']}, `q256`"
    rows = [
        [f"SSD chunked forward ({name})", where, f"{slash(fwd, '.3f')} ms",
         f"mamba_ssm {peer['version']} `{peer['api']}` (chunk {peer['chunk_size']}) "
         f"{slash(m_fwd, '.3f')}", f"{slash(r_m, '.2f')}x", "-"],
        ["", "", "", f"fla {f_row['version']} `chunk_simple_gla` {slash(f_fwd, '.3f')}"
         + (" (without the D skip term)" if no_d else ""), f"{slash(r_f, '.2f')}x",
         f"≤ 1.0x: {_target_at(r_f, 1.0, labels)}"],
        [f"SSD chunked forward+backward ({name})", "same", f"{slash(tr, '.3f')} ms",
         f"mamba_ssm {slash(m_tr, '.3f')}", f"{slash(r_tr, '.2f')}x",
         f"≤ 1.0x: {_target_at(r_tr, 1.0, labels)}"],
        ["", "", "", "fla: not run" if refusal else "fla", "-",
         "≤ 1.2x: not measured" if refusal else "-"],
    ]
    q128 = "ours:q128"
    measured = {s["shape"]["T"] for s in shapes}
    gone = [size(t) for t in (2048, 4096, 16384) if t not in measured]
    notes = [f"T={', '.join(gone)} is not in the SSD run"] if gone else []
    if "2K" in gone:
        notes.append(_t2k_note(src))
    if all(any(r["name"] == q128 for r in s["rows"]) for s in shapes):
        r128 = [a / b for a, b in zip(ms(q128, "fwd_bwd"), m_tr, strict=True)]
        f128 = [a / b for a, b in zip(ms(q128, "fwd"), f_fwd, strict=True)]
        notes.append(f"chunk 128 (`q128`) does forward+backward at {slash(r128, '.2f')}x of "
                     f"mamba_ssm and the forward at {slash(f128, '.2f')}x of fla")
    if no_d:
        notes.append("fla's time leaves out the D·x skip term that ours computes")
    if refusal:
        notes.append(f"fla's backward refuses to run on Triton {data['machine']['triton']} on "
                     f"this Hopper GPU (\"{refusal.split(': ', 1)[-1].split('. ')[0]}\")")
    return path, rows, "; ".join(notes)


def _t2k_note(src: Sources) -> str:
    """T=2K forward+backward from its own run, beside mamba_ssm of that run."""
    path, data = src.json(BLOCK, "ssd_t2k")
    parts = []
    for shape in sorted(data["shapes"], key=lambda s: s["shape"]["N"]):
        t = {r["name"]: r["timing"]["fwd_bwd"]["median_ms"] for r in shape["rows"]
             if "fwd_bwd" in r["timing"]}
        peer = next(v for k, v in t.items() if k.startswith("mamba_ssm"))
        ours = [f"{t[n]:.3f} ({t[n] / peer:.2f}x)" for n in ("ours:q256", "ours:q128") if n in t]
        parts.append(f"N={shape['shape']['N']}: q256 / q128 {' / '.join(ours)} ms against "
                     f"mamba_ssm {peer:.3f}")
    return (f"T=2K forward+backward, from its own run (`{path}`, {data['started'][:10]}, "
            f"B=16, 3 rounds): {'; '.join(parts)}")


def _cub_rows(src: Sources) -> tuple[str, list[list[str]], str]:
    path, data = src.json(BLOCK, "reduction")
    rows = sorted(data["rows"], key=lambda r: r["elements"])

    def launch_bound(r: dict[str, Any]) -> bool:
        return any(v.get("launch_bound") for k, v in r["variants"].items() if k.startswith("cub"))

    sizes = " / ".join(size(r["elements"]) + ("†" if launch_bound(r) else "") for r in rows)
    g2g = [r["ratios"]["gpu_to_gpu/run_to_run"] for r in rows]
    r2r = [r["ratios"]["run_to_run/not_guaranteed"] for r in rows]
    ours = [r["ratios"]["ordered/atomic (graph)"] for r in rows]
    cub = data["cub"].split(" cub::")[0]
    return path, [
        [f"fixed-order / atomic sum (graph-timed) vs {cub} determinism levels",
         f"{sizes} fp32", f"fixed order / atomic {slash(ours, '.2f')}x",
         f"CUB run_to_run / not_guaranteed {slash(r2r, '.2f')}x; gpu_to_gpu / run_to_run "
         f"{slash(g2g, '.2f')}x", "-", "-"],
    ], ("† launch-bound: CUB's single-phase call allocates, so it is event-timed (no CUDA "
        "graph), and at these sizes the host issues calls more slowly than the GPU runs them")


def block_kernels(src: Sources) -> str:
    dense_path, dense = src.json(BLOCK, "dense")
    scan_path, scan_rows, scan_note = _scan_rows(src)
    ssd_path, ssd_rows, ssd_note = _ssd_rows(src)
    cub_path, cub_rows, cub_note = _cub_rows(src)

    def res(section: str, variant: str, **where: Any) -> dict[str, Any]:
        for r in dense["results"]:
            if r["section"] == section and r["variant"] == variant and all(
                    r["shape"].get(k) == v for k, v in where.items()):
                return r
        raise MissingFigure(f"{dense_path}: no {section}/{variant} {where}")

    gemm_sizes = sorted({r["shape"]["M"] for r in dense["results"] if r["section"] == "gemm"})
    tri = [res("gemm", "triton_bf16_tma_persistent", M=n) for n in gemm_sizes]
    cub = [res("gemm", "cublas_bf16", M=n) for n in gemm_sizes]
    i8, i8_peer = res("int8", "triton_int8"), res("int8", "torch_int_mm")
    red, atomic, tsum = (res("reduction", "ordered_sum"), res("reduction", "atomic_sum"),
                         res("reduction", "torch_sum"))
    axpby, add = res("elementwise", "triton_axpby"), res("elementwise", "torch_add_alpha")
    speed = [t["speed_vs_peer"] for t in tri]
    rows = scan_rows + ssd_rows + cub_rows + [
        ["Triton bf16 GEMM (TMA, persistent)", " / ".join(f"{n}²" for n in gemm_sizes),
         f"{slash([r['tflops'] for r in tri], '.0f')} TFLOP/s",
         f"cuBLAS {slash([r['tflops'] for r in cub], '.0f')}", f"{slash(speed, '.2f')}x",
         f"≥ 0.85x: {_target(speed, 0.85, '>=')}"],
        ["INT8 GEMM (Triton `tl.dot`)", f"{i8['shape']['M']}³", f"{i8['tflops']:.0f} TOPS",
         f"`torch._int_mm` {i8_peer['tflops']:.0f}", f"{i8['speed_vs_peer']:.2f}x", "-"],
        ["fixed-order reduction", f"{size(red['shape']['n'])} fp32", f"{red['gbs']:.0f} GB/s",
         f"atomic {atomic['gbs']:.0f}, `torch.sum` {tsum['gbs']:.0f}",
         f"{red['time_ratio_vs_atomic']:.2f}x of atomic",
         f"≤ 2x: {_target([red['time_ratio_vs_atomic']], 2.0, '<=')}"],
        ["axpby (elementwise yardstick)", f"{size(axpby['shape']['n'])} fp32",
         f"{axpby['gbs']:.0f} GB/s", f"`torch.add(alpha=)` {add['gbs']:.0f}",
         f"{axpby['roofline_fraction']:.2f} of the copy ceiling", "-"],
    ]
    head = ["kernel", "shape", "bundled", "peer, same run", "ratio", "target"]
    _, scan_data = src.json(BLOCK, "scan")
    _, ssd_data = src.json(BLOCK, "ssd")
    _, red_data = src.json(BLOCK, "reduction")
    dated = [(scan_path, scan_data["started"]), (ssd_path, ssd_data["started"]),
             (cub_path, red_data["timestamp"]), (dense_path, dense["timestamp"])]
    notes = "; ".join(n for n in (scan_note, ssd_note, cub_note) if n)
    rounds = min(scan_data["rounds"], ssd_data["rounds"], red_data["rounds"])
    sources = ", ".join(f"`{p}` ({t[:10]})" for p, t in dated)
    return (table(head, rows) + "\n" + paragraph(
        f"Scan, SSD and CUB rows: the median of {rounds} rounds' medians, bf16 inputs, fp32 "
        f"state. {notes[0].upper()}{notes[1:]}. The GEMM, INT8, reduction and axpby rows are "
        f"from the earlier dense benchmark. Sources: {sources}."))



def block_kernel_notes(src: Sources) -> str:
    ssd_path, ssd = src.json("kernel-notes", "ssd")
    dense_path, dense = src.json("kernel-notes", "dense")
    first = min(ssd["shapes"], key=lambda s: (s["shape"]["N"], s["shape"]["T"]))
    ours = next(r for r in first["rows"] if r["name"] == "ours:q256")["roofline"]
    scan = src.of("selective-ssm-scan/flops-predict-time-poorly")
    p = row_of_measured(scan, "misprediction")
    attention = [r["roofline_fraction"] for r in dense["results"] if r["section"] == "attention"]
    return paragraph(
        f"SSD chunked (`q256`) reaches {ours['fwd']['frac_roofline']:.2f} of its roofline in the "
        f"forward ({ours['fwd']['tflops']:.0f} TFLOP/s) and {ours['fwd_bwd']['frac_roofline']:.2f} "
        f"forward+backward (N={first['shape']['N']}, T={size(first['shape']['T'])}, "
        f"`{ssd_path}`); the selective scan {p['scan_roofline_fraction']:.2f} of its byte floor "
        f"(N={p['state_dim']}, T={size(p['seq_len'])}, A6's evidence; a sequential chain, like "
        f"Mamba's own kernel); attention (SDPA flash) {min(attention):.2f}-{max(attention):.2f} "
        f"of the cuBLAS peak (`{dense_path}`, {dense['timestamp'][:10]}). Details: the READMEs "
        "in `kernels/*/`."
    )

