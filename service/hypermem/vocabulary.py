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

A word's vector depends only on the model and the word, and most words recur across memories, so the store keeps
it once: each Term records ``embed_key`` (``Embedder.text_key``: model name + word), the key of a store-wide
``WordVector`` node that every memory using the word shares (``hypermem.store.word_vectors``). A word new to the
store is embedded only when this process has not embedded it lately (``WORD_VECTORS``, an LRU). Sharing is exact
because ``Embedder.encode`` is: a word's vector is the same bit for bit alone, in any batch (padded beside longer
texts) and on one thread or all (minilm-int8, checked in ``tests/test_vocabulary.py``), so a memory's vocabulary,
and its expansions, are those of embedding every word afresh. A WordVector goes with the last Term that uses it
(``GraphStore.delete_unused_word_vectors``). Terms written before WordVector hold their own vector, which is read
alike and never lent.
"""

from __future__ import annotations

import logging
import re
import unicodedata
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING

import numpy as np
from spacy.lang.en.stop_words import STOP_WORDS

from hypermem.store.ids import term_id, word_vector_id
from hypermem.store.packed import pack_vector
from hypermem.store.word_vectors import WORD_VECTORS, known_word_vectors, stored_word_vectors

if TYPE_CHECKING:
    from hypermem.embed import Embedder
    from hypermem.store import GraphStore

log = logging.getLogger(__name__)

MIN_LETTERS = 3
VERSION = 1  # of the word rule (``words``); a store recording another version gets its vocabulary added again
LOOKUP_BATCH = 2000  # Term ids per lookup query
WORDS_CACHE = 50_000  # texts whose words ``words`` keeps
MAX_LETTERS = 24  # longer letter runs are identifiers, hashes or base64, not words with a neighbourhood
_WORD = re.compile(rf"(?<![^\W\d_])[^\W\d_]{{{MIN_LETTERS},{MAX_LETTERS}}}(?![^\W\d_])")
STOP = frozenset(STOP_WORDS)
_INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")  # soft hyphen, zero-width and BOM


def words(text: str) -> list[str]:
    """Content words of ``text``, lowercase, in order of first appearance, each once."""
    return list(_words(text))


@lru_cache(maxsize=WORDS_CACHE)
def _words(text: str) -> tuple[str, ...]:
    """``words``, cached: every query's turn ranker reads the words of the same stored turns again."""
    found = (w for w in _WORD.findall(_INVISIBLE.sub("", unicodedata.normalize("NFKC", text)).lower()))
    return tuple(dict.fromkeys(w for w in found if w not in STOP))


def vocabulary(texts: Iterable[str]) -> set[str]:
    """Every content word (``words``) of ``texts``."""
    out: set[str] = set()
    for text in texts:
        out.update(words(text))
    return out


def word_vectors(
    store: GraphStore, embedder: Embedder, found: Sequence[str], *, single_thread: bool = False
) -> dict[str, np.ndarray]:
    """The model's vector of each word: from ``WORD_VECTORS`` or the store's WordVectors
    (``store.word_vectors.stored_word_vectors``), else embedded (one call for the rest; on the one-thread model
    with ``single_thread``). Bit for bit the same vectors."""
    keys = {w: embedder.text_key(w) for w in found}
    stored = stored_word_vectors(store, keys.values())
    vectors = {w: stored[keys[w]] for w in found if keys[w] in stored}
    vectors.update(_embedded(embedder, [w for w in found if keys[w] not in stored], keys, single_thread))
    return vectors


def _embedded(embedder: Embedder, found: Sequence[str], keys: Mapping[str, str],
              single_thread: bool) -> dict[str, np.ndarray]:  # fmt: skip
    """Vectors of words no store holds: ``WORD_VECTORS``'s, else the model's (one call), which join it."""
    vectors = {w: v for w in found if (v := WORD_VECTORS.get(keys[w])) is not None}
    fresh = [w for w in found if w not in vectors]
    vectors.update(zip(fresh, embedder.encode(fresh, single_thread=single_thread)))
    for w in fresh:
        WORD_VECTORS.put(keys[w], vectors[w])
    return vectors


@dataclass(frozen=True)
class NewWords:
    """The content words of some texts that ``memory_id``'s vocabulary lacks (``find_new_words``): each with its
    ``embed_key``, and the keys whose WordVector the store holds already (``held``)."""

    memory_id: str
    keys: dict[str, str]  # new word -> its embed_key
    held: frozenset[str]

    def unembedded(self) -> dict[str, str]:
        """The new words whose vector neither the store nor ``WORD_VECTORS`` holds, with their keys: the ones the
        model must embed (an ingest embeds them beside its turns, then puts them in ``WORD_VECTORS``)."""
        return {w: k for w, k in self.keys.items() if k not in self.held and WORD_VECTORS.get(k) is None}


def find_new_words(store: GraphStore, embedder: Embedder, memory_id: str, texts: Iterable[str]) -> NewWords:
    """The content words of ``texts`` that ``memory_id``'s vocabulary lacks (``ingest/known_terms``) and which of
    their WordVectors the store holds (``ingest/known_word_vectors``). Reads only."""
    found = sorted(vocabulary(texts))
    known: set[str] = set()
    for start in range(0, len(found), LOOKUP_BATCH):
        ids = [term_id(memory_id, w) for w in found[start : start + LOOKUP_BATCH]]
        known.update(r["id"] for r in store.query("ingest/known_terms", ids=ids))
    keys = {w: embedder.text_key(w) for w in found if term_id(memory_id, w) not in known}
    return NewWords(memory_id, keys, frozenset(known_word_vectors(store, keys.values())) if keys else frozenset())


def write_new_words(store: GraphStore, embedder: Embedder, new: NewWords, *, single_thread: bool = False) -> int:
    """Add ``new``'s words to its memory's vocabulary: a WordVector for each the store lacks (from ``WORD_VECTORS``,
    else embedded, one short text each; ``single_thread``: on the one-thread model, for a caller running this beside
    other work), then their Terms. Returns how many words were added."""
    if new.keys:
        stamp = store.query("retrieve/vocabulary_stamp", memory_id=new.memory_id)
        generation = (stamp[0]["generation"] if stamp else None) or uuid.uuid4().hex
        vectors = _embedded(embedder, [w for w, k in new.keys.items() if k not in new.held], new.keys, single_thread)
        store.write("write/word_vectors", [{"id": word_vector_id(new.keys[w]), "embedding_b64": pack_vector(v)}
                                           for w, v in vectors.items()])  # fmt: skip
        store.write("write/terms", [{"memory_id": new.memory_id, "id": term_id(new.memory_id, w), "word": w,
                                     "generation": generation, "embed_key": k} for w, k in new.keys.items()])  # fmt: skip
    return len(new.keys)


def add_words(
    store: GraphStore, embedder: Embedder, memory_id: str, texts: Iterable[str], *, single_thread: bool = False
) -> int:
    """Add the content words of ``texts`` that ``memory_id``'s vocabulary lacks; returns how many. Only words new to
    the memory are looked up, and only those whose WordVector no memory of the store holds get one: from
    ``WORD_VECTORS``, else embedded (``write_new_words``)."""
    return write_new_words(
        store, embedder, find_new_words(store, embedder, memory_id, texts), single_thread=single_thread
    )


def prune_words(store: GraphStore, memory_id: str) -> int:
    """Remove the words of ``memory_id``'s vocabulary that no turn of it uses any more (an edited message took
    them away: its old words must not keep shaping, and showing in, the memory's expansions); returns how many.
    Reads every turn of the memory, so an ingest calls it only after an edit. Removing words gives the memory's
    Terms a new ``generation``: every process's cached copy (``store.vocabulary_matrix``, checked by word count and
    generation) is then reloaded, also when words added beside the removed ones left the count as it was. Their
    WordVectors go when no other memory uses them."""
    used = vocabulary(r["text"] for r in store.query("maintain/memory_turns", memory_id=memory_id))
    gone = [r for r in store.query("ingest/memory_terms", memory_id=memory_id) if r["word"] not in used]
    if gone:
        store.write("maintain/delete_terms_by_id", [{"id": r["id"]} for r in gone], memory_id=memory_id)
        store.query("maintain/restamp_terms", memory_id=memory_id, generation=uuid.uuid4().hex)
        store.delete_unused_word_vectors(r["embed_key"] for r in gone)
    return len(gone)


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
