"""The ingest's embedding: groups of texts embedded in order on the ingest's threads, each group's vectors ready on its own.

An ingest embeds its turns and its vocabulary's new words in groups: the turns of its first sessions, then the
rest (``hypermem.ingest.pipeline.session_chunks``), then the words. Every group's tasks are queued at once, group after group, so no
thread waits between groups; the caller takes a group's vectors as soon as they are done (``EmbeddingSchedule.vectors``)
and builds its episodes and facts while the threads embed the next group. Within a group the tasks hold texts of
alike length, longest first (``Embedder.plan_tasks``), so the last tasks of a group are its shortest.

Only one thread embeds until ``widen`` (the annotation worker's future) is done: more would fight the worker for the
cores; then every thread does.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor

import numpy as np

from hypermem.embed import Embedder, EncodeTask
from hypermem.ingest.plan import SessionBuild
from hypermem.store.word_vectors import WORD_VECTORS

# Turns per embedding task: a few of the model's batches (~0.2 s), so a thread that is free takes the next one soon,
# and the embedding takes every core soon after the annotation worker finishes.
EMBED_TASK = 32


class _Gate:
    """Lets ``first`` tasks run at once until ``widen`` is done, then ``then``."""

    def __init__(self, first: int, then: int, widen: Future):
        self._lock = threading.Condition()
        self._running = 0
        self._limit = first
        widen.add_done_callback(lambda _: self._set_limit(then))

    def _set_limit(self, limit: int) -> None:
        with self._lock:
            self._limit = limit
            self._lock.notify_all()

    def run(self, embedder: Embedder, task: EncodeTask) -> np.ndarray:
        with self._lock:
            self._lock.wait_for(lambda: self._running < self._limit)
            self._running += 1
        try:
            return embedder.encode_task(task)
        finally:
            with self._lock:
                self._running -= 1
                self._lock.notify()


class EmbeddingSchedule:
    """The vectors of ``groups`` (lists of texts), embedded in tasks of ``task_size`` texts on ``pool``'s
    ``threads`` threads, group by group; one thread until ``widen`` is done. ``vectors(n)`` waits for group ``n``
    and returns its unit-norm float32 ``(dim,)`` rows in the group's order (a text's vector does not depend on the
    texts batched with it); it raises the error of a failed task. ``cancel()`` drops the tasks not yet started."""

    def __init__(
        self,
        embedder: Embedder,
        pool: ThreadPoolExecutor,
        threads: int,
        groups: Sequence[list[str]],
        widen: Future,
        task_size: int = EMBED_TASK,
    ):
        gate = _Gate(1, threads, widen)
        self._sizes = [len(texts) for texts in groups]
        self._tasks: list[list[tuple[list[int], Future[np.ndarray]]]] = []
        for texts in groups:
            planned = embedder.plan_tasks(texts, task_size) if texts else []
            self._tasks.append([(task.indices, pool.submit(gate.run, embedder, task)) for task in planned])

    def vectors(self, group: int) -> list[np.ndarray]:
        out: list[np.ndarray] = [np.empty(0)] * self._sizes[group]
        for indices, future in self._tasks[group]:
            for i, vector in zip(indices, future.result()):
                out[i] = vector
        return out

    def cancel(self) -> None:
        for group in self._tasks:
            for _, future in group:
                future.cancel()


class QueuedVectors:
    """The turn vectors of an ingest's ``chunks`` (``hypermem.ingest.pipeline.session_chunks``) and its vocabulary's
    new words, queued on an ``EmbeddingSchedule``: one group per chunk (``chunk_texts[n]``: key -> text of the texts
    chunk ``n`` embeds first), then the words' group (``words``: word -> key). The words come last: only the
    vocabulary's writes need them, on a thread of their own, so the last chunk's build, the plan and their writes run
    while the words embed and the cores stay busy to the end (ingest/embedding 1.25-1.30 against 1.32-1.34 with the
    words before the last chunk: ``bench/bench_ingest.py``, cores kept busy 1.89 against 1.84-1.85). ``take(n)``
    gives chunk ``n``'s turns without a vector theirs (a text an earlier chunk embedded too: the same vector);
    ``take_words()`` waits for the words' vectors and puts them into ``WORD_VECTORS`` (for
    ``hypermem.vocabulary.write_new_words``)."""

    def __init__(
        self,
        embedder: Embedder,
        pool: ThreadPoolExecutor,
        threads: int,
        chunks: list[list[SessionBuild]],
        chunk_texts: list[dict[str, str]],
        words: dict[str, str],
        widen: Future,
    ):
        self.chunks = chunks
        self._chunk_keys = [list(texts) for texts in chunk_texts]
        self._word_keys = list(words.values())
        groups = [*(list(texts.values()) for texts in chunk_texts), list(words)]
        self._schedule = EmbeddingSchedule(embedder, pool, threads, groups, widen)
        self._by_key: dict[str, list[float]] = {}

    def take(self, n: int) -> None:
        for key, vector in zip(self._chunk_keys[n], self._schedule.vectors(n)):
            self._by_key[key] = vector.tolist()
        for turn in (t for s in self.chunks[n] for t in s.turns if t.embedding is None):
            turn.embedding = self._by_key[turn.embed_key or ""]

    def cancel(self) -> None:
        """Drop the embedding tasks not yet started (a failed ingest)."""
        self._schedule.cancel()

    def take_words(self) -> None:
        for key, vector in zip(self._word_keys, self._schedule.vectors(len(self.chunks))):
            WORD_VECTORS.put(key, vector)
