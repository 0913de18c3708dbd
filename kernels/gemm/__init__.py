"""Dense GEMM family: Triton bf16 GEMM, cuBLAS peer, INT8 (native/emulated), low rank, SIMT fp32."""
