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

from hypermem.cpu import freeze_loaded_objects, single_thread_blas, space_out_collections
from hypermem.ingest.elements import ElementExtractor, TurnElements
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.priority import lower_process_priority

log = logging.getLogger(__name__)

WORKER_MIN_TEXTS = 64  # fewer turns than this are annotated in-process

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
    if spacy_model not in _worker:
        single_thread_blas()  # spaCy's matrix products (``load_spacy``) on this thread: the embedding has the other cores
        _worker[spacy_model] = (ElementExtractor(spacy_model), KeywordExtractor(cache_size=0))
        space_out_collections()  # and spaCy out of the collector's walks (hypermem.cpu): 3-6% less annotation CPU
        freeze_loaded_objects()
    elements, keywords = _worker[spacy_model]
    return Annotation(
        elements.extract(texts, bases, speakers), {text: keywords.top(text, keyword_count) for text in keyword_texts}
    )


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
