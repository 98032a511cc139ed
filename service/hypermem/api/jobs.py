"""Ingestion for the API: synchronous for small batches, a background thread for large ones.

Job state lives in the graph (``IngestJob`` nodes carrying the memory's ``memory_id``), so any
worker process can answer ``GET /v1/jobs/{job_id}`` and a deleted memory takes its jobs along.
One ingest runs at a time per process (``lock``): the pipeline batches its own writes, and a
memory must not be deleted halfway through an ingest. A job whose process dies stays ``running``.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, is_dataclass
from typing import Any

from hypermem.api.auth import utcnow
from hypermem.model import Message

log = logging.getLogger(__name__)


def to_json(value: Any) -> str:
    """JSON text of a result holding numpy scalars, datetimes or dataclasses."""

    def default(obj: Any) -> Any:
        if is_dataclass(obj):
            return asdict(obj)
        if hasattr(obj, "item"):  # numpy scalar
            return obj.item()
        if hasattr(obj, "tolist"):  # numpy array
            return obj.tolist()
        if hasattr(obj, "isoformat"):
            return obj.isoformat()
        return str(obj)

    return json.dumps(value, default=default, ensure_ascii=False)


def report_dict(report: Any) -> dict:
    """An ingest report as plain JSON-able data."""
    return json.loads(to_json(report))


class IngestJobs:
    """Runs ingests for one app. ``close()`` waits for the running job and drops queued ones."""

    def __init__(self, service):
        self.service = service
        self.lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="hypermem-ingest")

    def ingest_now(self, memory_id: str, messages: list[Message]) -> dict:
        """Ingest in the calling thread; returns the report as a dict."""
        with self.lock:
            return report_dict(self.service.ingest_messages(memory_id, messages))

    def submit(self, memory_id: str, messages: list[Message]) -> str:
        """Queue an ingest; returns the job id (32 hex digits)."""
        job_id = uuid.uuid4().hex
        self.service.store.query("api/create_job", id=job_id, memory_id=memory_id, messages=len(messages), now=utcnow())
        self._executor.submit(self._run, job_id, memory_id, messages)
        return job_id

    def _run(self, job_id: str, memory_id: str, messages: list[Message]) -> None:
        store = self.service.store
        with self.lock:
            if not store.query("api/start_job", id=job_id, now=utcnow()):
                return  # the memory was deleted while the job waited
            try:
                report = self.service.ingest_messages(memory_id, messages)
            except Exception as exc:  # noqa: BLE001 - a job records any failure instead of dying silently
                log.exception("ingest job %s failed", job_id)
                store.query("api/finish_job", id=job_id, status="failed", now=utcnow(), report=None, error=f"{type(exc).__name__}: {exc}")
                return
            store.query("api/finish_job", id=job_id, status="done", now=utcnow(), report=to_json(report), error=None)

    def get(self, job_id: str) -> dict | None:
        """The job record (``report`` decoded), or None."""
        rows = self.service.store.query("api/get_job", id=job_id)
        if not rows:
            return None
        job = dict(rows[0])
        job["report"] = json.loads(job["report"]) if job["report"] else None
        return job

    def close(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=True)
