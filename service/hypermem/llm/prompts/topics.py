"""Topic decision (HyperMem topic init / create / update): prompt, schema and parser."""

from __future__ import annotations

from hypermem.llm.prompts.common import _STR, CompletionClient, _messages, _obj

TOPIC_SCHEMA = _obj(
    {
        "action": {"type": "string", "enum": ["new", "update"]},
        "topic_id": {"type": ["string", "null"]},
        "title": _STR,
        "summary": _STR,
    }
)

TOPIC_SYSTEM = """
You organise a memory into topics. A topic groups episodes about the same ongoing subject
(for example one person's adoption plans, or a hobby), even when they are weeks apart.
Given a new episode and the existing topics, decide:
- "update" with the topic_id of the existing topic the episode continues; then give that
  topic's title (keep it unless it became too narrow) and a summary rewritten to include the
  new episode;
- "new" with topic_id null when no topic fits; then give a title and summary for a new topic
  made from this episode.
Summaries are at most three sentences, name the people and keep absolute dates.
"""


def topic_decision(client: CompletionClient, episode: dict, topics: list[dict]) -> dict:
    """Decide whether ``episode`` starts a new topic or updates one of ``topics``.

    Args:
        episode: ``{title, summary}``.
        topics: candidate topics ``[{id, title, summary}]`` (may be empty: the first topic).
    Returns:
        ``{action: "new"|"update", topic_id: str|None, title: str, summary: str}`` (see
        ``parse_topic_decision``).
    Raises:
        ``LLMError`` when the model fails.
    """
    listing = "\n".join(f"- id={t['id']}: {t['title']} — {t['summary']}" for t in topics) or "(none yet)"
    user = f"New episode: {episode['title']} — {episode['summary']}\n\nExisting topics:\n{listing}"
    reply = client.complete_json("topic_decision", _messages(TOPIC_SYSTEM, user), TOPIC_SCHEMA)
    return parse_topic_decision(reply, episode, topics)


def parse_topic_decision(reply: dict, episode: dict, topics: list[dict]) -> dict:
    """Repair a topic decision.

    "update" with a ``topic_id`` that is not among ``topics`` becomes "new"; "new" always has
    ``topic_id`` None. A blank title or summary takes the updated topic's (on "update") or the
    episode's (on "new").
    """
    by_id = {str(t["id"]): t for t in topics}
    topic_id: str | None = str(reply.get("topic_id") or "").strip()
    if reply.get("action") == "update" and topic_id in by_id:
        base, action = by_id[topic_id], "update"
    else:
        base, action, topic_id = episode, "new", None
    return {
        "action": action,
        "topic_id": topic_id,
        "title": str(reply.get("title") or "").strip() or base["title"],
        "summary": str(reply.get("summary") or "").strip() or base["summary"],
    }
