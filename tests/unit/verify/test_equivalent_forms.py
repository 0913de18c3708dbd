"""Equivalence experiments on the CPU: a hook-less declaration producing `equivalence`, and the
bundled `equivalent_forms` hook (KDA vs DPLR, Lightning Attention-2 vs linear attention, HGRN2
scan vs chunked), their verdicts re-derived from stored rounds with the declared tolerance."""

from __future__ import annotations

import os

os.environ.setdefault("TRITON_INTERPRET", "1")

from pathlib import Path
from typing import Any

import pytest

from flopkb.evidence import catalogue, hooks
from flopkb.evidence.rederive import MISMATCH, rederive
from flopkb.grammar.magnitude import parse_magnitude
from flopkb.kb import KnowledgeBase, load_kb
from flopkb.model import EvidenceRecord
from flopkb.model.experiment import Experiment
from flopkb.paths import bundled_root
from flopkb.verify.context import ExperimentError
from flopkb.verify.errors import PeerUnavailable
from flopkb.verify.experiments import equivalent_forms
from flopkb.verify.experiments.generic import DeclaredExperiment
from tests.unit.verify.test_generic import _ctx
from tests.unit.verify.test_kernel_claims import stored_evidence

QUAL = parse_magnitude("qualitative")
SMALL = {"batch": 1, "seq_len": 19, "heads": 2, "head_dim": 8, "chunk_size": 8}
CLAIMS = {"kda-dplr": ("kimi-linear/kda-specialises-dplr", "kda-vs-dplr"),
          "lightning": ("lightning-attention/intra-block-exact-attention",
                        "lightning-vs-linear-attention"),
          "hgrn2": ("gated-linear-attention/hgrn2-linear-attention-form",
                    "hgrn2-scan-vs-chunked")}


@pytest.fixture(scope="module")
def kb() -> KnowledgeBase:
    kb, _ = load_kb(bundled_root())
    return kb


def _decl(call: str, produces: list[Any]) -> Experiment:
    return Experiment.model_validate({
        "id": "toy-equal", "title": "t", "measures": "m", "criterion": "c",
        "sides": [{"name": "mine", "implementations": [{"name": "mine", "call": call}],
                   "reference": "toy.ops:double_ref"},
                  {"name": "base", "implementations": [{"name": "torch",
                                                        "call": "toy.ops:double"}],
                   "reference": "toy.ops:double_ref"}],
        "inputs": [{"name": "x", "shape": ["n"], "dtype": "float32"}],
        "axes": {"n": [33, 64]}, "point": {"n": 33},
        "produces": produces,
        "qualitative": {"criterion": "mine computes double", "above": 1.0},
    })


EQUAL = {"quantity": "equivalence", "side": "mine", "atol": 1e-6, "rtol": 1e-5,
         "outputs": ["y"]}


def test_a_declared_equivalence_confirms_an_equal_implementation_without_timing(
        toy_root: Path) -> None:
    exp = DeclaredExperiment(_decl("toy.ops:double", [EQUAL]), toy_root)
    ctx = _ctx(lambda side, state: pytest.fail("an equivalence-only experiment times nothing"))
    m = exp.measure(ctx, dict(exp.DEFAULTS))
    j = exp.judge(m, QUAL, dict(exp.DEFAULTS))
    assert j.verdict == "confirmed" and j.measured.value == 0.0
    # every state of the sweep was compared: the n=33 point and n=64
    assert [len(r["equivalence_mine"]) for r in m.sweep] == [1, 1]
    assert m.sweep[1]["equivalence_mine"][0]["shape"] == [64]


def test_a_declared_equivalence_refutes_a_different_function_instead_of_erroring(
        toy_root: Path) -> None:
    exp = DeclaredExperiment(_decl("toy.ops:triple", [EQUAL]), toy_root)
    m = exp.measure(_ctx(lambda side, state: 1.0), dict(exp.DEFAULTS))
    assert exp.judge(m, QUAL, dict(exp.DEFAULTS)).verdict == "refuted"
    # the CPU check of the same declaration fails: plan mode says the kernel disagrees
    ctx = _ctx(lambda side, state: 1.0)
    with pytest.raises(ExperimentError, match="not equivalent"):
        exp.cpu_check(ctx)
    assert ctx.checks[-1]["ok"] is False


def test_a_time_claim_on_an_implementation_that_is_not_equivalent_never_confirms(
        toy_root: Path) -> None:
    ratio = {"quantity": "time_ratio", "numerator": "base", "denominator": "mine"}
    exp = DeclaredExperiment(_decl("toy.ops:triple", [EQUAL, ratio]), toy_root)
    m = exp.measure(_ctx(lambda side, state: 3.0 if side == "base" else 1.0),
                    dict(exp.DEFAULTS))
    assert exp.judge(m, parse_magnitude("3x"), dict(exp.DEFAULTS)).verdict == "refuted"
    exp = DeclaredExperiment(_decl("toy.ops:double", [EQUAL, ratio]), toy_root)
    m = exp.measure(_ctx(lambda side, state: 3.0 if side == "base" else 1.0),
                    dict(exp.DEFAULTS))
    assert exp.judge(m, parse_magnitude("3x"), dict(exp.DEFAULTS)).verdict == "confirmed"


def _hook(name: str) -> Any:
    return hooks.experiment_module(catalogue.get(name), None, kb_code=False)


def _measure(form: str, medians=lambda side, state: 1.0) -> tuple[Any, Any]:
    mod = _hook(CLAIMS[form][1])
    cond = {**mod.DEFAULTS, **SMALL}
    ctx = _ctx(medians)
    return mod, mod.measure(ctx, cond)


@pytest.mark.parametrize("form", sorted(CLAIMS))
def test_the_bundled_forms_are_equivalent_in_float32_and_bfloat16(form: str) -> None:
    # hgrn2 also times both forms: the scan 4x slower than the chunked form here
    mod, m = _measure(form, lambda side, state: 4.0 if "scan" in side else 1.0)
    assert [r["dtype"] for r in m.sweep] == ["float32", "bfloat16"]
    assert {e["tensor"] for e in m.sweep[0]["equivalence"]} == {"o", "state"}
    j = mod.judge(m, QUAL, m.conditions)
    assert j.verdict == "confirmed", j


def test_hgrn2_is_refuted_when_the_chunked_form_is_not_faster() -> None:
    mod, m = _measure("hgrn2", lambda side, state: 0.5 if "scan" in side else 1.0)
    assert mod.judge(m, QUAL, m.conditions).verdict == "refuted"


def test_kda_against_a_wrong_dplr_mapping_is_refuted(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _hook("kda-vs-dplr")
    ctx = _ctx(lambda side, state: 1.0)
    naive = ctx.load("linear_forms", "reference")
    right = naive.kda_as_dplr

    def wrong(q, k, v, g, beta):
        # b = +beta k: the delta rule's sign flipped
        qq, kk, vv, a, b, gk = right(q, k, v, g, beta)
        return qq, kk, vv, a, -b, gk

    monkeypatch.setattr(naive, "kda_as_dplr", wrong)
    m = mod.measure(ctx, {**mod.DEFAULTS, **SMALL})
    assert mod.judge(m, QUAL, m.conditions).verdict == "refuted"
    # the evidence's correctness list says which tensors were outside the declared tolerance
    assert {c["ok"] for c in ctx.checks} == {False} and len(ctx.checks) == 4


def test_the_judge_reads_the_tolerance_from_the_declaration_only() -> None:
    _, m = _measure("lightning")
    bare = equivalent_forms.judge(m, QUAL, m.conditions)
    assert bare.verdict == "error" and "tolerance" in (bare.reason or "")


def test_fla_absent_is_reported_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_fla(name: str, *args: Any, **kw: Any) -> Any:
        if name == "fla" or name.startswith("fla."):
            raise ImportError("No module named 'fla'")
        return real(name, *args, **kw)

    monkeypatch.setattr(builtins, "__import__", no_fla)
    mod = _hook("kda-vs-dplr")
    ctx = _ctx(lambda side, state: 1.0)
    ctx.impls = {"kda": "fla", "dplr": "bundled"}
    with pytest.raises(PeerUnavailable, match="fla not importable"):
        mod.measure(ctx, {**mod.DEFAULTS, **SMALL})


def _evidence(kb: KnowledgeBase, form: str) -> dict:
    claim, experiment = CLAIMS[form]
    _, m = _measure(form, lambda side, state: 4.0 if "scan" in side else 1.0)
    return stored_evidence(kb, claim, experiment, m, m.conditions)


@pytest.mark.parametrize("form", sorted(CLAIMS))
def test_the_verdicts_re_derive_from_the_stored_errors(kb: KnowledgeBase, form: str) -> None:
    data = _evidence(kb, form)
    assert data["verdict"] == "confirmed"
    assert rederive(kb, EvidenceRecord.model_validate(data)) == []
    # a stored error 100x past the tolerance: the stored verdict no longer follows
    entry = data["rounds"][0]["sweep"][1]["equivalence"][0]
    entry["max_abs_err"] = 100 * (1e-3 + 2e-2 * entry["max_abs_ref"])
    data["sweep"] = data["rounds"][0]["sweep"]
    kinds = {p.kind for p in rederive(kb, EvidenceRecord.model_validate(data))}
    assert MISMATCH in kinds


def test_the_simt_shares_of_ssd_and_softmax_attention_are_compared_at_equal_shapes() -> None:
    from flopkb.verify.experiments import no_softmax

    judged = _hook("ssd-vs-softmax-simt-share")
    ctx = _ctx(lambda side, state: 1.0)
    ctx.quick = True
    cond = {**no_softmax.DEFAULTS, "tokens": 40, "seq_len": 40, "heads": 2, "head_dim": 16,
            "state_dim": 16, "chunk_size": 16}
    m = no_softmax.measure(ctx, cond)
    p = m.data["primary"]
    # every stage 1 ms: SSD's one SIMT stage of four, attention's one of three
    assert p["ssd_simt_share"] == pytest.approx(1 / 4)
    assert p["attention_simt_share"] == pytest.approx(1 / 3)
    assert judged.judge(m, QUAL, cond).verdict == "confirmed"
    assert all(c["ok"] for c in ctx.checks) and len(ctx.checks) == 2
    p.update(ratio=0.8, ratio_low=0.7, ratio_high=0.9)
    assert judged.judge(m, QUAL, cond).verdict == "refuted"


def _example(tmp_path: Path, chunked_body: str | None = None) -> tuple[Path, Any]:
    """docs/examples/decay-scan-kb at a tiny point, its equivalence claim run through the GPU
    path (CPU tensors, nothing timed): the KB root and the evidence record written."""
    import shutil

    import yaml

    from flopkb.verify import execute, plan
    from flopkb.verify.context import Ceilings
    from flopkb.verify.session import Session

    root = tmp_path / "kb"
    shutil.copytree(Path(__file__).resolve().parents[3] / "docs" / "examples" / "decay-scan-kb",
                    root, ignore=shutil.ignore_patterns("__pycache__"))
    decl = root / "experiments" / "decay-scan-chunked-equals-steps.yaml"
    data = yaml.safe_load(decl.read_text())
    data.update(axes={"seq": [37, 70], "dim": [5], "batch": [2]},
                point={"seq": 37, "dim": 5, "batch": 2})
    decl.write_text(yaml.safe_dump(data, sort_keys=False))
    cls = root / "records" / "classes" / "decay-scan.yaml"
    cls.write_text(cls.read_text().replace("{seq: 4096, dim: 256}", "{seq: 37, dim: 5}"))
    if chunked_body is not None:
        path = root / "kernels" / "decay_scan" / "chunked.py"
        path.write_text(path.read_text() + chunked_body)
    (root / "records" / "evidence").mkdir()
    kb, findings = load_kb(root)
    assert not findings
    jobs, broken = plan.plan(kb)
    assert [j.experiment for j in jobs] == ["decay-scan-chunked-equals-steps"] and not broken
    s = Session(kb, root / "records" / "evidence", "h200-sxm", {"gpu": "NVIDIA H200"}, "test",
                False, "bundled")
    ctx = _ctx(lambda side, state: pytest.fail("an equivalence-only declaration times nothing"))
    ctx.kb_root = root
    ctx.ceilings = Ceilings(800.0, 4000.0, "test")
    execute._run_job(s, ctx, jobs[0], plan.noop)
    (path,) = (root / "records" / "evidence").glob("*.yaml")
    return root, EvidenceRecord.model_validate(yaml.safe_load(path.read_text()))


def test_the_documented_equivalence_example_is_confirmed_and_re_derived(tmp_path: Path) -> None:
    root, ev = _example(tmp_path)
    assert ev.verdict.value == "confirmed" and ev.claim == "decay-scan/chunked-equals-steps"
    # its picture beside it: the relative error of each state along the swept axis
    assert "plot_error" not in ev.statistics and ev.artifacts == [f"{ev.id}.png"]
    rows = ev.rounds[0].model_dump(mode="json")["sweep"]
    assert [r["seq"] for r in rows] == [37, 70]
    assert [e["tensor"] for e in rows[0]["equivalence_chunked"]] == ["y", "state"]
    kb, _ = load_kb(root)
    assert rederive(kb, kb.evidence[ev.id]) == []


def test_a_chunked_form_that_drops_the_carried_state_is_refuted(tmp_path: Path) -> None:
    # every chunk starts from zero: equal on the first chunk only (T=37 and 70 span two chunks
    # of 32)
    broken = '''

_right = decay_scan_chunked


def decay_scan_chunked(x, log_a, chunk=32):
    ys = [_right(x[:, s:s + chunk], log_a[:, s:s + chunk])[0] for s in range(0, x.shape[1], chunk)]
    y = torch.cat(ys, 1)
    return y, y[:, -1]
'''
    _, ev = _example(tmp_path, broken)
    assert ev.verdict.value == "refuted"


@pytest.mark.parametrize("form", sorted(CLAIMS))
def test_each_form_draws_its_picture(tmp_path: Path, form: str) -> None:
    from flopkb.verify.plots import ClaimView, render

    _, m = _measure(form, lambda side, state: 4.0 if "scan" in side else 1.0)
    # the bars read the errors against the declared tolerance, its limit drawn at 1
    assert m.plot["series"] == {"worst output or state": "tolerance_fraction"}
    assert m.plot["hline"] == 1.0 and "tolerance" in m.plot["hline_label"]
    assert all(0 <= r["tolerance_fraction"] <= 1 for r in m.sweep)
    # an exact match (error 0) on the log axis must not break the picture
    m.sweep[0]["tolerance_fraction"] = 0.0
    view = ClaimView(claim=CLAIMS[form][0], experiment=CLAIMS[form][1], gpu="G",
                     accelerator=None, verdict="confirmed")
    path = render(m.plot, m.sweep, tmp_path / "p.png", view)
    assert path is not None and path.stat().st_size > 0


def test_a_qualitative_claim_may_link_an_equivalence_without_a_qualitative_block() -> None:
    from flopkb.evidence import links

    bare = Experiment.model_validate({
        "id": "e", "title": "t", "measures": "m", "criterion": "c",
        "produces": [{"quantity": "equivalence", "side": "x", "atol": 0, "rtol": 1e-3}]})
    assert links.magnitude_mismatch(bare, QUAL) is None
    timed = bare.model_copy(update={"produces": [bare.produces[0].model_copy(
        update={"quantity": "time"})]})
    assert "qualitative criterion" in (links.magnitude_mismatch(timed, QUAL) or "")
