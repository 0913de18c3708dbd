"""Causal attention through PyTorch SDPA with a forced backend (FlashAttention-2 on CUDA)."""
