"""Each memory's vocabulary as an in-process matrix: exact nearest-word search (``hypermem.vocabulary``, issue 11).

Cosine over Terms in Cypher costs ~3 µs per (word, Term) pair on FalkorDB 4.16, 3 ms per query word over a
1,000-word vocabulary; an ANN over a store-wide Term index filtered to one memory starves as memories
multiply, so each query word fell back to that exact scan. A vocabulary is small (1,050–1,734 words per
LoCoMo conversation: 1.6–2.7 MB of float32 at 384 dimensions), so ``VocabularyMatrices`` keeps each recently
queried memory's Term vectors as one unit-row matrix, and a lookup is one matrix product.

The matrix is loaded once per process: the memory's words and the keys of their store-wide vectors, and only the
vectors this process does not hold yet (``store.word_vectors``: words recur across memories), in one statement that
also gives the copy its stamp. Later lookups check it against the store by the memory's stamp (one indexed count,
~0.4 ms): how many Terms it has, and their ``generation``, a random id the first Terms of a memory get
(``hypermem.vocabulary``).
More Terms of the same generation load only the new words (a streaming ingest into the queried memory);
any other change (a memory deleted and built again, a reindex) loads the matrix again, so a lookup never
returns a word the store no longer holds for that memory.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from hypermem.store import bm25
from hypermem.store.packed import unpack_vector
from hypermem.store.word_vectors import stored_word_vectors

if TYPE_CHECKING:
    from hypermem.store.base import GraphStore

log = logging.getLogger(__name__)

MAX_CACHED_WORDS = 200_000  # words of all cached memories (~300 MB at 384 dimensions); least recently used go


@dataclass(frozen=True)
class Vocabulary:
    """One memory's Term words and unit vectors as stored at ``count`` Terms of ``generation``."""

    words: tuple[str, ...]
    rows: dict[str, int]  # word -> row of ``vectors``
    vectors: npt.NDArray[np.float32]  # (len(words), dimension), unit rows
    count: int
    generation: str | None

    @cached_property
    def stems(self) -> frozenset[str]:
        """The BM25 terms (``hypermem.store.bm25.analyze``) of the memory's words: the query terms it holds."""
        return frozenset(stem for word in self.words for stem in bm25.analyze(word))

    def nearest(self, words: Sequence[str], k: int,
                vectors: Mapping[str, Sequence[float] | npt.NDArray[np.floating]] | None = None,
                ) -> dict[str, list[tuple[str, float]]]:  # fmt: skip
        """The ``k`` words nearest each of ``words`` by cosine, best first (ties by word): ``{word: [(neighbour,
        cosine)]}``. A word is searched with its vector in ``vectors``, else with its own row (a word the memory
        uses); a word with neither is left out."""
        given = vectors or {}
        todo = [w for w in dict.fromkeys(words) if w in given or w in self.rows]
        if not todo or not self.words or k <= 0:
            return {}
        queries = np.stack([np.asarray(given[w], dtype=np.float32) if w in given else self.vectors[self.rows[w]]
                            for w in todo])  # fmt: skip
        queries /= np.maximum(np.linalg.norm(queries, axis=1, keepdims=True), 1e-12)
        out = {}
        for word, row in zip(todo, queries @ self.vectors.T):
            top = np.argpartition(-row, k - 1)[:k] if len(row) > k else np.arange(len(row))
            out[word] = sorted(((self.words[i], float(row[i])) for i in top), key=lambda n: (-n[1], n[0]))
        return out


def _term_vectors(store: GraphStore, terms: dict) -> tuple[list[str], npt.NDArray[np.float32]]:
    """The words of a ``retrieve/vocabulary_terms`` row (aligned lists ``words``, ``embed_keys``, ``embeddings``)
    and their vectors: a Term's own (written before WordVector), else its WordVector's (``store.word_vectors``). A
    word whose WordVector is gone (a deletion racing the ingest that added the word) is left out, and logged."""
    rows = list(zip(terms["words"], terms["embed_keys"], terms["embeddings"]))
    shared = stored_word_vectors(store, [key for _, key, inline in rows if not inline and key])
    words, vectors = [], []
    for word, key, inline in rows:
        vector = unpack_vector(inline) if inline else shared.get(key)
        if vector is None:
            log.warning("vocabulary word %r has no vector in the store; left out", word)
            continue
        words.append(word)
        vectors.append(vector)
    return words, (np.stack(vectors) if vectors else np.zeros((0, 0), dtype=np.float32))


def _vocabulary(words: list[str], vectors: npt.NDArray[np.float32], count: int, generation: str | None) -> Vocabulary:
    norms = np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12) if len(vectors) else 1.0
    return Vocabulary(tuple(words), {w: i for i, w in enumerate(words)}, vectors / norms, count, generation)


class VocabularyMatrices:
    """``get(store, memory_id)`` -> the memory's ``Vocabulary``, current as of this call; thread-safe."""

    def __init__(self, max_words: int = MAX_CACHED_WORDS):
        self.max_words = max_words
        self._cached: OrderedDict[str, Vocabulary] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, store: GraphStore, memory_id: str) -> Vocabulary:
        """The memory's vocabulary: loaded whole when this process holds no copy (``retrieve/vocabulary_terms``, one
        statement: no stamp first), else checked by its stamp (``retrieve/vocabulary_stamp``) and extended or loaded
        again when the store holds other Terms than the cached ones. Raises ``StoreError``."""
        with self._lock:
            cached = self._cached.get(memory_id)
        if cached is None:
            terms = store.query("retrieve/vocabulary_terms", memory_id=memory_id, known=[])[0]
            vocabulary = _vocabulary(*_term_vectors(store, terms), len(terms["words"]), terms["generation"])
        else:
            vocabulary = self._checked(store, memory_id, cached)
        with self._lock:
            self._cached[memory_id] = vocabulary
            self._cached.move_to_end(memory_id)
            while len(self._cached) > 1 and sum(len(v.words) for v in self._cached.values()) > self.max_words:
                self._cached.popitem(last=False)
        return vocabulary

    @staticmethod
    def _checked(store: GraphStore, memory_id: str, cached: Vocabulary) -> Vocabulary:
        """``cached`` when the memory's stamp matches it; its words plus the new ones when the store holds more Terms
        of its generation (a streaming ingest into the queried memory); else the vocabulary loaded again."""
        stamp = store.query("retrieve/vocabulary_stamp", memory_id=memory_id)
        count, generation = (int(stamp[0]["words"]), stamp[0]["generation"]) if stamp else (0, None)
        if (cached.count, cached.generation) == (count, generation):
            return cached
        if count == 0:
            return _vocabulary([], np.zeros((0, 0), dtype=np.float32), 0, generation)
        grows = cached.generation == generation and cached.count < count
        known = list(cached.words) if grows else []
        words, vectors = _term_vectors(
            store, store.query("retrieve/vocabulary_terms", memory_id=memory_id, known=known)[0]
        )
        if grows:
            words = list(cached.words) + words
            vectors = np.vstack([cached.vectors, vectors]) if len(vectors) else cached.vectors
        return _vocabulary(words, vectors, count, generation)
