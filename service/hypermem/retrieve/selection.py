"""LLM-guided turn selection, the last step before the context (HiGMem §3).

``KeepAllTurns`` (no LLM) keeps every retrieved turn; ``LLMTurnSelector`` asks the LLM which turns are
worth reading (``hypermem.llm.prompts.select_turns``) and keeps every turn when it fails or picks none.
"""

from __future__ import annotations

from typing import Protocol


class TurnSelector(Protocol):
    def select(self, query: str, turns: list[dict]) -> dict:
        """Drop from ``turns`` (in place; items ``{dia_id, speaker, text, ...}``) those not worth reading for
        ``query``. Returns the ``selection`` of the query result: ``{enabled: False, reason}`` or
        ``{enabled: True, kept}``."""


class KeepAllTurns:
    """No-LLM selection: every turn stays."""

    def select(self, query: str, turns: list[dict]) -> dict:
        return {"enabled": False, "reason": "no LLM configured"}


class LLMTurnSelector:
    """The LLM keeps the turns worth reading (HiGMem); on an LLM error or an empty pick every turn stays."""

    def __init__(self, client):
        self.client = client

    def select(self, query: str, turns: list[dict]) -> dict:
        if not turns:
            return {"enabled": False, "reason": "no turns"}
        from hypermem.llm.client import LLMError
        from hypermem.llm.prompts import select_turns

        try:
            chosen = set(
                select_turns(self.client, query, [{k: t[k] for k in ("dia_id", "speaker", "text")} for t in turns])
            )
        except LLMError as exc:
            return {"enabled": False, "reason": f"LLM error: {exc}"}
        if chosen:
            turns[:] = [t for t in turns if t["dia_id"] in chosen]
        return {"enabled": True, "kept": len(turns)}
