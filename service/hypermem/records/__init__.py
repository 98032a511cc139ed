"""What the API and the MCP server keep in the graph beside the memory itself, with no Flask in it.

- ``queries``: stored query results (``QueryRecord``) with retention and a size bound;
- ``jobs``: background ingest jobs (``IngestJob``) and the runner that executes them;
- ``keys``: tenant API keys (``ApiKey``, only a SHA-256 of the key) and who holds a bearer key;
- ``owners``: which tenant owns a memory (``MemoryOwner``).

Every record carries the ``memory_id`` it belongs to (keys excepted), so deleting a memory takes its
records along. Times are UTC ISO 8601 strings with seconds (``utcnow``).
"""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> str:
    """Now, UTC, ISO 8601 with seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")
