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

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flopkb.check import run_checks
from flopkb.escape import yaml_listing
from flopkb.findings import Finding, Severity
from flopkb.kb import KnowledgeBase
from flopkb.load.yamlfile import read_document
from flopkb.magnitude import Magnitude, MagnitudeError, parse_magnitude
from flopkb.model import ClassRecord
from flopkb.text import normalise

_NUM = r"\d+(?:\.\d+)?"
_QUAL = r"(?P<qual>\bup to\s+|\babout\s+|~)?"
# A ratio must touch its `x` ("2-8x", "6x"): "M x K" or "2 x 3" are shapes, not ratios.
_RATIO = re.compile(
    rf"{_QUAL}(?<![\w.])(?P<lo>{_NUM})(?:-(?P<hi>{_NUM}))?[x\u00d7](?![\w])"
    rf"(?:(?:\s+[A-Za-z-]+){{0,2}}?\s+at\s+(?:sequence length\s+)?(?P<size>{_NUM}[KMG])\b)?"
)
_PERCENT = re.compile(rf"{_QUAL}(?<![\w.])(?P<lo>{_NUM})(?:-(?P<hi>{_NUM}))?%")
_CROSS = re.compile(rf"\bcross\w*\b[^;]*?\bat\s+(?:sequence length\s+)?(?P<size>{_NUM}[KMG])\b")
_BEYOND = re.compile(rf"\b(?:beyond|starting at)\s+(?:sequence length\s+)?(?P<size>{_NUM}[KMG])\b")
_PROPORTION = re.compile(rf"(?<![\w.:])(?P<a>{_NUM}):(?P<b>{_NUM})(?![\w:])")
_VALUE = re.compile(rf"\b(?P<name>[A-Za-z][A-Za-z_0-9]*)\s*=\s*(?P<val>{_NUM})(?![\w]|\.\d)")
# Sentence ends: ., ! or ? then space then a capital or an opening bracket ("Sec. 9.3" survives).
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")

# Wording that makes a figure-less sentence a hardware-cost claim worth proposing.
_CLAIM_WORDS = re.compile(
    r"faster|slower|beat|cannot|overhead|efficien|bound\b|cost|pressure|insufficient|"
    r"does not guarantee|friendly|predicts|dominat|not applicable|trade|speedup|rugged|misses|"
    r"worst|price|choice|limit",
    re.IGNORECASE,
)
_HARDWARE_WORDS = re.compile(
    r"tensor[- ]core|matmul|matrix product|GEMM|SIMT|CUDA cores|bandwidth|memory|KV cache|VRAM|"
    r"\bSMs?\b|scan|kernel|throughput|INT8|INT4|atomic|reproducib|determinis|FLOP|chunk|hardware|"
    r"run_to_run|gpu_to_gpu",
    re.IGNORECASE,
)
# Quantity guesses, first match wins; the curator checks them.
_QUANTITY_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(p, re.IGNORECASE), q)
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


def _qual(match: re.Match[str]) -> str:
    qual = (match["qual"] or "").strip().lower()
    return {"up to": "up to ", "about": "~", "~": "~"}.get(qual, "")


def lift_magnitudes(sentence: str) -> list[str]:
    """Every figure of `sentence` written in the magnitude grammar, in order, without duplicates."""
    found: list[tuple[int, str]] = []
    for m in _RATIO.finditer(sentence):
        text = f"{_qual(m)}{m['lo']}{'-' + m['hi'] if m['hi'] else ''}x"
        found.append((m.start("lo"), f"{text} at {m['size']}" if m["size"] else text))
    for m in _PERCENT.finditer(sentence):
        found.append((m.start("lo"), f"{_qual(m)}{m['lo']}{'-' + m['hi'] if m['hi'] else ''}%"))
    for pattern in (_CROSS, _BEYOND):
        for m in pattern.finditer(sentence):
            found.append((m.start("size"), f"crossover at {m['size']}"))
    for m in _PROPORTION.finditer(sentence):
        found.append((m.start(), f"{m['a']}:{m['b']}"))
    for m in _VALUE.finditer(sentence):
        found.append((m.start(), f"{m['name']}={m['val']}"))
    result: list[str] = []
    for _, text in sorted(found):
        try:
            parse_magnitude(text)
        except MagnitudeError:
            continue
        if text not in result:
            result.append(text)
    return result


def guess_quantity(sentence: str) -> str:
    for pattern, quantity in _QUANTITY_RULES:
        if pattern.search(sentence):
            return quantity
    return _DEFAULT_QUANTITY


def _slug(sentence: str, magnitude: str) -> str:
    words = [w for w in re.findall(r"[a-z0-9]+", sentence.lower()) if w not in _STOP]
    base = "-".join(words[:4]) or "claim"
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
        return {
            "id": self.id,
            "quantity": self.quantity,
            "effect": self.effect,
            "magnitude": self.magnitude,
            "basis": "unverified",
        }


def propose(record: ClassRecord) -> list[Candidate]:
    """Candidate rows for `record`, in prose order; every effect is a sentence of the prose."""
    return propose_from_prose(record.prose)


def propose_from_prose(prose: str) -> list[Candidate]:
    """Candidate rows for a prose text, in prose order; every effect is a sentence of it."""
    out: list[Candidate] = []
    ids: set[str] = set()
    for sentence in sentences(prose):
        magnitudes = lift_magnitudes(sentence)
        if not magnitudes:
            if not (_CLAIM_WORDS.search(sentence) and _HARDWARE_WORDS.search(sentence)):
                continue
            magnitudes = ["qualitative"]
        for magnitude in magnitudes:
            row_id = base = _slug(sentence, magnitude)
            n = 2
            while row_id in ids:
                row_id, n = f"{base}-{n}", n + 1
            ids.add(row_id)
            out.append(Candidate(row_id, guess_quantity(sentence), sentence, magnitude))
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
