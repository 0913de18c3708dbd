"""The Mamba-1 paper's unfused PyTorch parallel scan (the slow side of its 20-40x)."""
