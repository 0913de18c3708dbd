"""Suites: `verify --gpu` takes the `kernels` suite unless `--suite` names others."""

from __future__ import annotations

from flopkb.cli.verify import chosen_suites
from flopkb.evidence import catalogue
from flopkb.kb import load_kb
from flopkb.paths import bundled_root
from flopkb.verify import plan


def _experiments(jobs: list[plan.Job]) -> set[str]:
    return {job.experiment for job in jobs}


def test_the_serving_experiments_are_the_models_suite() -> None:
    bundled = catalogue.bundled().experiments
    models = {name for name, info in bundled.items() if info.suite == "models"}
    assert models and all(name.startswith("serving-") for name in models)
    assert {info.suite for info in bundled.values()} == {"kernels", "models"}


def test_plan_keeps_the_chosen_suites_unless_a_claim_is_named() -> None:
    kb, _ = load_kb(bundled_root())
    every, _ = plan.plan(kb)
    kernels, _ = plan.plan(kb, suites={"kernels"})
    models, _ = plan.plan(kb, suites={"models"})
    suite_of = {name: info.suite for name, info in catalogue.bundled().experiments.items()}
    assert _experiments(kernels) | _experiments(models) == _experiments(every)
    assert {suite_of[n] for n in _experiments(kernels)} == {"kernels"}
    assert {suite_of[n] for n in _experiments(models)} == {"models"}
    # a claim asked for by name runs whatever its suite
    named, _ = plan.plan(kb, claim="samba/prompt-throughput", suites={"kernels"})
    assert _experiments(named) == {"serving-samba-prompt"}


def test_the_default_suites() -> None:
    assert chosen_suites(None, gpu=True) == {"kernels"}
    assert chosen_suites(None, gpu=False) is None
    assert chosen_suites(["models"], gpu=True) == {"models"}
    assert chosen_suites(["kernels", "all"], gpu=True) is None
