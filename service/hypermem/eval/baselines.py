"""Standalone turn-level baselines, independent of the store (issue 11): BM25, dense, RRF of both.

- ``bm25``: Okapi BM25 with ``bm25s`` (Lucene variant, k1 = 1.5, b = 0.75; Lù, 2024) over each
  turn's ``speaker: text``, lowercased, English stop words removed, Snowball English stems
  (PyStemmer);
- ``dense``: exact cosine between the question and each turn with the service's embedding model;
- ``rrf``: Reciprocal Rank Fusion (k = 60) of the two full rankings.

Each baseline keeps the top ``k`` turns, for k in ``BASELINE_KS``. A ``TurnIndex`` is built once
per conversation and ranks every turn once per question, so the k's share the work.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, Literal

import bm25s
import numpy as np
import Stemmer

from hypermem.ingest.turns import turn_text
from hypermem.retrieve.fusion import rrf
from hypermem.store.base import Hit

if TYPE_CHECKING:
    from hypermem.embed import Embedder
    from hypermem.eval.systems import ConversationTurns, Retrieved
    from hypermem.ingest.locomo import Conversation
    from hypermem.service import MemoryService

BASELINE_KS = (3, 5, 8, 10, 25)
BaselineMethod = Literal["bm25", "dense", "rrf"]
BASELINE_METHODS: tuple[BaselineMethod, ...] = ("bm25", "dense", "rrf")
RRF_K = 60
_STEMMER = Stemmer.Stemmer("english")


def bm25_tokens(texts: list[str]) -> list[list[str]]:
    """The BM25 analyzer: bm25s's tokenizer (lowercase, ``\\w\\w+`` words), English stop words, Snowball stems."""
    return bm25s.tokenize(texts, stopwords="en", stemmer=_STEMMER, return_ids=False, show_progress=False)


class BM25Ranker:
    """BM25 over a fixed list of documents with ``bm25s``. ``rank(query)`` -> document indices, best first."""

    def __init__(self, documents: list[str], *, k1: float = 1.5, b: float = 0.75):
        self.size = len(documents)
        self.model = bm25s.BM25(k1=k1, b=b)
        self.model.index(bm25_tokens(documents), show_progress=False)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document (0.0 for no shared term)."""
        tokens = bm25_tokens([query])[0]
        return self.model.get_scores(tokens) if tokens else np.zeros(self.size)

    def rank(self, query: str) -> list[int]:
        """Indices of documents sharing at least one term with ``query``, best first (ties: earlier first)."""
        scores = self.scores(query)
        order = np.argsort(-scores, kind="stable")
        return [int(i) for i in order if scores[i] > 0]


class TurnIndex:
    """One conversation's turns, ranked by BM25, dense cosine and their RRF; the latest queries' rankings cached,
    with what computing each ranking took, so every baseline reports its own cost, not a cache hit."""

    def __init__(self, conversation: Conversation, embedder: Embedder):
        self.memory_id = conversation.sample_id
        self.dia_ids = [m.message_id for m in conversation.messages]
        documents = [f"{m.speaker}: {turn_text(m)}" for m in conversation.messages]
        self.bm25 = BM25Ranker(documents)
        self.embedder = embedder
        self.vectors = embedder.encode(documents)
        self._cache: OrderedDict[str, tuple[dict[str, list[str]], dict[str, float]]] = OrderedDict()

    def rankings(self, question: str) -> dict[str, list[str]]:
        """``{"bm25": [...], "dense": [...], "rrf": [...]}``: dia_ids, best first."""
        return self._ranked(question)[0]

    def latency_ms(self, question: str) -> dict[str, float]:
        """Milliseconds each ranking of ``question`` took to compute: ``bm25``; ``dense`` with the question's
        embedding (never a cached vector); ``rrf`` both of them plus the fusion."""
        return self._ranked(question)[1]

    def _ranked(self, question: str) -> tuple[dict[str, list[str]], dict[str, float]]:
        cached = self._cache.get(question)
        if cached is not None:
            return cached
        start = perf_counter()
        bm25 = [self.dia_ids[i] for i in self.bm25.rank(question)]
        bm25_done = perf_counter()
        cosine = self.vectors @ self.embedder.embed_query(question)
        dense = [self.dia_ids[i] for i in np.argsort(-cosine, kind="stable")]
        dense_done = perf_counter()
        fused = rrf({"bm25": [Hit(d, 0.0) for d in bm25], "dense": [Hit(d, 0.0) for d in dense]}, k=RRF_K)
        result = {"bm25": bm25, "dense": dense, "rrf": [f.id for f in fused]}
        ms = {
            "bm25": (bm25_done - start) * 1000,
            "dense": (dense_done - bm25_done) * 1000,
            "rrf": (perf_counter() - start) * 1000,
        }
        self._cache[question] = (result, ms)
        if len(self._cache) > 4:
            self._cache.popitem(last=False)
        return result, ms


@dataclass
class TurnIndexes:
    """``TurnIndex`` per conversation, built on first use and shared by every baseline system."""

    indexes: dict[str, TurnIndex] = field(default_factory=dict)

    def get(self, conversation: Conversation, embedder: Embedder) -> TurnIndex:
        if conversation.sample_id not in self.indexes:
            self.indexes[conversation.sample_id] = TurnIndex(conversation, embedder)
        return self.indexes[conversation.sample_id]


@dataclass(frozen=True)
class StandaloneBaseline:
    """Top-``k`` turns by ``method`` (``bm25``, ``dense``, ``rrf``), computed outside the store."""

    method: BaselineMethod
    k: int
    indexes: TurnIndexes = field(compare=False, repr=False)

    @property
    def name(self) -> str:
        return f"{self.method}@{self.k}"

    def retrieve(self, svc: MemoryService, turns: ConversationTurns, question: str) -> Retrieved:
        index = self.indexes.get(turns.conversation, svc.embedder)  # built once per conversation, not timed
        ranked = index.rankings(question)[self.method][: self.k]
        return turns.retrieved(ranked, index.latency_ms(question)[self.method])


def standalone_baselines() -> list[StandaloneBaseline]:
    """Every (method, k) baseline in report order, sharing one ``TurnIndexes``."""
    indexes = TurnIndexes()
    return [StandaloneBaseline(method, k, indexes) for method in BASELINE_METHODS for k in BASELINE_KS]
