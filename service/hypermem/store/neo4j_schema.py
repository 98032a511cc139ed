"""The Neo4j schema as neomodel node classes (docs/graph-model.md).

neomodel declares, per label: a uniqueness constraint on ``id`` (``unique_index``),
a range index on ``memory_id``, a full-text index on ``text`` (Topic, Episode, Fact,
Turn) and cosine vector indexes on the embedding properties (``model.VECTOR_INDEXES``; not on
``model.UNINDEXED_VECTORS``).
Index names follow neomodel's convention, which ``Neo4jDialect`` uses to query them:
``constraint_unique_{Label}_id``, ``index_{Label}_memory_id``,
``fulltext_index_{Label}_text`` and ``vector_index_{Label}_{property}``.

The vector dimension is the embedding model's, known only at run time, so the
classes are built by ``node_classes(dimension)``. The store writes and reads through
the ``cypher/`` files, not through these classes: they exist to install the schema.
"""

from __future__ import annotations

import io

from neomodel import (
    ArrayProperty,
    FloatProperty,
    FulltextIndex,
    StringProperty,
    StructuredNode,
    VectorIndex,
    db,
)
from neomodel.exceptions import FeatureNotSupported

from hypermem.model import LABELS
from hypermem.store.dialect import FULLTEXT_ANALYZER


def node_classes(dimension: int) -> list[type[StructuredNode]]:
    """One neomodel class per label of ``model.LABELS``; vector indexes have ``dimension`` dimensions."""

    def vector() -> ArrayProperty:
        return ArrayProperty(
            FloatProperty(), vector_index=VectorIndex(dimensions=dimension, similarity_function="cosine")
        )

    class Node(StructuredNode):
        """Every node: a unique ``id`` (neomodel reserves the attribute name, hence ``node_id``) and ``memory_id``."""

        __abstract_node__ = True
        node_id = StringProperty(unique_index=True, db_property="id")
        memory_id = StringProperty(index=True)

    class Searchable(Node):
        __abstract_node__ = True
        text = StringProperty(fulltext_index=FulltextIndex(analyzer=FULLTEXT_ANALYZER))
        embedding = vector()

    class Turn(Searchable):
        embed_key = StringProperty(index=True)

    class Topic(Searchable):
        pass

    class Episode(Searchable):
        embedding_raw = ArrayProperty(FloatProperty())  # searched exactly (model.UNINDEXED_VECTORS)

    class Fact(Searchable):
        embedding_raw = vector()
        embed_key = StringProperty(index=True)

    class Element(Node):
        name = StringProperty()
        value = StringProperty()

    class Person(Element):
        pass

    class Time(Element):
        pass

    class Location(Element):
        pass

    class Hyperedge(Node):
        kind = StringProperty(choices={"topic": "topic", "episode": "episode", "segment": "segment"})

    class IngestState(Node):
        pass

    class IngestJob(Node):
        pass

    class QueryRecord(Node):
        pass

    class MemoryOwner(Node):
        pass

    class ApiKey(Node):
        pass

    class MemoryLock(Node):
        pass

    class Term(Node):
        """A word of its memory's vocabulary (``hypermem.vocabulary``)."""

        word = StringProperty()
        generation = StringProperty()
        embedding_b64 = StringProperty()  # the vector in Terms written before WordVector (base64 float32, store.packed)
        embedding = ArrayProperty(FloatProperty())  # the same in Terms written before embedding_b64
        embed_key = StringProperty(index=True)  # its WordVector's (ids.word_vector_id)

    class WordVector(Node):
        """A word's vector under one model, shared by every memory whose vocabulary holds the word (no memory_id)."""

        embedding_b64 = StringProperty()  # base64 float32 (store.packed), searched in-process

    class CorpusStats(Node):
        """One memory's BM25 statistics of one searched label (``GraphStore.refresh_corpus_stats``)."""

        label = StringProperty()

    classes = [Turn, Episode, Topic, Fact, Element, Person, Time, Location, Hyperedge, IngestState,
               IngestJob, QueryRecord, MemoryOwner, ApiKey, MemoryLock, Term, WordVector, CorpusStats]  # fmt: skip
    assert tuple(cls.__label__ for cls in classes) == LABELS
    return classes


def declared_indexes(classes: list[type[StructuredNode]]) -> set[tuple[str, str, str]]:
    """``(label, property, kind)`` for every constraint and index the classes declare (kind: UNIQUE, RANGE, FULLTEXT, VECTOR)."""
    out = set()
    for cls in classes:
        for name, prop in cls.defined_properties(aliases=False, rels=False).items():
            db_name = prop.get_db_property_name(name)
            for kind, declared in (
                ("UNIQUE", prop.unique_index),
                ("RANGE", prop.index),
                ("FULLTEXT", prop.fulltext_index),
                ("VECTOR", prop.vector_index),
            ):
                if declared:
                    out.add((cls.__label__, db_name, kind))
    return out


def install(driver, database: str, dimension: int) -> list[str]:
    """Install the schema with neomodel on ``driver``'s ``database``; return what neomodel reported.

    neomodel keeps one process-wide connection: it is pointed at the store's own driver
    and database here, so its config never disagrees with the store's settings.
    Servers older than neomodel's minimum for full-text (5.16) or vector (5.15) index
    DDL raise ``FeatureNotSupported`` for those properties; the caller then creates them
    from ``Neo4jDialect.index_statements``, whose names are the same.
    """
    from neomodel import get_config

    config = get_config()
    config.driver = driver
    config.database_name = database
    db.set_connection(driver=driver)
    report = io.StringIO()
    for cls in node_classes(dimension):
        try:
            db.install_labels(cls, quiet=False, stdout=report)
        except FeatureNotSupported as exc:
            report.write(f"{cls.__label__}: {exc}\n")
    return report.getvalue().splitlines()
