"""Stage 1: validate messages and turn them into raw Turns with absolute timestamps and provenance.

Validation happens before anything is written, so bad input never corrupts a memory.
A shared photo (``image_caption``, LoCoMo's ``blip_caption``) is kept as text.
"""

from __future__ import annotations

from hypermem.errors import HypermemError
import hashlib
from dataclasses import dataclass
from datetime import datetime

from hypermem.ingest.locomo import Message
from hypermem.model import Turn, node_id
from hypermem.store.ids import key


class IngestInputError(HypermemError, ValueError):
    """A message is unusable. ``field`` names it, e.g. ``messages[3].speaker``."""

    def __init__(self, field: str, problem: str):
        super().__init__(f"{field}: {problem}")
        self.field = field
        self.problem = problem


@dataclass
class TurnDraft:
    """A validated message before embedding: the Turn plus its session date for date resolution."""

    turn: Turn
    when: datetime


def turn_text(message: Message) -> str:
    """The words of a turn as stored and searched, with a shared photo's caption appended."""
    text = message.text.strip()
    if message.image_caption:
        caption = message.image_caption.strip()
        text = f"{text} [shares a photo: {caption}]" if text else f"[shares a photo: {caption}]"
    return text


def validate(messages: list[Message], max_chars: int) -> None:
    """Raise ``IngestInputError`` for the first unusable message; return None when all are fine."""
    seen: set[str] = set()
    for index, message in enumerate(messages):
        where = f"messages[{index}]"
        if not isinstance(message.message_id, str) or not message.message_id.strip():
            raise IngestInputError(f"{where}.message_id", "missing or empty")
        if "/" in message.message_id:
            raise IngestInputError(f"{where}.message_id", "must not contain '/'")
        if message.message_id in seen:
            raise IngestInputError(f"{where}.message_id", f"duplicate {message.message_id!r} in one batch")
        seen.add(message.message_id)
        if not isinstance(message.speaker, str) or not message.speaker.strip():
            raise IngestInputError(f"{where}.speaker", "missing or empty")
        if not isinstance(message.text, str) or not turn_text(message):
            raise IngestInputError(f"{where}.text", "missing or empty")
        if len(message.text) > max_chars:
            raise IngestInputError(f"{where}.text", f"{len(message.text)} characters; the limit is {max_chars}")
        try:
            message.text.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise IngestInputError(f"{where}.text", "is not valid UTF-8 (unpaired surrogate)") from exc
        if "\x00" in message.text:
            raise IngestInputError(f"{where}.text", "contains a NUL character")
        if not isinstance(message.timestamp, datetime):
            raise IngestInputError(f"{where}.timestamp", "not a datetime")
        if not isinstance(message.session_id, str) or not message.session_id.strip() or "/" in message.session_id:
            raise IngestInputError(f"{where}.session_id", "missing, empty or containing '/'")


def to_drafts(memory_id: str, messages: list[Message], first_seq: int) -> list[TurnDraft]:
    """Validated messages as TurnDrafts, ``seq`` numbered from ``first_seq`` in arrival order."""
    drafts = []
    for offset, message in enumerate(messages):
        when = message.timestamp.replace(tzinfo=None) if message.timestamp.tzinfo is None else message.timestamp
        drafts.append(
            TurnDraft(
                Turn(
                    memory_id=memory_id,
                    id=node_id(memory_id, "turn", key(message.message_id)),
                    dia_id=message.message_id,
                    speaker=message.speaker.strip(),
                    text=turn_text(message),
                    timestamp=when.isoformat(timespec="seconds"),
                    session=message.session_id,
                    seq=first_seq + offset,
                ),
                when,
            )
        )
    return drafts


def session_hash(turns: list[Turn]) -> str:
    """Content hash of a session's turns: unchanged hash = nothing to redo (resume, idempotence)."""
    digest = hashlib.sha256()
    for turn in turns:
        digest.update(f"{turn.dia_id}\x1f{turn.speaker}\x1f{turn.text}\x1f{turn.timestamp}\x1e".encode())
    return digest.hexdigest()
