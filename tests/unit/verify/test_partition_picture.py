"""D2's simulation has a picture: the bit pattern each simulated SM count's partition gave, per
input (the committed evidence's rows, redrawn by tools/replot_evidence.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flopkb.verify.experiments import partition_sim
from tools import replot_evidence

ROOT = Path(__file__).resolve().parents[3]
EVIDENCE = ROOT / "records/evidence"
D2 = EVIDENCE / "ev-gpu-reduction--run-to-run-not-cross-hardware-h200-sxm-20261201t154848z.yaml"


def test_patterns_number_the_bit_patterns_per_input() -> None:
    rows = [{"seed": 0, "bits": "a"}, {"seed": 0, "bits": "b"}, {"seed": 0, "bits": "a"},
            {"seed": 1, "bits": "b"}]  # fmt: skip
    assert [r["pattern"] for r in partition_sim.with_patterns(rows)] == [1, 2, 1, 1]


def test_the_committed_d2_evidence_is_drawn(tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    [written] = replot_evidence.replot([D2], tmp_path)
    assert written.name == D2.stem + ".png" and written.read_bytes()[:4] == b"\x89PNG"
    # and the picture is committed beside it, as docs/results.md says of every evidence record
    assert (D2.parent / written.name).is_file()
