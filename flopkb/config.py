"""Configuration: `[tool.flopkb]` in pyproject.toml or the top level of flopkb.toml.

Keys (every one optional): `root` (the KB root, relative to the config file), `select` and
`ignore` (rule code prefixes, as ruff reads them: `FKB2` is every provenance rule), `exclude`
(globs of record paths, relative to the KB root), `strict`, `require_signed` (evidence must be
signed by a key in the KB's allowed_signers) and `sign_key` (the private key `verify --gpu` signs
the evidence it writes with, relative to the config file). The command line overrides each
key it is given. A config file that cannot be read or holds an unknown key is a usage error
(`ConfigError`, exit 2): a typo must not silently turn a check off.

A pull request can edit the config, so it is not trusted to point anywhere: `root` must lie
inside the folder holding the config or, when that folder is in a git repository, inside the
repository (after symlinks are resolved), never `../../elsewhere` or an absolute path outside.
`flopkb validate --isolated` reads no config at all.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

CONFIG_NAMES = ("flopkb.toml", "pyproject.toml")
_KEYS = {"root", "select", "ignore", "exclude", "strict", "require_signed", "sign_key"}


class ConfigError(ValueError):
    """A config file that cannot be read or says something flopkb does not understand."""


@dataclass(frozen=True)
class Config:
    """Settings of one run; `file` is the config file they came from (None: defaults only)."""

    file: Path | None = None
    root: Path | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    strict: bool = False
    require_signed: bool = False
    sign_key: Path | None = None
    # which keys the file set, so a CLI flag can say it overrides one
    given: frozenset[str] = field(default_factory=frozenset)


def _table(path: Path) -> dict[str, Any] | None:
    """The flopkb table of a config file; None when the file has none (a plain pyproject)."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not valid TOML: {exc}") from None
    if path.name == "pyproject.toml":
        table = data.get("tool", {}).get("flopkb")
        return table if isinstance(table, dict) else None
    return data


def _strings(path: Path, key: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: `{key}` must be a list of strings")
    return tuple(value)


def _repository_top(folder: Path) -> Path | None:
    """The top of the git repository `folder` lies in (the nearest folder above holding `.git`)."""
    for candidate in [folder, *folder.parents]:
        if (candidate / ".git").exists():
            return candidate
    return None


def _confined_root(path: Path, root: str) -> Path:
    """`root` of config `path`, refused unless it resolves inside the config's folder or its
    repository: a config a pull request wrote must not send validation to another tree."""
    folder = Path(os.path.abspath(path.parent))
    target = folder / root
    bounds = [folder] + [top for top in [_repository_top(folder)] if top is not None]
    real = os.path.realpath(target)
    for bound in bounds:
        top = os.path.realpath(bound)
        if real == top or real.startswith(top.rstrip(os.sep) + os.sep):
            return target
    where = "its repository" if len(bounds) > 1 else "the folder holding it"
    raise ConfigError(
        f"{path}: `root` = {root!r} lies outside {where} ({bounds[-1]}); the KB root must be "
        "a folder inside it"
    )


def read_config(path: Path) -> Config | None:
    """The config in `path`, or None when it is a pyproject.toml without `[tool.flopkb]`."""
    table = _table(path)
    if table is None:
        return None
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{path}: unknown key {unknown[0]!r} (known: {', '.join(sorted(_KEYS))})"
        )
    root = table.get("root")
    if root is not None and not isinstance(root, str):
        raise ConfigError(f"{path}: `root` must be a string (a folder relative to the file)")
    strict = table.get("strict", False)
    if not isinstance(strict, bool):
        raise ConfigError(f"{path}: `strict` must be true or false")
    require_signed = table.get("require_signed", False)
    if not isinstance(require_signed, bool):
        raise ConfigError(f"{path}: `require_signed` must be true or false")
    sign_key = table.get("sign_key")
    if sign_key is not None and not isinstance(sign_key, str):
        raise ConfigError(f"{path}: `sign_key` must be a string (a path relative to the file)")
    return Config(
        file=path,
        require_signed=require_signed,
        sign_key=(path.parent / sign_key) if sign_key is not None else None,
        root=_confined_root(path, root) if root is not None else None,
        select=_strings(path, "select", table.get("select", [])),
        ignore=_strings(path, "ignore", table.get("ignore", [])),
        exclude=_strings(path, "exclude", table.get("exclude", [])),
        strict=strict,
        given=frozenset(table),
    )


def config_in(folder: Path) -> Config | None:
    """The config of one folder: flopkb.toml first, else pyproject.toml's `[tool.flopkb]`."""
    for name in CONFIG_NAMES:
        path = folder / name
        if path.is_file():
            found = read_config(path)
            if found is not None:
                return found
    return None
