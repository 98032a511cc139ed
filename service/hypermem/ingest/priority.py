"""CPU priority of ingest's background work: queries served on the same machine keep their latency.

An ingest is a batch job: its turn embedding and its annotation worker (``hypermem.ingest.annotate``)
can use every core for a minute, while a query wants a few milliseconds of one core now. With the
ingest at a higher nice value (``Settings.ingest_nice``), the kernel serves the queries first and
gives the ingest every cycle they leave: on an idle machine the ingest loses nothing.

On Linux the nice value belongs to a thread, so only the threads that do ingest work are lowered,
never the caller's own thread (a web server's request thread also serves queries). Elsewhere only
the worker process is lowered. Lowering is best effort: a refusal is logged, never raised.
"""

from __future__ import annotations

import logging
import os
import sys
import threading

log = logging.getLogger(__name__)


def lower_thread_priority(nice: int) -> None:
    """Raise the calling thread's nice value to ``nice`` (0-19) when it is lower (Linux only)."""
    if nice <= 0 or not sys.platform.startswith("linux"):
        return
    thread = threading.get_native_id()
    try:
        if os.getpriority(os.PRIO_PROCESS, thread) < nice:
            os.setpriority(os.PRIO_PROCESS, thread, nice)
    except OSError as exc:
        log.info("could not lower the priority of ingest thread %s: %s", thread, exc)


def lower_process_priority(nice: int) -> None:
    """Raise this whole process's nice value to ``nice`` (0-19) when it is lower (a worker process)."""
    if nice <= 0 or not hasattr(os, "nice"):
        return
    try:
        current = os.nice(0)
        if current < nice:
            os.nice(nice - current)
    except OSError as exc:
        log.info("could not lower the priority of worker process %s: %s", os.getpid(), exc)
