"""`flopkb extract`: propose `hardware_parameters` rows from prose; it cannot invent a figure.

The proposer reads the prose sentence by sentence (whitespace normalised, as provenance rule 1
does). A sentence that carries a figure in a form the magnitude grammar knows (`2-8x`, `about 20%`,
`6x faster at sequence length 16K`, `crosses ... at sequence length 2K`, `3:1`, `Q = 64`) gives one
candidate per figure; a sentence with no figure but with hardware-cost wording gives one
`qualitative` candidate. Each candidate's `effect` is the whole sentence (a verbatim span of the
normalised prose), its magnitude is lifted from that sentence and parsed by the grammar (figures
that do not parse are dropped), its quantity is guessed from keywords, and its basis is always
`unverified`: a curator upgrades it after finding a source. It is the "schema authority pass" of
the starting material, done by a tool that can only copy.

Rows the record already has: a candidate whose effect overlaps the effect of one of the record's
rows (one contains the other after normalisation, the containment `reproduces` uses) is *already
quoted*; `extract_record` sets such candidates apart, naming the rows, so that pasting the proposals
never duplicates a claim under a new id.

A record that fails validation is still read: its prose and rows come from the YAML as written
(safe loading, no schema), and the record's findings (structure and checks) come with the result.

Reproduction (what docs/kb.md reports): a proposed row reproduces a bundled row of the same record
when one effect contains the other after whitespace normalisation and both magnitudes parse to the
same value (kind, low, high, unit, bound and `at` condition).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from flopkb.check import run_checks
from flopkb.escape import yaml_listing
from flopkb.findings import Finding, Severity
from flopkb.grammar.magnitude import Magnitude, MagnitudeError, parse_magnitude
from flopkb.grammar.text import normalise
from flopkb.kb import KnowledgeBase
from flopkb.load.yamlfile import read_document
from flopkb.model import ClassRecord

# Every pattern here is bounded so that extract stays linear in the prose (a 1 MiB prose is a
# 1 MiB sentence when it has no full stop): no nested unbounded quantifiers, no pattern that
# scans ahead from a keyword without a fixed window, and figures start at a digit that starts a
# number (the look-behind right after it), which lets the regex engine skip to digits.
# Figures as quoted: thousands groups ("1,979") or plain digits.
# Digit runs are bounded too: the grammar refuses numbers over 32 characters anyway, and a
# bounded run cannot backtrack over a 10^5-digit number.
_NUM = r"(?:\d{1,3}(?:,\d{3}){1,12}|\d{1,40})(?:\.\d{1,40})?"
_FIRST_DIGIT = r"\d(?<![\w.,]\d)"
_NUM_FROM_DIGIT = r"(?:\d{0,2}(?:,\d{3}){1,12}|\d{0,39})(?:\.\d{1,40})?"
_SIZE = r"(?P<size>\d{1,40}(?:\.\d{1,40})?[KMG])\b"
# "6x faster at sequence length 16K": at most two words of at most 40 letters before "at"
_AT_TAIL = rf"(?:(?: [A-Za-z-]{{1,40}}){{0,2}}? at (?:sequence length )?{_SIZE})?"
# The units of flopkb.grammar.units (tests/unit/test_extract.py checks the two agree), written as
# one prefix tree rather than 90 alternatives that each number would try in turn; a bare "B" is left
# out: in prose "7B" and "52 B" are parameter counts far more often than bytes.
_UNITS = (
    r"[kKMGTPE]?(?:FLOPs?/s|FLOPS|OPs?/s|OPS|B/s)|[kKMGTPE]B|[KMGT]iB(?:/s)?"
    r"|[m\u00b5\u03bcun]?s|tokens?/s|tok/s"
)
# One pass for every figure that starts with a number (a pattern per form made extract four
# times slower: each tries every position of the prose). The figure is:
# - a ratio that touches its `x` ("2-8x", "6x"; "M x K" or "2 x 3" are shapes, not ratios),
# - a ratio in words ("5 times faster", "3-4 times slower"),
# - a percent ("20%"),
# - an absolute figure in the units of flopkb.grammar.units ("740 TFLOP/s", "1,979 TOPS", "80 GB").
# Its qualifier ("up to", "at least", "about", "~") is read from the characters before it.
_FIGURE = re.compile(
    rf"(?P<lo>{_FIRST_DIGIT}{_NUM_FROM_DIGIT})(?:-(?P<hi>{_NUM}))?"
    rf"(?:(?P<x>[x\u00d7])(?![\w])| (?P<times>times) (?:faster|slower|higher|lower|more|less|"
    rf"smaller|larger|fewer|greater|better|cheaper)\b|(?P<pct>%)| ?(?P<unit>{_UNITS})(?![\w/]))"
    rf"{_AT_TAIL}"
)
_QUALIFIERS = {"~": "~", "about ": "~", "up to ": "up to ", "at least ": "at least "}
# "crosses FlashAttention-2 at sequence length 2K": the first "at <size>" within 160 characters
# after a "cross..." word, with no ";" between (matched by position, `_crossovers`)
_CROSS_WORD = re.compile(r"[Cc](?<![\w][Cc])ross\w{0,12}")
_AT_SIZE = re.compile(rf"\bat (?:sequence length )?{_SIZE}")
_CROSS_WINDOW = 160
_BEYOND = re.compile(rf"\b(?:[Bb]eyond|[Ss]tarting at) (?:sequence length )?{_SIZE}")
_PROPORTION = re.compile(
    r"(?<![\w.:])(?P<a>\d{1,40}(?:\.\d{1,40})?):(?P<b>\d{1,40}(?:\.\d{1,40})?)(?![\w:])"
)
_VALUE = re.compile(
    r"\b(?P<name>[A-Za-z][A-Za-z_0-9]{0,40}) ?= ?(?P<val>\d{1,40}(?:\.\d{1,40})?)(?![\w]|\.\d)"
)
_FROM_TO = re.compile(
    rf"\b[Ff]rom (?P<a>{_NUM}) ?(?P<ua>{_UNITS})? to (?P<b>{_NUM}) ?(?P<ub>{_UNITS})(?![\w/])"
)
_DIGIT = re.compile(r"\d")
# Sentence ends: ., ! or ? then space then a capital or an opening bracket ("Sec. 9.3" survives).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")

# Wording that makes a figure-less sentence a hardware-cost claim worth proposing.
# Keyword patterns are matched against the lowercased sentence, in lowercase: IGNORECASE makes
# each alternative five times slower on a long sentence.
_CLAIM_WORDS = re.compile(
    r"faster|slower|beat|cannot|overhead|efficien|bound\b|cost|pressure|insufficient|"
    r"does not guarantee|friendly|predicts|dominat|not applicable|trade|speedup|rugged|misses|"
    r"worst|price|choice|limit"
)
_HARDWARE_WORDS = re.compile(
    r"tensor[- ]core|matmul|matrix product|gemm|simt|cuda cores|bandwidth|memory|kv cache|vram|"
    r"\bsms?\b|scan|kernel|throughput|int8|int4|atomic|reproducib|determinis|flop|chunk|hardware|"
    r"run_to_run|gpu_to_gpu"
)
# Quantity guesses, first match wins; the curator checks them.
_QUANTITY_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p.lower()), q)
    for p, q in (
        (r"\bINT4\b", "int4_tensor_ops"),
        (r"\bINT8\b", "int8_tensor_ops"),
        (r"KV cache|VRAM|memory footprint|memory capacity", "memory_capacity"),
        (r"shared memory|chunk size", "smem_per_sm"),
        (r"bandwidth|memory-bound|generat|decod|streaming", "hbm_bandwidth"),
        (r"non-matmul|softmax|SIMT|CUDA cores|decay", "tensor_to_simt_ratio"),
        (r"\bscan\b", "fp32_simt_flops"),
        (r"atomic|determinis|reproducib|\bSMs?\b", "sm_count"),
    )
)
_DEFAULT_QUANTITY = "bf16_tensor_flops"
_STOP = frozenset(
    {"a", "an", "the", "of", "to", "in", "on", "at", "and", "or", "but", "is", "are", "be", "for"}
    | {"with", "by", "as", "it", "its", "than", "that", "this", "from", "so", "which", "when"}
    | {"where", "their", "there", "these", "those", "not", "no"}
)


def sentences(prose: str) -> list[str]:
    """The prose's sentences, each a verbatim span of `normalise(prose)`."""
    return [s.strip() for s in _SENTENCE_END.split(normalise(prose)) if s.strip()]


def _qualifier(sentence: str, start: int) -> str:
    """The qualifier written just before the figure at `start`, in the grammar's spelling."""
    before = sentence[max(0, start - 9) : start].lower()
    for written, spelled in _QUALIFIERS.items():
        if not before.endswith(written):
            continue
        begin = start - len(written)
        # "setup to 3x" is not "up to": a worded qualifier starts a word
        if written == "~" or begin == 0 or not sentence[begin - 1].isalnum():
            return spelled
    return ""


def _figures(sentence: str, match: re.Match[str]) -> str:
    hi = f"-{match['hi']}" if match["hi"] else ""
    return f"{_qualifier(sentence, match.start('lo'))}{match['lo']}{hi}"


def _crossovers(sentence: str) -> list[tuple[int, str]]:
    """`crossover at <size>` for each "cross..." word followed, within the window and before any
    ";", by "at <size>": one pass over each list, so linear in the sentence."""
    ats = list(_AT_SIZE.finditer(sentence))
    if not ats:
        return []
    starts = [m.start() for m in ats]
    semis = [i for i, c in enumerate(sentence) if c == ";"]
    out: list[tuple[int, str]] = []
    for word in _CROSS_WORD.finditer(sentence):
        i = bisect.bisect_left(starts, word.end())
        if i == len(ats) or starts[i] - word.end() > _CROSS_WINDOW:
            continue
        j = bisect.bisect_left(semis, word.end())
        if j < len(semis) and semis[j] < starts[i]:
            continue
        out.append((ats[i].start("size"), f"crossover at {ats[i]['size']}"))
    return out


def lift_magnitudes(sentence: str) -> list[str]:
    """Every figure of `sentence` written in the magnitude grammar, in order, without duplicates."""
    if not _DIGIT.search(sentence):
        return []  # every form carries a number
    found: list[tuple[int, str]] = []
    absolute: list[re.Match[str]] = []
    for m in _FIGURE.finditer(sentence):
        if m["pct"]:
            found.append((m.start("lo"), f"{_figures(sentence, m)}%"))
        elif m["unit"]:
            absolute.append(m)
        else:
            text = f"{_figures(sentence, m)}x"
            found.append((m.start("lo"), f"{text} at {m['size']}" if m["size"] else text))
    found.extend(_crossovers(sentence))
    for m in _BEYOND.finditer(sentence):
        found.append((m.start("size"), f"crossover at {m['size']}"))
    for m in _PROPORTION.finditer(sentence):
        found.append((m.start(), f"{m['a']}:{m['b']}"))
    for m in _VALUE.finditer(sentence):
        found.append((m.start(), f"{m['name']}={m['val']}"))
    # "from 12 ms to 4 ms" is one figure: its two ends are not lifted again on their own
    inside: set[int] = set()
    for m in _FROM_TO.finditer(sentence):
        start = f"{m['a']} {m['ua']}" if m["ua"] else m["a"]
        found.append((m.start("a"), f"from {start} to {m['b']} {m['ub']}"))
        inside.update((m.start("a"), m.start("b")))
    for m in absolute:
        if m.start("lo") not in inside:
            found.append((m.start("lo"), f"{_figures(sentence, m)} {m['unit']}"))
    result: list[str] = []
    seen: set[str] = set()
    for _, text in sorted(found):
        if text in seen:
            continue
        seen.add(text)
        try:
            parse_magnitude(text)
        except MagnitudeError:
            continue
        result.append(text)
    return result


def guess_quantity(sentence: str) -> str:
    lowered = sentence.lower()
    for pattern, quantity in _QUANTITY_RULES:
        if pattern.search(lowered):
            return quantity
    return _DEFAULT_QUANTITY


def _slug_base(sentence: str) -> str:
    """The first four content words of `sentence`, kebab-cased (read once per sentence)."""
    words: list[str] = []
    for match in re.finditer(r"[a-z0-9]+", sentence.lower()):
        if match.group() not in _STOP:
            words.append(match.group())
            if len(words) == 4:
                break
    return "-".join(words) or "claim"


def _slug(base: str, magnitude: str) -> str:
    if magnitude != "qualitative":
        base += "-" + re.sub(r"[^a-z0-9]+", "-", magnitude.lower()).strip("-")
    return base[:70].strip("-")


@dataclass(frozen=True)
class Candidate:
    """A proposed row; `as_row()` is what the curator pastes under `hardware_parameters`."""

    id: str
    quantity: str
    effect: str
    magnitude: str

    def as_row(self) -> dict[str, Any]:
        # a proposal is unverified until the curator gives it a basis
        return {**asdict(self), "basis": "unverified"}


def propose(record: ClassRecord) -> list[Candidate]:
    """Candidate rows for `record`, in prose order; every effect is a sentence of the prose."""
    return propose_from_prose(record.prose)


def _read_sentence(sentence: str) -> tuple[list[str], str, str]:
    """(magnitudes, slug base, quantity guess) of one sentence; no magnitudes when it is not a
    claim: no figure, and not both cost wording and a hardware word."""
    magnitudes = lift_magnitudes(sentence)
    if not magnitudes:
        lowered = sentence.lower()
        if not (_CLAIM_WORDS.search(lowered) and _HARDWARE_WORDS.search(lowered)):
            return [], "", ""
        magnitudes = ["qualitative"]
    return magnitudes, _slug_base(sentence), guess_quantity(sentence)


def propose_from_prose(prose: str) -> list[Candidate]:
    """Candidate rows for a prose text, in prose order; every effect is a sentence of it."""
    out: list[Candidate] = []
    ids: set[str] = set()
    # the next free suffix per slug: a prose repeating one sentence 10^4 times must not search
    # 2, 3, ... n for the n-th copy
    next_suffix: dict[str, int] = {}
    # a sentence that repeats is read once
    read: dict[str, tuple[list[str], str, str]] = {}
    for sentence in sentences(prose):
        if sentence not in read:
            read[sentence] = _read_sentence(sentence)
        magnitudes, words, quantity = read[sentence]
        for magnitude in magnitudes:
            row_id = base = _slug(words, magnitude)
            n = next_suffix.get(base, 2)
            while row_id in ids:
                row_id, n = f"{base}-{n}", n + 1
            next_suffix[base] = n
            ids.add(row_id)
            out.append(Candidate(row_id, quantity, sentence, magnitude))
    return out


def to_yaml(candidates: list[Candidate]) -> str:
    """The candidates as a YAML list a curator can paste under `flop.hardware_parameters`."""
    # safe to print, and parses back to the very text of the prose (flopkb.escape)
    return yaml_listing([c.as_row() for c in candidates])


class NotAClassRecord(LookupError):
    """The id names no class record, loaded or not (a usage error, exit 2)."""


@dataclass(frozen=True)
class Quoted:
    """A candidate whose effect overlaps the effect of rows the record already has."""

    candidate: Candidate
    rows: list[str]


@dataclass
class Extraction:
    """What `flopkb extract RECORD` reports.

    `candidates` are new (pasteable without duplicating a claim), `quoted` overlap existing rows,
    `problems` are the record's own errors and warnings (empty when it validates), `loaded`
    says whether the record passed the schema (when not, prose and rows were read from the YAML
    as written), and `has_prose` whether any prose could be read at all.
    """

    record: str
    file: str
    loaded: bool
    has_prose: bool
    candidates: list[Candidate] = field(default_factory=list)
    quoted: list[Quoted] = field(default_factory=list)
    problems: list[Finding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "record": self.record,
            "file": self.file,
            "valid": not any(f.severity is Severity.error for f in self.problems),
            "candidates": [c.as_row() for c in self.candidates],
            "already_quoted": [
                {**q.candidate.as_row(), "quoted_by": q.rows} for q in self.quoted
            ],
            "problems": [f.as_dict() for f in self.problems],
        }


def quoting_rows(candidate: Candidate, rows: list[tuple[str, str]]) -> list[str]:
    """Ids of the `(id, effect)` rows whose effect contains or is contained in the candidate's."""
    mine = normalise(candidate.effect)
    return [
        row_id
        for row_id, effect in rows
        if (theirs := normalise(effect)) and (theirs in mine or mine in theirs)
    ]


def _raw_rows(data: dict[str, Any]) -> list[tuple[str, str]]:
    """`(id, effect)` of every row of a record as written, skipping rows too broken to read."""
    flop = data.get("flop")
    rows = flop.get("hardware_parameters") if isinstance(flop, dict) else None
    if not isinstance(rows, list):
        return []
    return [
        (row["id"] if isinstance(row.get("id"), str) else f"#{n}", row["effect"])
        for n, row in enumerate(rows, 1)
        if isinstance(row, dict) and isinstance(row.get("effect"), str)
    ]


def _not_a_class(record_id: str, kind: str) -> str:
    article = "an" if kind[:1] in tuple("aeiou") else "a"
    return f"{record_id!r} is {article} {kind} record, not a class record (operator or model)"


def extract_record(kb: KnowledgeBase, load_findings: list[Finding], record_id: str) -> Extraction:
    """Propose rows for the class record `record_id`, validated or not.

    `load_findings` are the findings `load_kb` returned with `kb`. A record that failed the schema
    is read again from its file (the safe loader, no model), so its prose is still proposed from
    and its problems are reported; NotAClassRecord when no file defines a class record of that id.
    """
    # a record checked from its parts that parsed (load.salvage) is read as written, like one
    # that failed: its dropped rows still count as quoted
    record = kb.classes.get(record_id) if record_id not in kb.partial else None
    if record is not None:
        file = kb.file_of(record_id)
        prose = record.prose
        rows = [(r.id, r.effect) for r in record.flop.hardware_parameters]
    elif record_id in kb.unloaded or record_id in kb.partial:
        file = kb.unloaded.get(record_id) or kb.partial[record_id]
        doc = read_document(Path(file), file, kb.limits)
        data = doc.data or {}
        if data and data.get("kind") not in ("operator", "model", None):
            raise NotAClassRecord(_not_a_class(record_id, str(data.get("kind"))))
        prose = data.get("prose") if isinstance(data.get("prose"), str) else ""
        rows = _raw_rows(data)
    elif record_id in kb.records:
        raise NotAClassRecord(_not_a_class(record_id, kb.records[record_id].kind.value))
    else:
        raise NotAClassRecord(record_id)
    # a record that loaded can still break provenance rules; the checks run over the whole KB
    # because references resolve against it, and only this record's errors and warnings are kept
    # (notes, such as a claim not applicable on a part, are reports, not problems)
    problems = [
        f for f in [*load_findings, *run_checks(kb)]
        if f.file == file and f.severity is not Severity.info
    ]
    result = Extraction(record_id, file, record is not None, bool(prose), problems=problems)
    for candidate in propose_from_prose(prose):
        quoted_by = quoting_rows(candidate, rows)
        if quoted_by:
            result.quoted.append(Quoted(candidate, quoted_by))
        else:
            result.candidates.append(candidate)
    return result


def _same_magnitude(a: Magnitude, b: Magnitude) -> bool:
    return (a.kind, a.low, a.high, a.unit, a.bound, a.condition.get("at")) == (
        b.kind,
        b.low,
        b.high,
        b.unit,
        b.bound,
        b.condition.get("at"),
    )


def reproduces(candidate: Candidate, effect: str, magnitude: str) -> bool:
    """True when the effects overlap by containment (normalised) and the magnitudes parse equal."""
    mine, theirs = normalise(candidate.effect), normalise(effect)
    if theirs not in mine and mine not in theirs:
        return False
    try:
        return _same_magnitude(parse_magnitude(candidate.magnitude), parse_magnitude(magnitude))
    except MagnitudeError:
        return False


def reproduction(kb: KnowledgeBase) -> dict[str, Any]:
    """How many bundled rows `propose` reproduces: `{"reproduced", "total", "missed": [claim ids]}`,
    plus how many of the reproduced rows also got the bundled quantity guessed right."""
    total = reproduced = same_quantity = 0
    missed: list[str] = []
    by_record: dict[str, list[Candidate]] = {}
    for claim_id, record, row in kb.claims():
        if record.id not in by_record:
            by_record[record.id] = propose(record)
        total += 1
        hits = [c for c in by_record[record.id] if reproduces(c, row.effect, row.magnitude)]
        if hits:
            reproduced += 1
            same_quantity += any(c.quantity == row.quantity for c in hits)
        else:
            missed.append(claim_id)
    return {
        "reproduced": reproduced,
        "total": total,
        "same_quantity": same_quantity,
        "missed": missed,
    }
