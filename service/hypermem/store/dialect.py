"""What differs between the engines: index DDL, vector/full-text procedures, query escaping.

This module and the engine modules beside it are the only code that knows which
engine runs. Every ``.cypher`` file is written once; ``Dialect.adapt`` applies the
few function renames an engine needs (FalkorDB's ``vecf32(x)`` stores a float32
vector; Neo4j 5 stores ``toFloatList(x)``).

Scores leaving a dialect are normalised: vector scores are cosine *similarity*
in [-1, 1] on both engines (FalkorDB returns a distance, Neo4j a (1+cos)/2
similarity). Full-text search only *finds* the matching nodes here; ``GraphStore.fulltext_search``
scores them with BM25 from the memory's own statistics (``hypermem.store.bm25``), the same on
both engines.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Sequence

from hypermem.model import BORROWED_VECTORS, KEY_INDEXES, LABELS, SEARCH_LABELS, UNINDEXED_VECTORS, VECTOR_INDEXES

_MEMORY_TOKEN = re.compile(r"[a-z0-9_]+")  # RediSearch's tokens of a memory id (model.MEMORY_ID_PATTERN)


def _checked_label(label: str, allowed=SEARCH_LABELS) -> str:
    if label not in allowed:
        raise ValueError(f"unknown label {label!r}; expected one of {allowed}")
    return label


def _checked_vector(label: str, prop: str, allowed=VECTOR_INDEXES + UNINDEXED_VECTORS) -> tuple[str, str]:
    if (label, prop) not in allowed:
        raise ValueError(f"no vector on {label}.{prop}")
    return label, prop


class Dialect(ABC):
    """Engine-specific Cypher fragments. Labels and properties are checked against the schema."""

    name: str

    def adapt(self, cypher: str) -> str:
        """Rewrite a portable ``.cypher`` file for this engine."""
        return cypher

    @abstractmethod
    def index_statements(self, dimension: int, ef_runtime: int, vectors: bool = True) -> list[str]:
        """DDL creating range, full-text and (with ``vectors``) vector indexes (idempotent at the store level)."""

    @abstractmethod
    def vector_drop_statements(self) -> list[str]:
        """DDL dropping every vector index (before re-embedding at another dimension)."""

    @abstractmethod
    def _ann_call(self, label: str, prop: str) -> str:
        """``CALL`` of the native vector index yielding ``node, score``: the ``$kk`` nearest to the param ``vector``."""

    @abstractmethod
    def _ann_similarity(self, prop: str) -> str:
        """Expression turning the ANN ``score`` of ``node.{prop}`` into cosine similarity with the param ``vector``."""

    @abstractmethod
    def _cosine(self, prop: str, node: str = "node") -> str:
        """Expression: cosine similarity of ``{node}.{prop}`` and the param ``vector``."""

    @abstractmethod
    def obsolete_index_statements(self) -> list[str]:
        """DDL dropping indexes earlier versions created and this one does not (``ensure_schema``)."""

    @abstractmethod
    def _fulltext_call(self, label: str) -> str:
        """``CALL`` of the full-text index yielding ``node, score`` (param ``text``)."""

    @abstractmethod
    def fulltext_text(self, terms: list[str], memory_id: str) -> str:
        """Join safe words (from ``hypermem.store.bm25.query_words``) into this engine's OR query over
        ``text``; an engine whose index also holds ``memory_id`` narrows the query to that memory."""

    def vector_ann(self, label: str, prop: str) -> str:
        """ANN query. Params: vector, kk (oversampled k), memory_id, k. Returns id, score (cosine); ties by id."""
        label, prop = _checked_vector(label, prop)
        return (
            f"{self._ann_call(label, prop)} WITH node, score WHERE node.memory_id = $memory_id "
            f"RETURN node.id AS id, {self._ann_similarity(prop)} AS score ORDER BY score DESC, id LIMIT $k"
        )

    def vector_exact(self, label: str, prop: str, candidates: bool) -> str:
        """Exact cosine within one memory, or within ``$ids`` when ``candidates``. Returns id, score; ties by id.
        Nodes without ``prop`` (a borrowed vector's, ``vector_exact_borrowed``) are not scored."""
        label, prop = _checked_vector(label, prop)
        match = f"UNWIND $ids AS cid MATCH (node:{label} {{id: cid}}) " if candidates else f"MATCH (node:{label}) "
        return (
            f"{match}WHERE node.memory_id = $memory_id AND node.{prop} IS NOT NULL "
            f"RETURN node.id AS id, {self._cosine(prop)} AS score ORDER BY score DESC, id LIMIT $k"
        )

    def label_counts(self, labels: Sequence[str], in_memory: bool) -> str:
        """How many nodes of each of ``labels`` the store holds (both engines answer from label statistics), or
        with ``in_memory`` how many of them one memory holds (each label's memory_id index), in one statement.
        Params: memory_id. Returns label, count."""
        where = " WHERE n.memory_id = $memory_id" if in_memory else ""
        return " UNION ALL ".join(
            f"MATCH (n:{_checked_label(label, allowed=LABELS)}){where} RETURN '{label}' AS label, count(n) AS count"
            for label in labels
        )

    def vector_ann_borrowed(self, label: str, prop: str) -> str:
        """ANN over the owners of a borrowed vector (``model.BORROWED_VECTORS``), each hit mapped to the
        ``label`` nodes that borrow it; ties by id. Params: vector, kk, memory_id, k. Returns id, score."""
        flag, relationship, owner, owner_prop = BORROWED_VECTORS[_checked_vector(label, prop, BORROWED_VECTORS)]
        return (
            f"{self._ann_call(owner, owner_prop)} WITH node, score WHERE node.memory_id = $memory_id "
            f"WITH node AS owner, {self._ann_similarity(owner_prop)} AS score "
            f"MATCH (node:{label})-[:{relationship}]->(owner) WHERE node.{flag} = true "
            f"RETURN node.id AS id, score ORDER BY score DESC, id LIMIT $k"
        )

    def vector_exact_borrowed(self, label: str, prop: str, candidates: bool) -> str:
        """Exact cosine of the ``label`` nodes borrowing ``prop`` (``model.BORROWED_VECTORS``) within one memory,
        or within ``$ids`` when ``candidates``; ties by id. Returns id, score. A node whose owner holds no vector
        (a reindex has reset it and not yet re-embedded it) is not scored."""
        flag, relationship, owner, owner_prop = BORROWED_VECTORS[_checked_vector(label, prop, BORROWED_VECTORS)]
        match = f"UNWIND $ids AS cid MATCH (node:{label} {{id: cid}}) " if candidates else f"MATCH (node:{label}) "
        return (
            f"{match}WHERE node.memory_id = $memory_id AND node.{flag} = true "
            f"MATCH (node)-[:{relationship}]->(owner:{owner}) WHERE owner.{owner_prop} IS NOT NULL "
            f"RETURN node.id AS id, {self._cosine(owner_prop, node='owner')} AS score ORDER BY score DESC, id LIMIT $k"
        )

    def fulltext(self, label: str) -> str:
        """Every node of one memory matching the full-text query. Params: text, memory_id, limit.
        Returns id, speaker ('' when absent), terms and words (``bm25.stored_analysis``; null on a node written
        before them), and text only where terms is null (a search then analyzes it)."""
        label = _checked_label(label)
        return (
            f"{self._fulltext_call(label)} WITH node WHERE node.memory_id = $memory_id "
            "RETURN node.id AS id, coalesce(node.speaker, '') AS speaker, node.terms AS terms, node.words AS words, "
            "CASE WHEN node.terms IS NULL THEN node.text END AS text LIMIT $limit"
        )

    def fulltext_stats(self, label: str) -> str:
        """BM25 statistics of one memory's ``label`` nodes, per speaker, counted now (a memory without
        ``CorpusStats``). Params: memory_id. Returns speaker ('' when absent), documents, words (Σ whitespace-separated
        words of speaker and text)."""
        return f"{self._corpus_aggregate(label)} RETURN speaker, documents, words"

    def corpus_stats_refresh(self, label: str) -> str:
        """Count one memory's BM25 statistics of ``label`` (``fulltext_stats``) into its ``CorpusStats`` node, as
        aligned lists per speaker (empty when the memory has no such node). Params: memory_id, id."""
        label = _checked_label(label)
        return (
            f"{self._corpus_aggregate(label)} "
            "WITH collect(speaker) AS speakers, collect(documents) AS documents, collect(words) AS words "
            "MERGE (s:CorpusStats {id: $id}) "
            f"SET s.memory_id = $memory_id, s.label = '{label}', s.speakers = speakers, s.documents = documents, "
            "s.words = words"
        )

    @staticmethod
    def _corpus_aggregate(label: str) -> str:
        label = _checked_label(label)
        return (
            f"MATCH (node:{label}) WHERE node.memory_id = $memory_id AND node.text IS NOT NULL "
            "WITH coalesce(node.speaker, '') AS speaker, node "
            "WITH speaker, count(node) AS documents, "
            "sum(coalesce(node.words, size(split(node.text, ' '))) "
            "+ CASE WHEN speaker = '' THEN 0 ELSE size(split(speaker, ' ')) END) AS words"
        )


class FalkorDialect(Dialect):
    """FalkorDB 4.x (RediSearch full-text, HNSW vectors stored as ``vecf32``)."""

    name = "falkordb"

    def index_statements(self, dimension: int, ef_runtime: int, vectors: bool = True) -> list[str]:
        statements = []
        for label in LABELS:
            statements.append(f"CREATE INDEX FOR (n:{label}) ON (n.id)")
            statements.append(f"CREATE INDEX FOR (n:{label}) ON (n.memory_id)")
        statements += [f"CREATE INDEX FOR (n:{label}) ON (n.{prop})" for label, prop in KEY_INDEXES]
        # efRuntime (search breadth) is what recall needs: FalkorDB's default of 10 gave recall@10
        # 0.08 on random vectors. M 16 / efConstruction 100 kept recall@10 at 1.0 on 5,000 sentence
        # embeddings (tests/test_store_contract.py) and writes vectors ~1.7x faster than M 32 / 200.
        for label, prop in VECTOR_INDEXES if vectors else ():
            statements.append(
                f"CREATE VECTOR INDEX FOR (n:{label}) ON (n.{prop}) OPTIONS "
                f"{{dimension:{int(dimension)}, similarityFunction:'cosine', M:16, efConstruction:100, efRuntime:{int(ef_runtime)}}}"
            )
        for label in SEARCH_LABELS:
            statements.append(f"CREATE FULLTEXT INDEX FOR (n:{label}) ON (n.text)")
            # The memory's words in the same index: a search intersects with them inside RediSearch,
            # so its cost follows the memory's size, not the store's (1,000 memories in one store).
            # Added to an existing index as its own statement (FalkorDB then indexes the nodes it holds).
            statements.append(f"CREATE FULLTEXT INDEX FOR (n:{label}) ON (n.memory_id)")
        return statements

    def vector_drop_statements(self) -> list[str]:
        return [f"DROP VECTOR INDEX FOR (n:{label}) ON (n.{prop})" for label, prop in VECTOR_INDEXES]

    def obsolete_index_statements(self) -> list[str]:
        return [f"DROP VECTOR INDEX FOR (n:{label}) ON (n.{prop})" for label, prop in UNINDEXED_VECTORS]

    def _ann_call(self, label: str, prop: str) -> str:
        return f"CALL db.idx.vector.queryNodes('{label}', '{prop}', $kk, vecf32($vector)) YIELD node, score"

    def _ann_similarity(self, prop: str) -> str:
        return "1.0 - score"  # FalkorDB returns cosine distance

    def _cosine(self, prop: str, node: str = "node") -> str:
        return f"1.0 - vec.cosineDistance({node}.{prop}, vecf32($vector))"

    def _fulltext_call(self, label: str) -> str:
        return f"CALL db.idx.fulltext.queryNodes('{label}', $text) YIELD node, score"

    def fulltext_text(self, terms: list[str], memory_id: str) -> str:
        # RediSearch ANDs bare words and fields; '|' makes the words an OR like Lucene. The memory
        # clause is the id's RediSearch tokens (it splits on punctuation, keeps '_'), so it matches
        # every node of the memory and few others (queries filter on memory_id exactly afterwards).
        words = f"@text:({'|'.join(terms)})"
        scope = _MEMORY_TOKEN.findall(memory_id.lower())
        return f"@memory_id:({' '.join(scope)}) {words}" if scope else words


#: Lucene's ``english`` analyzer (Porter stemming, English stop words): Neo4j's full-text score is then BM25
#: over stems, the sparse leg's reference behaviour (bm25s with an English stemmer and stop words).
FULLTEXT_ANALYZER = "english"


class Neo4jDialect(Dialect):
    """Neo4j 5.13+ (Lucene full-text, HNSW vector indexes addressed by name)."""

    name = "neo4j"

    def adapt(self, cypher: str) -> str:
        return cypher.replace("vecf32(", "toFloatList(")

    # Index names follow neomodel's convention (``store/neo4j_schema.py`` declares the same
    # indexes), so the DDL below is a no-op where neomodel already installed them.
    @staticmethod
    def vector_index_name(label: str, prop: str) -> str:
        return f"vector_index_{label}_{prop}"

    @staticmethod
    def fulltext_index_name(label: str) -> str:
        return f"fulltext_index_{label}_text"

    def index_statements(self, dimension: int, ef_runtime: int, vectors: bool = True) -> list[str]:
        # Neo4j sizes the HNSW search by k (the caller oversamples); there is no efRuntime setting.
        statements = [
            f"CREATE INDEX index_{label}_memory_id IF NOT EXISTS FOR (n:{label}) ON (n.memory_id)" for label in LABELS
        ]
        statements += [
            f"CREATE INDEX index_{label}_{prop} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})"
            for label, prop in KEY_INDEXES
        ]
        for label, prop in VECTOR_INDEXES if vectors else ():
            statements.append(
                f"CREATE VECTOR INDEX {self.vector_index_name(label, prop)} IF NOT EXISTS FOR (n:{label}) ON (n.{prop}) "
                f"OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimension)}, `vector.similarity_function`: 'cosine'}}}}"
            )
        for label in SEARCH_LABELS:
            statements.append(
                f"CREATE FULLTEXT INDEX {self.fulltext_index_name(label)} IF NOT EXISTS FOR (n:{label}) ON EACH [n.text] "
                f"OPTIONS {{indexConfig: {{`fulltext.analyzer`: '{FULLTEXT_ANALYZER}'}}}}"
            )
        return statements

    def vector_drop_statements(self) -> list[str]:
        return [f"DROP INDEX {self.vector_index_name(label, prop)} IF EXISTS" for label, prop in VECTOR_INDEXES]

    def obsolete_index_statements(self) -> list[str]:
        return [f"DROP INDEX {self.vector_index_name(label, prop)} IF EXISTS" for label, prop in UNINDEXED_VECTORS]

    def _ann_call(self, label: str, prop: str) -> str:
        index = self.vector_index_name(label, prop)
        return f"CALL db.index.vector.queryNodes('{index}', $kk, $vector) YIELD node, score"

    def _ann_similarity(self, prop: str) -> str:
        # Neo4j 5.23+ quantizes vector indexes: the index's (1 + cos) / 2 is approximate, so the
        # oversampled candidates are rescored exactly (the same float32 cosine FalkorDB returns).
        return self._cosine(prop)

    def _cosine(self, prop: str, node: str = "node") -> str:
        return f"2.0 * vector.similarity.cosine({node}.{prop}, $vector) - 1.0"

    def _fulltext_call(self, label: str) -> str:
        return f"CALL db.index.fulltext.queryNodes('{self.fulltext_index_name(label)}', $text) YIELD node, score"

    def fulltext_text(self, terms: list[str], memory_id: str) -> str:
        # Terms are letters and digits only; lowercase keeps AND/OR/NOT from being operators.
        # The Lucene index holds text only: the memory filter follows in the query.
        return " OR ".join(terms)
