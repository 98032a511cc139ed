"""The Python-bound ingest stages (spaCy NER + dates, YAKE keywords) in a worker process.

The turn embedding (onnxruntime) and these stages each need a core. On threads of one process they
also fight for the GIL: on the 2-core development machine, NER and keywords of 788 LoCoMo turns took
2.7 s alone, 3.7-3.9 s beside the embedding on a thread and 2.7-3.2 s beside it in a process, and
the embedding beside them 6.4-7.2 s on a thread against 5.9 s with them in a process (its 6.0 s
alone). So a large ingest sends them to one worker process, started on first use and reused by
every later ingest of this process (``bench/bench_ingest.py`` measures the effect).

Small ingests (fewer than ``WORKER_MIN_TEXTS`` texts, e.g. a live message) run in-process: they
would not gain, and the first one would wait for the worker to start (spaCy loads in seconds).
A worker that dies is replaced, and the work it had is redone in-process, so nothing is lost.

After the turns are embedded, the worker is idle while the ingest's thread builds episodes: the
episodes' YAKE titles (the largest part of that stage) are shared between the two
(``SharedKeywords``): the worker takes chunks from the front, the ingest's thread, once its other
work is done, takes back the chunks the worker has not started, from the back.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from datetime import datetime

from hypermem.cpu import freeze_loaded_objects, space_out_collections
from hypermem.ingest.elements import ElementExtractor, TurnElements
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.priority import lower_process_priority

log = logging.getLogger(__name__)

WORKER_MIN_TEXTS = 64  # fewer turns than this are annotated in-process
SHARED_CHUNK = 8  # keyword requests per chunk of a SharedKeywords (~30 ms of YAKE on LoCoMo episodes)

_worker: dict[str, tuple[ElementExtractor, KeywordExtractor]] = {}  # in the worker: spaCy model -> extractors


@dataclass
class Annotation:
    """What the Python-bound stages found: the elements of each turn, and the keywords of each keyword text."""

    elements: list[TurnElements]
    keywords: dict[str, list[str]]


def annotate(
    spacy_model: str,
    texts: list[str],
    bases: list[datetime],
    speakers: frozenset[str],
    keyword_texts: list[str],
    keyword_count: int,
) -> Annotation:
    """Elements of ``texts`` (said at ``bases``; ``speakers`` name persons, never places) and the top
    ``keyword_count`` YAKE keywords of each of ``keyword_texts``. Runs in whichever process calls it."""
    elements, keywords = _extractors(spacy_model)
    return Annotation(
        elements.extract(texts, bases, speakers), {text: keywords.top(text, keyword_count) for text in keyword_texts}
    )


def top_keywords(spacy_model: str, requests: list[tuple[str, frozenset[str]]], n: int) -> list[list[str]]:
    """``KeywordExtractor.top(text, n, exclude)`` of each ``(text, exclude)`` request, in the worker."""
    keywords = _extractors(spacy_model)[1]
    return [keywords.top(text, n, exclude) for text, exclude in requests]


def _extractors(spacy_model: str) -> tuple[ElementExtractor, KeywordExtractor]:
    """This process's extractors (loaded on first use)."""
    if spacy_model not in _worker:
        _worker[spacy_model] = (ElementExtractor(spacy_model), KeywordExtractor(cache_size=0))
        space_out_collections()  # and spaCy out of the collector's walks (hypermem.cpu): 3-6% less annotation CPU
        freeze_loaded_objects()
    return _worker[spacy_model]


class Annotator:
    """Runs ``annotate`` in the shared worker process (large inputs) or in-process (small ones).

    ``submit(...)`` returns a ``Future[Annotation]``; ``done()`` on it tells the caller when the
    worker's core is free again."""

    def __init__(self, spacy_model: str, nice: int = 0):
        self.spacy_model = spacy_model
        self.nice = nice  # the worker process's nice value (``hypermem.ingest.priority``)

    def start(self) -> Future[Annotation]:
        """Start the worker process and load spaCy in it now, not on the first large ingest (which would
        wait seconds for it); the future is done when the worker is ready."""
        return _pool(self.nice).submit(annotate, self.spacy_model, [], [], frozenset(), [], 0)

    def submit(
        self,
        texts: list[str],
        bases: list[datetime],
        speakers: frozenset[str],
        keyword_texts: list[str],
        keyword_count: int,
    ) -> Future[Annotation]:
        args = (self.spacy_model, texts, bases, speakers, keyword_texts, keyword_count)
        if len(texts) >= WORKER_MIN_TEXTS:
            try:
                return _fallback_on_break(_pool(self.nice).submit(annotate, *args), lambda: annotate(*args))
            except (BrokenProcessPool, RuntimeError) as exc:  # the pool broke before this call
                log.warning("annotation worker unavailable (%s); annotating in-process", exc)
                _reset_pool()
        local: Future[Annotation] = Future()
        local.set_result(annotate(*args))
        return local

    def share_keywords(
        self, keywords: KeywordExtractor, requests: list[tuple[str, frozenset[str]]], n: int
    ) -> SharedKeywords:
        """Start the top ``n`` keywords of each ``(text, exclude)`` of ``requests`` in the worker (when there
        are at least ``WORKER_MIN_TEXTS // 4`` of them); ``result()`` on the returned object computes with
        ``keywords`` here whatever the worker has not started, and gives the keywords in request order."""
        chunks = [requests[i : i + SHARED_CHUNK] for i in range(0, len(requests), SHARED_CHUNK)]
        futures: list[Future[list[list[str]]] | None] = [None] * len(chunks)
        if len(requests) >= WORKER_MIN_TEXTS // 4:
            try:
                pool = _pool(self.nice)
                futures = [pool.submit(top_keywords, self.spacy_model, chunk, n) for chunk in chunks]
            except (BrokenProcessPool, RuntimeError) as exc:  # the pool broke before this call
                log.warning("annotation worker unavailable (%s); computing keywords in-process", exc)
                _reset_pool()
        return SharedKeywords(keywords, chunks, futures, n)


class SharedKeywords:
    """Keywords of chunks of requests, each computed by the worker (its future) or here (no future, or one
    the worker had not started when ``result`` cancelled it). The same keywords either way: YAKE is
    deterministic and both sides use ``KeywordExtractor`` with the same settings."""

    def __init__(
        self,
        keywords: KeywordExtractor,
        chunks: list[list[tuple[str, frozenset[str]]]],
        futures: list[Future[list[list[str]]] | None],
        n: int,
    ):
        self.keywords = keywords
        self.chunks = chunks
        self.futures = futures
        self.n = n

    def result(self) -> list[list[str]]:
        """The keywords of every request, in order. Takes back the worker's unstarted chunks, last first, and
        computes them on this thread; redoes here the chunks of a worker that died."""
        found: list[list[list[str]] | None] = [None] * len(self.chunks)
        for i in reversed(range(len(self.chunks))):
            future = self.futures[i]
            if future is None or future.cancel():
                found[i] = self._here(i)
        for i, future in enumerate(self.futures):
            if found[i] is None and future is not None:
                try:
                    found[i] = future.result()
                except BrokenProcessPool:
                    log.warning("annotation worker died; computing keywords in-process")
                    _reset_pool()
                    found[i] = self._here(i)
        return [keywords for chunk in found for keywords in chunk or []]

    def _here(self, i: int) -> list[list[str]]:
        return [self.keywords.top(text, self.n, exclude) for text, exclude in self.chunks[i]]


_lock = threading.Lock()
_executor: ProcessPoolExecutor | None = None
_owner = 0  # the pid that started ``_executor`` (a forked child, e.g. a gunicorn worker, starts its own)


def _pool(nice: int) -> ProcessPoolExecutor:
    """The one worker process, started on first use at nice value ``nice`` ("spawn": the parent holds
    onnxruntime and database threads that a fork would copy half-alive)."""
    global _executor, _owner
    with _lock:
        if _executor is None or _owner != os.getpid():
            _executor = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start_worker,
                initargs=(nice, os.getpid()),
            )
            _owner = os.getpid()
        return _executor


def _start_worker(nice: int, parent: int) -> None:
    """In the worker: lower its priority, leave Ctrl-C to the parent (which stops the worker; no traceback from
    here), and exit when ``parent`` dies (a killed ingest leaves no orphan)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    lower_process_priority(nice)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="hypermem-parent-watch", daemon=True).start()


def _reset_pool() -> None:
    global _executor
    with _lock:
        if _executor is not None and _owner == os.getpid():
            _executor.shutdown(wait=False, cancel_futures=True)
        _executor = None


@atexit.register
def _shutdown() -> None:
    _reset_pool()


def _fallback_on_break(future: Future[Annotation], redo: Callable[[], Annotation]) -> Future[Annotation]:
    """``future``, or when the worker dies under it, a future of ``redo()`` run in-process."""
    out: Future[Annotation] = Future()

    def settle(done: Future[Annotation]) -> None:
        if done.cancelled() or isinstance(done.exception(), BrokenProcessPool):
            log.warning("annotation worker died; annotating in-process")
            _reset_pool()
            try:
                out.set_result(redo())
            except BaseException as exc:  # handed to the caller through the future
                out.set_exception(exc)
        elif done.exception() is not None:
            out.set_exception(done.exception())
        else:
            out.set_result(done.result())

    future.add_done_callback(settle)
    return out
