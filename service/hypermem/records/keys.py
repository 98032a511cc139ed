"""Tenant API keys (``ApiKey`` nodes) and who holds a bearer key.

The admin key (``Settings.admin_key``) is configuration, not a record. A tenant key
(``hmk_<key_id>_<secret>``) is bound to one tenant and stored as an ``ApiKey`` node holding the
SHA-256 of the key, never the key itself (keys are 256-bit random, so a fast hash is enough;
comparison is constant-time).
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass

from hypermem.records import utcnow
from hypermem.store import GraphStore

KEY_PREFIX = "hmk_"


@dataclass(frozen=True)
class Principal:
    """Who is calling: a tenant, or the admin (``tenant`` None)."""

    tenant: str | None

    @property
    def admin(self) -> bool:
        return self.tenant is None


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
