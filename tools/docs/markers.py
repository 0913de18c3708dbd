"""Generated blocks inside hand-written pages: the text between `<!-- figures:NAME -->` and
`<!-- /figures:NAME -->` is rewritten from the sources, the rest of the page is left alone."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .sources import MissingFigure, Sources

BLOCK = re.compile(
    r"(<!-- figures:(?P<name>[a-z-]+) -->\n)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.DOTALL
)


def blocks_in(text: str) -> list[str]:
    return [m["name"] for m in BLOCK.finditer(text)]


def regenerate(text: str, src: Sources, blocks: Mapping[str, Callable[[Sources], str]]) -> str:
    """`text` with every marked block rewritten from the sources."""

    def fill(m: re.Match[str]) -> str:
        name = m["name"]
        if name not in blocks:
            raise MissingFigure(f"unknown figures block {name!r}; known: {', '.join(blocks)}")
        return f"{m.group(1)}{blocks[name](src)}{m.group(4)}"

    return BLOCK.sub(fill, text)
