"""A decayed prefix sum, step by step and in chunks: the example KB's own operator."""
