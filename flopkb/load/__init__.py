"""Loading: untrusted YAML files -> located values -> pydantic records, problems as findings.

`read_document` (yamlfile) turns bytes into values with the node tree kept for locations;
`to_record` (structure) validates values against the model of their kind; `locate` maps a path
inside a record to its line and column.
"""

from flopkb.load.locate import Locator, locate, locate_key
from flopkb.load.structure import dotted, to_record
from flopkb.load.yamlfile import (
    DEFAULT_MAX_BYTES,
    DEFAULT_MAX_DEPTH,
    Document,
    Limits,
    compose_node,
    read_document,
)

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MAX_DEPTH",
    "Document",
    "Limits",
    "Locator",
    "compose_node",
    "dotted",
    "locate",
    "locate_key",
    "read_document",
    "to_record",
]
