"""The GraphStore interface: named Cypher queries, batched writes, vector and full-text search.

Everything above ``hypermem.store`` talks to this class only. An engine subclass
supplies ``run_cypher`` (one parameterised statement), ``_create_indexes``,
``engine_version`` and ``close``; the search strategies, batching, schema check
and memory deletion here are engine-blind.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hypermem.errors import HypermemError
from hypermem.model import BORROWED_VECTORS, SEARCH_LABELS, UNINDEXED_VECTORS, VECTOR_INDEXES
from hypermem.store import bm25, queries
from hypermem.store.dialect import Dialect
from hypermem.store.ids import corpus_stats_id, word_vector_id
from hypermem.store.vocabulary_matrix import Vocabulary, VocabularyMatrices

# How long a memory's BM25 statistics and rankings are reused: a query searches a label twice (memory-wide, then
# within candidates) within it, and another process's writes (an edit served by the next gunicorn worker) show
# after it. Reading the statistics again is one indexed lookup (``CorpusStats``).
STATS_CACHE_SECONDS = 2.0
CORPUS_STATS_VERSION = 1  # of CorpusStats; a store recording another gets every memory's counted again
STARVED_SECONDS = 300.0  # how long a memory's starved ANN (``vector_search``) goes straight to exact search
SHARE_SECONDS = 60.0  # how long a memory's share of a vector index (``vector_search``) is taken as known
EXACT_FIRST_MAX_NODES = 20_000  # a memory with fewer nodes of a label, and a small share of its index, goes exact
WORD_VECTOR_BATCH = 2000  # embed_keys per unused-WordVector check
MAX_FULLTEXT_MATCHES = 5000  # per search; beyond it df is counted on the first matches only


def _bounded_put(memo: dict, key: Any, value: Any) -> None:
    """``memo[key] = value``, emptying ``memo`` first when it holds over 10,000 entries (a per-memory memo)."""
    if len(memo) > 10_000:
        memo.clear()
    memo[key] = value


def _corpus_stats(speakers: Sequence[str], documents: Sequence[int], words: Sequence[int]) -> bm25.CorpusStats:
    """``CorpusStats`` from per-speaker aligned lists ('' for no speaker)."""
    return bm25.CorpusStats(
        documents=sum(int(d) for d in documents),
        words=sum(int(w) for w in words),
        speakers={s: int(d) for s, d in zip(speakers, documents) if s},
    )


def _has_vector(row: dict[str, Any]) -> bool:
    """Whether a write row has a vector field (a non-empty list of floats)."""
    return any(isinstance(v, list) and v and isinstance(v[0], float) for v in row.values())


class StoreError(HypermemError, RuntimeError):
    """The store cannot do what was asked (engine down, schema mismatch, bad URL)."""


class SchemaMismatch(StoreError):
    """The store was built with another embedding model or dimension."""


@dataclass(frozen=True)
class Hit:
    """One search result: node ``id`` and ``score`` (cosine similarity, or full-text relevance)."""

    id: str
    score: float


class GraphStore(ABC):
    """A hypergraph store on one graph engine. Use as a context manager, or call ``close()``."""

    dialect: Dialect
    #: Times the engine was found dead and restarted (an embedded engine only; a server engine never is).
    restarts: int = 0
    #: Whether the store keeps native vector indexes (``VECTOR_INDEXES``); without them ``vector_search`` is exact.
    vector_indexes: bool = True

    def __init__(
        self, *, write_batch_size: int = 500, vector_write_batch_size: int = 100, vector_oversample: int = 4,
        ef_runtime: int = 200,
    ):  # fmt: skip
        self._stats_cache: dict[str, tuple[float, dict[str, bm25.CorpusStats]]] = {}  # memory_id -> (when, by label)
        self._ranking_cache: dict[tuple, tuple[float, list[tuple[str, float]]]] = {}
        self._vocabularies = VocabularyMatrices()
        self._starved: dict[tuple[str, str], float] = {}  # (ANN statement, memory_id) -> until when to skip it
        self._counts: dict[str, tuple[float, dict[str, int]]] = {}  # memory_id or "" (the store) -> (until, counts)
        self.write_batch_size = write_batch_size
        self.vector_write_batch_size = vector_write_batch_size
        self.vector_oversample = vector_oversample
        self.ef_runtime = ef_runtime

    # --- engine-specific -------------------------------------------------------------------
    @abstractmethod
    def run_cypher(self, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run one parameterised statement; rows as dicts keyed by the RETURN aliases."""

    @abstractmethod
    def _create_indexes(self, dimension: int) -> list[str]:
        """Create constraints and indexes if absent; return what was created."""

    @abstractmethod
    def engine_version(self) -> str:
        """The engine's name and version, e.g. ``"FalkorDB 4.16.3"``."""

    @abstractmethod
    def close(self) -> None:
        """Release connections (and stop an embedded server this process started)."""

    def __enter__(self) -> GraphStore:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- named queries ---------------------------------------------------------------------
    def query(self, name: str, **params: Any) -> list[dict[str, Any]]:
        """Run ``cypher/{name}.cypher`` with ``params``."""
        return self.run_cypher(self.dialect.adapt(queries.load(name)), params)

    def write(self, name: str, rows: Sequence[dict[str, Any]], **params: Any) -> int:
        """Run ``cypher/{name}.cypher`` once per batch of ``rows`` (bound as ``$rows``). Returns rows written.

        Write files ``MERGE`` by id, so writing the same rows twice leaves the same graph. Rows carrying
        vectors go ``vector_write_batch_size`` at a time, the others ``write_batch_size``: a batch holds
        the engine's write lock while it runs (FalkorDB: the whole graph, so every query waits), and
        HNSW inserts dominate it (500 facts with two vectors each held it 280 ms under load).
        """
        for cypher, batch in self.write_statements(name, rows, **params):
            self.run_cypher(cypher, batch)
        return len(rows)

    def write_statements(
        self, name: str, rows: Sequence[dict[str, Any]], **params: Any
    ) -> Iterator[tuple[str, dict[str, Any]]]:
        """The ``(cypher, params)`` statements of ``write(name, rows, **params)``, one per batch, in order (what
        ``write`` runs; ``hypermem.store.ordered_writes`` runs them on a writer thread)."""
        cypher = self.dialect.adapt(queries.load(name))
        self._stats_cache.clear()  # BM25 statistics change with what is written
        self._ranking_cache.clear()
        size = self.vector_write_batch_size if rows and _has_vector(rows[0]) else self.write_batch_size
        for start in range(0, len(rows), size):
            yield cypher, {**params, "rows": list(rows[start : start + size])}

    def prepare(self, params: dict[str, Any]) -> Any:
        """``params`` as ``run_prepared`` sends them. An engine whose client formats parameters as query text
        (FalkorDB: a vector is 384 numbers written out) does that here, so a caller may format the next statement
        while another thread runs this one (``hypermem.store.ordered_writes``)."""
        return params

    def run_prepared(self, cypher: str, prepared: Any) -> list[dict[str, Any]]:
        """``run_cypher`` with parameters made by ``prepare``."""
        return self.run_cypher(cypher, prepared)

    # --- schema ----------------------------------------------------------------------------
    def ensure_schema(self, embedding_model: str, dimension: int) -> None:
        """Create indexes and record the embedding model; refuse a different model or dimension.

        Raises ``SchemaMismatch`` (``schema_mismatch``'s message) when the store was built with another
        model or dimension: mixing vectors of two models, even two of one dimension, would silently
        corrupt every vector search.
        """
        rows = self.query("schema/get_meta")
        problem = self.schema_mismatch(rows[0] if rows else None, embedding_model, dimension)
        if problem:
            raise SchemaMismatch(problem)
        self._create_indexes(dimension)
        self._drop_indexes(self.dialect.obsolete_index_statements())
        # Without vector_indexes a store's existing vector indexes are left alone (another process may serve the same
        # store with them): they are not searched; ``drop_vector_indexes`` frees them.
        if not rows:
            self.query("schema/set_meta", embedding_model=embedding_model, dimension=dimension)

    def missing_vector_indexes(self) -> list[str]:
        """``"Label.property"`` of every vector index the schema needs and the engine lacks (empty when all
        are there). After an embedded engine's restart they are recreated before serving; readiness
        reports not-ready while any is missing."""
        if not self.vector_indexes:
            return []
        present = {(i["label"], i["property"]) for i in self.indexes() if i["type"] == "VECTOR"}
        return [f"{label}.{prop}" for label, prop in VECTOR_INDEXES if (label, prop) not in present]

    @staticmethod
    def schema_mismatch(meta: dict[str, Any] | None, embedding_model: str, dimension: int) -> str | None:
        """Why a store recorded as ``meta`` (``meta()``) cannot take ``embedding_model``'s vectors of
        ``dimension``, naming both models and the way out; None when it can (or records nothing yet)."""
        if not meta or meta["dimension"] is None:
            return None
        if int(meta["dimension"]) == dimension and meta["embedding_model"] == embedding_model:
            return None
        return (
            f"store was built with {meta['embedding_model']} ({meta['dimension']} dimensions); the configured "
            f"model is {embedding_model} ({dimension} dimensions). Run `hypermem reindex` to re-embed it, "
            "or use another store."
        )

    def drop_vector_indexes(self) -> None:
        """Drop every vector index (``hypermem reindex``); one that is absent is skipped."""
        self._drop_indexes(self.dialect.vector_drop_statements())

    def _drop_indexes(self, statements: list[str]) -> None:
        """Run DDL ``statements`` that drop an index each, skipping an index that is absent."""
        for statement in statements:
            try:
                self.run_cypher(statement)
            except Exception as exc:
                if "no such index" not in str(exc).lower():
                    raise

    def meta(self) -> dict[str, Any] | None:
        """``{"embedding_model", "dimension"}`` recorded by ``ensure_schema``, or None."""
        rows = self.query("schema/get_meta")
        return rows[0] if rows else None

    @abstractmethod
    def indexes(self) -> list[dict[str, Any]]:
        """Every index as ``{"label", "property", "type"}`` (type: RANGE, VECTOR, FULLTEXT)."""

    # --- search ----------------------------------------------------------------------------
    def vector_search(
        self,
        label: str,
        memory_id: str,
        vector: Sequence[float] | npt.NDArray[np.floating],
        k: int,
        *,
        prop: str = "embedding",
        candidates: Iterable[str] | None = None,
    ) -> list[Hit]:
        """Top-``k`` nodes of ``label`` in ``memory_id`` by cosine similarity to ``vector`` (floats or a 1-D array).

        With ``candidates``, scores exactly within those ids. Otherwise asks the native
        ANN index for ``k * vector_oversample`` neighbours, filters to the memory, and
        falls back to exact cosine over the memory when filtering starved the result
        (a global index returns the global top-k: other memories can crowd this one out).
        A vector without an index (``model.UNINDEXED_VECTORS``, or every vector of a store without
        ``vector_indexes``) is always scored exactly. A vector
        nodes may borrow (``model.BORROWED_VECTORS``) is searched twice, on the nodes holding it and
        through the owners' index for the nodes borrowing it (same cosine), and the two top-``k``
        are merged by score, ties by id.
        """
        if k <= 0:
            return []
        vector = [float(x) for x in vector]
        params: dict[str, Any] = {"memory_id": memory_id, "vector": vector, "k": k}
        if candidates is not None:
            params["ids"] = list(dict.fromkeys(candidates))
            if not params["ids"]:
                return []
            legs = [[self.dialect.vector_exact(label, prop, candidates=True)]]
            if (label, prop) in BORROWED_VECTORS:
                legs.append([self.dialect.vector_exact_borrowed(label, prop, candidates=True)])
        else:
            params["kk"] = k * self.vector_oversample
            exact = self.dialect.vector_exact(label, prop, candidates=False)
            ann = self.vector_indexes and (label, prop) not in UNINDEXED_VECTORS
            legs = [[self.dialect.vector_ann(label, prop), exact] if ann else [exact]]
            if (label, prop) in BORROWED_VECTORS:
                exact_borrowed = self.dialect.vector_exact_borrowed(label, prop, candidates=False)
                legs.append(
                    [self.dialect.vector_ann_borrowed(label, prop), exact_borrowed] if ann else [exact_borrowed]
                )
        owners = [label, BORROWED_VECTORS[(label, prop)][2]] if len(legs) > 1 else [label]  # each leg's ANN index
        hits = [self._vector_leg(statements, params, owner) for statements, owner in zip(legs, owners)]
        if len(hits) == 1:
            return hits[0]
        return sorted((h for leg in hits for h in leg), key=lambda h: (-h.score, h.id))[:k]

    def _vector_leg(self, statements: list[str], params: dict[str, Any], label: str) -> list[Hit]:
        """The first of ``statements`` (ANN over ``label``'s index, then exact) that returns ``params["k"]`` rows,
        else the last's. The ANN is skipped for ``STARVED_SECONDS`` when it starved for this memory, or before it
        runs when the memory's nodes are few among the index's (``_minority``): the exact search it would fall back
        to is the answer anyway, and the ANN call only costs time."""
        starved = (statements[0], params["memory_id"]) if len(statements) > 1 else None
        if starved is not None and self._skip_ann(starved, label):
            statements = statements[-1:]
        for position, statement in enumerate(statements):
            rows = self.run_cypher(statement, params)
            if len(rows) >= params["k"]:
                break
            if starved is not None and position == 0 and len(statements) > 1:
                _bounded_put(self._starved, starved, time.monotonic() + STARVED_SECONDS)
        return [Hit(r["id"], float(r["score"])) for r in rows]

    def _skip_ann(self, key: tuple[str, str], label: str) -> bool:
        """Whether the ANN statement of ``key`` (statement, memory_id) over ``label``'s index should not run: it
        starved lately, or the memory is a minority of the index (its counts kept ``SHARE_SECONDS``)."""
        if time.monotonic() < self._starved.get(key, 0.0):
            return True
        if self._minority(label, key[1]):
            _bounded_put(self._starved, key, time.monotonic() + STARVED_SECONDS)
            return True
        return False

    def _minority(self, label: str, memory_id: str) -> bool:
        """True when ``memory_id`` holds fewer than ``EXACT_FIRST_MAX_NODES`` ``label`` nodes and less than
        1 / ``vector_oversample`` of the store's: the ANN's ``k * vector_oversample`` global neighbours would then
        hold fewer than ``k`` of the memory's nodes even if its vectors were spread like the others', so it starves
        (1,000 memories in one store: each is 0.1% of every index)."""
        mine = self._vector_label_counts(memory_id).get(label, 0)  # a label no node has yet may give no row
        total = self._vector_label_counts("").get(label, 0)
        return mine < EXACT_FIRST_MAX_NODES and mine * self.vector_oversample < total

    def _vector_label_counts(self, memory_id: str) -> dict[str, int]:
        """Nodes per vector-indexed label of ``memory_id`` (of the whole store for ""), one statement for every
        label, kept ``SHARE_SECONDS``."""
        now = time.monotonic()
        until, counts = self._counts.get(memory_id, (0.0, {}))
        if now >= until:
            labels = sorted({label for label, _ in VECTOR_INDEXES})
            cypher = self.dialect.label_counts(labels, in_memory=bool(memory_id))
            counts = {r["label"]: int(r["count"]) for r in self.run_cypher(cypher, {"memory_id": memory_id})}
            _bounded_put(self._counts, memory_id, (now + SHARE_SECONDS, counts))
        return counts

    def fulltext_search(
        self, label: str, memory_id: str, text: str, k: int, *, candidates: Iterable[str] | None = None
    ) -> list[Hit]:
        """Top-``k`` nodes of ``label`` in ``memory_id`` by Okapi BM25 (``hypermem.store.bm25``), best first.

        The engine's full-text index finds every node sharing a word with ``text`` (words OR-ed);
        BM25 is computed from the memory's own term statistics, so both engines rank alike. With
        ``candidates``, statistics still cover the whole memory and only those ids are returned.
        Any user text is safe; returns ``[]`` when no searchable word is left (empty string,
        punctuation, emoji, stop words only). Scores are BM25 (> 0).
        """
        words = bm25.query_words(text)
        if not words or k <= 0:
            return []
        allowed = set(candidates) if candidates is not None else None
        if allowed is not None and not allowed:
            return []
        ranked = self._bm25_ranking(label, memory_id, words, dict.fromkeys(bm25.analyze(text), 1.0))
        if allowed is not None:
            ranked = [r for r in ranked if r[0] in allowed]
        return [Hit(doc_id, value) for doc_id, value in ranked[:k]]

    def weighted_fulltext_search(self, label: str, memory_id: str, weights: Mapping[str, float], k: int) -> list[Hit]:
        """Top-``k`` nodes of ``label`` in ``memory_id`` by BM25 for words with weights (``{word: weight > 0}``, an
        expanded query: ``hypermem.retrieve.expansion``), best first. A word's stem counts with its weight (the
        largest, when words share a stem). At most ``bm25.MAX_EXPANDED_WORDS`` words, the first ones; unsafe ones are
        dropped like a query's (``bm25.query_words``)."""
        words = bm25.query_words(" ".join(w for w, weight in weights.items() if weight > 0), bm25.MAX_EXPANDED_WORDS)
        stems: dict[str, float] = {}
        for word in words:
            for term in bm25.analyze(word):
                stems[term] = max(stems.get(term, 0.0), weights.get(word, 1.0))
        if not stems or k <= 0:
            return []
        return [Hit(doc_id, value) for doc_id, value in self._bm25_ranking(label, memory_id, words, stems)[:k]]

    def vocabulary(self, memory_id: str) -> Vocabulary:
        """``memory_id``'s vocabulary (``hypermem.vocabulary``) for exact nearest-word search: this process's copy of
        the memory's Term vectors, checked against the store at every call (``hypermem.store.vocabulary_matrix``)."""
        return self._vocabularies.get(self, memory_id)

    def _bm25_ranking(self, label: str, memory_id: str, words: list[str],
                      weights: Mapping[str, float]) -> list[tuple[str, float]]:  # fmt: skip
        """Every match of ``words`` in the memory scored by BM25 over the analyzed terms ``weights``, best first; the
        same query within ``STATS_CACHE_SECONDS`` reuses it (a query searches facts twice: memory-wide, then within
        candidates)."""
        key = (label, memory_id, tuple(words), tuple(sorted(weights.items())))
        cached = self._ranking_cache.get(key)
        if cached is not None and time.monotonic() - cached[0] < STATS_CACHE_SECONDS:
            return cached[1]
        if len(self._ranking_cache) > 256:
            self._ranking_cache.clear()
        matches = self.run_cypher(
            self.dialect.fulltext(label),
            {
                "text": self.dialect.fulltext_text(words, memory_id),
                "memory_id": memory_id,
                "limit": MAX_FULLTEXT_MATCHES,
            },
        )
        ranked = bm25.weighted_score(weights, matches, self._corpus_stats(label, memory_id))
        self._ranking_cache[key] = (time.monotonic(), ranked)
        return ranked

    def _corpus_stats(self, label: str, memory_id: str) -> bm25.CorpusStats:
        """N, Σ|d| and documents per speaker of ``label`` in ``memory_id``: its ``CorpusStats`` node's (every label's
        read in one indexed lookup, kept ``STATS_CACHE_SECONDS``), else counted now over the memory's nodes (a memory
        whose first ingest has not reached ``refresh_corpus_stats`` yet).

        This process's writes clear the cache (and the rankings'); another process's writes reach
        both within that time.
        """
        cached = self._stats_cache.get(memory_id)
        if cached is None or time.monotonic() - cached[0] >= STATS_CACHE_SECONDS:
            rows = self.query("retrieve/corpus_stats", memory_id=memory_id)
            counted = {r["label"]: _corpus_stats(r["speakers"], r["documents"], r["words"]) for r in rows}
            cached = (time.monotonic(), counted)
            _bounded_put(self._stats_cache, memory_id, cached)
        stats = cached[1].get(label)
        if stats is None:
            rows = self.run_cypher(self.dialect.fulltext_stats(label), {"memory_id": memory_id})
            stats = _corpus_stats(
                [r["speaker"] for r in rows], [r["documents"] for r in rows], [r["words"] for r in rows]
            )
            cached[1][label] = stats
        return stats

    def corpus_stats_statements(self, memory_id: str) -> list[tuple[str, dict[str, Any]]]:
        """The ``(cypher, params)`` statements of ``refresh_corpus_stats(memory_id)`` (an ingest runs them in order
        with its writes, ``hypermem.store.ordered_writes``)."""
        self._stats_cache.clear()
        self._ranking_cache.clear()
        return [(self.dialect.corpus_stats_refresh(label), {"memory_id": memory_id, "id": corpus_stats_id(memory_id, label)})
                for label in SEARCH_LABELS]  # fmt: skip

    def refresh_corpus_stats(self, memory_id: str) -> None:
        """Count ``memory_id``'s BM25 statistics (``hypermem.store.bm25``) of every searched label into its
        ``CorpusStats`` nodes, which every full-text search of the memory reads (one indexed lookup, where counting
        them costs a pass over the memory's nodes: 30 ms a query at 1,000 memories in one store). Every ingest runs
        it after its writes, before it marks its sessions done."""
        for cypher, params in self.corpus_stats_statements(memory_id):
            self.run_cypher(cypher, params)

    def ensure_corpus_stats(self) -> int:
        """Give every memory of a store built before ``CorpusStats`` its statistics, once (recorded in the store's
        meta as ``CORPUS_STATS_VERSION``); returns the memories counted (0 when the store records it already).
        Idempotent, and safe when several processes open the store at once."""
        if (self.meta() or {}).get("corpus_stats") == CORPUS_STATS_VERSION:
            return 0
        memories = self.memory_ids()
        for memory_id in memories:
            self.refresh_corpus_stats(memory_id)
        self.query("schema/set_corpus_stats", version=CORPUS_STATS_VERSION)
        return len(memories)

    # --- lifecycle of a memory -------------------------------------------------------------
    def delete_memory(self, memory_id: str) -> int:
        """Remove every node of ``memory_id`` (and so every relationship touching one), and the store-wide word
        vectors only it used. Returns the memory's nodes removed."""
        keys = self._term_keys(memory_id)
        removed = self._delete_in_batches("maintain/delete_memory_batch", memory_id=memory_id)
        self.delete_unused_word_vectors(keys)
        return removed

    def delete_terms(self, memory_id: str) -> int:
        """Remove ``memory_id``'s vocabulary (``hypermem.vocabulary``: its Term nodes, and the WordVectors only it
        used). Returns the Terms removed."""
        keys = self._term_keys(memory_id)
        removed = self._delete_in_batches("maintain/delete_terms_batch", memory_id=memory_id)
        self.delete_unused_word_vectors(keys)
        return removed

    def delete_unused_word_vectors(self, keys: Iterable[str | None]) -> int:
        """Remove the WordVectors of these ``embed_key``s that no Term of any memory uses (a word's vector must not
        outlive the last memory that said it; ``store.word_vectors``). Returns nodes removed."""
        rows = [{"embed_key": k, "vector_id": word_vector_id(k)} for k in dict.fromkeys(keys) if k]
        removed = 0
        for start in range(0, len(rows), WORD_VECTOR_BATCH):
            batch = rows[start : start + WORD_VECTOR_BATCH]
            removed += sum(int(r["deleted"]) for r in self.query("maintain/delete_unused_word_vectors", rows=batch))
        return removed

    def _term_keys(self, memory_id: str) -> list[str]:
        """The ``embed_key`` of every Term of ``memory_id``."""
        return [r["embed_key"] for r in self.query("ingest/memory_terms", memory_id=memory_id) if r["embed_key"]]

    def _delete_in_batches(self, name: str, **params: Any) -> int:
        """Run the delete query ``name`` (5,000 nodes a call, returning ``deleted``) until nothing is left."""
        removed = 0
        while True:
            rows = self.query(name, limit=5000, **params)
            count = int(rows[0]["deleted"]) if rows else 0
            removed += count
            if count == 0:
                return removed

    def memory_ids(self) -> list[str]:
        """Every memory_id that has at least one Turn."""
        return [r["memory_id"] for r in self.query("maintain/memory_ids")]

    def counts(self, memory_id: str) -> dict[str, int]:
        """Nodes per label (the labels ``memory_id`` has nodes of) and hyperedge memberships of one memory."""
        rows = self.query("maintain/count_nodes", memory_id=memory_id)
        out = {r["label"]: int(r["count"]) for r in rows if r["count"]}
        out["memberships"] = int(self.query("maintain/count_memberships", memory_id=memory_id)[0]["count"])
        return out
