"""One writer per memory across processes: a lease lock node in the store (issue 9 §6).

Ingest and delete of a memory run under ``MemoryLock``. The lock is a ``MemoryLock`` node taken
with one atomic ``MERGE`` (``cypher/lock/acquire.cypher``): the holder writes its random token
and an expiry ``lease_s`` seconds ahead, and a heartbeat thread renews it every ``lease_s / 3``.
A holder that dies stops renewing, so its lock lapses after at most ``lease_s`` and the next
caller takes it; a waiter on the holder's own host sees at once that its process is gone (the
lock records ``host:pid``) and takes the lock over. Every process and gunicorn worker on the
same store sees the same lock.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid

from hypermem.errors import HypermemError
from hypermem.store import GraphStore
from hypermem.store.embedded import alive

log = logging.getLogger(__name__)


def process_id() -> str:
    """``"host:pid"`` of the calling process (read at call time: gunicorn forks after import)."""
    return f"{socket.gethostname()}:{os.getpid()}"


def process_gone(process: str | None) -> bool:
    """Whether ``process`` (``"host:pid"``) ran on this host and has stopped."""
    host, _, pid = (process or "").rpartition(":")
    return host == socket.gethostname() and pid.isdigit() and not alive(int(pid))


_held = threading.local()  # (store id, memory_id) of the locks this thread holds: nesting is a no-op


class MemoryBusy(HypermemError, TimeoutError):
    """Another ingest or delete of the memory held its lock for longer than the wait allowed."""

    def __init__(self, memory_id: str, operation: str | None, waited_s: float):
        super().__init__(f"memory {memory_id!r} is busy ({operation or 'another writer'}); waited {waited_s:.0f}s")
        self.memory_id = memory_id
        self.operation = operation


class MemoryLock:
    """``with MemoryLock(store, memory_id, "ingest"):`` runs the block as the memory's only writer.

    Waits up to ``wait_s`` seconds (polling every ``poll_s``), then raises ``MemoryBusy``.
    ``on_renew`` is called after every lease renewal (a job's heartbeat). Re-entrant within a
    thread: an inner ``MemoryLock`` of a memory the thread already holds does nothing.
    """

    def __init__(self, store: GraphStore, memory_id: str, operation: str, *, lease_s: float = 60.0,
                 wait_s: float = 60.0, poll_s: float = 0.1, on_renew=None):  # fmt: skip
        self.store = store
        self.memory_id = memory_id
        self.operation = operation
        self.lease_s = lease_s
        self.wait_s = wait_s
        self.poll_s = poll_s
        self.on_renew = on_renew
        self.token = uuid.uuid4().hex
        self.lost = False
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None
        self._nested = False

    @property
    def lock_id(self) -> str:
        return f"lock/{self.memory_id}"

    def _try(self) -> dict:
        return self.store.query("lock/acquire", id=self.lock_id, memory=self.memory_id, token=self.token, holder=process_id(),
                                operation=self.operation, now=time.time(), lease=float(self.lease_s))[0]  # fmt: skip

    def _take_over(self, row: dict) -> bool:
        """Take the lock from a holder whose process on this host is gone (no need to wait for its lease)."""
        if not process_gone(row["holder"]):
            return False
        log.warning("memory %s: lock holder %s is gone; taking its lock over", self.memory_id, row["holder"])
        return bool(self.store.query("lock/take_over", id=self.lock_id, old_token=row["token"], token=self.token,
                                     holder=process_id(), operation=self.operation, now=time.time(), lease=float(self.lease_s)))  # fmt: skip

    def __enter__(self) -> MemoryLock:
        held = _held.__dict__.setdefault("locks", set())
        if (id(self.store), self.memory_id) in held:
            self._nested = True
            return self
        started = time.monotonic()
        while True:
            row = self._try()
            if row["acquired"] or self._take_over(row):
                break
            if time.monotonic() - started >= self.wait_s:
                raise MemoryBusy(self.memory_id, row["operation"], time.monotonic() - started)
            time.sleep(self.poll_s)
        self._heartbeat = threading.Thread(target=self._renew, name=f"lock-{self.memory_id}", daemon=True)
        self._heartbeat.start()
        held.add((id(self.store), self.memory_id))
        return self

    def _renew(self) -> None:
        while not self._stop.wait(self.lease_s / 3):
            try:
                if not self._try()["acquired"]:
                    self.lost = True
                    log.error("lost the lock of memory %s (lease lapsed)", self.memory_id)
                    return
                if self.on_renew is not None:
                    self.on_renew()
            except Exception:
                log.exception("renewing the lock of memory %s failed", self.memory_id)

    def __exit__(self, *exc) -> None:
        if self._nested:
            return
        _held.locks.discard((id(self.store), self.memory_id))
        self._stop.set()
        if self._heartbeat is not None:
            self._heartbeat.join()
        self.store.query("lock/release", id=self.lock_id, token=self.token)
