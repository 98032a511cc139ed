"""The ingest write plan (``hypermem.ingest.plan``) as a pure function: no store, values computed by hand.

Memory ``m`` holds session 1 (episode ``D1:1``, vector x = (1, 0, 0), in topic ``T`` and in a segment
over Ana + 1 May 2023). Session 2 is rebuilt: episode ``D2:1`` (a = (0.8, 0.6, 0), facts f1 = x and
f2 = (0, 1, 0)) and episode ``D2:4`` (b = (0, 0, 1), fact f3 = b). λ = 0.5.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from hypermem.ingest.elements import TurnElements
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.plan import SessionBuild, StoredHypergraph, first_writes, plan_write, turn_rows
from hypermem.ingest.segment_hyperedges import Segment
from hypermem.ingest.topics import CentroidTopicAssigner, TopicState
from hypermem.ingest.turns import session_hash
from hypermem.model import Element, Episode, Fact, Turn
from hypermem.store import bm25

X, A, B = np.array([1.0, 0.0, 0.0]), np.array([0.8, 0.6, 0.0]), np.array([0.0, 0.0, 1.0])
ANA, MAY1, PARIS = "m/person/ana", "m/time/2023-05-01", "m/location/paris"


def unit(v) -> list[float]:
    v = np.asarray(v, dtype=float)
    return list(v / np.linalg.norm(v))


def _turn(dia: str, speaker: str, text: str, seq: int) -> Turn:
    return Turn("m", f"m/turn/{dia}", dia, speaker, text, f"2023-05-02T10:0{seq}:00", "2", seq)


def _episode(dia: str, title: str, turn_ids: list[str], vector: np.ndarray) -> Episode:
    return Episode("m", f"m/episode/{dia}", "2", title, f"{title}.", f"2023-05-02T10:0{dia[-1]}:00",
                   f"2023-05-02T10:0{dia[-1]}:00", ["Ana", "Ben"], turn_ids, embedding_raw=list(vector))  # fmt: skip


def _fact(n: int, episode: str, vector: np.ndarray) -> Fact:
    return Fact("m", f"m/fact/D2:{n}#0", f"m/episode/{episode}", f"fact {n}", [], [f"kw{n}"], "2023-05-02",
                [f"m/turn/D2:{n}"], embedding_raw=list(vector))  # fmt: skip


@pytest.fixture
def session() -> SessionBuild:
    turns = [
        _turn("D2:1", "Ana", "I made a pottery bowl in class.", 1),
        _turn("D2:2", "Ben", "What colour is the pottery bowl?", 2),
        _turn("D2:3", "Ana", "Blue, with a glaze.", 3),
        _turn("D2:4", "Ben", "I am flying to Paris next week.", 4),
    ]
    build = SessionBuild("2", turns, elements=[TurnElements() for _ in turns])
    build.episodes = [
        _episode("D2:1", "pottery bowl", [t.id for t in turns[:3]], A),
        _episode("D2:4", "Paris trip", [turns[3].id], B),
    ]
    build.facts = [_fact(1, "D2:1", X), _fact(2, "D2:1", np.array([0.0, 1.0, 0.0])), _fact(4, "D2:4", B)]
    build.mentions = {"m/episode/D2:1": Counter({ANA: 2, MAY1: 1}), "m/episode/D2:4": Counter({ANA: 1, PARIS: 1})}
    build.element_nodes = {ANA: Element("m", ANA, "Person", "Ana", "Ana"),
                           PARIS: Element("m", PARIS, "Location", "Paris", "Paris")}  # fmt: skip
    return build


@pytest.fixture
def stored() -> StoredHypergraph:
    topic = TopicState("m/topic/T", {"m/episode/D1:1": X.astype(np.float32)}, {"m/episode/D1:1": "pottery class"})
    segment = Segment("m/hyperedge/segment:D1:1", Counter({ANA: 1.0, MAY1: 1.0}), ["m/episode/D1:1"])
    return StoredHypergraph([topic], [segment])


@pytest.fixture
def plan(session, stored):
    return plan_write("m", [session], stored, topic_assigner=CentroidTopicAssigner(0.2), keywords=KeywordExtractor(),
                      propagation_lambda=0.5, segment_merge_jaccard=0.8)  # fmt: skip


@pytest.fixture
def first(session):
    return first_writes("m", [session], propagation_lambda=0.5)


def test_episode_hyperedges_weigh_facts_by_cosine_to_the_episode(first):
    episode_edges = {e["id"]: e for e in first.episode_hyperedges}
    assert {e["kind"] for e in first.episode_hyperedges} == {"episode"}
    assert episode_edges["m/hyperedge/episode:D2:1"]["members"] == [
        {"id": "m/fact/D2:1#0", "weight": 0.9},  # (1 + 0.8) / 2
        {"id": "m/fact/D2:2#0", "weight": 0.8},  # (1 + 0.6) / 2
    ]
    assert episode_edges["m/hyperedge/episode:D2:4"]["owner_ids"] == ["m/episode/D2:4"]
    assert episode_edges["m/hyperedge/episode:D2:4"]["members"] == [{"id": "m/fact/D2:4#0", "weight": 1.0}]


def test_fact_vectors_are_propagated_over_their_episode_hyperedge(first):
    facts = {f["id"]: f for f in first.facts}
    share = 1 / (1 + np.exp(-0.1))  # softmax(0.9, 0.8)[0]
    h_e = np.array([share, 1 - share, 0.0])
    assert facts["m/fact/D2:1#0"]["embedding"] == pytest.approx(unit(X + 0.5 * h_e), abs=1e-6)
    assert facts["m/fact/D2:4#0"]["embedding"] == pytest.approx(list(B), abs=1e-6)  # alone: b + 0.5 b, normalised
    assert facts["m/fact/D2:1#0"]["embedding_raw"] == list(X)
    assert facts["m/fact/D2:1#0"]["text"] == "fact 1 kw1"


def test_an_episode_near_a_stored_topic_joins_it_and_a_far_one_founds_its_own(plan):
    # a joins T: centred cosine 0.73 >= 0.2; b, centred on (x + a) / 7, is at -0.2 from T: a new topic named after it.
    assert [t["id"] for t in plan.topics] == ["m/topic/T", "m/topic/D2:4"]
    members = {e["owner_ids"][0]: [m["id"] for m in e["members"]] for e in plan.topic_hyperedges}
    assert members == {"m/topic/T": ["m/episode/D1:1", "m/episode/D2:1"], "m/topic/D2:4": ["m/episode/D2:4"]}
    topic = plan.topics[0]
    assert topic["summary"] == "pottery class; pottery bowl"
    assert topic["embedding"] == pytest.approx(unit(X + A), abs=1e-6)
    assert "pottery" in topic["title"]


def test_episode_vectors_are_propagated_in_their_topic_stored_members_included(plan):
    # In T, x and a are symmetric about the centroid: equal weights, h_e = (x + a) / 2.
    h_t = (X + A) / 2
    episodes = {e["id"]: e for e in plan.episodes}
    assert episodes["m/episode/D2:1"]["embedding"] == pytest.approx(unit(A + 0.5 * h_t), abs=1e-6)
    assert episodes["m/episode/D2:4"]["embedding"] == pytest.approx(list(B), abs=1e-6)
    assert [row["id"] for row in plan.episode_embeddings] == ["m/episode/D1:1"]  # the stored member, re-propagated
    assert plan.episode_embeddings[0]["embedding"] == pytest.approx(unit(X + 0.5 * h_t), abs=1e-6)
    assert episodes["m/episode/D2:1"]["text"].startswith("pottery bowl. Ana: I made a pottery bowl")
    assert "Paris" not in episodes["m/episode/D2:1"]["text"]


def test_segments_merge_into_the_stored_one_at_jaccard_above_the_threshold(plan):
    segments = {e["id"]: e for e in plan.segment_hyperedges}
    assert {e["kind"] for e in plan.segment_hyperedges} == {"segment"}
    merged = segments["m/hyperedge/segment:D1:1"]  # {Ana, 1 May} = the stored set: Jaccard 1
    assert merged["owner_ids"] == ["m/episode/D1:1", "m/episode/D2:1"]
    assert merged["members"] == [{"id": ANA, "weight": 1.0}, {"id": MAY1, "weight": round(2 / 3, 6)}]
    fresh = segments["m/hyperedge/segment:D2:4"]  # {Ana, Paris}: Jaccard 1/3 with the merged one
    assert fresh["owner_ids"] == ["m/episode/D2:4"]
    assert fresh["members"] == [{"id": ANA, "weight": 1.0}, {"id": PARIS, "weight": 1.0}]


def test_turns_elements_and_session_marks(plan, first, session):
    assert first.sessions == ["2"]
    turns = turn_rows([session])
    assert [(t["dia_id"], t["prev_id"]) for t in turns] == [
        ("D2:1", None), ("D2:2", "m/turn/D2:1"), ("D2:3", "m/turn/D2:2"), ("D2:4", "m/turn/D2:3"),
    ]  # fmt: skip
    assert turns[0]["terms"] == " ".join(bm25.analyze(turns[0]["text"]))  # what a search scores
    assert turns[0]["words"] == len(turns[0]["text"].split(" "))
    assert [e["id"] for e in first.elements] == [ANA, PARIS]
    assert plan.session_marks == [
        {"id": "m/ingest/2", "memory_id": "m", "session": "2", "hash": session_hash(session.turns)}
    ]


def test_planning_leaves_its_inputs_unchanged(session, stored, plan, first):
    assert list(stored.topics[0].members) == ["m/episode/D1:1"] and not stored.topics[0].changed
    assert stored.segments[0].mentions == Counter({ANA: 1.0, MAY1: 1.0})
    assert stored.segments[0].episode_ids == ["m/episode/D1:1"]
    assert all(e.embedding is None for e in session.episodes)
    assert all(f.embedding is None for f in session.facts)


def test_a_rebuilt_episode_never_takes_the_id_of_a_stored_topic_or_segment(session):
    """Session 2 was ingested before: its episode D2:1 founded topic and segment ``D2:1``, which session 3's
    D3:1 (vector b, Paris + 1 July) joined. Rebuilt, D2:1 (vector a, Ana + 1 May) fits neither any more:
    its new topic and segment need ids of their own, and D3:1 keeps its topic and its segment's members."""
    july = "m/time/2023-07-01"
    stored = StoredHypergraph(
        [TopicState("m/topic/D2:1", {"m/episode/D3:1": B.astype(np.float32)}, {"m/episode/D3:1": "Paris trip"})],
        [Segment("m/hyperedge/segment:D2:1", Counter({PARIS: 1.0, july: 1.0}), ["m/episode/D3:1"])],
    )
    plan = plan_write("m", [session], stored, topic_assigner=CentroidTopicAssigner(0.2), keywords=KeywordExtractor(),
                      propagation_lambda=0.5, segment_merge_jaccard=0.8)  # fmt: skip
    members = {e["owner_ids"][0]: [m["id"] for m in e["members"]] for e in plan.topic_hyperedges}
    # a is centred-opposite to b: a new topic; b (D2:4) joins the stored topic of D3:1
    assert members == {"m/topic/D2:1": ["m/episode/D3:1", "m/episode/D2:4"], "m/topic/D2:1#2": ["m/episode/D2:1"]}
    assert [t["id"] for t in plan.topics] == ["m/topic/D2:1", "m/topic/D2:1#2"]
    segments = {e["id"]: e["owner_ids"] for e in plan.segment_hyperedges}
    assert segments == {
        "m/hyperedge/segment:D2:1#2": ["m/episode/D2:1"],
        "m/hyperedge/segment:D2:4": ["m/episode/D2:4"],
    }
