"""Random mutations of valid records give findings (or nothing), never a traceback."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flopkb.kb import record_files
from flopkb.load import read_document
from flopkb.validate import validate

SMALL_KB = Path(__file__).resolve().parents[1] / "cases" / "valid" / "small-kb"
FILES = [p.relative_to(SMALL_KB) for p in record_files(SMALL_KB)]
# examples per test come from the active profile (tests/conftest.py): `ci` by default,
# HYPOTHESIS_PROFILE=deep for long runs
SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)  # fmt: skip

values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=6,
)


def _paths(data: Any, prefix: tuple = ()) -> Iterator[tuple]:
    """Every path to a value inside `data`."""
    if isinstance(data, dict):
        for key, value in data.items():
            yield (*prefix, key)
            yield from _paths(value, (*prefix, key))
    elif isinstance(data, list):
        for i, value in enumerate(data):
            yield (*prefix, i)
            yield from _paths(value, (*prefix, i))


def _set(data: Any, path: tuple, value: Any, delete: bool) -> None:
    for part in path[:-1]:
        data = data[part]
    if delete:
        del data[path[-1]]
    else:
        data[path[-1]] = value


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One copy of the valid KB per module; each example rewrites one file and restores it."""
    root = tmp_path_factory.mktemp("fuzz") / "kb"
    shutil.copytree(SMALL_KB, root)
    return root


def _check(kb: Path, rel: Path, raw: bytes) -> None:
    (kb / rel).write_bytes(raw)
    try:
        result = validate(kb)
    finally:
        shutil.copyfile(SMALL_KB / rel, kb / rel)
    for f in result.findings:
        assert f.rule != "FKB199", f.message
        assert f.line >= 0 and f.column >= 0 and f.message
    result.as_dict()


@SETTINGS
@given(st.sampled_from(FILES), st.data(), values, st.booleans())
def test_structural_mutations(
    kb: Path, rel: Path, data: st.DataObject, value: Any, delete: bool
) -> None:
    record = read_document(SMALL_KB / rel, str(rel)).data
    paths = list(_paths(record))
    path = data.draw(st.sampled_from(paths))
    _set(record, path, value, delete)
    _check(kb, rel, yaml.safe_dump(record, allow_unicode=True).encode())


@SETTINGS
@given(
    st.sampled_from(FILES), st.data(), st.binary(min_size=1, max_size=8),
    st.sampled_from(["insert", "truncate", "flip"]),
)  # fmt: skip
def test_byte_mutations(kb: Path, rel: Path, data: st.DataObject, junk: bytes, how: str) -> None:
    raw = (SMALL_KB / rel).read_bytes()
    at = data.draw(st.integers(0, len(raw)))
    if how == "insert":
        raw = raw[:at] + junk + raw[at:]
    elif how == "truncate":
        raw = raw[:at]
    else:
        raw = raw[:at] + bytes([junk[0]]) + raw[at + 1 :]
    _check(kb, rel, raw)


# Values an attacker would try (issue 12): huge and long numbers, timestamps at the calendar's
# edges with offsets, lookalike and blank text, number literals Python reads but YAML should not.
hostile = st.one_of(
    # around the limits: 32 characters (flopkb), 4300 digits (Python's int conversion)
    st.sampled_from([33, 400, 4301, 5000]).map(lambda n: "9" * n),
    st.sampled_from(
        ["9999-12-31T23:59:59-01:00", "0001-01-01T00:00:00+01:00", "2999-01-01T00:00:00Z"]
    ),
    st.sampled_from(
        ["\uff42f16_tensor_flops / hbm_bandwidth", "0x10", "1_000", "a # b", "   ", "\t"]
    ),
    st.sampled_from([True, 2.0, "crossover at " + "9" * 400 + "K", "1e999"]),
)


@SETTINGS
@given(st.sampled_from(FILES), st.data(), hostile)
def test_hostile_values(kb: Path, rel: Path, data: st.DataObject, value: Any) -> None:
    record = read_document(SMALL_KB / rel, str(rel)).data
    path = data.draw(st.sampled_from(list(_paths(record))))
    _set(record, path, value, delete=False)
    # plain scalars (not quoted) where the text is a number, so YAML reads them as numbers
    text = yaml.safe_dump(record, allow_unicode=True)
    if isinstance(value, str) and value.isdigit():
        text = text.replace(f"'{value}'", value)
    _check(kb, rel, text.encode())


def test_the_profile_knob() -> None:
    """HYPOTHESIS_PROFILE picks the profile; the default stays CI-fast."""
    import os

    active = os.environ.get("HYPOTHESIS_PROFILE", "ci")
    assert settings.get_profile("deep").max_examples >= 1_000
    assert settings.default.max_examples == settings.get_profile(active).max_examples
    assert settings.get_profile("ci").max_examples <= 100
