"""The only package that knows a graph engine exists. ``open_store(settings)`` picks one by URL."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote, unquote, urlparse

from hypermem.store.base import GraphStore, Hit, SchemaMismatch, StoreError

if TYPE_CHECKING:
    from hypermem.config import Settings

__all__ = [
    "EMBEDDED_SCHEMES",
    "NEO4J_SCHEMES",
    "GraphStore",
    "Hit",
    "SchemaMismatch",
    "StoreError",
    "check_store_exists",
    "check_store_url",
    "embedded_data_dir",
    "open_store",
    "shown_url",
]

EMBEDDED_SCHEMES = ("falkordb",)
NEO4J_SCHEMES = ("bolt", "neo4j", "bolt+s", "neo4j+s")


def shown_url(store_url: str) -> str:
    """``store_url`` fit to print: a password in it (``bolt://user:password@host``) becomes ``***``."""
    url = urlparse(store_url)
    if url.password is None:
        return store_url
    netloc = f"{url.username}:***@{url.hostname}" + (f":{url.port}" if url.port else "")
    return url._replace(netloc=netloc).geturl()


def check_store_url(url: str) -> str:
    """``url`` if its scheme names an engine this package can open; else ``ValueError`` saying which do (for a bare
    filesystem path, with the ``falkordb:///PATH`` URL that names it)."""
    if urlparse(url).scheme not in EMBEDDED_SCHEMES + NEO4J_SCHEMES:
        hint = ""
        if url.startswith(("/", "~", ".")):
            path = os.path.abspath(os.path.expanduser(url))
            hint = f"; for the embedded store at that path use falkordb://{quote(path)}"
        raise ValueError("must start with falkordb://, bolt:// or neo4j:// (also bolt+s://, neo4j+s://)" + hint)
    return url


def embedded_data_dir(store_url: str) -> Path:
    """The directory of ``falkordb:///PATH``, created if missing. Raises ``StoreError`` naming HYPERMEM_STORE for
    a path ``_embedded_path`` refuses, or one that cannot be a directory (a file, or where it cannot be created)."""
    path = _embedded_path(store_url)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        problem = "a file, not a directory" if path.exists() else exc.strerror or type(exc).__name__
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: {str(path)!r} cannot hold the store ({problem})") from None
    return path


def check_store_exists(store_url: str) -> None:
    """Raise ``StoreError`` naming HYPERMEM_STORE when ``store_url`` is embedded and its directory does not exist, so a
    command that only reads or rewrites a store (query, memories, delete, reindex) does not create a store at a mistyped path. A Neo4j URL passes:
    its server says at connection whether it is there."""
    if urlparse(store_url).scheme in EMBEDDED_SCHEMES and not (path := _embedded_path(store_url)).is_dir():
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: no store at {str(path)!r} (an ingest creates one)")


def _embedded_path(store_url: str) -> Path:
    """The directory ``falkordb:///PATH`` names, neither checked nor created. Raises ``StoreError`` naming
    HYPERMEM_STORE for no path, a relative one (``falkordb://data/x`` would read as host ``data``, path ``/x``), the
    root, and a ``?query`` or ``#fragment`` (there is none to give); percent-escapes are decoded (``%20`` is a
    space)."""
    url = urlparse(store_url)
    if url.query or url.fragment or url.params:
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: falkordb:///PATH takes no ?query, ;params or #fragment")
    if url.netloc:
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: falkordb:// takes an absolute path after a third slash "
                         f"(falkordb:///PATH); {url.netloc!r} would be read as a host")  # fmt: skip
    if not url.path:
        raise StoreError("HYPERMEM_STORE=falkordb:///PATH needs a path")
    if re.search(r"%(?![0-9A-Fa-f]{2})|%2[Ff]|%00", url.path) or "\x00" in url.path:
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: a bad percent-escape, an encoded '/' or a NUL in the path")
    try:
        path = Path(unquote(url.path, errors="strict"))  # a URL: %20 is a space
    except UnicodeDecodeError:
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: the path is not UTF-8 once percent-decoded") from None
    if ".." in path.parts:
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: the path may not hold '..'")
    if path.resolve() == Path(path.anchor):
        raise StoreError(f"HYPERMEM_STORE={store_url!r}: the store needs a directory of its own, not the root")
    return path


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
    if url.scheme in EMBEDDED_SCHEMES:
        from hypermem.store.falkordb import FalkorDBStore

        return FalkorDBStore(
            embedded_data_dir(settings.store), settings.graph_name, keep_server=keep_server,
            vector_indexes=settings.falkordb_vector_indexes, **common,
        )  # fmt: skip
    if url.scheme in NEO4J_SCHEMES:
        from hypermem.store.neo4j import Neo4jStore

        return Neo4jStore(settings, **common)
    raise StoreError(f"unsupported store URL {settings.store!r}: use falkordb:///PATH, bolt:// or neo4j://")
