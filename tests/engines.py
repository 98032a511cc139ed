"""The graph engines the tests run on, and how a test opens a store on each. Reuse it in new tests.

The embedded FalkorDB always runs. Neo4j runs when ``NEO4J_URI`` is set (with ``NEO4J_USER``,
default ``neo4j``, and ``NEO4J_PASSWORD``, default ``hypermem-test``, the password
``tests/neo4j/server.sh`` sets); its tests carry the ``neo4j`` mark and skip without a server.
``.ci/run`` starts that server; in CI (``CI`` set) a missing ``NEO4J_URI`` fails those tests instead.

Usage::

    from engines import ENGINES, engine_settings

    @pytest.fixture(params=ENGINES)            # one run per engine
    def store(request, tmp_path):
        with open_store(engine_settings(request.param, tmp_path / "db")) as graph:
            ...

or take the session-wide ``hm_engine`` / ``hm_settings`` / ``hm_service`` fixtures of ``conftest.py``,
which are parametrised the same way.

Isolation. FalkorDB gets a fresh store per path. Neo4j Community has one database for the whole
run, so ``NEO4J_URI`` must name a throwaway server: the first Neo4j store a test session opens
empties that database (nodes, constraints, indexes), and from then on tests keep apart by memory id
(each test file uses ids of its own, and a test that writes a memory other tests might read uses a
fresh id or deletes it afterwards).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hypermem.config import Settings

#: ``pytest.mark.parametrize``/fixture params: every engine, Neo4j marked ``neo4j``.
ENGINES = ["falkordb", pytest.param("neo4j", marks=pytest.mark.neo4j)]
#: ENGINES and the embedded engine with HNSW vector indexes (``Settings.falkordb_vector_indexes``), for the store
#: contract: its ANN path and index upkeep.
INDEX_VARIANTS = [*ENGINES, "falkordb-hnsw"]

DEFAULT_NEO4J_PASSWORD = "hypermem-test"

_emptied: set[str] = set()


def neo4j_credentials() -> dict[str, str]:
    """``Settings`` fields for the test server named by ``NEO4J_URI``; skips the test when it is unset."""
    uri = os.environ.get("NEO4J_URI")
    if not uri and os.environ.get("CI"):
        pytest.fail("NEO4J_URI is not set in CI: .ci/run starts Neo4j with tests/neo4j/server.sh", pytrace=False)
    if not uri:
        pytest.skip("NEO4J_URI is not set: no Neo4j 5 server (start one with tests/neo4j/server.sh start .neo4j)")
    return {
        "store": uri,
        "neo4j_user": os.environ.get("NEO4J_USER", "neo4j"),
        "neo4j_password": os.environ.get("NEO4J_PASSWORD", DEFAULT_NEO4J_PASSWORD),
        "neo4j_database": os.environ.get("NEO4J_DATABASE", "neo4j"),
    }


def engine_settings(engine: str, path: Path, **extra) -> Settings:
    """Settings for a store on ``engine`` (``"falkordb"`` at ``path``, ``"falkordb-hnsw"`` the same with HNSW
    vector indexes, or ``"neo4j"``), no LLM.

    For Neo4j the first call of the session empties the test database (see the module docstring).
    """
    extra.setdefault("llm_base_url", None)
    if engine in ("falkordb", "falkordb-hnsw"):
        return Settings(store=f"falkordb://{path}", falkordb_vector_indexes=engine == "falkordb-hnsw", **extra)
    if engine != "neo4j":
        raise ValueError(f"unknown engine {engine!r}")
    settings = Settings(**neo4j_credentials(), **extra)
    if settings.store not in _emptied:
        _empty_neo4j(settings)
        _emptied.add(settings.store)
    return settings


def engine_env(settings: Settings) -> dict[str, str]:
    """``HYPERMEM_*`` environment variables that point a ``hypermem`` subprocess at ``settings``' store."""
    env = {"HYPERMEM_STORE": settings.store}
    if not settings.store.startswith("falkordb://"):
        env |= {"HYPERMEM_NEO4J_USER": settings.neo4j_user, "HYPERMEM_NEO4J_PASSWORD": settings.neo4j_password,
                "HYPERMEM_NEO4J_DATABASE": settings.neo4j_database}  # fmt: skip
    return env


def _empty_neo4j(settings: Settings) -> None:
    """Delete every node, constraint and index of the test database (a run starts from nothing)."""
    from hypermem.store.neo4j import Neo4jStore

    store = Neo4jStore(settings)
    try:
        while store.run_cypher("MATCH (n) WITH n LIMIT 10000 DETACH DELETE n RETURN count(*) AS n")[0]["n"]:
            pass
        for row in store.run_cypher("SHOW CONSTRAINTS YIELD name"):
            store.run_cypher(f"DROP CONSTRAINT `{row['name']}`")
        for row in store.run_cypher("SHOW INDEXES YIELD name, type WHERE type <> 'LOOKUP'"):
            store.run_cypher(f"DROP INDEX `{row['name']}`")
    finally:
        store.close()
