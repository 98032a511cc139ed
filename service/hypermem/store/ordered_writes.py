"""Statements run in order on a writer thread while the caller prepares the next ones.

An ingest ends with a few dozen statements that must run in order (clear the rebuilt sessions, write turns,
elements, episodes, facts, hyperedges, topics, then the memory-wide upkeep). Run one after another on one thread,
the caller alternates between formatting a statement's parameters (on FalkorDB its vectors become query text,
``GraphStore.prepare``) and waiting for the server to run it, so one of the two always idles. ``OrderedWrites``
keeps the formatting on the caller's thread and hands each prepared statement to one writer thread, which runs
them in submission order: the server runs statement *n* while the caller formats *n + 1*.

Errors: the first statement that fails stops the rest (none after it runs); its exception is raised by the next
``query``/``write`` call or at the end of the ``with`` block, and the block waits for every statement submitted
before it, so nothing runs on after the caller has moved on.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TYPE_CHECKING, Any

from hypermem.store import queries

if TYPE_CHECKING:
    from hypermem.store.base import GraphStore


class OrderedWrites:
    """``with OrderedWrites(store) as writes: writes.query(...); writes.write(...)``: ``GraphStore.query`` and
    ``GraphStore.write`` whose statements run in call order on one writer thread; results are not returned."""

    def __init__(self, store: GraphStore):
        self.store = store
        self._writer = ThreadPoolExecutor(1, "hypermem-writer")
        self._pending: list[Future[Any]] = []
        self._failed: BaseException | None = None

    def __enter__(self) -> OrderedWrites:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        self.wait(raise_failure=exc_type is None)  # the block's own exception goes on unmasked

    def query(self, name: str, **params: Any) -> None:
        """``GraphStore.query(name, **params)``, in order."""
        self._submit(self.store.dialect.adapt(queries.load(name)), params)

    def write(self, name: str, rows: Sequence[dict[str, Any]], **params: Any) -> None:
        """``GraphStore.write(name, rows, **params)``, each batch in order."""
        for cypher, batch in self.store.write_statements(name, rows, **params):
            self._submit(cypher, batch)

    def statements(self, statements: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Statements made by the store (``(cypher, params)``, e.g. ``GraphStore.corpus_stats_statements``), in order."""
        for cypher, params in statements:
            self._submit(cypher, params)

    def wait(self, raise_failure: bool = True) -> None:
        """Wait for every statement submitted; raise the first failure (with ``raise_failure``). The writer
        thread ends."""
        try:
            for future in self._pending:
                future.exception()  # waits; a failure is recorded by ``_run``
        finally:
            self._pending.clear()
            self._writer.shutdown(wait=True)
        if raise_failure:
            self._raise_failure()

    def _submit(self, cypher: str, params: dict[str, Any]) -> None:
        self._raise_failure()
        prepared = self.store.prepare(params)  # on this thread, while the writer runs the statements before
        self._pending = [f for f in self._pending if not f.done()]
        self._pending.append(self._writer.submit(self._run, cypher, prepared))

    def _run(self, cypher: str, prepared: Any) -> None:
        if self._failed is not None:
            return  # a statement before this one failed: none after it runs
        try:
            self.store.run_prepared(cypher, prepared)
        except BaseException as exc:
            self._failed = exc
            raise

    def _raise_failure(self) -> None:
        if self._failed is not None:
            raise self._failed
