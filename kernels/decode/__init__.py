"""Single-token decode: Mamba-1 and Mamba-2 state updates (Triton), attention over a KV cache."""
