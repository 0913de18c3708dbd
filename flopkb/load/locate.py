"""Paths into a record (`("flop", "hardware_parameters", 0, "effect")`) -> line and column."""

from __future__ import annotations

from collections.abc import Sequence

from yaml.nodes import MappingNode, Node, SequenceNode


def locate(node: Node | None, path: Sequence[str | int]) -> tuple[int, int]:
    """Line and column of the node at `path`, or of its deepest ancestor present in the file.

    A mapping entry is located at its key (where a reader looks for it); a list item at the item.
    Path elements that are not in the tree (pydantic's union branch names, a missing field) stop
    the walk, so a missing field points at the mapping that lacks it.
    """
    if node is None:
        return 1, 1
    mark = node.start_mark
    for part in path:
        if isinstance(node, MappingNode):
            for key_node, value_node in node.value:
                if key_node.value == part:
                    mark, node = key_node.start_mark, value_node
                    break
            else:
                break
        elif (
            isinstance(node, SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value)
        ):
            node = node.value[part]
            mark = node.start_mark
        else:
            break
    return mark.line + 1, mark.column + 1


def locate_key(node: Node | None, path: Sequence[str | int], key: str) -> tuple[int, int]:
    """Line and column of the key `key` of the mapping at `path` (for errors about a dict key)."""
    target = node
    for part in path:
        if isinstance(target, MappingNode):
            target = next((v for k, v in target.value if k.value == part), None)
        elif (
            isinstance(target, SequenceNode)
            and isinstance(part, int)
            and 0 <= part < len(target.value)
        ):
            target = target.value[part]
        else:
            target = None
        if target is None:
            return locate(node, path)
    if isinstance(target, MappingNode):
        for key_node, _ in target.value:
            if key_node.value == key:
                return key_node.start_mark.line + 1, key_node.start_mark.column + 1
    return locate(node, path)
