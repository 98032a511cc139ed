"""Word vectors by ``embed_key``: this process's LRU, then the store's ``WordVector`` nodes (``hypermem.vocabulary``).

A word's vector depends only on the model and the word (``Embedder.text_key``: model name + word, 32 hex digits), so
the store keeps one ``WordVector`` node per key, shared by every memory whose vocabulary holds the word, and a
``Term`` names it by ``embed_key``. A memory's vocabulary (``store.vocabulary_matrix``) is then read as its words and
their keys, and only the vectors this process does not hold yet come back from the store: at 150 memories, words
recur across memories, so a memory not asked before costs a word list, not ~2,500 vectors (63 ms a query,
``bench/bench_scale.py``), and the store holds each word's 2 kB once, not once per memory (4.4 kB per fact).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from hypermem.store.ids import word_vector_id
from hypermem.store.packed import unpack_vector

if TYPE_CHECKING:
    from hypermem.store.base import GraphStore

CACHE_SIZE = 65_536  # word vectors kept per process: ~100 MB at 384 float32 dimensions
LOOKUP_BATCH = 2000  # WordVector ids per lookup query


class WordVectors:
    """A thread-safe LRU of word vectors (read-only float32 arrays) by ``Embedder.text_key``."""

    def __init__(self, size: int):
        self.size = size
        self._vectors: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> npt.NDArray[np.float32] | None:
        with self._lock:
            vector = self._vectors.get(key)
            if vector is not None:
                self._vectors.move_to_end(key)
            return vector

    def put(self, key: str, vector: npt.ArrayLike) -> None:
        vector = np.array(vector, dtype=np.float32)
        vector.setflags(write=False)
        with self._lock:
            self._vectors[key] = vector
            self._vectors.move_to_end(key)
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._vectors.clear()


WORD_VECTORS = WordVectors(CACHE_SIZE)


def stored_word_vectors(store: GraphStore, keys: Iterable[str]) -> dict[str, npt.NDArray[np.float32]]:
    """``{embed_key: vector}`` for the keys ``WORD_VECTORS`` or the store's WordVectors hold (``retrieve/
    word_vectors``, one query per ``LOOKUP_BATCH`` keys this process lacks); keys with neither are left out.
    What the store returned joins ``WORD_VECTORS``. Raises ``StoreError``."""
    out: dict[str, npt.NDArray[np.float32]] = {}
    missing = []
    for key in dict.fromkeys(keys):
        vector = WORD_VECTORS.get(key)
        if vector is None:
            missing.append(key)
        else:
            out[key] = vector
    for by_id in _by_id_batches(missing):
        for row in store.query("retrieve/word_vectors", ids=list(by_id)):
            key = by_id[row["id"]]
            out[key] = unpack_vector(row["embedding"])
            WORD_VECTORS.put(key, out[key])
    return out


def known_word_vectors(store: GraphStore, keys: Iterable[str]) -> set[str]:
    """The keys among ``keys`` whose WordVector the store holds (``ingest/known_word_vectors``). Raises
    ``StoreError``."""
    known: set[str] = set()
    for by_id in _by_id_batches(list(dict.fromkeys(keys))):
        known.update(by_id[r["id"]] for r in store.query("ingest/known_word_vectors", ids=list(by_id)))
    return known


def _by_id_batches(keys: list[str]) -> Iterator[dict[str, str]]:
    """``keys`` in lookups of ``LOOKUP_BATCH``, each as ``{WordVector id: embed_key}``."""
    for start in range(0, len(keys), LOOKUP_BATCH):
        yield {word_vector_id(k): k for k in keys[start : start + LOOKUP_BATCH]}
