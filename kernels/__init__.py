"""flopkb's bundled kernels, loaded by path as package `flopkb_kernels` (see flopkb/kernelpkg.py).

One folder per operator: `reference.py` (PyTorch, the ground truth), the Triton kernel with its
wrapper, and `README.md` with FLOP and byte counts. Modules import each other relatively only.
"""
