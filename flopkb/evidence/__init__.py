"""Everything `flopkb validate`, `claims` and `graph` need to judge stored evidence, torch-free.

Below `flopkb.kb` (a module here takes a loaded KB as an argument, never imports it) and below
`flopkb.verify`, the run that writes the evidence. In the order they build on each other:

- `stats`, `rounds`, `measurement`: the verdict rule, the merge of rounds, what a hook measured
  and how it was judged;
- `impls`, `links`, `declared`, `catalogue`: the experiments a KB sees (built once per KB:
  `KnowledgeBase.catalogue()`), their implementations and the typed links of claims to them;
- `store`, `hashing`, `plausibility`, `signing`: evidence files, the newest evidence per claim,
  staleness against the kernel sources, timestamps that cannot be true, signatures;
- `hooks`, `rederive`, `pooled`: an experiment's own `judge` resolved by name, a stored verdict
  re-derived with it, and a claim's verdict pooled over all its runs.
"""
