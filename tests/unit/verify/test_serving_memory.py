"""A memory-limited serving reading runs only on a GPU that holds the part it is sized for: on an
H100 (80 GB), Nemotron-H's reading sized for the H200's 141 GB ran one attention layer's KV cache
of 27.7 GiB beside what was already allocated and failed out of memory; now it is refused with the
reason before anything is timed, and a reading that is only shown beside the judged one is left
out with a note."""

from __future__ import annotations

import pytest

from flopkb.evidence import catalogue, hooks
from flopkb.evidence.measurement import resolve
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.paths import bundled_root
from flopkb.verify.errors import ExperimentError
from flopkb.verify.experiments import serving
from flopkb.verify.experiments.serving.compose import memory_sizes
from flopkb.verify.experiments.serving.run import fit_readings

# total memory (bytes) as torch reports it on the lent H100 and H200 (the machine fingerprints of
# bench/results and the H100 runs), against datasheets' 80 and 141 GB; and a 48 GB card
H100_BYTES, H200_BYTES, CARD_48GB = 85_017_493_504, 150_109_880_320, 48 * 10**9


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def nemotron(kb: KnowledgeBase, also_memory_limited: bool = False, **over
             ) -> tuple[dict, dict, dict]:
    module = hooks.experiment_module(catalogue.for_kb(bundled_root()).get("serving-nemotron-h"),
                                     bundled_root())
    row = next(r for r in kb.classes["nemotron-h"].flop.hardware_parameters
               if r.id == "faster-inference")
    cond, _ = resolve(module.DEFAULTS, {**dict(row.conditions or {}), **over})
    s = serving.setup(cond)
    s["also_memory_limited"] = also_memory_limited
    return cond, s, serving.batches(s, kb)


def test_the_declared_part_runs_every_reading(kb: KnowledgeBase) -> None:
    _, s, per = nemotron(kb)
    assert s["accelerator"] == "h200-sxm"
    assert fit_readings(s, per, memory_sizes(s, kb), H200_BYTES, "h200-sxm") == (per, None)


def test_a_smaller_gpu_refuses_the_judged_memory_limited_reading(kb: KnowledgeBase) -> None:
    _, s, per = nemotron(kb)
    with pytest.raises(ExperimentError) as err:
        fit_readings(s, per, memory_sizes(s, kb), H100_BYTES, "h100-sxm")
    text = str(err.value)
    assert "sized for h200-sxm (141 GB)" in text and "h100-sxm (85 GB)" in text
    assert "declares `accelerator:`" in text


def test_a_shown_reading_too_big_for_the_gpu_is_left_out_with_a_note(kb: KnowledgeBase) -> None:
    # judged at equal batch, the memory-limited readings beside it
    _, s, per = nemotron(kb, reading="equal_batch", also_memory_limited=True)
    assert {"equal_batch", "memory_limited", "memory_limited_80gb"} <= set(per)
    kept, note = fit_readings(s, per, memory_sizes(s, kb), H100_BYTES, "h100-sxm")
    # the 80 GB control fits the H100; the H200-sized reading does not
    assert set(kept) == {"equal_batch", "memory_limited_80gb"}
    assert note == ("left out on h100-sxm (85 GB): the memory_limited reading (sized for h200-sxm "
                    "(141 GB))")
    kept, note = fit_readings(s, per, memory_sizes(s, kb), CARD_48GB, None)
    assert set(kept) == {"equal_batch"} and note.startswith("left out on this GPU (48 GB)")
    assert "memory_limited_80gb reading (sized for 80 GB)" in note


def test_equal_batch_readings_run_anywhere(kb: KnowledgeBase) -> None:
    _, s, per = nemotron(kb, reading="equal_batch")
    assert set(per) == {"equal_batch"}
    assert fit_readings(s, per, memory_sizes(s, kb), CARD_48GB, None) == (per, None)


def test_measure_refuses_before_timing_on_a_smaller_gpu(kb: KnowledgeBase, monkeypatch) -> None:
    # the run's own path on a CUDA device, with the device and its memory stood in for
    from types import SimpleNamespace

    import torch

    from flopkb.verify.context import Context

    timed: list[str] = []
    ctx = Context(gpu=False, kb=kb, accelerator="h100-sxm")
    monkeypatch.setattr(Context, "device", property(lambda self: torch.device("cuda")))
    monkeypatch.setattr(torch.cuda, "get_device_properties",
                        lambda device: SimpleNamespace(total_memory=H100_BYTES))
    monkeypatch.setattr(ctx, "time", lambda label, *a, **k: timed.append(label))
    cond, _, _ = nemotron(kb)
    with pytest.raises(ExperimentError, match="sized for h200-sxm"):
        serving.measure(ctx, cond)
    assert timed == []
