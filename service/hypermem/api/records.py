"""Stored query results (``QueryRecord``) with retention and a size bound (issue 9 §7).

Each query's full result is kept for ``GET /v1/queries/{id}/explanation``. Per memory, only the
newest ``Settings.query_records_per_memory`` records younger than ``query_record_max_age_days``
are kept; a result above ``query_record_max_bytes`` of JSON is stored without its evidence
lists (``truncated: true``), keeping analysis, config, stopping decision and context.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from hypermem.api.jobs import to_json
from hypermem.config import Settings
from hypermem.store import GraphStore

EVIDENCE = ("topics", "episodes", "facts", "turns")


def bounded(result: dict, max_bytes: int) -> str:
    """``result`` as JSON text of at most about ``max_bytes`` (evidence lists dropped when over)."""
    text = to_json(result)
    if len(text.encode("utf-8")) <= max_bytes:
        return text
    slim = {k: v for k, v in result.items() if k not in EVIDENCE}
    slim.update({k: [] for k in EVIDENCE}, truncated=True)
    text = to_json(slim)
    if len(text.encode("utf-8")) > max_bytes:
        slim["context"] = None
        text = to_json(slim)
    return text


def save(store: GraphStore, settings: Settings, memory_id: str, query: str, result: dict) -> None:
    """Store one result, then apply the memory's retention."""
    store.query("api/save_query", id=result["query_id"], memory_id=memory_id, query=query,
                created_at=result["created_at"], result=bounded(result, settings.query_record_max_bytes))  # fmt: skip
    before = datetime.now(UTC) - timedelta(days=settings.query_record_max_age_days)
    store.query("api/prune_queries", memory_id=memory_id, keep=settings.query_records_per_memory,
                before=before.isoformat(timespec="seconds"))  # fmt: skip
