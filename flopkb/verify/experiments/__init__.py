"""One module per experiment (see `flopkb.verify.registry`). Each defines:

- `DEFAULTS`: the conditions it runs under when a claim row does not set them;
- `cpu_check(ctx)`: every kernel it runs, against its reference, at small sizes (CPU plan mode);
- `measure(ctx, cond) -> Measurement`: the sweep on the GPU, correctness checked before timing;
- `judge(m, magnitude, cond) -> Judgement`: reads the claim's parsed magnitude against `m`.
"""
