"""flopkb's bundled kernels, loaded by path as package `flopkb_kernels` (see flopkb/kernelpkg.py).

One folder per operator, each of one shape (README.md here): `reference.py` (PyTorch, the ground
truth), `cost.py`, the Triton kernels with their wrappers, `bench.py` where an experiment times the
op. Modules import each other relatively only.
"""
