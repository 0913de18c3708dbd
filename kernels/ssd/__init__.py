"""Mamba-2 state space duality (SSD): references; scan, chunked, quadratic, per-channel kernels."""
