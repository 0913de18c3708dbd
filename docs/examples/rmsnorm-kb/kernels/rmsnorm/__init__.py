"""A fused RMSNorm kernel (Triton) and its PyTorch references: the example KB's own operator."""
