"""Shared pieces of every prompt: the client protocol, schema builders, string and date clean-up."""

from __future__ import annotations

import re
from datetime import date, datetime
from typing import Any, Protocol

from hypermem.text import one_entry


class CompletionClient(Protocol):
    """What a prompt needs of its client (``LLMClient`` or a test double)."""

    def complete_json(self, task: str, messages: list[dict], schema: dict) -> dict: ...

    def complete_text(self, task: str, messages: list[dict]) -> str: ...


_ISO_PARTIAL = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
TITLE_FALLBACK_CHARS = 80


def _obj(properties: dict[str, dict]) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


_STR = {"type": "string"}
_STR_LIST = {"type": "array", "items": {"type": "string"}}
_INT = {"type": "integer"}


def _messages(system: str, user: str) -> list[dict]:
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]


def _clean_strings(values: Any) -> list[str]:
    """Stripped, non-empty, first occurrence kept (case-insensitive), order kept."""
    out, seen = [], set()
    for value in values if isinstance(values, list) else []:
        text = str(value).strip() if value is not None else ""
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out


def _known_ids(values: Any, allowed: list[str]) -> list[str]:
    """The ids of ``values`` that are in ``allowed``, each once, in the model's order."""
    allowed_set = set(allowed)
    out: list[str] = []
    for value in values if isinstance(values, list) else []:
        text = str(value).strip()
        if text in allowed_set and text not in out:
            out.append(text)
    return out


def normalise_date(value: Any) -> str | None:
    """``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` for a valid (partial) ISO date or datetime, else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) > 10 and text[:10].count("-") == 2:
        try:
            return datetime.fromisoformat(text).date().isoformat()
        except ValueError:
            return None
    match = _ISO_PARTIAL.match(text)
    if not match:
        return None
    year, month, day = match.groups()
    try:
        date(int(year), int(month or 1), int(day or 1))
    except ValueError:
        return None
    return text


def _turn_date(timestamp: Any) -> str | None:
    """The calendar date of an ISO timestamp, or None."""
    if isinstance(timestamp, datetime):
        return timestamp.date().isoformat()
    if isinstance(timestamp, date):
        return timestamp.isoformat()
    date_only = normalise_date(timestamp)
    return date_only if date_only and len(date_only) == 10 else None


def _shorten(text: str, limit: int = TITLE_FALLBACK_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _render_turn(prefix: str, turn: dict) -> str:
    when = f" ({turn['timestamp']})" if turn.get("timestamp") else ""
    return f"[{prefix}]{when} {turn['speaker']}: {one_entry(turn['text'])}"  # its text cannot forge another turn
