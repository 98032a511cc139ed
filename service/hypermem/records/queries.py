"""Stored query results (``QueryRecord``) with retention and a size bound (issue 9 §7).

Each query's result is kept as JSON for ``GET /v1/queries/{id}/explanation`` and the MCP tool
``explain_query``. Per memory, only the newest ``Settings.query_records_per_memory`` records younger
than ``query_record_max_age_days`` are kept; a result above ``query_record_max_bytes`` of JSON is
stored without its evidence lists (``truncated: true``), keeping analysis, config, stopping decision
and context.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hypermem.config import Settings
from hypermem.records import utcnow
from hypermem.store import GraphStore

if TYPE_CHECKING:
    from hypermem.retrieve.result import QueryResult

EVIDENCE = ("topics", "episodes", "facts", "turns")


def record(result: QueryResult) -> dict[str, Any]:
    """The record of a query that just ran: ``result.to_dict()`` with ``created_at`` (now, UTC)."""
    return {**result.to_dict(), "created_at": utcnow()}


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False)


def bounded(result: dict[str, Any], max_bytes: int) -> str:
    """``result`` as JSON text of at most about ``max_bytes`` (evidence lists dropped when over)."""
    text = _json(result)
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    slim = {k: v for k, v in result.items() if k not in EVIDENCE}
    slim.update({k: [] for k in EVIDENCE}, truncated=True)
    text = _json(slim)
    if len(text.encode("utf-8")) > max_bytes:
        slim["context"] = None
        text = _json(slim)
    return text


def save(store: GraphStore, settings: Settings, memory_id: str, query: str, result: dict[str, Any]) -> None:
    """Store one result (a ``record``: ``query_id`` and ``created_at`` set), then apply the memory's retention."""
    store.query("api/save_query", id=result["query_id"], memory_id=memory_id, query=query,
                created_at=result["created_at"], result=bounded(result, settings.query_record_max_bytes))  # fmt: skip
    before = datetime.now(UTC) - timedelta(days=settings.query_record_max_age_days)
    store.query("api/prune_queries", memory_id=memory_id, keep=settings.query_records_per_memory,
                before=before.isoformat(timespec="seconds"))  # fmt: skip


def get(store: GraphStore, query_id: str) -> tuple[str, dict[str, Any]] | None:
    """``(memory_id, stored result)`` of a past query, or None."""
    rows = store.query("api/get_query", id=query_id)
    return (rows[0]["memory_id"], json.loads(rows[0]["result"])) if rows else None
