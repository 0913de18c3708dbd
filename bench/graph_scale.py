"""How fast the dependency graph is built and queried on a 10,000-record KB.

Builds the KB with the clone generator of bench/validate_scale.py (whole copies of the bundled KB
under new ids, references renamed), loads it once with `load_kb` (timed, but not part of the
target), then times in-process, median of `--repeat` runs:

  (a) build: `KBGraph.from_kb(kb)` (the networkx graph and the hardware model);
  (b) affects: `affects(kg, Q)` for a quantity, an accelerator and a source of the first clone;
  (c) build + affects of the quantity together: the figure the target is about (< 1 s);
  and, for information, `status(kg)` and the FKB6xx graph checks over the whole KB.

Peer figure of the same run: the bare networkx cost of the graph's size (adding the same nodes and
edges to an empty DiGraph, no KB access), the floor any networkx-based build pays.
Writes --out (default bench/results/graph_scale.json): the figures, the machine and the command.

    python bench/graph_scale.py [--records 10000] [--repeat 5] [--out PATH]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import networkx as nx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.common import RESULTS, median_s, parser, sibling, write_json

# Process CPU time of each `_median` call, in call order: on a shared machine wall time includes
# waiting for a core, CPU time does not; both are reported.
CPU_TIMES: list[float] = []


def _median(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of `repeat` calls (and the last answer); CPU times go to CPU_TIMES."""
    wall, cpu, out = median_s(fn, repeat)
    CPU_TIMES.append(cpu)
    return wall, out


def main() -> None:
    args = parser(__doc__, out=RESULTS / "graph_scale.json", repeat=5, records=10_000).parse_args()
    from flopkb.check.base import CheckContext
    from flopkb.check.graph import graph_checks
    from flopkb.graph import KBGraph, affects, status
    from flopkb.kb import load_kb

    gen = sibling("validate_scale")
    with tempfile.TemporaryDirectory(prefix="flopkb-graph-scale-") as tmp:
        root = Path(tmp)
        written = gen.build_kb(root, args.records)
        start = time.perf_counter()
        kb, findings = load_kb(root)
        load_s = time.perf_counter() - start

        build_s, kg = _median(lambda: KBGraph.from_kb(kb), args.repeat)
        build_cpu_s = CPU_TIMES[-1]
        g = kg.g
        targets = {
            "quantity": "hbm_bandwidth_c0",
            "accelerator": "h100-sxm-c0",
            "source": "nvidia-h100-datasheet-c0",
        }
        affects_s: dict[str, dict[str, Any]] = {}
        for kind, ident in targets.items():
            # a fresh graph each time: no cached part values from an earlier query
            fresh = KBGraph.from_kb(kb)
            seconds, answer = _median(
                lambda fresh=fresh, ident=ident: affects(fresh, ident), args.repeat
            )
            affects_s[kind] = {"id": ident, "seconds": seconds, "claims": len(answer["claims"])}
        both_s, _ = _median(lambda: affects(KBGraph.from_kb(kb), targets["quantity"]), args.repeat)
        both_cpu_s = CPU_TIMES[-1]
        status_s, _ = _median(lambda: status(KBGraph.from_kb(kb)), 1)
        checks_s, found = _median(lambda: list(graph_checks(CheckContext(kb))), 1)

        nodes, edges = list(g.nodes(data=True)), list(g.edges(data=True))

        def bare() -> nx.DiGraph:
            h = nx.DiGraph()
            h.add_nodes_from(nodes)
            h.add_edges_from(edges)
            return h

        peer_s, _ = _median(bare, args.repeat)

    result = {
        "records": written,
        "load_errors": sum(1 for f in findings if f.severity.value == "error"),
        "graph": {"nodes": g.number_of_nodes(), "edges": g.number_of_edges()},
        "load_kb_s": load_s,
        "build_s": build_s,
        "affects_s": affects_s,
        "build_plus_affects_s": both_s,
        "build_cpu_s": build_cpu_s,
        "build_plus_affects_cpu_s": both_cpu_s,
        "load_average_at_end": list(os.getloadavg()),
        "target_s": 1.0,
        "meets_target": both_s < 1.0,
        "status_s": status_s,
        "graph_checks_s": checks_s,
        "graph_check_findings": len(found),
        "peer_bare_networkx_build_s": peer_s,
        "repeat": args.repeat,
        "machine": gen.machine() | {"networkx": nx.__version__},
        "command": "python bench/graph_scale.py " + " ".join(sys.argv[1:]),
    }
    write_json(args.out, result, indent=2)
    print(
        f"{written} records -> graph of {g.number_of_nodes()} nodes, {g.number_of_edges()} edges; "
        f"load_kb {load_s:.2f} s (not counted)\n"
        f"build {build_s * 1e3:.0f} ms; "
        f"affects quantity {affects_s['quantity']['seconds'] * 1e3:.1f} ms, "
        f"accelerator {affects_s['accelerator']['seconds'] * 1e3:.1f} ms, "
        f"source {affects_s['source']['seconds'] * 1e3:.1f} ms\n"
        f"build + affects: {both_s * 1e3:.0f} ms (target < 1000 ms: "
        f"{'met' if both_s < 1.0 else 'MISSED'}; CPU time {both_cpu_s * 1e3:.0f} ms)\n"
        f"peer (bare networkx, same nodes and edges): {peer_s * 1e3:.0f} ms; "
        f"status {status_s * 1e3:.0f} ms; graph checks {checks_s * 1e3:.0f} ms"
    )


if __name__ == "__main__":
    main()
