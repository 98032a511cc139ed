"""A memory's vocabulary: every content word of its dialogue, as a ``Term`` node with its embedding (issue 11).

A query names a category ("what books has John read?"); the turns that answer it name its members
("I'm reading *Dune*", "a novel by …"). Neither BM25 (no shared word) nor a sentence embedding (one
vector for the whole turn) reliably connects them. The store therefore keeps the embedding model's
vector of each word the dialogue uses, and ``hypermem.retrieve.expansion`` expands a query's words
with their nearest words before a BM25 search over turns.

``Term`` nodes belong to their memory (``memory_id``; deleted with it), so one memory's words never
shape another's expansions. A memory's first Terms get a random ``generation`` that its later ones
share: with their count, it tells a process whether its copy of the memory's vocabulary is current
(``hypermem.store.vocabulary_matrix``). Text is NFKC-normalised and stripped of zero-width characters and soft
hyphens first (``ﬁ`` is ``fi``, ``lib\u2060rary`` is ``library``); words are lowercase runs of
``MIN_LETTERS``-``MAX_LETTERS`` letters that are not English stop words (spaCy's list, which is
longer than BM25's: "when", "did" and "thing" carry no topic).
"""

from __future__ import annotations

import logging
import re
import unicodedata
import uuid
from collections.abc import Iterable
from typing import TYPE_CHECKING

from spacy.lang.en.stop_words import STOP_WORDS

from hypermem.store.ids import term_id

if TYPE_CHECKING:
    from hypermem.embed import Embedder
    from hypermem.store import GraphStore

log = logging.getLogger(__name__)

MIN_LETTERS = 3
VERSION = 1  # of the word rule (``words``); a store recording another version gets its vocabulary added again
LOOKUP_BATCH = 2000  # Term ids per lookup query
MAX_LETTERS = 24  # longer letter runs are identifiers, hashes or base64, not words with a neighbourhood
_WORD = re.compile(rf"(?<![^\W\d_])[^\W\d_]{{{MIN_LETTERS},{MAX_LETTERS}}}(?![^\W\d_])")
STOP = frozenset(STOP_WORDS)
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")  # soft hyphen, zero-width and BOM


def words(text: str) -> list[str]:
    """Content words of ``text``, lowercase, in order of first appearance, each once."""
    found = (w for w in _WORD.findall(_INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).lower()))
    return list(dict.fromkeys(w for w in found if w not in STOP))


def vocabulary(texts: Iterable[str]) -> set[str]:
    """Every content word (``words``) of ``texts``."""
    out: set[str] = set()
    for text in texts:
        out.update(words(text))
    return out


def add_words(store: GraphStore, embedder: Embedder, memory_id: str, texts: Iterable[str]) -> int:
    """Add the content words of ``texts`` that ``memory_id``'s vocabulary lacks, with their vectors; returns how
    many. Only new words are embedded (one short text each), so a memory's vocabulary costs little after its
    first sessions."""
    found = sorted(vocabulary(texts))
    known: set[str] = set()
    for start in range(0, len(found), LOOKUP_BATCH):
        ids = [term_id(memory_id, w) for w in found[start : start + LOOKUP_BATCH]]
        known.update(r["id"] for r in store.query("ingest/known_terms", ids=ids))
    new = [w for w in found if term_id(memory_id, w) not in known]
    if new:
        stamp = store.query("retrieve/vocabulary_stamp", memory_id=memory_id)
        generation = (stamp[0]["generation"] if stamp else None) or uuid.uuid4().hex
        rows = [{"memory_id": memory_id, "id": term_id(memory_id, w), "word": w, "embedding": v.tolist(),
                 "generation": generation} for w, v in zip(new, embedder.encode(new))]  # fmt: skip
        store.write("write/terms", rows)
    return len(new)


def ensure_vocabulary(store: GraphStore, embedder: Embedder) -> int:
    """Give a store built before it had a vocabulary (or under another ``VERSION``) the words of every stored
    turn, once; returns the words added (0 when the store records ``VERSION`` already). The ingest keeps it
    complete from then on. Idempotent, and safe when several processes open the store at once."""
    meta = store.meta() or {}
    if meta.get("vocabulary") == VERSION:
        return 0
    added = 0
    memories = store.memory_ids()
    if memories:
        log.warning("adding the vocabulary of %d stored memories (once)", len(memories))
    for memory_id in memories:
        texts = (r["text"] for r in store.query("maintain/memory_turns", memory_id=memory_id))
        added += add_words(store, embedder, memory_id, texts)
    store.query("schema/set_vocabulary", version=VERSION)
    return added
