"""The memory's domain objects, as plain dataclasses handed from stage to stage.

Node ids are globally unique by construction: every id starts with its
``memory_id`` (``"conv-26/turn/D1:3"``), so the per-label uniqueness constraint
on ``id`` also guarantees uniqueness of ``(memory_id, id)``.

Layers (HyperMem §3.1): Topic -> Episode -> Fact, with raw Turns underneath
(HiGMem anchors). Elements (HingeMem §3.2): Person, Time, Location. Topics and
hyperedges are written as rows by the ingest pipeline; hyperedges are reified
``Hyperedge`` nodes whose ``MEMBER`` relationships carry weight w∈[0,1]
(see docs/graph-model.md).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass, field, fields
from datetime import datetime
from typing import Literal

ElementKind = Literal["Person", "Time", "Location"]
# "fact": a statement of a turn (or of several); "passage": a token-bounded slice of a long turn.
FactKind = Literal["fact", "passage"]
LABELS = (
    "Turn", "Episode", "Topic", "Fact", "Element", "Person", "Time", "Location", "Hyperedge",
    "IngestState", "IngestJob", "QueryRecord", "MemoryOwner", "ApiKey", "MemoryLock", "Term", "WordVector",
    "CorpusStats",
)  # fmt: skip
SEARCH_LABELS = ("Turn", "Episode", "Topic", "Fact")  # full-text indexed, and vector indexed below
# (label, property) pairs that carry a vector index. ``embedding`` holds the propagated vector
# (HyperMem §3.3); ``embedding_raw`` keeps the unpropagated one for the ablation.
VECTOR_INDEXES = (
    ("Turn", "embedding"),
    ("Topic", "embedding"),
    ("Episode", "embedding"),
    ("Fact", "embedding"),
    ("Fact", "embedding_raw"),
)
# Vectors searched by exact cosine over the memory, without an index: ``Episode.embedding_raw`` is
# searched only by the propagation=False ablation, over one memory's few hundred episodes, and its
# index cost 0.4 kB per fact of a store. ``Term.embedding`` (each memory's vocabulary,
# ``hypermem.vocabulary``) is searched in-process over the memory's words (``store.vocabulary_matrix``).
UNINDEXED_VECTORS = (("Episode", "embedding_raw"), ("Term", "embedding"))
# Vectors a node may borrow from another: a Fact with ``raw_is_turn`` true stores no ``embedding_raw``;
# its raw vector is, bit for bit, its one source turn's ``embedding`` (reached by ``FROM_TURN``).
# (label, property) -> (flag, relationship, owner label, owner property).
BORROWED_VECTORS = {("Fact", "embedding_raw"): ("raw_is_turn", "FROM_TURN", "Turn", "embedding")}

# (label, property) pairs with a range index beyond ``id`` and ``memory_id``: the key of a raw model
# vector (``Embedder.text_key``), by which an ingest finds the vectors of unchanged texts, and a word's
# vector in another memory's vocabulary (``hypermem.vocabulary``).
KEY_INDEXES = (("Turn", "embed_key"), ("Fact", "embed_key"), ("Term", "embed_key"))

# A memory_id (and any id built like one): 1-128 of letters, digits, '_', '.', ':' or '-'; no '/',
# which separates the parts of a node id.
MEMORY_ID_PATTERN = r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}"
# The years a message may be said in, every entry point alike (API, CLI, Python): outside them a date is a typo,
# and "said on 1 January 1" reads as a mistake in an answer model's context.
EARLIEST_YEAR, LATEST_YEAR = 1900, 2199


def node_id(memory_id: str, kind: str, local: str) -> str:
    """Globally unique node id: ``"{memory_id}/{kind}/{local}"``."""
    return f"{memory_id}/{kind}/{local}"


def unused_id(candidate: str, taken: Container[str]) -> str:
    """``candidate``, or the first of ``candidate#2``, ``candidate#3``, ... not in ``taken``. A topic or segment
    hyperedge is named after the episode that founds it; when a rebuilt session's episode founds a new one,
    the old one may live on under that name, anchored by other sessions' episodes."""
    n = 1
    found = candidate
    while found in taken:
        n += 1
        found = f"{candidate}#{n}"
    return found


@dataclass
class Turn:
    """One raw dialogue turn. ``timestamp`` is ISO 8601 (seconds); ``seq`` orders turns in a memory."""

    memory_id: str
    id: str
    dia_id: str
    speaker: str
    text: str
    timestamp: str
    session: str
    seq: int
    embedding: list[float] | None = None
    embed_key: str | None = None  # Embedder.text_key of the text ``embedding`` was encoded from


@dataclass
class Element:
    """A HingeMem element node. ``value`` is the ISO date for Time, the display name otherwise."""

    memory_id: str
    id: str
    kind: ElementKind
    name: str
    value: str


@dataclass
class Fact:
    """An atomic fact (HyperMem §3.1): ``content``, ``potential`` questions, ``keywords``, source turns.

    ``kind`` "passage" marks one slice of a long turn (``hypermem.ingest.passages``): same place in the
    hypergraph (a member of its episode's hyperedge, ``FROM_TURN`` its turn), content = the slice.
    ``speaker`` and ``family`` (a predicate family such as "residence") feed supersession
    (``hypermem.ingest.supersession``).
    """

    memory_id: str
    id: str
    episode_id: str
    content: str
    potential: list[str]
    keywords: list[str]
    date: str
    turn_ids: list[str]
    kind: FactKind = "fact"
    speaker: str | None = None
    family: str | None = None
    embedding: list[float] | None = None
    embedding_raw: list[float] | None = None
    embed_key: str | None = None  # Embedder.text_key of the text ``embedding_raw`` was encoded from; None if derived
    #: ``embedding_raw`` equals its one source turn's vector bit for bit: the store keeps it on the Turn only
    #: (``embed_key`` stays: ``ingest/stored_vectors`` finds the vector through the turn).
    raw_is_turn: bool = False


@dataclass
class Episode:
    """A segment of dialogue (HingeMem boundary rules) with title, extractive summary and span."""

    memory_id: str
    id: str
    session: str
    title: str
    summary: str
    start: str
    end: str
    participants: list[str]
    turn_ids: list[str]
    embedding: list[float] | None = None
    embedding_raw: list[float] | None = None


def as_row(obj) -> dict:
    """A dataclass as a plain dict for an ``UNWIND $rows`` write.

    Shallow: list fields (embeddings, turn ids) are shared, not copied (``dataclasses.asdict``
    deep-copies every float of every vector, a third of no-LLM ingest's Python time).
    """
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


# --- the input: messages as they stream in, and a conversation of them ---------------------------


@dataclass
class Message:
    """One live or loaded message. ``timestamp`` is timezone-naive local time of the conversation."""

    message_id: str
    speaker: str
    text: str
    timestamp: datetime
    session_id: str
    image_caption: str | None = None


@dataclass
class Conversation:
    """One conversation: ``sample_id`` becomes the memory_id; messages are in dialogue order."""

    sample_id: str
    speakers: list[str]
    messages: list[Message] = field(default_factory=list)

    @property
    def sessions(self) -> list[str]:
        return list(dict.fromkeys(m.session_id for m in self.messages))
