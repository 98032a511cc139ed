"""Stage 1: validate messages and turn them into raw Turns with absolute timestamps and provenance.

Validation happens before anything is written, so bad input never corrupts a memory.
A shared photo (``image_caption``, LoCoMo's ``blip_caption``) is kept as text.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Iterable
from dataclasses import replace
from datetime import datetime

from hypermem.errors import HypermemError
from hypermem.model import EARLIEST_YEAR, LATEST_YEAR, Message, Turn, node_id
from hypermem.store.ids import key, repeated_id, repeated_id_note
from hypermem.text import is_blank, text_problem


class IngestInputError(HypermemError, ValueError):
    """Messages are unusable. ``field`` / ``problem`` name the first bad field, e.g. ``messages[3].speaker``;
    ``problems`` lists every one as ``(field, problem)`` in message order."""

    def __init__(self, field: str, problem: str, problems: list[tuple[str, str]] | None = None):
        self.problems = problems or [(field, problem)]
        more = f" (and {len(self.problems) - 1} more)" if len(self.problems) > 1 else ""
        super().__init__(f"{field}: {problem}{more}")
        self.field = field
        self.problem = problem


def turn_text(message: Message) -> str:
    """The words of a turn as stored and searched, in Unicode NFC (a decomposed "cafe\u0301" is stored "café", so
    its word is one word for BM25, as a query's is: ``retrieve.pipeline.Retriever.query``), with a shared photo's
    caption appended."""
    text = unicodedata.normalize("NFC", message.text).strip()
    if message.image_caption:
        caption = unicodedata.normalize("NFC", message.image_caption).strip()
        text = f"{text} [shares a photo: {caption}]" if text else f"[shares a photo: {caption}]"
    return text


def message_problems(messages: list[Message], max_chars: int) -> dict[int, list[tuple[str, str]]]:
    """Every problem of every message: ``{index: [(field, problem), ...]}`` (fields as ``messages[i].name``)."""
    found: dict[int, list[tuple[str, str]]] = {}
    seen: dict[str, str] = {}  # message_id NFKC form -> the first message_id with it
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        problems = []
        checks = {
            "message_id": text_problem(message.message_id, key=True),
            "speaker": text_problem(message.speaker, identifier=True),
            "text": text_problem(message.text, blank_ok=True),
            "session_id": text_problem(message.session_id, key=True),
            "image_caption": None
            if message.image_caption is None
            else text_problem(message.image_caption, blank_ok=True),
        }
        if checks["message_id"] is None and (earlier := repeated_id(seen, message.message_id)) is not None:
            checks["message_id"] = (
                f"duplicate {message.message_id!r} in one batch{repeated_id_note(message.message_id, earlier)}"
            )
        if checks["text"] is None:
            if len(message.text) > max_chars:
                checks["text"] = f"{len(message.text)} characters; the limit is {max_chars}"
            elif checks["image_caption"] is None and is_blank(turn_text(message)):
                checks["text"] = "missing or empty"
        for name, problem in checks.items():
            if problem is not None:
                problems.append((f"{where}.{name}", problem))
        if not isinstance(message.timestamp, datetime):
            problems.append((f"{where}.timestamp", "not a datetime"))
        elif not EARLIEST_YEAR <= message.timestamp.year <= LATEST_YEAR:
            problems.append((f"{where}.timestamp", f"must be in the years {EARLIEST_YEAR}-{LATEST_YEAR}"))
        if problems:
            found[index] = problems
    return found


def validate(messages: list[Message], max_chars: int) -> None:
    """Raise ``IngestInputError`` listing every unusable field of every message; return None when all are fine."""
    found = message_problems(messages, max_chars)
    if found:
        problems = [p for index in sorted(found) for p in found[index]]
        raise IngestInputError(*problems[0], problems)


def spelt_as_known(messages: list[Message], known: Iterable[str]) -> list[Message]:
    """``messages`` with each ``session_id`` spelt as the first of ``known`` (stored sessions), then of the batch,
    with its key (``ids.key``): "ｓ１" joins session "s1", whose one ``IngestState`` they would share, instead of
    being a second session beside it."""
    spelling: dict[str, str] = {}
    for session in known:
        spelling.setdefault(key(session), session)
    spelt = []
    for message in messages:
        first = spelling.setdefault(key(message.session_id), message.session_id)
        spelt.append(message if first == message.session_id else replace(message, session_id=first))
    return spelt


def to_turns(memory_id: str, messages: list[Message], first_seq: int) -> list[Turn]:
    """Validated messages as Turns (no embedding yet), ``seq`` numbered from ``first_seq`` in arrival order."""
    return [
        Turn(
            memory_id=memory_id,
            id=node_id(memory_id, "turn", key(message.message_id)),
            dia_id=message.message_id,
            speaker=message.speaker.strip(),
            text=turn_text(message),
            timestamp=message.timestamp.isoformat(timespec="seconds"),
            session=message.session_id,
            seq=first_seq + offset,
        )
        for offset, message in enumerate(messages)
    ]


def embedded_text(turn: Turn) -> str:
    """The text the embedding model reads for ``turn``: ``"{speaker}: {text}"``."""
    return f"{turn.speaker}: {turn.text}"


def session_hash(turns: list[Turn]) -> str:
    """Content hash of a session's turns: unchanged hash = nothing to redo (resume, idempotence)."""
    digest = hashlib.sha256()
    for turn in turns:
        digest.update(f"{turn.dia_id}\x1f{turn.speaker}\x1f{turn.text}\x1f{turn.timestamp}\x1e".encode())
    return digest.hexdigest()
