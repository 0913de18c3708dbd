"""The resource budget for untrusted input: every limit in one place (README, "Resource budget").

Records arrive in pull requests from people and agents, so the validator's work per file is
bounded: linear in the file, with caps where a check would otherwise grow faster (the closest-span
hint) or report without end (findings per file).
"""

from __future__ import annotations

import datetime as dt

# A record file larger than this is refused unread (FKB102); `--max-bytes` raises it.
MAX_BYTES = 1 << 20
# Nesting deeper than this is refused (FKB109); `--max-depth` raises it.
MAX_DEPTH = 64
# A mapping with more keys, or a list with more items, than this is refused (FKB115): no record
# kind needs more than ~100 keys; the longest bundled list (an evidence sweep) has ~50 items.
MAX_KEYS = 1000
MAX_ITEMS = 10_000
# A number literal (YAML, formula or magnitude) longer than this is refused (FKB114): a float64
# needs at most 24 characters, and Python refuses int conversion beyond 4300 digits anyway.
MAX_NUMBER_CHARS = 32
# Findings reported per file; the rest are counted in one FKB116 finding.
MAX_FINDINGS_PER_FILE = 100
# What a finding echoes of the record: an id (the `[record]` of every finding of its file) or a
# word of a message longer than ECHO_MAX_CHARS shows as its first ECHO_KEEP_CHARS and its length
# (a valid id has at most 120 characters, so it is never cut); a message or hint longer than
# MESSAGE_MAX_CHARS is cut the same way. A 1 MiB id once printed 104 MB.
ECHO_MAX_CHARS = 160
ECHO_KEEP_CHARS = 80
MESSAGE_MAX_CHARS = 2000
# A computed-quantity or claim formula longer than this is refused (FKB401).
MAX_FORMULA_CHARS = 500
# A magnitude longer than this does not parse (FKB203): the grammar's longest form is ~30.
MAX_MAGNITUDE_CHARS = 120
# The FKB201 "closest span" hint: no hint for an effect longer than this, and at most this many
# candidate windows of the prose compared in full (the others are ranked by shared words only).
HINT_MAX_EFFECT_CHARS = 600
HINT_MAX_CANDIDATES = 24
# ... and the hints of one record scan at most this many words of prose in all (a 1 MiB prose
# of 150,000 words gets two hints; a prose of 1,000 words gets 300).
HINT_WORDS_PER_RECORD = 300_000
# `graph render`: the picture of a KB too large for these is refused (exit 1, one line saying
# which limit and what to do: --focus, graphviz, .svg) before anything is drawn. A PNG canvas is
# held whole in memory (4 bytes a pixel at 150 dpi): a 9,000-row record once asked for 3390 x
# 325,699 px and 4.9 GB. matplotlib builds one object per node and edge (20,000 small records
# took 10.2 GB); graphviz drew the same KBs in 6-28 s, so it is allowed far more.
PICTURE_MAX_PIXELS = 50_000_000
PICTURE_MAX_SIDE_PX = 32_000
PICTURE_MAX_ITEMS = {"matplotlib": 4_000, "graphviz": 100_000}
# Evidence dated later than now plus this is from the future (FKB508): machines' clocks drift.
CLOCK_SKEW = dt.timedelta(days=1)
