"""The systems the benchmark compares: hypermem and its ablations, turn-level baselines, full context.

Every system maps ``(service, conversation turns, question)`` to a ``Retrieved``: the dia_ids
whose own words reach the context, the context string, its token count (the embedding
model's WordPiece tokens) and the retrieval wall time in milliseconds.

- ``hypermem`` and ablations call ``MemoryService.query`` with overrides. Returned turns are
  the union of ``turns[].dia_id`` and ``facts[].source_dia_ids``; episode summaries earn no
  turns but their tokens are in ``context_tokens``.
- ``hypermem@N`` is hypermem with a turn budget of N (``TURN_BUDGETS``): its recall-vs-turns curve.
- Baselines (``hypermem.eval.baselines``) rank the conversation's turns outside the store by
  standard BM25 (bm25s), dense exact cosine, or RRF of both, and keep the top ``k``.
- ``full-context`` returns every turn (recall 1.0 by definition) at zero latency.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Any, Protocol

from hypermem.eval.baselines import standalone_baselines
from hypermem.ingest.turns import turn_text
from hypermem.model import Conversation, node_id

if TYPE_CHECKING:
    from hypermem.retrieve.result import QueryResult
    from hypermem.service import MemoryService

TURN_BUDGETS = (5, 10)  # with the default budget (8): the 5, 8, 10 curve
ABLATIONS: dict[str, dict[str, Any]] = {
    "hypermem": {},
    "hypermem-topics": {"use_topics": True},  # the topic level is off by default (README: its held-out number)
    "hypermem-flat": {"flat": True},
    "hypermem-no-propagation": {"propagation": False},
    "hypermem-fixed-k": {"stopping": "fixed"},
}


@dataclass(frozen=True)
class Retrieved:
    """One retrieval: ``returned`` dia_ids in rank order, ``context`` text, its tokens, latency (ms)."""

    returned: list[str]
    context: str
    context_tokens: int
    latency_ms: float


class ConversationTurns:
    """A conversation's turns as context lines (``[date] speaker: text``) with their token counts."""

    def __init__(self, conversation: Conversation, count_tokens):
        self.memory_id = conversation.sample_id
        self.conversation = conversation
        self._prefix = node_id(self.memory_id, "turn", "")
        self.lines = {
            m.message_id: f"[{m.timestamp:%d %B %Y}] {m.speaker}: {turn_text(m)}" for m in conversation.messages
        }
        self.tokens = {dia_id: count_tokens(line) for dia_id, line in self.lines.items()}

    def dia_id(self, turn_node_id: str) -> str:
        """``"conv-30/turn/D1:3"`` -> ``"D1:3"``."""
        return turn_node_id.removeprefix(self._prefix)

    def retrieved(self, dia_ids: list[str], latency_ms: float) -> Retrieved:
        """A Retrieved whose context is the given turns' lines, in the given order."""
        return Retrieved(
            dia_ids, "\n".join(self.lines[d] for d in dia_ids), sum(self.tokens[d] for d in dia_ids), latency_ms
        )


class System(Protocol):
    @property
    def name(self) -> str: ...

    def retrieve(self, svc: MemoryService, turns: ConversationTurns, question: str) -> Retrieved: ...


def returned_turns(result: QueryResult) -> list[str]:
    """dia_ids whose words reach a query result's context: its turns, then its facts' source turns (no repeats)."""
    returned = [t.dia_id for t in result.turns]
    returned += [d for f in result.facts for d in f.source_dia_ids]
    return list(dict.fromkeys(returned))


@dataclass(frozen=True)
class HyperMemSystem:
    """``MemoryService.query`` with ``overrides`` (see ``ABLATIONS``)."""

    name: str
    overrides: dict = field(default_factory=dict)

    def retrieve(self, svc: MemoryService, turns: ConversationTurns, question: str) -> Retrieved:
        start = perf_counter()
        result = svc.query(turns.memory_id, question, **self.overrides)
        latency = (perf_counter() - start) * 1000
        return Retrieved(returned_turns(result), result.context, result.context_tokens, latency)


@dataclass(frozen=True)
class FullContext:
    """Every turn of the conversation, in dialogue order; no retrieval, so zero latency."""

    name: str = "full-context"

    def retrieve(self, svc: MemoryService, turns: ConversationTurns, question: str) -> Retrieved:
        return turns.retrieved(list(turns.lines), 0.0)


def default_systems() -> list[System]:
    """hypermem, its ablations, hypermem at each of ``TURN_BUDGETS``, the standalone turn baselines
    and full context, in report order."""
    systems: list[System] = [HyperMemSystem(name, overrides) for name, overrides in ABLATIONS.items()]
    systems += [HyperMemSystem(f"hypermem@{n}", {"turn_budget": n}) for n in TURN_BUDGETS]
    systems += standalone_baselines()
    systems.append(FullContext())
    return systems
