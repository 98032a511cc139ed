"""Admin routes: tenant keys and memory ownership (admin key only)."""

from __future__ import annotations

from flask_smorest import abort
from marshmallow import RAISE

from hypermem.api import auth
from hypermem.api.limits import Blueprint
from hypermem.api.schemas import AssignArgsSchema, AssignedSchema, KeyCreatedSchema, KeyRevokedSchema
from hypermem.api.state import state
from hypermem.records import keys, owners

blp = Blueprint(
    "tenants", __name__, url_prefix="/v1/tenants", description="Tenant keys and memory ownership (admin key)."
)


@blp.route("/<tenant:tenant>/keys", methods=["POST"])
@blp.response(201, KeyCreatedSchema)
def create_key(tenant: str):
    """Mint an API key bound to ``tenant``. The key is returned once; only its hash is stored. Takes no body (an
    empty JSON object is one too); any field is a 422 naming it (``hypermem.api.limits``)."""
    auth.require_admin()
    return keys.create_key(state().store, tenant)


@blp.route("/<tenant:tenant>/keys/<hex_id:key_id>", methods=["DELETE"])
@blp.response(200, KeyRevokedSchema)
def revoke_key(tenant: str, key_id: str):
    """Revoke one of ``tenant``'s keys (404 when it has no such key)."""
    auth.require_admin()
    if not keys.revoke_key(state().store, tenant, key_id):
        abort(404, message=f"tenant {tenant!r} has no key {key_id!r}")
    return {"tenant": tenant, "key_id": key_id, "revoked": True}


@blp.route("/<tenant:tenant>/memories/<memory_id:memory_id>", methods=["PUT"])
@blp.arguments(AssignArgsSchema, location="query", unknown=RAISE)
@blp.response(200, AssignedSchema)
@blp.alt_response(404, description="No memory has this id: ingest it first (a tenant key's first write claims it).")
@blp.alt_response(409, description="Another tenant owns the memory: repeat with ?transfer=true to move it.")
def assign_memory(args: dict, tenant: str, memory_id: str):
    """Give an existing ``memory_id`` to ``tenant``, e.g. a memory ingested with the CLI; 404 naming the memory
    when it does not exist (no empty memory is made), 409 when another tenant owns it unless ``transfer``."""
    auth.require_admin()
    store = state().store
    if not owners.memory_exists(store, memory_id):
        abort(404, message=f"memory {memory_id!r} does not exist; ingest it first")
    owner = owners.owner_of(store, memory_id)
    previous = owner["tenant"] if owner else None
    if previous not in (None, tenant) and not args["transfer"]:
        abort(409, message=f"memory {memory_id!r} is owned by tenant {previous!r}; add ?transfer=true to move it",
              errors={"query": {"transfer": ["needed to move a memory another tenant owns"]}})  # fmt: skip
    owners.assign_memory(store, memory_id, tenant)
    return {"tenant": tenant, "memory_id": memory_id, "previous_owner": previous}
