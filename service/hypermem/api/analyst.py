"""Browse routes for analysts: topics, a topic's episodes, recent episodes, an episode's facts and turns, people, a
person's timeline, the hyperedges around a node. Node ids (``conv-26/episode/3``) go in the path as is."""

from __future__ import annotations

from flask_smorest import abort
from marshmallow import RAISE

from hypermem import browse
from hypermem.api import auth
from hypermem.api.limits import Blueprint
from hypermem.api.schemas import (
    EpisodeDetailSchema,
    EpisodeListArgsSchema,
    EpisodeListSchema,
    HyperedgeArgsSchema,
    NodeHyperedgesSchema,
    PageArgsSchema,
    PeopleSchema,
    TimelineArgsSchema,
    TimelineSchema,
    TopicDetailSchema,
    TopicListSchema,
)
from hypermem.api.state import state

blp = Blueprint("browse", __name__, url_prefix="/v1/memories", description="Browse a memory's hypergraph (analysts).")


def _store(memory_id: str):
    """The store, once the caller is known to own ``memory_id``."""
    store = state().store
    auth.authorize_memory(store, memory_id)
    return store


@blp.route("/<memory_id:memory_id>/topics", methods=["GET"])
@blp.arguments(PageArgsSchema, location="query", unknown=RAISE)
@blp.response(200, TopicListSchema)
def topics(args: dict, memory_id: str):
    """Topics with episode count and date span, most episodes first."""
    return {"topics": browse.topics(_store(memory_id), memory_id, **args)}


@blp.route("/<memory_id:memory_id>/topics/<node_id:topic_id>", methods=["GET"])
@blp.response(200, TopicDetailSchema)
def topic(memory_id: str, topic_id: str):
    """One topic with its episodes in date order and their membership weights."""
    found = browse.topic(_store(memory_id), memory_id, topic_id)
    if found is None:
        abort(404, message=f"no topic {topic_id!r} in memory {memory_id!r}")
    return found


@blp.route("/<memory_id:memory_id>/episodes", methods=["GET"])
@blp.arguments(EpisodeListArgsSchema, location="query", unknown=RAISE)
@blp.response(200, EpisodeListSchema)
def episodes(args: dict, memory_id: str):
    """Episodes sorted by time, most recent first by default (``order=oldest`` for chronological)."""
    return {"episodes": browse.episodes(_store(memory_id), memory_id, **args)}


@blp.route("/<memory_id:memory_id>/episodes/<node_id:episode_id>", methods=["GET"])
@blp.response(200, EpisodeDetailSchema)
def episode(memory_id: str, episode_id: str):
    """One episode with its facts, source turns and Person/Time/Location elements."""
    found = browse.episode(_store(memory_id), memory_id, episode_id)
    if found is None:
        abort(404, message=f"no episode {episode_id!r} in memory {memory_id!r}")
    return found


@blp.route("/<memory_id:memory_id>/people", methods=["GET"])
@blp.response(200, PeopleSchema)
def people(memory_id: str):
    """The people of a memory, most salient first."""
    return {"people": browse.people(_store(memory_id), memory_id)}


@blp.route("/<memory_id:memory_id>/people/<name:person>/timeline", methods=["GET"])
@blp.arguments(TimelineArgsSchema, location="query", unknown=RAISE)
@blp.response(200, TimelineSchema)
@blp.alt_response(404, description="The memory holds no person of this name (see its people).")
def timeline(args: dict, memory_id: str, person: str):
    """A person's episodes and facts in date order, optionally between ``from`` and ``to`` (days, inclusive);
    404 naming the person when the memory has no one of that name (case-insensitive) and nothing by them."""
    if "\ufffd" in person:  # werkzeug decoded bytes that are not UTF-8 (%ff) to U+FFFD
        abort(400, message="person: not valid UTF-8 once percent-decoded", errors={"path": {"person": ["not UTF-8"]}})
    items = browse.timeline(_store(memory_id), memory_id, person, start=args["start"], end=args["end"])
    if items is None:
        abort(404, message=f"no person {person!r} in memory {memory_id!r}")
    return {"person": person, "items": items}


@blp.route("/<memory_id:memory_id>/hyperedges", methods=["GET"])
@blp.arguments(HyperedgeArgsSchema, location="query", unknown=RAISE)
@blp.response(200, NodeHyperedgesSchema)
def hyperedges(args: dict, memory_id: str):
    """The hyperedges a Topic, Episode, Fact or element owns or belongs to, with owners and weighted members."""
    found = browse.node_hyperedges(_store(memory_id), memory_id, args["node_id"])
    if found is None:
        abort(
            404,
            message=f"no Topic, Episode, Fact or element {args['node_id']!r} in memory {memory_id!r} (a turn belongs "
            "to no hyperedge: its facts do)",
            errors={"query": {"node_id": ["not found"]}},
        )
    return found
