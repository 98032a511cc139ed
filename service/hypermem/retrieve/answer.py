"""The optional answer of a query, from the built context.

``NoAnswer`` (no LLM) answers None; ``LLMAnswerer`` asks the LLM (``hypermem.llm.prompts.answer``)
and answers None when the LLM fails.
"""

from __future__ import annotations

import logging
from typing import Protocol

log = logging.getLogger(__name__)


class Answerer(Protocol):
    def answer(self, query: str, context: str) -> str | None:
        """A short answer to ``query`` from ``context`` (``hypermem.retrieve.context``), or None."""


class NoAnswer:
    """No-LLM: evidence only, no answer."""

    def answer(self, query: str, context: str) -> str | None:
        return None


class LLMAnswerer:
    """The LLM answers from the context; None (logged) when it fails."""

    def __init__(self, client):
        self.client = client

    def answer(self, query: str, context: str) -> str | None:
        from hypermem.llm.client import LLMError
        from hypermem.llm.prompts import answer

        try:
            return answer(self.client, query, context)
        except LLMError as exc:
            log.warning("LLM answer failed: %s", exc)
            return None
