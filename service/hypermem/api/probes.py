"""Liveness and readiness probes (no key needed)."""

from __future__ import annotations

import logging

from flask_smorest import abort

from hypermem.api.limits import Blueprint
from hypermem.api.schemas import HealthSchema, ReadySchema
from hypermem.api.state import state

log = logging.getLogger(__name__)

blp = Blueprint("probes", __name__, url_prefix="/v1", description="Liveness and readiness (no key needed).")


@blp.route("/health", methods=["GET"])
@blp.doc(security=[])
@blp.response(200, HealthSchema)
def health():
    """Liveness: the process answers."""
    return {"status": "ok"}


@blp.route("/ready", methods=["GET"])
@blp.doc(security=[])
@blp.response(200, ReadySchema)
def ready():
    """Readiness: the graph store answers and carries this service's schema (503 saying what is wrong)."""
    current = state()
    store = current.store
    try:
        meta = store.meta()
        engine = store.engine_version()
        missing = store.missing_vector_indexes() if meta else []
    except Exception as exc:
        log.warning("readiness check failed: %s", exc)
        abort(503, message=f"the graph store is not reachable: {type(exc).__name__}: {exc}")
    if not meta:
        abort(503, message="the graph store has no hypermem schema yet")
    problem = store.schema_mismatch(meta, current.settings.embedding_model, current.service.embedder.dimension)
    if problem:  # before the indexes: a store of another model needs a reindex, not just its indexes back
        abort(503, message=problem)
    if missing:
        abort(503, message=f"the graph store is missing its vector indexes on {', '.join(missing)}")
    return {"status": "ready", "engine": engine, "embedding_model": meta["embedding_model"]}
