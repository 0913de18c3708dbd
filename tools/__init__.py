"""Maintained tools of this repository, not installed with flopkb: the docs generator
(`python -m tools.docs`), the evidence re-plotter and the GPU device scripts (tools/README.md)."""
