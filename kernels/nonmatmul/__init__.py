"""FP32 non-matmul throughput yardstick: dependent fma / exp2 chains on the CUDA cores."""
