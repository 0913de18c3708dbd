"""Generated blocks inside hand-written pages: the text between `<!-- figures:NAME -->` and
`<!-- /figures:NAME -->` is rewritten from the sources, the rest of the page is left alone.

A block whose opening marker ends its line holds whole lines (a table, a paragraph). One whose
opening marker is followed on the same line by the figure is inline: a figure quoted inside a
sentence (`(<!-- figures:dated-records -->79 of the 246 bundled records<!-- /figures:dated-records
-->)`), so its function must return a single line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from .sources import MissingFigure, Sources

BLOCK = re.compile(
    r"(<!-- figures:(?P<name>[a-z-]+) -->\n?)(?P<body>.*?)(<!-- /figures:(?P=name) -->)", re.DOTALL
)


def blocks_in(text: str) -> list[str]:
    return [m["name"] for m in BLOCK.finditer(text)]


def regenerate(text: str, src: Sources, blocks: Mapping[str, Callable[[Sources], str]]) -> str:
    """`text` with every marked block rewritten from the sources."""

    def fill(m: re.Match[str]) -> str:
        name = m["name"]
        if name not in blocks:
            raise MissingFigure(f"unknown figures block {name!r}; known: {', '.join(blocks)}")
        body = blocks[name](src)
        inline = not m.group(1).endswith("\n")
        if inline and "\n" in body:
            raise MissingFigure(f"figures block {name!r} stands inside a sentence but its "
                                "text spans lines: put its opening marker on a line of its own")
        return f"{m.group(1)}{body}{m.group(4)}"

    return BLOCK.sub(fill, text)
