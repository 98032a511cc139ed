"""MemoryService: the one object the CLI, the API and the benchmark use.

It owns the store, the embedder and the optional LLM, builds the pipeline stages for them
(``hypermem.stages``) and wires the ingest and retrieval pipelines to them. Build one per process (``MemoryService.open(settings)``)
and ``close()`` it, or use it as a context manager.
"""

from __future__ import annotations

from functools import cached_property
from typing import TYPE_CHECKING

from hypermem.config import Settings
from hypermem.cpu import freeze_loaded_objects, single_thread_blas, space_out_collections
from hypermem.embed import Embedder
from hypermem.errors import HypermemError
from hypermem.locks import MemoryLock
from hypermem.model import Conversation, Message
from hypermem.store import GraphStore, open_store
from hypermem.vocabulary import ensure_vocabulary

if TYPE_CHECKING:
    from hypermem.retrieve.result import QueryResult


class UnknownMemory(HypermemError, LookupError):
    """The memory holds no dialogue (never ingested, or deleted)."""

    def __init__(self, memory_id: str):
        super().__init__(f"memory_id: no memory {memory_id!r}")
        self.memory_id = memory_id


class MemoryService:
    """Facade over store + embedder (+ LLM). Thread-safe for concurrent queries."""

    def __init__(self, settings: Settings, store: GraphStore, embedder: Embedder, *, use_llm: bool | None = None):
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.use_llm = settings.llm_enabled if use_llm is None else use_llm
        single_thread_blas()  # BLAS workers spinning beside the server and the model cost a core (hypermem.cpu)
        self.store.ensure_schema(settings.embedding_model, embedder.dimension)
        ensure_vocabulary(self.store, embedder)
        self.store.ensure_corpus_stats()
        space_out_collections()  # full collections walking the loaded modules were the queries' latency tail

    @classmethod
    def open(
        cls, settings: Settings | None = None, *, keep_server: bool = False, use_llm: bool | None = None
    ) -> MemoryService:
        """Open the configured store and embedding model. Raises ``StoreError``/``EmbeddingModelError``.

        ``use_llm`` False forces the no-LLM path; None uses the LLM when one is configured.
        """
        settings = settings or Settings()
        embedder = Embedder(settings.embedding_model, settings.embedding_batch_size)
        store = open_store(settings, keep_server=keep_server)
        try:
            return cls(settings, store, embedder, use_llm=use_llm)
        except BaseException:  # a schema mismatch or a SIGTERM must not orphan the embedded server
            store.close()
            raise

    def __enter__(self) -> MemoryService:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        self.store.close()

    @cached_property
    def llm(self):
        """The LLM client, or None on the no-LLM path."""
        if not (self.use_llm and self.settings.llm_enabled):
            return None
        from hypermem.llm.client import LLMClient

        return LLMClient.from_settings(self.settings)

    @cached_property
    def ingestor(self):
        from hypermem.ingest.pipeline import Ingestor
        from hypermem.stages import ingest_stages

        return Ingestor(self.settings, self.store, self.embedder, ingest_stages(self.settings, self.embedder, self.llm))

    @cached_property
    def retriever(self):
        from hypermem.retrieve.pipeline import Retriever
        from hypermem.stages import retrieval_stages

        return Retriever(self.settings, self.store, self.embedder, retrieval_stages(self.llm))

    def lock(self, memory_id: str, operation: str, **options) -> MemoryLock:
        """The cross-process lock of ``memory_id`` (ingest and delete hold it); see ``hypermem.locks``."""
        options.setdefault("lease_s", self.settings.lock_lease_s)
        options.setdefault("wait_s", self.settings.lock_wait_s)
        return MemoryLock(self.store, memory_id, operation, **options)

    def ingest_conversation(self, conversation: Conversation, *, progress=None):
        """Ingest a whole conversation into memory ``conversation.sample_id``. Returns an ``IngestReport``."""
        return self.ingest_messages(conversation.sample_id, conversation.messages, progress=progress)

    def ingest_messages(self, memory_id: str, messages: list[Message], *, progress=None):
        """Ingest live messages (idempotent by ``message_id``) holding the memory's lock. Returns an
        ``IngestReport``; raises ``IngestInputError`` for bad input, ``MemoryBusy`` when the lock stays taken."""
        from hypermem.ingest.pipeline import check_memory_id

        check_memory_id(memory_id)
        with self.lock(memory_id, "ingest"):
            return self.ingestor.ingest(memory_id, messages, progress=progress)

    def query(self, memory_id: str, text: str, **overrides) -> QueryResult:
        """Retrieve evidence for ``text`` in ``memory_id`` (``hypermem.retrieve.pipeline``). Raises ``QueryError``
        naming the field for a bad query or search setting, ``UnknownMemory`` when the memory holds no dialogue."""
        result = self.retriever.query(memory_id, text, **overrides)
        freeze_loaded_objects()  # once per process, after the first query has loaded the query-side models
        # only an empty answer can come from a memory without dialogue: one round trip less for every other query
        if not result.turns and not self.store.query("api/memory_has_turns", memory_id=memory_id):
            raise UnknownMemory(memory_id)
        return result

    def delete_memory(self, memory_id: str) -> int:
        """Delete every node of ``memory_id`` holding its lock (never halfway through an ingest).
        Returns the number of nodes removed; raises ``MemoryBusy`` when the lock stays taken."""
        with self.lock(memory_id, "delete"):
            return self.store.delete_memory(memory_id)
