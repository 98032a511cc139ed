"""LoCoMo questions (the ``qa`` lists) with their gold evidence, checked against the dialogue.

Only the benchmark reads questions; the memory never sees them. Quirks handled here:

- category 5 carries ``adversarial_answer`` instead of ``answer``;
- some answers are integers (``2022``): answers are always returned as strings;
- evidence entries can hold several ids (``"D8:6; D9:17"``, split on ``;``, ``,`` and
  whitespace), a stray colon (``"D:11:26"`` is read as ``D11:26``), or no id at all
  (``"D"``: malformed, dropped);
- well-formed ids that name no turn of the conversation (``"D10:19"``) are dropped from the
  gold set and reported: no system can return a turn that does not exist;
- questions whose gold set ends up empty are kept (they still cost turns, tokens and time)
  but are left out of recall and precision.

Errors: ``LocomoFormatError`` (from ``hypermem.ingest.locomo``) naming the question.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from hypermem.ingest.locomo import LocomoFormatError
from hypermem.model import Conversation

_EVIDENCE_ID = re.compile(r"^D:?(\d+):(\d+)$")
_SEPARATORS = re.compile(r"[;,\s]+")
CATEGORIES = (1, 2, 3, 4, 5)
CATEGORY_NAMES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}


@dataclass(frozen=True)
class Question:
    """One benchmark question. ``evidence``: gold dia_ids that name a turn (may be empty)."""

    sample_id: str
    index: int
    question: str
    answer: str
    category: int
    evidence: frozenset[str]


@dataclass
class DatasetReport:
    """What the loader had to repair or drop, for ``results.json``'s ``dataset`` section.

    ``malformed``/``unmatched``: ``{"sample_id", "question", "id"}`` per dropped evidence id
    (``question`` is the index in the conversation's ``qa`` list).
    """

    questions: int = 0
    evidence_ids: int = 0
    empty_evidence: int = 0
    integer_answers: int = 0
    repaired: list[dict] = field(default_factory=list)
    malformed: list[dict] = field(default_factory=list)
    unmatched: list[dict] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "questions": self.questions,
            "evidence_ids": self.evidence_ids,
            "questions_without_evidence": self.empty_evidence,
            "integer_answers": self.integer_answers,
            "repaired_evidence": self.repaired,
            "malformed_evidence": {"count": len(self.malformed), "ids": self.malformed},
            "unmatched_evidence": {"count": len(self.unmatched), "ids": self.unmatched},
        }


def parse_evidence(raw: list) -> tuple[list[str], list[str], list[str]]:
    """Split raw evidence entries into ``(ids, repaired, malformed)``.

    ``ids`` are canonical ``"D{session}:{turn}"`` strings in order, without duplicates;
    ``repaired`` lists raw tokens that were rewritten to a canonical id (``"D:11:26"``);
    ``malformed`` lists raw tokens that are no id at all (``"D"``).
    """
    ids: list[str] = []
    repaired: list[str] = []
    malformed: list[str] = []
    for entry in raw:
        for token in _SEPARATORS.split(str(entry).strip()):
            if not token:
                continue
            match = _EVIDENCE_ID.match(token)
            if not match:
                malformed.append(token)
                continue
            canonical = f"D{match.group(1)}:{match.group(2)}"
            if canonical != token:
                repaired.append(token)
            if canonical not in ids:
                ids.append(canonical)
    return ids, repaired, malformed


def questions_from_record(record: dict, turn_ids: set[str], report: DatasetReport) -> list[Question]:
    """The questions of one LoCoMo record; drops and records evidence ids not in ``turn_ids``."""
    sample_id = str(record.get("sample_id"))
    qa = record.get("qa")
    if not isinstance(qa, list):
        raise LocomoFormatError(f"{sample_id}.qa: missing or not a list")
    out = []
    for index, item in enumerate(qa):
        where = f"{sample_id}.qa[{index}]"
        if not isinstance(item, dict) or not isinstance(item.get("question"), str):
            raise LocomoFormatError(f"{where}.question: missing or not a string")
        category = item.get("category")
        if category not in CATEGORIES:
            raise LocomoFormatError(f"{where}.category: {category!r} is not 1-5")
        answer = item.get("answer", item.get("adversarial_answer"))
        if answer is None:
            raise LocomoFormatError(f"{where}: neither answer nor adversarial_answer")
        if isinstance(answer, int | float):
            report.integer_answers += 1
        raw = item.get("evidence") or []
        if not isinstance(raw, list):
            raise LocomoFormatError(f"{where}.evidence: not a list")
        ids, repaired, malformed = parse_evidence(raw)
        where_ = {"sample_id": sample_id, "question": index}
        report.repaired += [{**where_, "id": token} for token in repaired]
        report.malformed += [{**where_, "id": token} for token in malformed]
        report.unmatched += [{**where_, "id": dia_id} for dia_id in ids if dia_id not in turn_ids]
        report.evidence_ids += len(ids) + len(malformed)
        gold = frozenset(dia_id for dia_id in ids if dia_id in turn_ids)
        report.empty_evidence += not gold
        report.questions += 1
        out.append(Question(sample_id, index, item["question"], str(answer), int(category), gold))
    return out


def load_questions(path: str | Path, conversations: list[Conversation]) -> tuple[list[Question], DatasetReport]:
    """Questions of ``conversations`` (already loaded with ``load_locomo``) from the LoCoMo file.

    Returns the questions in file order and a ``DatasetReport``. Raises ``FileNotFoundError``,
    ``LocomoFormatError``.
    """
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise LocomoFormatError(f"{path}: not valid JSON ({exc})") from exc
    records = {str(r.get("sample_id")): r for r in (data if isinstance(data, list) else [data]) if isinstance(r, dict)}
    report = DatasetReport()
    questions: list[Question] = []
    for conversation in conversations:
        turn_ids = {m.message_id for m in conversation.messages}
        questions += questions_from_record(records[conversation.sample_id], turn_ids, report)
    return questions, report
