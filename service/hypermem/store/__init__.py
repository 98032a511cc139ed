"""The only package that knows a graph engine exists. ``open_store(settings)`` picks one by URL."""

from __future__ import annotations

from urllib.parse import urlparse

from hypermem.config import Settings
from hypermem.store.base import GraphStore, Hit, SchemaMismatch, StoreError

__all__ = ["GraphStore", "Hit", "SchemaMismatch", "StoreError", "open_store"]


def open_store(settings: Settings, *, keep_server: bool = False) -> GraphStore:
    """Open the store named by ``settings.store``.

    ``falkordb:///PATH`` starts or joins the embedded FalkorDB keeping its data in PATH
    (``keep_server`` leaves it running at ``close()``, for a server's worker processes).
    ``bolt://`` / ``neo4j://`` connect to Neo4j 5.13+. Raises ``StoreError`` for anything else.
    """
    common = {
        "write_batch_size": settings.write_batch_size,
        "vector_write_batch_size": settings.vector_write_batch_size,
        "vector_oversample": settings.vector_oversample,
        "ef_runtime": settings.hnsw_ef_runtime,
    }
    url = urlparse(settings.store)
    if url.scheme == "falkordb":
        if not url.path:
            raise StoreError("HYPERMEM_STORE=falkordb:///PATH needs a path")
        from hypermem.store.falkordb import FalkorDBStore

        return FalkorDBStore(url.path, settings.graph_name, keep_server=keep_server, **common)
    if url.scheme in ("bolt", "neo4j", "bolt+s", "neo4j+s"):
        from hypermem.store.neo4j import Neo4jStore

        return Neo4jStore(settings, **common)
    raise StoreError(f"unsupported store URL {settings.store!r}: use falkordb:///PATH, bolt:// or neo4j://")
