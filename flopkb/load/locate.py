"""Paths into a record (`("flop", "hardware_parameters", 0, "effect")`) -> line and column.

A `Locator` indexes each mapping's keys the first time a path passes through it, so locating n
findings in one file costs O(file + n x path length), not O(n x keys): a record with 60,000
unknown keys used to take 40 s here (issue 12).
"""

from __future__ import annotations

from collections.abc import Sequence

from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode


class Locator:
    """Line and column of paths in one node tree; each mapping's key index is built once."""

    def __init__(self, node: Node | None) -> None:
        self.node = node
        self._keys: dict[int, dict[str, tuple[Node, Node]]] = {}

    def _entries(self, mapping: MappingNode) -> dict[str, tuple[Node, Node]]:
        index = self._keys.get(id(mapping))
        if index is None:
            index = {}
            for key_node, value_node in mapping.value:
                # the first of duplicate keys wins, as a reader scanning from the top finds it
                if type(key_node) is ScalarNode:
                    index.setdefault(key_node.value, (key_node, value_node))
            # the root keeps every node alive, so ids stay unique while this locator lives
            self._keys[id(mapping)] = index
        return index

    def locate(self, path: Sequence[str | int]) -> tuple[int, int]:
        """Line and column of the node at `path`, or of its deepest ancestor present in the file.

        A mapping entry is located at its key (where a reader looks for it); a list item at the
        item. Path elements that are not in the tree (pydantic's union branch names, a missing
        field) stop the walk, so a missing field points at the mapping that lacks it.
        """
        node = self.node
        if node is None:
            return 1, 1
        mark = node.start_mark
        for part in path:
            if isinstance(node, MappingNode):
                found = self._entries(node).get(part) if isinstance(part, str) else None
                if found is None:
                    break
                mark, node = found[0].start_mark, found[1]
            elif (
                isinstance(node, SequenceNode)
                and isinstance(part, int)
                and 0 <= part < len(node.value)
            ):
                node = node.value[part]
                mark = node.start_mark
            else:
                break
        return mark.line + 1, mark.column + 1

    def locate_key(self, path: Sequence[str | int], key: str) -> tuple[int, int]:
        """Line and column of the key `key` of the mapping at `path` (errors about a dict key)."""
        target = self.node
        for part in path:
            if isinstance(target, MappingNode) and isinstance(part, str):
                found = self._entries(target).get(part)
                target = found[1] if found is not None else None
            elif (
                isinstance(target, SequenceNode)
                and isinstance(part, int)
                and 0 <= part < len(target.value)
            ):
                target = target.value[part]
            else:
                target = None
            if target is None:
                return self.locate(path)
        if isinstance(target, MappingNode):
            found = self._entries(target).get(key)
            if found is not None:
                mark = found[0].start_mark
                return mark.line + 1, mark.column + 1
        return self.locate(path)


def locate(node: Node | None, path: Sequence[str | int]) -> tuple[int, int]:
    """One lookup (`Locator(node).locate(path)`); use a `Locator` for many in one file."""
    return Locator(node).locate(path)


def locate_key(node: Node | None, path: Sequence[str | int], key: str) -> tuple[int, int]:
    """One lookup of a mapping key (`Locator(node).locate_key(path, key)`)."""
    return Locator(node).locate_key(path, key)
