"""Supersession and recency (issue 9 part 7): a later statement replaces an earlier one of the same speaker
and predicate family, ranks first for "where does … live now", and the earlier one is marked superseded
(in the graph and in the explanation); "most recently" favours recent episodes. Real pipeline and engine."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from hypermem import browse
from hypermem.ingest.supersession import statement_family
from hypermem.model import Message
from hypermem.retrieve.recency import asks_recent

MEMORY = "moves"
START = datetime(2024, 3, 1, 10)
DIALOGUE = [
    ("S1:1", "Ana", "I live in Porto, right by the river, and I love the old town.", 0),
    ("S1:2", "Ben", "Porto is lovely! How is work going?", 0),
    ("S1:3", "Ana", "Work is fine, I work at a small bakery near the cathedral.", 0),
    ("S1:4", "Ben", "I live in Braga with my two brothers and our old piano.", 0),
    ("S2:1", "Ben", "Long time! What have you been up to?", 60),
    ("S2:2", "Ana", "Big news: I moved to Lisbon last month, the flat has a view of the bridge.", 60),
    ("S2:3", "Ben", "Wow, congratulations on the move! Do you like the new city?", 60),
    ("S2:4", "Ana", "Yes, and I went surfing in Cascais on Sunday with my cousin.", 60),
]


@pytest.fixture(scope="module")
def moves(hm_service):
    messages = [
        Message(dia, speaker, text, START + timedelta(days=days, minutes=n), dia.split(":")[0])
        for n, (dia, speaker, text, days) in enumerate(DIALOGUE)
    ]
    hm_service.ingest_messages(MEMORY, messages)
    return hm_service


@pytest.mark.parametrize(
    ("text", "family"),
    [("I live in Porto.", "residence"), ("We finally moved to Lisbon!", "residence"), ("I'm now living in Oslo.", "residence"),
     ("I work at a bakery.", "work"), ("I just got a new job at the museum!", "work"), ("I quit my job today.", "work"),
     ("My new boyfriend is called Tom.", "partner"), ("I'm dating someone from class.", "partner"),
     ("We adopted a puppy last week.", "pet"), ("My dog loves walks.", None), ("She lives in Rome.", None),
     ("The job was hard.", None)],
)  # fmt: skip
def test_statement_families(text, family):
    assert statement_family(text) == family


def test_the_earlier_statement_is_marked_superseded(moves):
    rows = moves.store.run_cypher(
        "MATCH (new:Fact)-[:SUPERSEDES]->(old:Fact) WHERE old.memory_id = $m "
        "MATCH (old)-[:FROM_TURN]->(a:Turn), (new)-[:FROM_TURN]->(b:Turn) "
        "RETURN a.dia_id AS old, b.dia_id AS new, old.superseded_by = new.id AS marked",
        {"m": MEMORY},
    )
    assert [(r["old"], r["new"], r["marked"]) for r in rows] == [("S1:1", "S2:2", True)]  # Ben's Braga stays current
    episode_id = moves.store.run_cypher(
        "MATCH (f:Fact)-[:FROM_TURN]->(t:Turn {dia_id: 'S1:1'}) WHERE f.memory_id = $m RETURN f.episode_id AS e",
        {"m": MEMORY},
    )[0]["e"]
    facts = browse.episode(moves.store, MEMORY, episode_id)["facts"]
    assert [f["superseded_by"] is not None for f in facts if "Porto" in f["content"] and "Ana" in f["content"]] == [
        True
    ]


@pytest.mark.parametrize(
    "question", ["Where does Ana live now?", "Where does Ana live?", "Which city is Ana living in currently?"]
)
def test_the_later_statement_ranks_first(moves, question):
    result = moves.query(MEMORY, question)
    assert result.turns[0].dia_id == "S2:2"
    old = next(f for f in result.facts if f.source_dia_ids == ["S1:1"])
    assert old.superseded_by == result.facts[0].id
    assert [s.level for s in old.path][-1] == "superseded"
    assert any(s.level == "supersedes" for s in result.facts[0].path)


def test_most_recently_favours_recent_episodes(moves):
    result = moves.query(MEMORY, "What did Ana do most recently?")
    assert result.turns[0].dia_id.startswith("S2:")
    assert all(any(s.level == "recency" for s in f.path) for f in result.facts)


@pytest.mark.parametrize(
    ("question", "recent"),
    [("What did Ana do most recently?", True), ("What has Ben been up to lately?", True),
     ("What is the latest news from Ana?", True), ("What did Ana do in March?", False)],
)  # fmt: skip
def test_recent_questions(question, recent):
    assert asks_recent(question) is recent


def test_successors_first_puts_each_successor_in_the_place_of_what_it_superseded():
    from hypermem.retrieve.recency import successors_first

    def item(fact_id, by=None):
        return {"id": fact_id, "superseded_by": by}

    # porto (by lisbon) and lisbon (by berlin) ranked above berlin: the chain's latest takes porto's place
    ranked = [item("porto", "lisbon"), item(None), item("lisbon", "berlin"), item("berlin"), item("other")]
    assert [i["id"] for i in successors_first(ranked)] == ["berlin", "lisbon", "porto", None, "other"]
    # a superseded item already below its successor, or whose successor is not ranked, does not move
    assert [i["id"] for i in successors_first([item("new"), item("old", "new"), item("x", "gone")])] == [
        "new",
        "old",
        "x",
    ]
