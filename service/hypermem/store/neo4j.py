"""GraphStore on Neo4j 5.13+ through the official ``neo4j`` driver.

The URL comes from ``settings.store`` (``bolt://host:7687`` or ``neo4j://…``; a
``user:password@`` part overrides ``settings.neo4j_user`` / ``neo4j_password``), the
database from ``settings.neo4j_database``. The schema (uniqueness constraints on
``id``, ``memory_id`` indexes, full-text and vector indexes) is declared by the
neomodel classes in ``neo4j_schema``; ``Neo4jDialect.index_statements`` fills in
whatever neomodel cannot create on the connected server version.
"""

from __future__ import annotations

import logging
from typing import Any
from urllib.parse import urlparse, urlunparse

from neo4j import GraphDatabase
from neo4j.exceptions import AuthError, ClientError, ConfigurationError, ServiceUnavailable, SessionExpired
from neomodel import db as neomodel_db

from hypermem.config import Settings
from hypermem.store import neo4j_schema
from hypermem.store.base import GraphStore, StoreError
from hypermem.store.dialect import Neo4jDialect

log = logging.getLogger(__name__)

_UNREACHABLE = (ServiceUnavailable, SessionExpired)
_SECURITY = "Neo.ClientError.Security."  # the codes of a refused login (wrong credentials, too many tries in a row)


def _login_refused(exc: ClientError) -> bool:
    return isinstance(exc, AuthError) or (exc.code or "").startswith(_SECURITY)


def _first_line(exc: BaseException) -> str:
    """The driver's message without its multi-line detail, and the reason beneath it when the driver wraps one
    ("Unable to retrieve routing information (Connection refused)")."""
    line = (str(exc).strip().splitlines() or [type(exc).__name__])[0].rstrip(":")
    root = exc
    while True:  # the innermost cause: through exception groups (the driver's routing) and chained errors
        inner = root.exceptions[0] if isinstance(root, BaseExceptionGroup) and root.exceptions else None
        inner = inner or root.__cause__ or root.__context__
        if inner is None:
            break
        root = inner
    reason = root.strerror if isinstance(root, OSError) and root.strerror else None
    return f"{line} ({reason})" if reason and reason not in line else line


def connection_target(settings: Settings) -> tuple[str, tuple[str, str]]:
    """``(uri without credentials, (user, password))`` for ``settings.store``."""
    url = urlparse(settings.store)
    user = url.username or settings.neo4j_user
    password = url.password or settings.neo4j_password
    netloc = url.hostname or "localhost"
    if url.port:
        netloc = f"{netloc}:{url.port}"
    return urlunparse((url.scheme, netloc, "", "", "", "")), (user, password)


class Neo4jStore(GraphStore):
    """``bolt://`` / ``neo4j://`` store. Raises ``StoreError`` when the server is unreachable or refuses the login."""

    dialect = Neo4jDialect()

    def __init__(self, settings: Settings, *, connection_timeout_s: float = 10.0, **kwargs):
        super().__init__(**kwargs)
        self.uri, auth = connection_target(settings)
        self.user = auth[0]
        self.database = settings.neo4j_database
        try:
            # Notifications off: every query on a label not yet written (a fresh store) would log a warning.
            self.driver = GraphDatabase.driver(
                self.uri, auth=auth, connection_timeout=connection_timeout_s, notifications_min_severity="OFF"
            )
        except (ConfigurationError, ValueError) as exc:
            raise StoreError(f"bad Neo4j URL {self.uri!r}: {exc}") from exc
        try:
            self.driver.verify_connectivity()
        except ClientError as exc:
            self.driver.close()
            if _login_refused(exc):
                raise self._refused(exc) from exc
            raise StoreError(f"Neo4j at {self.uri}: {_first_line(exc)}") from exc
        except (*_UNREACHABLE, OSError) as exc:
            self.driver.close()
            raise StoreError(
                f"Neo4j at {self.uri} (database {self.database!r}) is not reachable: {_first_line(exc)}"
            ) from exc

    def _refused(self, exc: ClientError) -> StoreError:
        """A refused login (a wrong user or password, or too many wrong ones in a row): one line, no password, and
        the settings that hold the credentials."""
        why = "" if isinstance(exc, AuthError) else f" ({_first_line(exc)})"
        return StoreError(
            f"Neo4j at {self.uri} refused the credentials for user {self.user}{why}; they are HYPERMEM_NEO4J_USER and "
            "HYPERMEM_NEO4J_PASSWORD, or user:password@ in HYPERMEM_STORE"
        )

    def run_cypher(self, cypher: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        try:
            records, _, _ = self.driver.execute_query(cypher, params or {}, database_=self.database)
        except ClientError as exc:
            if not _login_refused(exc):
                raise
            raise self._refused(exc) from exc
        except _UNREACHABLE as exc:
            raise StoreError(f"Neo4j at {self.uri} is not reachable: {_first_line(exc)}") from exc
        return [record.data() for record in records]

    def _create_indexes(self, dimension: int) -> list[str]:
        created = neo4j_schema.install(self.driver, self.database, dimension)
        for statement in self.dialect.index_statements(dimension, self.ef_runtime):
            self.run_cypher(statement)  # IF NOT EXISTS: a no-op for what neomodel created
        self.run_cypher("CALL db.awaitIndexes(300)")
        return created

    def indexes(self) -> list[dict[str, Any]]:
        rows = self.run_cypher(
            "SHOW INDEXES YIELD name, type, entityType, labelsOrTypes, properties "
            "WHERE entityType = 'NODE' AND type <> 'LOOKUP' "
            "RETURN name, type, labelsOrTypes, properties ORDER BY name"
        )
        return [
            {"label": label, "property": prop, "type": row["type"], "name": row["name"]}
            for row in rows
            for label in row["labelsOrTypes"] or []
            for prop in row["properties"] or []
        ]

    def engine_version(self) -> str:
        rows = self.run_cypher(
            "CALL dbms.components() YIELD name, versions, edition RETURN name, versions[0] AS version, edition"
        )
        if not rows:
            return "Neo4j (unknown version)"
        return f"Neo4j {rows[0]['version']} ({rows[0]['edition']})"

    def close(self) -> None:
        if neomodel_db.driver is self.driver:
            neomodel_db.close_connection()  # closes self.driver too
        else:
            self.driver.close()
