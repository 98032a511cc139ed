"""Memory ownership (``MemoryOwner`` nodes).

A memory belongs to the tenant whose key first wrote to it: a ``MemoryOwner`` node carrying the
memory's ``memory_id``, so it goes away with the memory. A memory ingested by the CLI has no
owner until the admin assigns one.

What a memory is, for the API and the CLI alike (``memory_exists``, ``all_memories``): a memory_id that holds
dialogue or has an owner. A memory the API has accepted a first batch for (an owner and a queued job, no turn
yet) is a memory: ``GET /v1/memories`` lists it, and so do ``hypermem memories`` and ``hypermem delete``.
"""

from __future__ import annotations

from hypermem.model import node_id
from hypermem.records import utcnow
from hypermem.store import GraphStore


def _owner_id(memory_id: str) -> str:
    return node_id(memory_id, "owner", "tenant")


def owner_of(store: GraphStore, memory_id: str) -> dict | None:
    """``{tenant, created_at}`` of a memory's owner, or None."""
    rows = store.query("api/memory_owner", id=_owner_id(memory_id), memory_id=memory_id)
    return rows[0] if rows else None


def tenant_owner(store: GraphStore, tenant: str, memory_id: str, *, claim: bool = False) -> dict | None:
    """The owner record ``{tenant, created_at}`` of ``memory_id`` when ``tenant`` owns it, else None.

    With ``claim`` (a write), a memory nobody owns and that holds no dialogue becomes ``tenant``'s.
    """
    owner = owner_of(store, memory_id)
    if owner is None and claim and not store.query("api/memory_has_turns", memory_id=memory_id):
        rows = store.query(
            "api/claim_memory", id=_owner_id(memory_id), memory_id=memory_id, tenant=tenant, created_at=utcnow()
        )
        owner = rows[0]
    return owner if owner is not None and owner["tenant"] == tenant else None


def release_claim(store: GraphStore, memory_id: str) -> bool:
    """Drop the owner of ``memory_id`` if it holds no dialogue (its first ingest failed). Returns whether it did."""
    rows = store.query("api/release_memory", id=_owner_id(memory_id), memory_id=memory_id)
    return bool(rows and rows[0]["released"])


def memory_exists(store: GraphStore, memory_id: str) -> bool:
    """Whether ``memory_id`` holds dialogue or has an owner (a memory being written for the first time)."""
    return bool(store.query("api/memory_has_turns", memory_id=memory_id)) or owner_of(store, memory_id) is not None


def assign_memory(store: GraphStore, memory_id: str, tenant: str) -> None:
    """Make ``tenant`` the owner of ``memory_id`` (admin operation; replaces any owner)."""
    store.query("api/assign_memory", id=_owner_id(memory_id), memory_id=memory_id, tenant=tenant, created_at=utcnow())


def tenant_memories(store: GraphStore, tenant: str) -> list[dict]:
    """``[{memory_id, created_at}]`` owned by ``tenant``."""
    return store.query("api/tenant_memories", tenant=tenant)


def all_memories(store: GraphStore) -> list[str]:
    """Every memory of the store (``memory_exists``): those that hold dialogue and those that have an owner."""
    owned = [r["memory_id"] for r in store.query("api/owned_memories")]
    return sorted(set(store.memory_ids()).union(owned))
