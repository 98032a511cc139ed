"""The request check: who calls (bearer key), and whether they may use a memory.

A request carries ``Authorization: Bearer KEY``. The admin key (``Settings.admin_key``) only
manages tenant keys and memory ownership; a tenant key reads and writes the tenant's own memories.
Keys and owners are records (``hypermem.records.keys``, ``hypermem.records.owners``). A memory
owned by another tenant gets 404, exactly as a memory that does not exist: keys never learn what
other tenants hold.
"""

from __future__ import annotations

from flask import g, request
from flask_smorest import abort

from hypermem.records.keys import Principal, principal_for_key
from hypermem.records.owners import tenant_owner
from hypermem.store import GraphStore


def authenticate(store: GraphStore, admin_key: str | None) -> Principal:
    """The caller of the current request, or abort 401 (missing, malformed or unknown key)."""
    header = request.headers.get("Authorization", "")
    scheme, _, token = header.partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        abort(401, message="send an API key as 'Authorization: Bearer KEY'", headers={"WWW-Authenticate": "Bearer"})
    found = principal_for_key(store, admin_key, token)
    if found is None:
        unset = admin_key is None and request.blueprint == "tenants"  # an admin route, with no admin key to match
        message = "no admin key is configured (set HYPERMEM_ADMIN_KEY)" if unset else "unknown or revoked API key"
        abort(401, message=message, headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
    return found


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
