"""The Neo4j Bloom perspective (docker/bloom/perspective.json): its categories, and every search
phrase's Cypher run on each engine (the embedded FalkorDB; Neo4j when ``NEO4J_URI`` is set) on a small
graph written with cypher/write/*."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from engines import ENGINES, engine_settings
from falkordb import Node
from falkordb import Path as GraphPath

from hypermem.store import GraphStore, open_store, queries

PERSPECTIVE = Path(__file__).resolve().parents[1] / "docker" / "bloom" / "perspective.json"
M = "bloom"


@pytest.fixture(scope="module")
def perspective() -> dict:
    return json.loads(PERSPECTIVE.read_text(encoding="utf-8"))


def _template(perspective: dict, text: str) -> dict:
    (template,) = [t for t in perspective["templates"] if t["text"] == text]
    return template


def _id(kind: str, local: str) -> str:
    return f"{M}/{kind}/{local}"


@pytest.fixture(scope="module", params=ENGINES)
def store(request, tmp_path_factory):
    """Three episodes on three dates: Caroline in 0 and 1, Melanie in 1 and 2; topics 'Career change' (0, 1)
    and 'Art and painting' (2); one or two facts per episode. No vectors: Bloom phrases do not search."""
    graph = open_store(engine_settings(request.param, tmp_path_factory.mktemp("bloom") / "db"))
    turns = [
        {"memory_id": M, "id": _id("turn", str(i)), "dia_id": f"D{i}:1", "speaker": "Caroline", "text": f"turn {i}",
         "timestamp": ts, "session": str(i), "seq": i, "embedding": None, "prev_id": _id("turn", str(i - 1)) if i else None}
        for i, ts in enumerate(["2023-05-07T10:00:00", "2023-06-10T18:30:00", "2023-08-01T09:15:00"])
    ]  # fmt: skip
    elements = [
        {"memory_id": M, "id": _id("person", "caroline"), "kind": "Person", "name": "Caroline", "value": "Caroline"},
        {"memory_id": M, "id": _id("person", "melanie"), "kind": "Person", "name": "Melanie", "value": "Melanie"},
        {"memory_id": M, "id": _id("location", "sweden"), "kind": "Location", "name": "Sweden", "value": "Sweden"},
    ]
    episodes = [
        {"memory_id": M, "id": _id("episode", str(i)), "session": str(i), "title": title, "summary": title, "text": title,
         "start": turns[i]["timestamp"], "end": turns[i]["timestamp"][:11] + "23:00:00", "participants": [],
         "turn_ids": [turns[i]["id"]], "embedding": None, "embedding_raw": None}
        for i, title in enumerate(["Caroline's counseling plans", "Dinner with Melanie", "Melanie's sunset painting"])
    ]  # fmt: skip
    fact_specs = [(0, "2023-05-07"), (0, "2023-05-06"), (1, "2023-06-10"), (2, "2023-08-01")]
    facts = [
        {"memory_id": M, "id": _id("fact", str(i)), "episode_id": _id("episode", str(ep)), "content": f"fact {i}",
         "potential": [], "keywords": [], "date": date, "text": f"fact {i}", "turn_ids": [_id("turn", str(ep))],
         "embedding": None, "embedding_raw": None}
        for i, (ep, date) in enumerate(fact_specs)
    ]  # fmt: skip
    topics = [
        {
            "memory_id": M,
            "id": _id("topic", "career"),
            "title": "Career change",
            "summary": "",
            "text": "",
            "embedding": None,
        },
        {
            "memory_id": M,
            "id": _id("topic", "art"),
            "title": "Art and painting",
            "summary": "",
            "text": "",
            "embedding": None,
        },
    ]
    hyperedges = [
        {"memory_id": M, "id": _id("he", "topic-career"), "kind": "topic", "owner_ids": [_id("topic", "career")],
         "members": [{"id": _id("episode", "0"), "weight": 1.0}, {"id": _id("episode", "1"), "weight": 0.5}]},
        {"memory_id": M, "id": _id("he", "topic-art"), "kind": "topic", "owner_ids": [_id("topic", "art")],
         "members": [{"id": _id("episode", "2"), "weight": 1.0}]},
        *[{"memory_id": M, "id": _id("he", f"episode-{ep}"), "kind": "episode", "owner_ids": [_id("episode", str(ep))],
           "members": [{"id": f["id"], "weight": 1.0} for f in facts if f["episode_id"] == _id("episode", str(ep))]}
          for ep in range(3)],
        {"memory_id": M, "id": _id("he", "segment-0"), "kind": "segment", "owner_ids": [_id("episode", "0")],
         "members": [{"id": _id("person", "caroline"), "weight": 1.0}, {"id": _id("location", "sweden"), "weight": 0.4}]},
        {"memory_id": M, "id": _id("he", "segment-1"), "kind": "segment", "owner_ids": [_id("episode", "1")],
         "members": [{"id": _id("person", "caroline"), "weight": 0.8}, {"id": _id("person", "melanie"), "weight": 0.8}]},
        {"memory_id": M, "id": _id("he", "segment-2"), "kind": "segment", "owner_ids": [_id("episode", "2")],
         "members": [{"id": _id("person", "melanie"), "weight": 1.0}]},
    ]  # fmt: skip
    for name, rows in [("write/turns", turns), ("write/elements", elements), ("write/episodes", episodes),
                       ("write/facts", facts), ("write/topics", topics), ("write/hyperedges", hyperedges)]:  # fmt: skip
        graph.write(name, rows)
    yield graph
    graph.delete_memory(M)
    graph.close()


def _node_ids(value) -> list[str]:
    """Node ids in a returned value, in path order: FalkorDB's ``Node``/``Path``, or the Neo4j driver's
    ``record.data()`` shapes (a node is a dict of its properties; a path a list of nodes and
    ``(start, type, end)`` relationship tuples)."""
    if isinstance(value, GraphPath):
        return [node.properties["id"] for node in value.nodes()]
    if isinstance(value, Node):
        return [value.properties["id"]]
    if isinstance(value, dict):
        return [value["id"]] if "id" in value else []
    if isinstance(value, (list, tuple)):
        return [i for item in value for i in _node_ids(item)]
    return []


def _run(store: GraphStore, template: dict, **params: str) -> list[str]:
    """Run a search phrase as Bloom would; the ids of this test's nodes it returns, in first-seen order.

    A phrase searches the whole database: on the Neo4j test database, which the whole run shares,
    other tests' memories answer too, so only nodes of memory ``M`` are kept (their order is the phrase's).
    """
    seen: dict[str, None] = {}
    for row in store.run_cypher(template["cypher"], params):
        for value in row.values():
            for node_id in _node_ids(value):
                if node_id.startswith(f"{M}/"):
                    seen.setdefault(node_id, None)
    return list(seen)


def test_categories_have_captions_and_colours(perspective):
    categories = {c["name"]: c for c in perspective["categories"]}
    for label in ("Topic", "Episode", "Fact", "Person", "Time", "Location", "Hyperedge"):
        category = categories[label]
        assert category["labels"] == [label]
        assert re.fullmatch(r"#[0-9A-Fa-f]{6}", category["color"])
        caption = category["captions"][0]["key"]
        assert caption in {p["name"] for p in category["properties"]}
    colours = [c["color"] for c in perspective["categories"]]
    assert len(set(colours)) == len(colours)
    assert categories["Fact"]["captions"][0]["key"] == "content"
    assert categories["Time"]["captions"][0]["key"] == "value"


def test_search_phrases_are_the_cypher_files(perspective):
    texts = [t["text"] for t in perspective["templates"]]
    assert texts == ["timeline of $person", "facts about $topic", "episodes between $from and $to"]
    for template in perspective["templates"]:
        name = re.sub(r"[^a-z]+", "_", template["text"].replace("$", "")).strip("_")
        assert template["cypher"] == queries.load(f"bloom/{name}")
        declared = {p["name"] for p in template["params"]}
        assert declared == set(re.findall(r"\$\w+", template["text"]))
        assert declared == set(re.findall(r"\$\w+", template["cypher"]))
        for forbidden in ("apoc.", "datetime(", "EXISTS {", "COUNT {", "CALL (", "elementId("):
            assert forbidden not in template["cypher"]


def test_timeline_of_person(store, perspective):
    template = _template(perspective, "timeline of $person")
    ids = _run(store, template, person="caroline")
    episodes = [i for i in ids if "/episode/" in i]
    assert episodes == [_id("episode", "0"), _id("episode", "1")]  # date order, not episode 2
    assert {i for i in ids if "/fact/" in i} == {_id("fact", "0"), _id("fact", "1"), _id("fact", "2")}
    assert _id("person", "caroline") in ids and _id("person", "melanie") not in ids
    assert _run(store, template, person="Nobody") == []


def test_facts_about_topic(store, perspective):
    template = _template(perspective, "facts about $topic")
    ids = _run(store, template, topic="CAREER")
    assert [i for i in ids if "/fact/" in i] == [_id("fact", "1"), _id("fact", "0"), _id("fact", "2")]  # by date
    assert _id("topic", "career") in ids and _id("topic", "art") not in ids
    assert [i for i in _run(store, template, topic="paint") if "/fact/" in i] == [_id("fact", "3")]


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("2023-06-01", "2023-08-01", ["1", "2"]),  # a date covers its whole day (episode 2 starts 09:15)
        ("2023-05-07", "2023-05-07", ["0"]),
        ("2023-05-07T22:00", "2023-06-10T18:00", ["0"]),  # episode 1 starts 18:30
        ("2023-01-01", "2023-12-31", ["0", "1", "2"]),
        ("2024-01-01", "2024-12-31", []),
    ],
)
def test_episodes_between(store, perspective, start, end, expected):
    template = _template(perspective, "episodes between $from and $to")
    assert _run(store, template, **{"from": start, "to": end}) == [_id("episode", e) for e in expected]
