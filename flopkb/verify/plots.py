"""One picture per experiment run, saved beside its evidence (matplotlib, optional).

Experiments describe their plot as data (`Measurement.plot`) over their sweep rows, so the
experiment modules stay free of plotting code:

- kind "lines" / "bars": x column `x`, one series per `series` {label: column}; optional `filter`
  {column: value}, `logx`, `logy`, `vline` (+ `vline_label`), `hline`, `markers`;
- kind "lines" with `group` and `y`: one line per distinct value of the `group` column;
- kind "stacked": stacked bars of the `series` columns over `x`;
- kind "category": grouped bars of {group: {category: value}} in `categories`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flopkb.atomic import atomic_path


def render(spec: dict[str, Any], rows: list[dict[str, Any]], path: Path, title: str) -> Path | None:
    """Draw `spec` over `rows` into `path` (PNG); None when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    flt = spec.get("filter", {})
    rows = [r for r in rows if all(r.get(k) == v for k, v in flt.items())]
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=110)
    kind = spec.get("kind", "lines")
    if kind == "category":
        groups = spec["categories"]
        cats = list(next(iter(groups.values())).keys())
        width = 0.8 / max(1, len(groups))
        for i, (label, values) in enumerate(groups.items()):
            xs = [j + i * width for j in range(len(cats))]
            ax.bar(xs, [values.get(c) or 0 for c in cats], width, label=label)
        ax.set_xticks([j + 0.4 - width / 2 for j in range(len(cats))], cats)
    elif kind in {"bars", "stacked"}:
        labels = [str(r.get(spec["x"])) for r in rows]
        series = spec["series"]
        width = 0.8 / (1 if kind == "stacked" else max(1, len(series)))
        bottom = [0.0] * len(rows)
        for i, (label, col) in enumerate(series.items()):
            vals = [float(r.get(col) or 0) for r in rows]
            if kind == "stacked":
                ax.bar(range(len(rows)), vals, 0.6, bottom=bottom, label=label)
                bottom = [b + v for b, v in zip(bottom, vals, strict=True)]
            else:
                ax.bar([j + i * width for j in range(len(rows))], vals, width, label=label)
        offset = 0 if kind == "stacked" else 0.4 - width / 2
        ax.set_xticks([j + offset for j in range(len(rows))], labels)
    elif "group" in spec:
        for value in sorted({r[spec["group"]] for r in rows}):
            pts = sorted((r[spec["x"]], r[spec["y"]]) for r in rows if r[spec["group"]] == value)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                    label=f"{spec['group']}={value}")
    else:
        for label, col in spec["series"].items():
            pts = sorted((r[spec["x"]], r[col]) for r in rows if r.get(col) is not None)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
    if spec.get("logx") and kind in {"lines"}:
        ax.set_xscale("log", base=2)
    if spec.get("logy"):
        ax.set_yscale("log")
    if spec.get("vline"):
        ax.axvline(spec["vline"], color="grey", linestyle="--",
                   label=f"{spec.get('vline_label', '')} ~{spec['vline']:.0f}")
    if spec.get("hline") is not None:
        ax.axhline(spec["hline"], color="grey", linestyle=":")
    ax.set_xlabel(spec.get("xlabel", ""))
    ax.set_ylabel(spec.get("ylabel", ""))
    ax.set_title(title, fontsize=9)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp)
    finally:
        plt.close(fig)
    return path
