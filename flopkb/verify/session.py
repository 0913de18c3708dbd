"""What one GPU run shares between its experiments: the KB, the machine it matched, how it
measures (quick, implementations, rounds) and where its evidence goes."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flopkb.evidence import signing, store
from flopkb.model import EvidenceRecord


@dataclass
class Session:
    """One GPU run (`flopkb.verify.execute.run_gpu`)."""

    kb: Any
    out_dir: Path
    accelerator: str | None
    machine: dict[str, Any]
    command: str
    quick: bool = False
    impl: str = "bundled"
    write: bool = True
    # conditions every evidence record of the run carries (portable paths, a memory budget)
    run_conditions: dict[str, Any] = field(default_factory=dict)
    # independent rounds per claim point (flopkb.evidence.rounds) and the key evidence is signed
    # with (flopkb.evidence.signing), if any
    rounds: int = 1
    sign_key: Path | None = None

    @property
    def kb_root(self) -> Path | None:
        return self.kb.root

    def spec(self, qid: str) -> float | None:
        """The matched accelerator's datasheet figure `qid`, if it has one."""
        acc = self.kb.accelerators.get(self.accelerator) if self.accelerator else None
        spec = acc.specs.get(qid) if acc else None
        return spec.value if spec is not None else None

    def save(self, record: EvidenceRecord) -> None:
        """Write `record` (and its signature, with a key) when this run writes evidence."""
        if not self.write:
            return
        path = store.write_evidence(record, self.out_dir)
        if self.sign_key is not None:
            signing.sign(record, path, self.sign_key)
