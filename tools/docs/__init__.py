"""The docs generator: every figure of docs/ comes from a results file, the evidence or the KB,
through one block function per figure (`pages.BLOCKS`), never typed in. Run `python -m tools.docs`.

Modules, one per page or block family: `verdicts` and `claim_notes` (the verdict tables),
`runs` and `agreement` (the verify runs), `kernels` and `ssd_forward` (the kernel tables),
`speed` (CPU timings), `models` (architecture figures), `kb` (KB counts), `rules` (docs/rules.md);
`sources` reads the inputs, `readings` and `fmt` shape the figures, `markers` and `pages` put
them in place.
"""
