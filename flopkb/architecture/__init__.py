"""Model architectures: a model's cost from its layer pattern (`cost`: FLOPs, bytes, state and
the attention share per layer type), its roofline on an accelerator (`show`: `flopkb model
show`), and serving composed from timed layers (`serving`: prefill, decode and end-to-end
throughput of a hybrid model beside its baseline)."""
