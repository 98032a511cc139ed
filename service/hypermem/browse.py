"""Analyst views of one memory: topics, a topic's episodes, recent episodes, an episode's facts and turns, a person's
timeline, the hyperedges around a node.

Every function takes the ``memory_id`` the caller may read and matches nodes by id *and*
memory, so an id from another memory is simply not found. Functions return plain dicts
(shapes in ``hypermem.api.schemas``); ``None`` means "no such node in this memory".
Dates are the ISO 8601 strings stored in the graph. Cypher lives in ``cypher/browse/``.
"""

from __future__ import annotations

import re
from datetime import date
from typing import Any

from hypermem.store import GraphStore
from hypermem.store.ids import normalise

MAX_PAGE = 500  # the most items one page of a browse listing holds (HTTP ``limit`` and MCP ``list_topics`` alike)
MAX_OFFSET = 1_000_000  # the most items a page may skip (HTTP ``offset`` and MCP ``list_topics`` alike)


def topics(store: GraphStore, memory_id: str, *, offset: int = 0, limit: int = 50) -> list[dict[str, Any]]:
    """Topics with episode count and date span (``first``/``last``), most episodes first."""
    return store.query("browse/topics", memory_id=memory_id, offset=offset, limit=limit)


def topic(store: GraphStore, memory_id: str, topic_id: str) -> dict[str, Any] | None:
    """One topic with its episodes in date order (each with its member ``weight``)."""
    rows = store.query("browse/topic", memory_id=memory_id, topic_id=topic_id)
    if not rows:
        return None
    episodes = store.query("browse/topic_episodes", memory_id=memory_id, topic_id=topic_id)
    return {**rows[0], "episodes": episodes}


def episodes(
    store: GraphStore, memory_id: str, *, order: str = "recent", offset: int = 0, limit: int = 50
) -> list[dict[str, Any]]:
    """Episodes sorted by time: ``order`` "recent" (latest end first) or "oldest" (earliest start first).

    Items: ``{id, title, summary, session, start, end, participants, facts}`` (``facts``: fact count).
    """
    return store.query("browse/episodes", memory_id=memory_id, order=order, offset=offset, limit=limit)


def episode(store: GraphStore, memory_id: str, episode_id: str) -> dict[str, Any] | None:
    """One episode with its facts (date order), source turns (dialogue order) and elements (heaviest first)."""
    rows = store.query("browse/episode", memory_id=memory_id, episode_id=episode_id)
    if not rows:
        return None
    params = {"memory_id": memory_id, "episode_id": episode_id}
    return {
        **rows[0],
        "facts": store.query("browse/episode_facts", **params),
        "turns": store.query("browse/episode_turns", **params),
        "elements": store.query("browse/episode_elements", **params),
    }


def people(store: GraphStore, memory_id: str) -> list[dict[str, Any]]:
    """Person elements with salience, frequency and episode count, most salient first."""
    return store.query("browse/people", memory_id=memory_id)


def timeline(
    store: GraphStore, memory_id: str, person: str, *, start: date | None = None, end: date | None = None
) -> list[dict[str, Any]] | None:
    """A person's episodes and facts in date order, optionally within ``start``..``end`` (days, inclusive);
    None when the memory has no Person of that name (case-insensitive, Unicode NFKC) and nothing by them.

    Episodes are those whose segment hyperedges hold a Person named ``person`` (case-insensitive)
    or that the person took part in; facts are those of these episodes that name the person (as a whole word:
    "Al" is not in "Also") or come from the person's own turns. Items: ``{kind: "episode"|"fact", id, date, start, title, text, episode_id}``:
    ``date`` is a day (YYYY-MM-DD; a fact whose resolved date is only a month or a year reads YYYY-MM or YYYY),
    ``start`` an episode's first turn's timestamp (None for a fact). On one day, an episode comes before its facts.
    With a window, a fact is kept when its date (day, month or year) overlaps it, whichever episode told it; an
    undated fact when its episode is in the window.
    """
    known = people(store, memory_id)
    wanted = normalise(person).casefold()  # "Zoë" typed composed finds a "Zoë" stored decomposed, and back
    person = next((p["name"] for p in known if normalise(p["name"]).casefold() == wanted), person)
    low = start.isoformat() if start else None
    high = f"{end.isoformat()}T23:59:59" if end else None
    episodes = store.query("browse/person_episodes", memory_id=memory_id, person=person, **{"from": low, "to": high})
    items = [
        {
            "kind": "episode",
            "id": e["id"],
            "date": e["start"][:10] if e["start"] else None,  # its first turn's day, as a fact's date reads
            "start": e["start"],
            "title": e["title"],
            "text": e["summary"],
            "episode_id": e["id"],
        }
        for e in episodes
    ]
    # a fact carries its own date ("I moved to Berlin in 2019", told in 2023): with a window, the facts of all the
    # person's episodes are read, and each is kept when its date's day, month or year overlaps the window
    windowed = low is not None or high is not None
    every = (store.query("browse/person_episodes", memory_id=memory_id, person=person, **{"from": None, "to": None})
             if windowed else episodes)  # fmt: skip
    shown = {e["id"] for e in episodes}
    facts = store.query("browse/person_facts", memory_id=memory_id, person=person, episode_ids=[e["id"] for e in every])
    named = _whole_name(person)
    for fact in facts:
        if not fact["by_speaker"] and not named.search(fact["content"]):
            continue  # "Al" inside "Also" or "totally" names no one
        day = fact["date"]
        if not day and fact["episode_id"] not in shown:  # an undated fact goes with its episode
            continue
        if day and ((low and _last_day(day) < low) or (high and _first_day(day) > high)):
            continue
        items.append(
            {
                "kind": "fact",
                "id": fact["id"],
                "date": fact["date"],
                "start": None,
                "title": None,
                "text": fact["content"],
                "episode_id": fact["episode_id"],
            }
        )
    items.sort(key=lambda item: (item["date"] or "", item["kind"] != "episode", item["id"]))
    if not items and person.casefold() not in {p["name"].casefold() for p in known}:
        return None
    return items


def _whole_name(name: str) -> re.Pattern[str]:
    """``name``, case-insensitive, not inside a longer word: no letter or digit just before or after it."""
    return re.compile(rf"(?<![^\W_]){re.escape(name)}(?![^\W_])", re.IGNORECASE)


def _first_day(date: str) -> str:
    """The first day of a YYYY, YYYY-MM or YYYY-MM-DD date, as YYYY-MM-DD."""
    return date[:10] if len(date) >= 10 else date + "-01-01"[len(date) - 4 :]


def _last_day(date: str) -> str:
    """A YYYY-MM-DD string that sorts with the last day of a YYYY, YYYY-MM or YYYY-MM-DD date."""
    return date[:10] if len(date) >= 10 else date + "-12-31"[len(date) - 4 :]


def node_hyperedges(store: GraphStore, memory_id: str, node_id: str) -> dict[str, Any] | None:
    """The hyperedges a Topic, Episode, Fact or element owns or belongs to, with owners and weighted members.

    Returns ``{"node": {id, label, caption}, "hyperedges": [{id, kind, role, weight, owners, members}]}``;
    ``role`` is ``owner`` or ``member`` (then ``weight`` is the node's member weight). Members are
    heaviest first. ``None`` when the memory has no such node.
    """
    rows = store.query("browse/node_hyperedges", memory_id=memory_id, node_id=node_id)
    if not rows:
        return None
    row = rows[0]
    roles: dict[str, tuple[str, float | None]] = {hid: ("owner", None) for hid in row["owned"]}
    for holder in row["member_of"]:
        if holder["id"] is not None:
            roles.setdefault(holder["id"], ("member", holder["weight"]))
    details = store.query("browse/hyperedges", memory_id=memory_id, ids=list(roles))
    hyperedges = []
    for detail in details:
        role, weight = roles[detail["id"]]
        members = sorted(
            (dict(m) for m in detail["members"] if m["id"] is not None), key=lambda m: (-(m["weight"] or 0.0), m["id"])
        )
        owners = sorted((dict(o) for o in detail["owners"] if o["id"] is not None), key=lambda o: o["id"])
        hyperedges.append(
            {
                "id": detail["id"],
                "kind": detail["kind"],
                "role": role,
                "weight": weight,
                "owners": owners,
                "members": members,
            }
        )
    hyperedges.sort(key=lambda h: (h["role"] != "owner", h["kind"] or "", h["id"]))
    node = {"id": row["id"], "label": row["label"], "caption": row["caption"]}
    return {"node": node, "hyperedges": hyperedges}
