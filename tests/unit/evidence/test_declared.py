"""Experiments as data: the bundled declarations equal the hand-written registry they replaced
(field by field, and the kernel hashes of every experiment), declarations are validated like
records (located findings with rule codes), and links are typed (FKB527, FKB528)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from flopkb.evidence import catalogue, declared, hashing, hooks
from flopkb.kernelpkg import kernels_dir
from flopkb.paths import bundled_root
from flopkb.validate import validate

ROOT = Path(__file__).resolve().parents[3]
# The registry as it was written in Python before it became declarations (copied from
# flopkb/verify/registry.py's list, 2026-12-01): the fixture the declarations must equal.
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
BEFORE = json.loads((FIXTURES / "registry_before.json").read_text())
EXAMPLE = ROOT / "docs" / "examples" / "rmsnorm-kb"
# declared after the move from the hand-written registry (the kernel-level claims of issue 15)
ADDED_SINCE = {
    "scan-benchmark", "non-matmul-cost", "prefill-trend", "serving-samba-prompt",
    "serving-samba-generation", "serving-nemotron-h", "serving-kimi-decode",
    "kda-vs-dplr", "lightning-vs-linear-attention", "hgrn2-scan-vs-chunked",
    "ssd-vs-softmax-simt-share",
}

# judging rules changed on purpose since the move: each must have raised its judge_revision
CHANGED_SINCE = {("determinism-overhead", "criterion"): 2, ("scan-benchmark", "criterion"): 2,
                 # the fastest correct implementation per layer, the floor rule and the
                 # roofline-ratio refusal (issue 23)
                 **{(name, "judge_revision"): 2 for name in (
                     "serving-samba-prompt", "serving-samba-generation", "serving-nemotron-h",
                     "serving-kimi-decode")}}
# kernel lists changed on purpose since the move: the per-op timing helpers moved from
# flopkb/verify/experiments/ under kernels/ (each op's bench.py, reduction/scatter.py), so the
# declarations now hash them and the op files they import (issue 25)
_REDUCTION = ["reduction/atomic.py", "reduction/ordered.py", "reduction/_partial.py",
              "reduction/_checks.py", "reduction/reference.py", "reduction/cub.py",
              "reduction/cub_levels.cu"]
_GEMM_BENCH = ["gemm/cublas.py", "gemm/_checks.py", "gemm/reference.py", "gemm/cost.py",
               "gemm/bench.py"]
KERNELS_SINCE = {
    "determinism-overhead": [*_REDUCTION, "reduction/cost.py", "reduction/bench.py"],
    "reduction-determinism": [*_REDUCTION, "reduction/cost.py", "reduction/bench.py",
                              "reduction/scatter.py"],
    "reduction-partition-simulation": ["reduction/partitioned.py", *_REDUCTION,
                                       "reduction/cost.py", "reduction/bench.py"],
    "roofline-efficiency": ["selective_scan/", "elementwise/", *_GEMM_BENCH, "_ssm_common.py"],
    "scan-vs-mlp": ["selective_scan/", *_GEMM_BENCH, "_ssm_common.py"],
}


def _kernels(name: str, old: dict) -> list[str]:
    """The kernels list `name` declares now: as at the move, unless changed since on purpose."""
    return KERNELS_SINCE.get(name, old["kernels"])



def _hashes(root, name: str) -> dict[str, str]:
    """The current kernel hashes of experiment `name` as the KB at `root` sees it."""
    return hashing.current_hashes(root, catalogue.for_kb(root).get(name))

def test_the_declared_registry_equals_the_hand_written_one_field_by_field() -> None:
    # the experiments declared since the move are the only ones the hand-written list lacks
    assert set(catalogue.EXPERIMENTS) - set(BEFORE) == ADDED_SINCE
    assert set(BEFORE) <= set(catalogue.EXPERIMENTS)
    assert next(iter(catalogue.EXPERIMENTS)) == "calibration"
    for name, old in BEFORE.items():
        info = catalogue.get(name)
        assert info.hook == declared.BUNDLED_HOOKS + old["module"], name
        assert info.module == old["module"], name
        for key in ("title", "measures", "criterion", "sweep", "time_limit_s"):
            if (name, key) in CHANGED_SINCE:
                assert getattr(info, key) != old[key], (name, key)
                assert info.judge_revision == CHANGED_SINCE[name, key], name
                continue
            assert getattr(info, key) == old[key], (name, key)
        if not any(n == name for n, _ in CHANGED_SINCE):
            assert info.judge_revision == 1, name
        for key in ("claims", "needs"):
            assert list(getattr(info, key)) == old[key], (name, key)
        assert list(info.kernels) == _kernels(name, old), name
        if name in KERNELS_SINCE:
            assert KERNELS_SINCE[name] != old["kernels"], name
        assert [(s.name, list(s.impls)) for s in info.sides] == [
            (s["name"], s["impls"]) for s in old["sides"]], name
    assert catalogue.bundled().findings == []
    # the declarations added since the move that changed their rule since they were added
    for (name, key), revision in CHANGED_SINCE.items():
        if name in ADDED_SINCE:
            assert catalogue.get(name).judge_revision == revision, (name, key)


def _old_kernel_files(folder: Path, entries: list[str]) -> list[str]:
    # the expansion hashing.kernel_files made before experiments were declarations
    files: set[str] = set()
    for entry in entries:
        if entry.endswith("/"):
            base = folder / entry
            if base.is_dir():
                files.update(p.relative_to(folder).as_posix() for p in base.rglob("*")
                             if p.suffix in hashing.SOURCE_SUFFIXES and p.is_file()
                             and "__pycache__" not in p.parts)
        else:
            files.add(entry)
    return sorted(files)


def _old_hashes(folder: Path, entries: list[str]) -> dict[str, str]:
    return {rel: hashing.sha256_file(folder / rel) if (folder / rel).is_file() else hashing.MISSING
            for rel in _old_kernel_files(folder, entries)}


def test_kernel_hashes_of_every_bundled_experiment_are_unchanged(tmp_path: Path) -> None:
    # evidence staleness compares these maps: the move to declarations must not change one
    folder = kernels_dir()
    copy = tmp_path / "kb"
    shutil.copytree(folder, copy / "kernels", ignore=shutil.ignore_patterns("__pycache__"))
    for name, old in BEFORE.items():
        expected = _old_hashes(folder, _kernels(name, old))
        assert _hashes(None, name) == expected, name
        assert _hashes(bundled_root(), name) == expected, name
        # a KB carrying its own copy of the kernels hashes its copy, as before
        assert _hashes(copy, name) == _old_hashes(copy / "kernels",
                                                                 _kernels(name, old)), name
        assert hashing.MISSING not in expected.values(), name


def test_committed_evidence_is_as_stale_as_before() -> None:
    from flopkb.kb import load_kb

    kb, _ = load_kb(bundled_root())
    for ev in kb.evidence.values():
        if ev.experiment not in BEFORE:
            # declared after the move (non-matmul-cost, prefill-trend, scan-benchmark): nothing
            # from before to compare with
            continue
        entries = _kernels(ev.experiment, BEFORE[ev.experiment])
        assert set(_hashes(kb.root, ev.experiment)) == set(
            _old_kernel_files(kernels_dir(), entries)), ev.id


def test_a_kb_operator_folder_stands_in_for_the_bundled_one_and_nothing_else(
        tmp_path: Path) -> None:
    root = tmp_path / "kb"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    own = _hashes(root, "rmsnorm-fused-vs-unfused")
    assert set(own) == {"rmsnorm/__init__.py", "rmsnorm/fused.py", "rmsnorm/reference.py"}
    assert own["rmsnorm/fused.py"] == hashing.sha256_file(root / "kernels/rmsnorm/fused.py")
    # a bundled experiment seen from this KB hashes the bundled kernels (the KB has no ssd/)
    assert _hashes(root, "ssd-vs-scan") == _hashes(None, "ssd-vs-scan")


# ----- declarations are validated like records -----


def _kb(tmp_path: Path) -> Path:
    root = tmp_path / "kb"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _declare(root: Path, name: str, body: dict) -> Path:
    path = root / "experiments" / f"{name}.yaml"
    path.write_text(yaml.safe_dump({"id": name, **body}, sort_keys=False))
    return path


GOOD = yaml.safe_load((EXAMPLE / "experiments" / "rmsnorm-fused-vs-unfused.yaml").read_text())


def _codes(root: Path) -> dict[str, list]:
    out: dict[str, list] = {}
    for f in validate(root).findings:
        out.setdefault(f.rule, []).append(f)
    return out


def test_the_example_kb_validates_clean() -> None:
    assert [f for f in validate(EXAMPLE).findings if f.severity.value != "info"] == []


@pytest.mark.parametrize(("change", "code", "where"), [
    ({"sides": [{**GOOD["sides"][0], "implementations": [{"name": "cutlass"}]},
                GOOD["sides"][1]]}, "FKB522", "cutlass"),
    ({"sides": [{**GOOD["sides"][0], "implementations": [
        {"name": "triton", "call": "rmsnorm.fused:no_such_function"}]}, GOOD["sides"][1]]},
     "FKB523", "no_such_function"),
    ({"sides": [{**GOOD["sides"][0], "implementations": [
        {"name": "triton", "call": "nowhere.mod:fn"}]}, GOOD["sides"][1]]}, "FKB523", "nowhere"),
    ({"point": {"rows": 8192, "heads": 4}}, "FKB524", "heads"),
    ({"inputs": [{"name": "x", "shape": ["rows", "width"]}]}, "FKB524", "width"),
    ({"sides": [{**GOOD["sides"][0], "bytes": "2 * rows * depth"}, GOOD["sides"][1]]},
     "FKB524", "depth"),
    ({"sides": [{k: v for k, v in GOOD["sides"][0].items() if k != "reference"},
                GOOD["sides"][1]]}, "FKB525", "reference"),
    ({"produces": [{"quantity": "distinct_results"}]}, "FKB525", "needs a hook"),
    ({"produces": [{"quantity": "time_ratio", "numerator": "unfused", "denominator": "fast"}]},
     "FKB526", "fast"),
    ({"hook": "nowhere.hook"}, "FKB521", "nowhere"),
    ({"hook": "os.path"}, "FKB521", "os.path"),
    # a helper module beside the bundled experiments resolves, but is no experiment (issue 27)
    ({"hook": "flopkb.verify.experiments._training"}, "FKB521", "no experiment"),
    ({"hook": "flopkb.verify.experiments.generic"}, "FKB521", "no experiment"),
    ({"kernels": ["../../"]}, "FKB530", "'..'"),
    ({"sweeps": "typo"}, "FKB122", "sweeps"),
    ({"axes": {f"a{i}": list(range(8)) for i in range(5)}}, "FKB121", "32768 sweep states"),
])
def test_a_broken_declaration_is_a_located_finding(tmp_path: Path, change: dict, code: str,
                                                   where: str) -> None:
    root = _kb(tmp_path)
    body = {**{k: v for k, v in GOOD.items() if k != "id"}, **change}
    path = _declare(root, "broken", body)
    found = _codes(root)
    assert code in found, found
    f = found[code][0]
    assert f.file.endswith("broken.yaml") and f.line > 0 and where in f.message, f
    assert path.read_text() == yaml.safe_dump({"id": "broken", **body}, sort_keys=False)
    # the good declaration beside it is still read and still linked: no FKB507 for it
    assert "FKB507" not in found


def test_one_bad_declaration_never_hides_another(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    (root / "experiments" / "anchors.yaml").write_text("id: anchors\ntitle: &a t\nx: *a\n")
    _declare(root, "other-name", {**{k: v for k, v in GOOD.items() if k != "id"}})
    (root / "experiments" / "other-name.yaml").rename(root / "experiments" / "renamed.yaml")
    found = _codes(root)
    assert "FKB107" in found and "FKB520" in found


def test_a_kb_experiment_is_no_fkb507_and_an_unknown_one_is(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    cls = root / "records" / "classes" / "fused-rmsnorm.yaml"
    cls.write_text(cls.read_text().replace("rmsnorm-fused-vs-unfused", "rmsnorm-typo"))
    found = _codes(root)
    assert "FKB507" in found and "rmsnorm-fused-vs-unfused" in found["FKB507"][0].hint


# ----- typed links -----


def _relink(root: Path, link: str, magnitude: str | None = None) -> None:
    cls = root / "records" / "classes" / "fused-rmsnorm.yaml"
    text = cls.read_text().replace("verify: {experiment: rmsnorm-fused-vs-unfused}", link)
    if magnitude is not None:
        text = text.replace('magnitude: "3x"', f'magnitude: "{magnitude}"')
    cls.write_text(text)


def test_an_rmsnorm_claim_linked_to_ssd_vs_scan_is_an_error(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    _relink(root, "verify: {experiment: ssd-vs-scan}")
    found = _codes(root)
    (f,) = found["FKB528"]
    assert f.severity.value == "error" and f.record == "fused-rmsnorm"
    assert "fused-rmsnorm" in f.message and "mamba2-ssd" in f.message
    assert "subject" in (f.hint or "") and f.line > 0


def test_a_link_naming_its_side_is_accepted_and_a_missing_side_is_not(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    _relink(root, "verify: {experiment: ssd-vs-scan, subject: ssd}")
    assert "FKB528" not in _codes(root)
    root2 = _kb(tmp_path / "two")
    _relink(root2, "verify: {experiment: ssd-vs-scan, subject: gemm}")
    (f,) = _codes(root2)["FKB528"]
    assert "gemm" in f.message and "ssd, scan" in f.message


@pytest.mark.parametrize(("magnitude", "experiment", "side", "ok"), [
    ("crossover at 2K", "rmsnorm-fused-vs-unfused", "fused", False),
    ("crossover at 2K", "ssd-vs-attention", "ssd", True),
    ("3x", "reduction-determinism", "reduction", False),
    ("3x", "rmsnorm-fused-vs-unfused", "fused", True),
    ("qualitative", "rmsnorm-fused-vs-unfused", "fused", True),
    ("Q=64", "rmsnorm-fused-vs-unfused", "fused", False),
])
def test_the_magnitude_form_must_be_what_the_experiment_produces(
        tmp_path: Path, magnitude: str, experiment: str, side: str, ok: bool) -> None:
    root = _kb(tmp_path)
    cls = root / "records" / "classes" / "fused-rmsnorm.yaml"
    # the prose must quote the figure (rule 2): add it
    cls.write_text(cls.read_text().replace("large batch of rows.",
                                           "large batch of rows. 2K 64 Q=64"))
    _relink(root, f"verify: {{experiment: {experiment}, subject: {side}}}", magnitude)
    found = _codes(root)
    assert ("FKB527" not in found) is ok, found.get("FKB527")
    if not ok:
        assert found["FKB527"][0].hint and experiment in found["FKB527"][0].message


def test_links_module_reads_absolute_magnitudes_by_dimension() -> None:
    from types import SimpleNamespace

    from flopkb.evidence import links
    from flopkb.model.experiment import Experiment

    decl = Experiment.model_validate({
        "id": "x", "title": "t", "measures": "m", "criterion": "c",
        "produces": [{"quantity": "throughput", "unit": "TFLOP/s"}]})
    rate = SimpleNamespace(text="740 TFLOP/s", kind="absolute", dimension="flop_rate")
    bandwidth = SimpleNamespace(text="3.35 TB/s", kind="absolute", dimension="byte_rate")
    assert links.magnitude_mismatch(decl, rate) is None
    assert "byte rate" in (links.magnitude_mismatch(decl, bandwidth) or "")


# ----- what a run on a KB sees -----


def test_a_run_on_a_kb_sees_its_own_experiments_and_runs_no_unlinked_bundled_one(
        tmp_path: Path) -> None:
    from flopkb.kb import load_kb
    from flopkb.verify import plan

    root = _kb(tmp_path)
    kb, _ = load_kb(root)
    jobs, broken = plan.plan(kb)
    assert [j.experiment for j in jobs] == ["rmsnorm-fused-vs-unfused"] and not broken
    # 17 bundled experiments are linked by no claim of this KB: none is checked or reported
    assert [i.name for i in plan.unlinked(kb)] == []
    _declare(root, "spare", {k: v for k, v in GOOD.items() if k != "id"})
    kb, _ = load_kb(root)
    assert [i.name for i in plan.unlinked(kb)] == ["spare"]
    bundled_kb, _ = load_kb(bundled_root())
    assert [i.name for i in plan.unlinked(bundled_kb)] == [
        n for n in catalogue.EXPERIMENTS if n != "calibration" and n not in
        {r.verify.experiment for _, _, r in bundled_kb.claims() if r.verify}]


def test_a_kb_hook_is_a_module_below_its_kernels(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    hook = root / "kernels" / "rmsnorm" / "hook.py"
    hook.write_text("DEFAULTS = {}\n\n\ndef cpu_check(ctx):\n    ctx.notes.append('ran')\n\n\n"
                    "def measure(ctx, cond):\n    raise NotImplementedError\n\n\n"
                    "def judge(m, mag, cond):\n    raise NotImplementedError\n")
    _declare(root, "hooked", {"title": "t", "measures": "m", "criterion": "c",
                              "hook": "rmsnorm.hook", "produces": ["time_ratio"]})
    assert not {"FKB521", "FKB525"} & set(_codes(root))
    module = hooks.experiment_module(catalogue.for_kb(root).get("hooked"), root)
    with pytest.raises(hooks.KBCodeRefused):
        hooks.experiment_module(catalogue.for_kb(root).get("hooked"), root, kb_code=False)
    assert module.__file__ == str(hook) and callable(module.cpu_check)
    hook.write_text("DEFAULTS = {}\n")
    assert "FKB521" in _codes(root)


def test_a_callable_linked_out_of_the_kb_is_never_read(tmp_path: Path) -> None:
    root = _kb(tmp_path)
    outside = tmp_path / "outside.py"
    outside.write_text("def secret():\n    pass\n")
    (root / "kernels" / "rmsnorm" / "leak.py").symlink_to(outside)
    body = {k: v for k, v in GOOD.items() if k != "id"}
    body["sides"] = [{**GOOD["sides"][0], "implementations": [
        {"name": "triton", "call": "rmsnorm.leak:secret"}]}, GOOD["sides"][1]]
    _declare(root, "leaky", body)
    (f,) = _codes(root)["FKB523"]
    assert "leak.py resolves outside the kernels/ folder" in f.message
