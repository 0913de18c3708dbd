"""Memory-bound elementwise yardstick: out = a * x + b * y."""
