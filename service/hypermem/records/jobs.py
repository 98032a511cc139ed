"""Ingest jobs of the API and the MCP server: synchronous for small batches, a background thread for large ones.

Job state lives in the graph (``IngestJob`` nodes carrying the memory's ``memory_id``), so any
worker process can answer ``GET /v1/jobs/{job_id}`` and a deleted memory takes its jobs along.
Ingest and delete of one memory are serialised across processes by the memory's lease lock
(``hypermem.locks``). A running job renews a heartbeat with that lease and counts the messages
done (``progress``); a job whose worker died (its process is gone, or its heartbeat is older
than three leases) is marked failed when it is read.
"""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from typing import Any

from hypermem.locks import process_gone, process_id
from hypermem.model import Message
from hypermem.records import utcnow

log = logging.getLogger(__name__)


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
    """Runs ingests for one app. ``close()`` waits for the running job and drops queued ones."""

    def __init__(self, service, chunk_size: int = 50):
        self.service = service
        self.chunk_size = chunk_size
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hypermem-ingest")

    def ingest_now(self, memory_id: str, messages: list[Message], before: Callable[[], Any] | None = None) -> dict:
        """Ingest in the calling thread holding the memory's lock; ``before()`` runs first under the lock
        (the ownership check: the memory may have been deleted while this call waited)."""
        with self.service.lock(memory_id, "ingest"):
            if before is not None:
                before()
            return asdict(self.service.ingest_messages(memory_id, messages))

    def submit(self, memory_id: str, messages: list[Message]) -> str:
        """Queue an ingest; returns the job id (32 hex digits)."""
        job_id = uuid.uuid4().hex
        self.service.store.query(
            "api/create_job", id=job_id, memory_id=memory_id, messages=len(messages), now=utcnow(), worker=process_id()
        )
        self._executor.submit(self._run, job_id, memory_id, messages)
        return job_id

    def _run(self, job_id: str, memory_id: str, messages: list[Message]) -> None:
        store = self.service.store

        def beat(done: int | None = None) -> None:
            store.query("api/job_heartbeat", id=job_id, now=utcnow(), beat=time.time(), progress=done)

        try:
            with self.service.lock(memory_id, "ingest", wait_s=24 * 3600.0, on_renew=beat):
                if not store.query("api/start_job", id=job_id, now=utcnow(), beat=time.time()):
                    return  # the memory was deleted while the job waited
                done, report = 0, None
                for chunk in session_chunks(messages, self.chunk_size):
                    last = self.service.ingest_messages(memory_id, chunk)
                    report = last if report is None else last.after(report)
                    done += len(chunk)
                    beat(done)
        except Exception as exc:
            log.exception("ingest job %s failed", job_id)
            store.query(
                "api/finish_job",
                id=job_id,
                status="failed",
                now=utcnow(),
                report=None,
                error=f"{type(exc).__name__}: {exc}",
            )
            return
        text = json.dumps(asdict(report), ensure_ascii=False) if report is not None else None
        store.query("api/finish_job", id=job_id, status="done", now=utcnow(), report=text, error=None)

    def get(self, job_id: str) -> dict | None:
        """The job record (``report`` decoded), or None. A queued or running job whose worker died is
        marked failed first."""
        rows = self.service.store.query("api/get_job", id=job_id)
        if not rows:
            return None
        job = dict(rows[0])
        reason = self._dead_worker(job)
        if reason:
            self.service.store.query(
                "api/finish_job", id=job_id, status="failed", now=utcnow(), report=None, error=reason
            )
            job.update(status="failed", error=reason)
        job["report"] = json.loads(job["report"]) if job["report"] else None
        for private in ("worker", "heartbeat"):
            job.pop(private, None)
        return job

    def _dead_worker(self, job: dict) -> str | None:
        if job["status"] not in ("queued", "running"):
            return None
        if process_gone(job.get("worker")):
            return f"WorkerLost: the worker process {job['worker']} stopped before the job ended"
        stale = 3 * self.service.settings.lock_lease_s
        if job["status"] == "running" and job.get("heartbeat") is not None and time.time() - job["heartbeat"] > stale:
            return f"WorkerLost: no heartbeat for more than {stale:.0f}s"
        return None

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
