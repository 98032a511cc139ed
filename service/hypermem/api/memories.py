"""Memory routes: ingest messages, query, explain a past query, job status, delete."""

from __future__ import annotations

from typing import Any

from flask import url_for
from flask_smorest import abort

from hypermem.api import auth
from hypermem.api.limits import Blueprint
from hypermem.api.schemas import (
    DeletedSchema,
    IngestRequestSchema,
    IngestResponseSchema,
    JobSchema,
    MemoryListSchema,
    MemorySchema,
    QueryRequestSchema,
    QueryResultSchema,
    RejectedItem,
)
from hypermem.api.state import state
from hypermem.ingest.turns import message_problems
from hypermem.model import Message
from hypermem.records import owners, queries
from hypermem.retrieve.pipeline import QueryError
from hypermem.service import UnknownMemory

blp = Blueprint("memories", __name__, url_prefix="/v1", description="Ingest, query, explain and delete memories.")


@blp.route("/memories", methods=["GET"])
@blp.response(200, MemoryListSchema)
def list_memories():
    """The memories of the calling tenant."""
    return {"memories": owners.tenant_memories(state().store, auth.require_tenant())}


@blp.route("/memories/<memory_id:memory_id>", methods=["GET"])
@blp.response(200, MemorySchema)
def get_memory(memory_id: str):
    """One memory with its node counts per label."""
    owner = auth.authorize_memory(state().store, memory_id)
    return {"memory_id": memory_id, "created_at": owner["created_at"], "counts": state().store.counts(memory_id)}


@blp.route("/memories/<memory_id:memory_id>", methods=["DELETE"])
@blp.response(200, DeletedSchema)
def delete_memory(memory_id: str):
    """Delete a memory: every node carrying its memory_id (turns to topics, stored queries, jobs, owner).
    Waits for a running ingest of the memory to end (409 when it does not end in time)."""
    auth.authorize_memory(state().store, memory_id)
    deleted = state().service.delete_memory(memory_id)
    return {"memory_id": memory_id, "deleted_nodes": deleted}


def _rejections(items: list, max_chars: int) -> tuple[list[tuple[int, Message]], dict[int, dict]]:
    """The valid ``(index, Message)`` pairs of a batch and the errors of the others by index and field."""
    rejected = {i: item.errors for i, item in enumerate(items) if isinstance(item, RejectedItem)}
    accepted = [(i, Message(**item)) for i, item in enumerate(items) if i not in rejected]
    problems = message_problems([m for _, m in accepted], max_chars)
    for position, found in problems.items():
        rejected[accepted[position][0]] = {field.rsplit(".", 1)[1]: [problem] for field, problem in found}
    return [(i, m) for i, m in accepted if i not in rejected], rejected


@blp.route("/memories/<memory_id:memory_id>/messages", methods=["POST"])
@blp.arguments(IngestRequestSchema)
@blp.response(200, IngestResponseSchema)
@blp.alt_response(202, schema=IngestResponseSchema, description="Queued: poll GET /v1/jobs/{job_id}.")
def ingest(body: dict, memory_id: str):
    """Ingest a batch of messages (idempotent by message_id).

    The first write to an unused memory_id makes it the caller's. Batches of up to the
    synchronous limit (50 messages and 100,000 characters of text by default) are ingested before
    answering (200, with the report); larger ones are queued (202, with a job id to poll): a long
    message costs about a second of embedding per 5,000 characters. Every bad message is reported (422,
    ``errors.json.messages.{index}.{field}``); with ``"partial": true`` the valid messages are
    stored and ``statuses`` gives a status per message (``updated`` when a message id already
    stored came with other content: that message was replaced and its sessions rebuilt).
    """
    current = state()
    items = body["messages"]
    accepted, rejected = _rejections(items, current.settings.max_message_chars)
    if rejected and (not body["partial"] or not accepted):
        abort(422, message=f"{len(rejected)} of {len(items)} messages are unusable",
              errors={"json": {"messages": rejected}})  # fmt: skip
    messages = [m for _, m in accepted]
    synchronous = current.runs_synchronously(messages)
    claimed = owners.owner_of(current.store, memory_id) is None
    auth.authorize_memory(current.store, memory_id, claim=True)
    out = {"memory_id": memory_id, "messages": len(messages)}
    item_statuses: list[dict[str, Any]] = []
    if body["partial"]:
        out["rejected"] = len(rejected)
        done = "stored" if synchronous else "queued"
        statuses: dict[int, dict[str, Any]] = {
            i: {"index": i, "message_id": m.message_id, "status": done, "errors": None} for i, m in accepted
        }
        for i, errors in rejected.items():
            given = items[i]
            given_id = given.message_id if isinstance(given, RejectedItem) else given["message_id"]
            statuses[i] = {"index": i, "message_id": given_id, "status": "rejected", "errors": errors}
        item_statuses = [statuses[i] for i in sorted(statuses)]
        out["statuses"] = item_statuses
    if synchronous:
        try:
            report = current.jobs.ingest_now(
                memory_id, messages, before=lambda: auth.authorize_memory(current.store, memory_id, claim=True)
            )
        except BaseException:
            if claimed:
                owners.release_claim(current.store, memory_id)
            raise
        edited = set(report["updated_ids"])
        for status in item_statuses:
            if status["status"] == "stored" and status["message_id"] in edited:
                status["status"] = "updated"
        return {**out, "status": "done", "job_id": None, "report": report}
    job_id = current.jobs.submit(memory_id, messages)
    return (
        {**out, "status": "queued", "job_id": job_id, "report": None},
        202,
        {"Location": url_for("memories.get_job", job_id=job_id)},
    )


@blp.route("/jobs/<hex_id:job_id>", methods=["GET"])
@blp.response(200, JobSchema)
def get_job(job_id: str):
    """Status of a background ingest job (queued, running, done with its report, or failed with the error)."""
    current = state()
    auth.require_tenant()
    job = current.jobs.get(job_id)
    missing = f"no job {job_id!r}"
    if job is None:
        abort(404, message=missing)
    auth.authorize_memory(current.store, job["memory_id"], not_found=missing)
    return job


@blp.route("/memories/<memory_id:memory_id>/query", methods=["POST"])
@blp.arguments(QueryRequestSchema)
@blp.response(200, QueryResultSchema)
def query(body: dict, memory_id: str):
    """Retrieve evidence for a question: topics, episodes, facts and turns, each with the path that
    reached it, the stopping decision, the context, and an answer when an LLM is configured.
    The result is stored; ``GET /v1/queries/{query_id}/explanation`` returns it later."""
    current = state()
    auth.authorize_memory(current.store, memory_id)
    text = body.pop("query")
    try:
        result = current.service.query(memory_id, text, **body)
    except QueryError as exc:
        field, _, problem = str(exc).partition(": ")
        abort(422, message=str(exc), errors={"json": {field: [problem or str(exc)]}})
    except UnknownMemory:
        job = current.jobs.pending(memory_id)
        if job is not None:  # accepted (202), not yet written: the memory exists, its dialogue is on its way
            abort(409, message=f"memory {memory_id!r} holds no dialogue yet: its ingest job {job['job_id']} is "
                  f"{job['status']}; ask again when GET /v1/jobs/{job['job_id']} says it is done")  # fmt: skip
        abort(404, message=f"memory {memory_id!r} holds no dialogue yet")
    record = queries.record(result)
    queries.save(current.store, current.settings, memory_id, text, record)
    return record


@blp.route("/queries/<record_id:query_id>/explanation", methods=["GET"])
@blp.response(200, QueryResultSchema)
def explanation(query_id: str):
    """A past query's full result: analysis, evidence with paths, stop decision, context and answer."""
    current = state()
    auth.require_tenant()
    found = queries.get(current.store, query_id)
    missing = f"no query {query_id!r}"
    if found is None:
        abort(404, message=missing)
    memory_id, result = found
    auth.authorize_memory(current.store, memory_id, not_found=missing)
    return result
