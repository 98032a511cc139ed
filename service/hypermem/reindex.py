"""``hypermem reindex``: re-embed a store with the configured embedding model (issue 9 §7).

A store built with another model or dimension refuses to open (``SchemaMismatch``); this is the
way forward. The dialogue stays where it is: for every memory the turn vectors and session
markers are forgotten, every session is rebuilt by the ingest pipeline with the new model
(turns, episodes, facts, topics, hyperedges, propagation), then the vector indexes are created
at the new dimension and the store records the new model. Owners, jobs and stored queries are
kept. Killed halfway, it is simply run again. Each memory is rebuilt holding its lock.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from hypermem.config import Settings
from hypermem.embed import Embedder
from hypermem.locks import MemoryLock, process_gone
from hypermem.model import Message
from hypermem.store import GraphStore


@dataclass
class ReindexReport:
    """What a reindex did: the models before and after, and turns re-embedded per memory."""

    old_model: str | None
    old_dimension: int | None
    new_model: str
    new_dimension: int
    turns: dict[str, int] = field(default_factory=dict)


@dataclass
class UnfinishedMemory:
    """A memory with ``unfinished`` of its ``sessions`` never finished by an ingest (``unfinished_memories``)."""

    memory_id: str
    sessions: int
    unfinished: int


def unfinished_memories(store: GraphStore) -> list[UnfinishedMemory]:
    """Memories holding turns of sessions no ingest has finished (no session marker): an ingest or a reindex was
    interrupted, and retrieval sees those turns without their episodes and facts. A memory whose lock a live writer
    holds is left out (its ingest is still running); a lock whose holder has died on this host is not (its lease
    would hide the memory for up to ``lock_lease_s``). The ingest of those conversations again, or ``reindex``,
    finishes them. Sorted by memory_id."""
    return [
        UnfinishedMemory(row["memory_id"], row["sessions"], row["unfinished"])
        for row in store.query("maintain/unfinished_memories", now=time.time())
        if row["holder"] is None or process_gone(row["holder"])
    ]


def stored_messages(store: GraphStore, memory_id: str) -> list[Message]:
    """A memory's turns as messages again (same message ids, speakers, texts, times and sessions)."""
    return [
        Message(r["dia_id"], r["speaker"], r["text"], datetime.fromisoformat(r["timestamp"]), r["session"])
        for r in store.query("maintain/memory_turns", memory_id=memory_id)
    ]


def reindex(settings: Settings, store: GraphStore, embedder: Embedder, *,
            on_memory: Callable[[str, int], None] | None = None) -> ReindexReport:  # fmt: skip
    """Re-embed every memory of ``store`` with ``embedder``; ``on_memory(memory_id, turns)`` after each."""
    from hypermem.ingest.pipeline import Ingestor
    from hypermem.stages import ingest_stages

    meta = store.meta() or {}
    report = ReindexReport(
        meta.get("embedding_model"), meta.get("dimension"), settings.embedding_model, embedder.dimension
    )
    store.drop_vector_indexes()
    ingestor = Ingestor(settings, store, embedder, ingest_stages(settings, embedder))
    for memory_id in store.memory_ids():
        with MemoryLock(store, memory_id, "reindex", lease_s=settings.lock_lease_s, wait_s=settings.lock_wait_s):
            messages = stored_messages(store, memory_id)
            store.query("maintain/reset_embeddings", memory_id=memory_id)
            store.delete_terms(memory_id)  # the old model's word vectors; the ingest adds them anew
            ingestor.ingest(memory_id, messages)
        report.turns[memory_id] = len(messages)
        if on_memory is not None:
            on_memory(memory_id, len(messages))
    store.query("schema/set_meta", embedding_model=settings.embedding_model, dimension=embedder.dimension)
    store.ensure_schema(settings.embedding_model, embedder.dimension)
    return report
