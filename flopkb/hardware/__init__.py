"""Hardware: quantities evaluated on accelerators from their datasheet specs (`model`), derived
claim rows computed and judged against their magnitudes (`derived`), and what `flopkb hw show` /
`hw compare` report (`show`)."""
