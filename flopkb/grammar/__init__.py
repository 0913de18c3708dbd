"""The small languages inside records, parsed and checked without running anything: magnitudes
(`2-8x`, `~20%`, `crossover at 2K`), formulas over quantity ids (a whitelist evaluator, never
`eval`), units and their dimensions, the prose a claim's `effect` must quote verbatim (with the
one plain-number form figures print in), and bounded `match` patterns of accelerators."""
