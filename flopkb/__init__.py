"""flopkb: a checked knowledge base of how model and operator classes turn FLOPs into time."""

__version__ = "0.1.0"
