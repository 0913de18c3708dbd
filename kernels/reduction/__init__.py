"""Float sums: atomic-add (non-deterministic by design) and fixed-order (deterministic)."""
