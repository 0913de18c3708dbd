"""The implementation axis of verify: combinations, peers absent or failing, disagreement."""

from __future__ import annotations

import types
from pathlib import Path

import pytest
import yaml

from flopkb.evidence import catalogue, hooks, impls
from flopkb.evidence.declared import ExperimentInfo
from flopkb.evidence.impls import Side
from flopkb.evidence.measurement import Judgement, Measurement
from flopkb.evidence.stats import Interval
from flopkb.kb import load_kb
from flopkb.model import EvidenceRecord
from flopkb.verify import execute, plan
from flopkb.verify.context import Ceilings, Context, PeerUnavailable, Settings
from flopkb.verify.session import Session
from tests.unit.verify_fixtures import write_kb

SIDES = (Side("ssd", ("bundled", "mamba_ssm", "fla")), Side("scan", ("bundled", "mamba_cuda")))


def test_bundled_is_every_sides_default():
    assert impls.combinations(SIDES, "bundled") == [{"ssd": "bundled", "scan": "bundled"}]


def test_peer_takes_each_sides_first_peer():
    assert impls.combinations(SIDES, "peer") == [{"ssd": "mamba_ssm", "scan": "mamba_cuda"}]
    single = (Side("mlp", ("cublas",)),)
    assert impls.combinations(single, "peer") == [{"mlp": "cublas"}]


def test_all_is_the_product_with_the_defaults_first():
    combos = impls.combinations(SIDES, "all")
    assert len(combos) == 6 and combos[0] == {"ssd": "bundled", "scan": "bundled"}
    assert {tuple(c.values()) for c in combos} == {(a, b) for a in SIDES[0].impls
                                                  for b in SIDES[1].impls}
    assert impls.combinations((), "all") == [{}]


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="--impl"):
        impls.combinations(SIDES, "fastest")


def test_every_registered_side_names_known_implementations():
    for info in catalogue.EXPERIMENTS.values():
        for side in info.sides:
            assert side.impls and set(side.impls) <= set(impls.IMPLS), (info.name, side)


# ----- the runner over a fake experiment: which verdict each combination gives -----

RATIOS = {("bundled", "bundled"): 5.0, ("mamba_ssm", "bundled"): 9.5, ("fla", "bundled"): 5.2,
          ("bundled", "mamba_cuda"): 4.0}


def _fake_module() -> types.ModuleType:
    mod = types.ModuleType("fake_experiment")
    mod.DEFAULTS = {"state_dim": 64}

    def measure(ctx: Context, cond):
        key = (ctx.impl("ssd"), ctx.impl("scan"))
        if key[0] == "fla" and key[1] == "mamba_cuda":
            raise RuntimeError("boom: a peer kernel crashed")
        if key not in RATIOS:
            raise PeerUnavailable(f"{key[1]} is not installed")
        ctx.describe_impl("ssd", f"{key[0]} 1.2.3")
        ratio = RATIOS[key]
        return Measurement({"ratio": ratio}, [{"ratio": ratio}], dict(cond))

    def judge(m, mag, cond):
        r = m.data["ratio"]
        verdict = "confirmed" if 2 <= r <= 8 else "refuted"
        return Judgement(Interval(r, r * 0.98, r * 1.02), "x", "ratio", verdict, "2-8x")

    mod.measure, mod.judge = measure, judge
    return mod


def fake_job(kb, sides: tuple[Side, ...]) -> plan.Job:
    """The fixture KB's test-class/ssd-scan job, run by a stand-in experiment with `sides` (the
    test patches `hooks.experiment_module` to say what runs it)."""
    info = ExperimentInfo(name="ssd-vs-scan", hook="fake", title="t", claims=(), kernels=(),
                          measures="m", criterion="c", sweep="s", sides=sides)
    (job,), _ = plan.plan(kb, claim="test-class/ssd-scan")
    return plan.Job(info, job.targets)


def cpu_context() -> Context:
    """A quick CPU context with fixed calibration ceilings, as a job on the GPU would have."""
    ctx = Context(gpu=False, settings=Settings.for_mode(True))
    ctx.ceilings = Ceilings(800.0, 4000.0, "test")
    return ctx


@pytest.fixture
def fake_run(tmp_path, monkeypatch):
    root = write_kb(tmp_path)
    kb, findings = load_kb(root)
    assert not findings
    monkeypatch.setattr(hooks, "experiment_module",
                        lambda info, kb_root=None, kb_code=True: _fake_module())
    monkeypatch.setattr(execute, "current_hashes", lambda root, info: {"x.py": "0" * 64})
    job = fake_job(kb, SIDES)

    def run(mode: str) -> tuple[list[plan.Result], Path]:
        out = tmp_path / f"ev-{mode}"
        out.mkdir()
        s = Session(kb, out, "h200-sxm", {"gpu": "NVIDIA H200"}, "test", False,
                    mode)
        return execute._run_job(s, cpu_context(), job, plan.noop), out

    return run


def _evidence(folder: Path) -> EvidenceRecord:
    (path,) = folder.glob("*.yaml")
    return EvidenceRecord.model_validate(yaml.safe_load(path.read_text()))


def test_all_judges_each_combination_and_flags_disagreement(fake_run):
    (result,), folder = fake_run("all")
    by_combo = {tuple(j["combination"].values()): j for j in result.judgements}
    assert len(by_combo) == 6
    assert result.verdict == "confirmed"  # the defaults' verdict
    assert by_combo[("mamba_ssm", "bundled")]["verdict"] == "refuted"
    assert by_combo[("mamba_ssm", "mamba_cuda")]["verdict"] == "not-run"
    assert "not installed" in by_combo[("mamba_ssm", "mamba_cuda")]["reason"]
    assert by_combo[("fla", "mamba_cuda")]["verdict"] == "error"
    assert "boom" in by_combo[("fla", "mamba_cuda")]["reason"]
    assert result.implementation_sensitive
    ev = _evidence(folder)
    assert ev.implementation_sensitive and ev.schema_version == 4
    mamba = next(j for j in ev.judgements if j.combination["ssd"] == "mamba_ssm"
                 and j.combination["scan"] == "bundled")
    assert mamba.implementations == {"ssd": "mamba_ssm 1.2.3"} and mamba.measured.value == 9.5
    assert ev.verdict.value == "confirmed"


def test_agreement_is_not_sensitive(fake_run, monkeypatch):
    monkeypatch.setitem(RATIOS, ("mamba_ssm", "bundled"), 6.0)
    (result,), _ = fake_run("all")
    assert not result.implementation_sensitive


def test_peer_mode_records_a_missing_peer_as_not_run(fake_run):
    (result,), folder = fake_run("peer")
    assert result.verdict == "not-run"
    assert "not installed" in result.reason
    assert [j["verdict"] for j in result.judgements] == ["not-run"]
    assert _evidence(folder).verdict.value == "not-run"


def test_sensitive_evidence_shows_in_claims_and_graph_status(fake_run, tmp_path):
    from flopkb.claims import list_claims
    from flopkb.graph import queries

    _, folder = fake_run("all")
    evidence = tmp_path / "records" / "evidence"
    for path in folder.iterdir():
        path.rename(evidence / path.name)
    kb, findings = load_kb(tmp_path)
    assert not [f for f in findings if f.severity == "error"]
    row = next(r for r in list_claims(kb) if r["claim"] == "test-class/ssd-scan")
    assert row["implementation_sensitive"] == ["h200-sxm"]
    status = queries.status(queries.KBGraph.from_kb(kb))
    assert [s["claim"] for s in status["implementation_sensitive"]] == ["test-class/ssd-scan"]


def test_mamba_cuda_without_source_is_unavailable(monkeypatch, tmp_path):
    from flopkb.verify.peers import mamba_cuda

    monkeypatch.delenv("FLOPKB_MAMBA_EXT", raising=False)
    monkeypatch.setenv("FLOPKB_MAMBA_SDIST", str(tmp_path / "missing.tar.gz"))
    monkeypatch.setattr(mamba_cuda, "_MODULE", {})
    with pytest.raises(PeerUnavailable, match="does not exist"):
        mamba_cuda.build([tmp_path])
    monkeypatch.delenv("FLOPKB_MAMBA_SDIST")
    with pytest.raises(PeerUnavailable, match="no mamba-ssm source"):
        mamba_cuda.build([tmp_path])


def test_mamba_cuda_stubs_cover_every_unbuilt_instantiation():
    from flopkb.verify.peers import mamba_cuda

    text = mamba_cuda.stubs_source()
    assert text.count("template<> void selective_scan_fwd_cuda<") == 4
    assert text.count("template<> void selective_scan_bwd_cuda<") == 5
    assert "selective_scan_bwd_cuda<at::BFloat16, float>" not in text


def test_mamba_cuda_extracts_only_the_scan_sources(tmp_path):
    import io
    import tarfile

    from flopkb.verify.peers import mamba_cuda

    sdist = tmp_path / "mamba_ssm-9.9.tar.gz"
    with tarfile.open(sdist, "w:gz") as tar:
        for name, data in (("mamba_ssm-9.9/csrc/selective_scan/a.cu", b"kernel"),
                           ("mamba_ssm-9.9/setup.py", b"print()"),
                           ("mamba_ssm-9.9/csrc/selective_scan/../../evil.cu", b"x")):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    folder = mamba_cuda.extract(sdist, tmp_path / "src")
    assert sorted(p.name for p in folder.iterdir()) == ["a.cu"]
