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
SETTINGS = settings(
    max_examples=50, deadline=None,
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
