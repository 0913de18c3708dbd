"""The hooks of the bundled experiments: one module per experiment, named by the `hook` of its
declaration in the bundled KB's `experiments/` (see `flopkb.evidence.catalogue`), and `generic`,
the runner of declarations that name no hook. Each defines:

- `DEFAULTS`: the conditions it runs under when a claim row does not set them, completed by its
  declaration's `point` (the claim's conditions as data; several hooks keep only that);
- `cpu_check(ctx)`: every kernel it runs, against its reference, at small sizes (CPU plan mode);
- `measure(ctx, cond) -> Measurement`: the sweep on the GPU, correctness checked before timing;
- `judge(m, magnitude, cond) -> Judgement`: reads the claim's parsed magnitude against `m`; a
  `judge` that takes a keyword `declaration` is handed its own (`flopkb.evidence.hooks`), and
  states the qualitative criterion written there (`Experiment.qualitative_criterion`),
  never a copy of it.

A KB's own hook (a module below its kernels/) follows the same protocol.
"""
