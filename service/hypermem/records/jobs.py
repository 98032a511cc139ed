"""Ingest jobs of the API and the MCP server: synchronous for small batches, a background thread for large ones.

Job state lives in the graph (``IngestJob`` nodes carrying the memory's ``memory_id``), so any
worker process can answer ``GET /v1/jobs/{job_id}`` and a deleted memory takes its jobs along.
Ingest and delete of one memory are serialised across processes by the memory's lease lock
(``hypermem.locks``). A running job renews a heartbeat with that lease and counts the messages
done (``progress``, with the report so far).

An accepted job is not lost. The job keeps its batch (``batch``, the messages as JSON text, dropped when
the job ends) until it is done or failed. At shutdown (``close()``) the running job stops after its current
chunk and, with the queued ones, is given back (queued, no worker). A process that starts (``resume()``)
or reads a job (``get()``) takes over every job given back or whose worker died (its process on this host
is gone, or a running job's heartbeat is older than three leases) and runs it again from the messages not
done yet (ingest is idempotent by message id, so a chunk cut short is simply ingested again). A job whose
workers died ``MAX_LOST`` times without giving it back, or that has no stored batch, is marked failed
(``WorkerLost: …``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import asdict
from datetime import datetime
from typing import Any

from hypermem.ingest.pipeline import IngestReport
from hypermem.locks import MemoryBusy, process_gone, process_id
from hypermem.model import Message
from hypermem.records import utcnow

log = logging.getLogger(__name__)

MAX_LOST = 3  # workers that may die running a job before it is marked failed (a batch that kills its worker)
LOCK_POLL_S = 2.0  # a job waiting for its memory's lock looks this often whether the process is shutting down

# ids of the jobs queued or running in this process (every IngestJobs of it): a job recorded with this process as
# its worker but not held here was left by an earlier process of the same host:pid (a container restarted)
_HERE: set[str] = set()
_HERE_GUARD = threading.Lock()


def encode_batch(messages: list[Message]) -> str:
    """``messages`` as the JSON text a job keeps (``decode_batch`` reads it back)."""
    return json.dumps([{**asdict(m), "timestamp": m.timestamp.isoformat()} for m in messages], ensure_ascii=False)


def decode_batch(text: str) -> list[Message]:
    """The messages of ``encode_batch(messages)``."""
    return [Message(**{**item, "timestamp": datetime.fromisoformat(item["timestamp"])}) for item in json.loads(text)]


def session_chunks(messages: list[Message], min_size: int) -> list[list[Message]]:
    """``messages`` cut at session boundaries into chunks of at least ``min_size`` (the last may be smaller).

    One chunk when sessions interleave (cutting would reorder turns)."""
    runs: list[list[Message]] = []
    for message in messages:
        if runs and runs[-1][-1].session_id == message.session_id:
            runs[-1].append(message)
        else:
            runs.append([message])
    if len({run[0].session_id for run in runs}) != len(runs):
        return [messages]
    chunks: list[list[Message]] = [[]]
    for run in runs:
        if len(chunks[-1]) >= min_size:
            chunks.append([])
        chunks[-1].extend(run)
    return chunks


class IngestJobs:
    """Runs ingests for one app. ``resume()`` at start takes over jobs whose worker is gone; ``close()`` at
    shutdown lets the running job end its chunk and gives it and the queued ones back."""

    def __init__(self, service, chunk_size: int = 50):
        self.service = service
        self.chunk_size = chunk_size
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hypermem-ingest")
        self._stopping = threading.Event()
        self._guard = threading.Lock()
        self._held: set[str] = set()  # ids of the jobs queued or running in this process

    def ingest_now(self, memory_id: str, messages: list[Message], before: Callable[[], Any] | None = None) -> dict:
        """Ingest in the calling thread holding the memory's lock; ``before()`` runs first under the lock
        (the ownership check: the memory may have been deleted while this call waited)."""
        with self.service.lock(memory_id, "ingest"):
            if before is not None:
                before()
            return asdict(self.service.ingest_messages(memory_id, messages))

    def submit(self, memory_id: str, messages: list[Message]) -> str:
        """Queue an ingest, its batch stored with the job; returns the job id (32 hex digits)."""
        job_id = uuid.uuid4().hex
        with _HERE_GUARD:  # held here before it is recorded with this process as its worker
            _HERE.add(job_id)
        try:
            self.service.store.query("api/create_job", id=job_id, memory_id=memory_id, messages=len(messages),
                                     now=utcnow(), worker=process_id(), batch=encode_batch(messages))  # fmt: skip
        except BaseException:
            with _HERE_GUARD:
                _HERE.discard(job_id)
            raise
        self._queue(job_id, memory_id, messages)
        return job_id

    def _queue(self, job_id: str, memory_id: str, messages: list[Message]) -> bool:
        """Run the job in this process's ingest thread; False (and the job given back) when shutting down."""
        with self._guard, _HERE_GUARD:
            if not self._stopping.is_set():
                self._held.add(job_id)
                _HERE.add(job_id)
                self._executor.submit(self._run, job_id, memory_id, messages)
                return True
            _HERE.discard(job_id)
        self._release(job_id)  # accepted while shutting down: the next process runs it
        return False

    def _run(self, job_id: str, memory_id: str, messages: list[Message]) -> None:
        try:
            ended = self._ingest(job_id, memory_id, messages)
        finally:
            with self._guard, _HERE_GUARD:
                self._held.discard(job_id)
                _HERE.discard(job_id)
        if not ended:
            self._release(job_id)

    def _ingest(self, job_id: str, memory_id: str, messages: list[Message]) -> bool:
        """Run the job's batch from its first chunk not done; False when it stopped for a shutdown first."""
        store = self.service.store

        def beat(done: int | None = None, report: IngestReport | None = None) -> None:
            text = json.dumps(asdict(report), ensure_ascii=False) if report is not None else None
            store.query("api/job_heartbeat", id=job_id, now=utcnow(), beat=time.time(), progress=done, report=text)

        report: IngestReport | None = None
        try:
            with ExitStack() as held:
                if not self._take_lock(held, memory_id, beat):
                    return False
                started = store.query("api/start_job", id=job_id, worker=process_id(), now=utcnow(), beat=time.time())
                if not started:
                    return True  # the memory was deleted while the job waited, or another process took it over
                skip = started[0]["progress"]
                if skip and started[0]["report"]:
                    report = IngestReport(**json.loads(started[0]["report"]))
                done = 0
                for chunk in session_chunks(messages, self.chunk_size):
                    if done + len(chunk) <= skip:  # done before the worker stopped
                        done += len(chunk)
                        continue
                    if self._stopping.is_set():
                        return False
                    last = self.service.ingest_messages(memory_id, chunk)
                    report = last if report is None else last.after(report)
                    done += len(chunk)
                    beat(done, report)
        except Exception as exc:
            log.exception("ingest job %s failed", job_id)
            self._finish(job_id, "failed", None, f"{type(exc).__name__}: {exc}")
            return True
        self._finish(job_id, "done", report, None)
        return True

    def _take_lock(self, held: ExitStack, memory_id: str, beat: Callable[[], None]) -> bool:
        """Wait up to a day for the memory's lock (another ingest or a delete holds it), but not past a shutdown."""
        deadline = time.monotonic() + 24 * 3600.0
        while not self._stopping.is_set():
            try:
                held.enter_context(self.service.lock(memory_id, "ingest", wait_s=LOCK_POLL_S, on_renew=beat))
                return True
            except MemoryBusy:
                if time.monotonic() >= deadline:
                    raise
        return False

    def _finish(self, job_id: str, status: str, report: IngestReport | None, error: str | None) -> None:
        text = json.dumps(asdict(report), ensure_ascii=False) if report is not None else None
        self.service.store.query("api/finish_job", id=job_id, status=status, now=utcnow(), report=text, error=error)

    def _release(self, job_id: str) -> None:
        """Give a job back (queued, no worker) for the next process: this one is shutting down."""
        try:
            if self.service.store.query("api/release_job", id=job_id, worker=process_id(), now=utcnow()):
                log.info("ingest job %s given back at shutdown; the next process to start runs it", job_id)
        except Exception:  # the store is gone too: the job's worker is then seen gone, and the job taken over
            log.exception("could not give back ingest job %s", job_id)

    def resume(self) -> int:
        """Take over every job given back or whose worker is gone (oldest first). Returns how many."""
        taken = 0
        for job in self.service.store.query("api/open_jobs"):
            reason = self._orphaned(job)
            if reason is not None and self._adopt(job, reason) == "queued":
                taken += 1
        if taken:
            log.warning("took over %d ingest job(s) whose worker had stopped", taken)
        return taken

    def _adopt(self, job: dict, reason: str) -> str:
        """Take over ``job`` (its worker is gone: ``reason``) and queue it here; returns its status after."""
        job_id = job["job_id"]
        with _HERE_GUARD:  # one thread of this process takes it over; it is held here before it names this worker
            if self._stopping.is_set() or job_id in _HERE:
                return job["status"]
            _HERE.add(job_id)
        try:
            return self._take_over(job, reason)
        finally:
            with self._guard, _HERE_GUARD:
                if job_id not in self._held:  # not queued here after all
                    _HERE.discard(job_id)

    def _take_over(self, job: dict, reason: str) -> str:
        lost = 1 if job["status"] == "running" and job.get("worker") is not None else 0  # it died running the job
        rows = self.service.store.query("api/adopt_job", id=job["job_id"], old=job.get("worker") or "",
                                        worker=process_id(), lost=lost, now=utcnow())  # fmt: skip
        if not rows:
            return "taken"  # another process took it first, or it ended meanwhile
        batch, times = rows[0]["batch"], rows[0]["lost"]
        if batch is None:
            error = f"WorkerLost: {reason}; the job's messages were not kept (an older version queued it): post the batch again"
        elif times > MAX_LOST:
            error = f"WorkerLost: {reason}; its workers stopped {times} times running it: it is not run again"
        else:
            log.warning("ingest job %s: %s; running it again", job["job_id"], reason)
            self._queue(job["job_id"], job["memory_id"], decode_batch(batch))
            return "queued"  # here, or given back again when this process is shutting down
        self._finish(job["job_id"], "failed", None, error)
        return "failed"

    def pending(self, memory_id: str) -> dict | None:
        """``{job_id, status, ...}`` of the oldest job of ``memory_id`` that has not ended (queued or running), or
        None."""
        return next((job for job in self.service.store.query("api/open_jobs") if job["memory_id"] == memory_id), None)

    def get(self, job_id: str) -> dict | None:
        """The job record (``report`` decoded), or None. A queued or running job whose worker is gone is
        taken over and queued in this process first (or marked failed when it cannot run again)."""
        rows = self.service.store.query("api/get_job", id=job_id)
        if not rows:
            return None
        job = dict(rows[0])
        reason = self._orphaned(job)
        if reason is not None:
            status = self._adopt(job, reason)
            if status != job["status"]:
                job = dict(self.service.store.query("api/get_job", id=job_id)[0])
        job["report"] = json.loads(job["report"]) if job["report"] and job["status"] == "done" else None
        for private in ("worker", "heartbeat"):
            job.pop(private, None)
        return job

    def _orphaned(self, job: dict) -> str | None:
        """Why an open job has no live worker (None: it has one)."""
        if job["status"] not in ("queued", "running"):
            return None
        if job.get("worker") is None:
            return "its worker gave it back at shutdown"
        if job["job_id"] in _HERE:
            return None
        if job["worker"] == process_id() or process_gone(job["worker"]):
            return f"the worker process {job['worker']} stopped before the job ended"
        stale = 3 * self.service.settings.lock_lease_s
        if job["status"] == "running" and job.get("heartbeat") is not None and time.time() - job["heartbeat"] > stale:
            return f"no heartbeat for more than {stale:.0f}s"
        return None

    def close(self) -> None:
        """Stop: the running job ends its current chunk; it and the queued jobs are given back for the next
        process (``resume()``)."""
        with self._guard:
            self._stopping.set()
        self._executor.shutdown(wait=True, cancel_futures=True)
        with self._guard, _HERE_GUARD:  # the jobs that never started (a job that ran gave itself back or ended)
            left, self._held = self._held, set()
            _HERE.difference_update(left)
        for job_id in sorted(left):
            self._release(job_id)
