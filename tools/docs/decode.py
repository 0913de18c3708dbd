"""The decode kernels at their floors on the H200 (docs/kernels.md): the absorbed MLA decode
(kernels/mla) and the grouped MoE decode (kernels/moe) beside their torch peers, from
bench/kernels_decode_mla_moe.py's results files. The floor is the op's least bytes
(kernels/<op>/cost.py) at the copy bandwidth the same run measured; the fraction is floor / time
of the bundled kernel's CUDA-graph replay."""

from __future__ import annotations

import math
from typing import Any

from .fmt import paragraph, table
from .sources import MissingFigure, Sources

BLOCK = "decode-kernels"
# bench/kernels_decode_mla_moe.py --wide's row of the step at its own default config
DEFAULT_IMPL = "bundled_default_config"
# issue 24's targets: MLA at least 0.70 of its HBM floor, MoE at least 0.50
TARGETS = {"mla": 0.70, "moe": 0.50}


def _best_ms(r: dict[str, Any]) -> float:
    vals = [v for v in (r.get("graph_ms"), r.get("eager_ms")) if v is not None]
    return min(vals) if vals else math.inf


def _rows(path: str, data: dict[str, Any], section: str) -> list[list[str]]:
    shapes: dict[str, list[dict[str, Any]]] = {}
    for r in data[section]:
        key = (f"B={r['batch']}, context {r['context'] // 1024}K" if section == "mla"
               else f"{r['model']}, T={r['tokens']}")
        shapes.setdefault(key, []).append(r)
    rows = []
    for key, group in shapes.items():
        ours = next((r for r in group if r["impl"] == "bundled"), None)
        if ours is None or not ours.get("correct") or ours.get("graph_ms") is None:
            raise MissingFigure(f"{path}: no correct graph-timed bundled {section} at {key}")
        peers = [r for r in group if not r["impl"].startswith("bundled") and r.get("correct")]
        best = min(peers, key=_best_ms, default=None)
        frac = ours["floor_ms"] / ours["graph_ms"]
        target = TARGETS[section]
        rows.append([
            "MLA decode (absorbed, split context)" if section == "mla" else "MoE decode",
            key, f"{ours['floor_ms']:.3g} ms", f"{ours['graph_ms']:.3g} ms",
            f"{frac:.2f}", "-" if best is None else f"`{best['impl']}` {_best_ms(best):.3g} ms",
            "-" if best is None else f"{_best_ms(best) / ours['graph_ms']:.2f}x",
            f"≥ {target:.2f}: {'met' if frac >= target else '**missed**'}"])
    return rows


def block_decode_kernels(src: Sources) -> str:
    mla_path, mla = src.json(BLOCK, "mla")
    moe_path, moe = src.json(BLOCK, "moe")
    rows = _rows(mla_path, mla, "mla") + _rows(moe_path, moe, "moe")
    head = ["kernel", "shape", "floor", "bundled (graph)", "floor fraction",
            "fastest peer, same run", "peer / bundled", "target"]
    return table(head, rows) + "\n" + paragraph(
        f"Floors at the copy bandwidth each run measured (back-to-back eager copies: "
        f"{mla['copy_gbps']:.0f} and {moe['copy_gbps']:.0f} GB/s read + write); times are the "
        f"median of {mla['rounds']} (MLA) and {moe['rounds']} (MoE, a --quick run) rounds of "
        f"CUDA-graph replays; a peer's figure is the faster of its graph and eager times. "
        f"Sources: `{mla_path}` ({mla['started'][:10]}, `{mla['command'].split('python3 ')[-1]}`), "
        f"`{moe_path}` ({moe['started'][:10]}, `{moe['command'].split('python3 ')[-1]}`).") + (
        "\n" + _mla_wide(src))


def _config_text(c: dict[str, Any]) -> str:
    return (f"block_n {c['block_n']}, {c['num_warps']} warps, {c['num_stages']} stages, "
            f"{c['programs_per_sm']} program(s)/SM")


def _mla_wide(src: Sources) -> str:
    """The MLA kernel's launch grid swept wide (bench --wide): per shape the sweep's fastest
    config against the one the step picks itself (`default_config`), both timed in the same
    interleaved rounds."""
    path, data = src.json(BLOCK, "mla_wide")
    again_path, again = src.json(BLOCK, "mla_wide_rerun")
    by_shape, rerun = _by_shape(data), _by_shape(again)
    rows, causes = [], set()
    for (batch, context), impls in by_shape.items():
        best, base = impls.get("bundled"), _default_row(impls)
        if best is None or base is None or None in (best.get("graph_ms"), base.get("graph_ms")):
            raise MissingFigure(f"{path}: B={batch} L={context} lacks the fastest or the "
                                f"default config's rounds")
        failed = [e["error"] for e in best["sweep"] if "error" in e]
        causes |= {e.split(":")[0] for e in failed}
        floor = best["floor_ms"]
        rows.append([f"B={batch}, context {context // 1024}K", f"{floor:.3g} ms",
                     f"{base['graph_ms']:.3g} ms ({floor / base['graph_ms']:.2f})",
                     f"{best['graph_ms']:.3g} ms ({floor / best['graph_ms']:.2f})",
                     _config_text(best["config"]), f"{base['graph_ms'] / best['graph_ms']:.2f}x",
                     _second(rerun.get((batch, context), {}), best, base),
                     f"{len(best['sweep']) - len(failed)} timed, {len(failed)} failed"])
    default = _config_text(next(iter(by_shape.values()))["bundled"]["default_config"])
    return table(["shape", "floor", "default config (fraction)", "fastest config (fraction)",
                  "fastest config", "speed-up", "second run", "configs"], rows) + "\n" + paragraph(
        f"The split kernel's launch grid (block_n 32/64/128 x 4/8 warps x 2/3/4 stages x 1/2 "
        f"programs per SM) at three shapes: each config checked against the float32 reference "
        f"and timed once by CUDA-graph replay; the fastest and the default ({default}) then "
        f"timed in {data['rounds']} interleaved rounds beside the torch peers (medians above). "
        f"The second run is the same command in the next process (`{again_path}`): its "
        f"fastest and default times, apart from the first run's by the percentage. "
        f"Configs that failed: {', '.join(sorted(causes)) or 'none'}. Where the default is "
        f"the fastest config its row is that config's (speed-up 1.00x). The default is the "
        f"config an earlier sweep found fastest; that sweep, of the default before it (32-token "
        f"blocks, 8 warps, 3 stages), is kept in `bench/results/history/`. Source: `{path}` "
        f"({data['started'][:10]}, "
        f"`{data['command'].split('python3 ')[-1]}`, copy {data['copy_gbps']:.0f} GB/s).")


def _by_shape(data: dict[str, Any]) -> dict[tuple[int, int], dict[str, dict[str, Any]]]:
    """(batch, context) -> implementation -> its row, of one --wide run."""
    out: dict[tuple[int, int], dict[str, dict[str, Any]]] = {}
    for r in data["mla"]:
        out.setdefault((r["batch"], r["context"]), {})[r["impl"]] = r
    return out


def _default_row(impls: dict[str, dict[str, Any]]) -> dict[str, Any] | None:
    """The step's own default config's row at one shape: a row of its own where the sweep's
    fastest config is another one, else the fastest row itself (the bench times it once)."""
    best = impls.get("bundled")
    if DEFAULT_IMPL in impls:
        return impls[DEFAULT_IMPL]
    if best is not None and best.get("config") == best.get("default_config"):
        return best
    return None


def _second(again: dict[str, dict[str, Any]], best: dict[str, Any], base: dict[str, Any]
            ) -> str:
    """The second run's fastest and default times at one shape, each with how far it is from
    the first run's."""
    b, d = again.get("bundled"), _default_row(again)
    if b is None or d is None or b["config"] != best["config"]:
        return "-" if b is None or d is None else f"fastest config differs: {b['config']}"
    return (f"{b['graph_ms']:.3g} ms ({(b['graph_ms'] / best['graph_ms'] - 1):+.1%}), default "
            f"{d['graph_ms']:.3g} ms ({(d['graph_ms'] / base['graph_ms'] - 1):+.1%})")
