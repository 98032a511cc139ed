"""API keys, tenants and memory ownership.

A request carries ``Authorization: Bearer KEY``. The admin key (``Settings.admin_key``) only
manages tenant keys and memory ownership. A tenant key (``hmk_<key_id>_<secret>``) is bound to
one tenant and stored as an ``ApiKey`` node holding the SHA-256 of the key, never the key itself
(keys are 256-bit random, so a fast hash is enough; comparison is constant-time).

A memory belongs to the tenant whose key first wrote to it (a ``MemoryOwner`` node carrying the
memory's ``memory_id``, so it goes away with the memory). Any other tenant gets 404 for it,
exactly as for a memory that does not exist: keys never learn what other tenants hold.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from flask import g, request
from flask_smorest import abort

from hypermem.model import node_id
from hypermem.store import GraphStore

KEY_PREFIX = "hmk_"


@dataclass(frozen=True)
class Principal:
    """Who is calling: a tenant, or the admin (``tenant`` None)."""

    tenant: str | None

    @property
    def admin(self) -> bool:
        return self.tenant is None


def utcnow() -> str:
    """Now, UTC, ISO 8601 with seconds."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode("utf-8")).hexdigest()


def create_key(store: GraphStore, tenant: str) -> dict[str, str]:
    """Mint a key for ``tenant``; returns ``{tenant, key_id, key, created_at}``. The key is not stored."""
    key_id = secrets.token_hex(8)
    key = f"{KEY_PREFIX}{key_id}_{secrets.token_urlsafe(32)}"
    created_at = utcnow()
    store.query("api/create_key", id=key_id, tenant=tenant, hash=_digest(key), created_at=created_at)
    return {"tenant": tenant, "key_id": key_id, "key": key, "created_at": created_at}


def revoke_key(store: GraphStore, tenant: str, key_id: str) -> bool:
    """Delete ``key_id`` if it belongs to ``tenant``. Returns whether a key was removed."""
    rows = store.query("api/revoke_key", id=key_id, tenant=tenant)
    return bool(rows and rows[0]["revoked"])


def authenticate(store: GraphStore, admin_key: str | None) -> Principal:
    """The caller of the current request, or abort 401 (missing, malformed or unknown key)."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        abort(401, message="send an API key as 'Authorization: Bearer KEY'", headers={"WWW-Authenticate": "Bearer"})
    found = principal_for_key(store, admin_key, token)
    if found is None:
        abort(401, message="unknown or revoked API key", headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    return found


def principal_for_key(store: GraphStore, admin_key: str | None, token: str) -> Principal | None:
    """Who holds the bearer key ``token`` (the admin, or a tenant), or None for an unknown or revoked key."""
    if admin_key and hmac.compare_digest(token.encode(), admin_key.encode()):
        return Principal(tenant=None)
    if token.startswith(KEY_PREFIX):
        key_id, _, secret = token[len(KEY_PREFIX) :].partition("_")
        if secret and len(key_id) == 16:
            rows = store.query("api/get_key", id=key_id)
            if rows and hmac.compare_digest(rows[0]["hash"], _digest(token)):
                return Principal(tenant=rows[0]["tenant"])
    return None


def principal() -> Principal:
    """The caller authenticated for this request."""
    return g.principal


def require_admin() -> None:
    """Abort 403 unless the admin key made this request."""
    if not principal().admin:
        abort(403, message="this operation needs the admin key")


def require_tenant() -> str:
    """The calling tenant, or abort 403 for the admin key (which holds no memories)."""
    tenant = principal().tenant
    if tenant is None:  # the admin key
        abort(403, message="the admin key manages keys only; use a tenant key for memories")
    return tenant


def _owner_id(memory_id: str) -> str:
    return node_id(memory_id, "owner", "tenant")


def owner_of(store: GraphStore, memory_id: str) -> dict | None:
    """``{tenant, created_at}`` of a memory's owner, or None."""
    rows = store.query("api/memory_owner", id=_owner_id(memory_id), memory_id=memory_id)
    return rows[0] if rows else None


def authorize_memory(store: GraphStore, memory_id: str, *, claim: bool = False, not_found: str | None = None) -> dict:
    """Abort unless the calling tenant owns ``memory_id``; returns the owner record.

    With ``claim`` (a write), a memory nobody owns and that holds no dialogue becomes the
    caller's. A memory that exists without an owner (ingested by the CLI) is not claimable:
    the admin assigns it (``PUT /v1/tenants/{tenant}/memories/{memory_id}``). Otherwise 404 with
    ``not_found`` as the message (default: "no memory ..."), for records reached through a memory.
    """
    owner = tenant_owner(store, require_tenant(), memory_id, claim=claim)
    if owner is None:
        abort(404, message=not_found or f"no memory {memory_id!r}")
    return owner


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


def assign_memory(store: GraphStore, memory_id: str, tenant: str) -> None:
    """Make ``tenant`` the owner of ``memory_id`` (admin operation; replaces any owner)."""
    store.query("api/assign_memory", id=_owner_id(memory_id), memory_id=memory_id, tenant=tenant, created_at=utcnow())


def tenant_memories(store: GraphStore, tenant: str) -> list[dict]:
    """``[{memory_id, created_at}]`` owned by ``tenant``."""
    return store.query("api/tenant_memories", tenant=tenant)
