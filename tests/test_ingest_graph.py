"""The hypergraph built from the test conversation (conftest ``TESTCONV_SESSIONS``), checked node by node.

Real embedded FalkorDB, real embeddings, real spaCy, no LLM. Relative dates are checked
against the calendar by hand: session 1 is Monday 12 June 2023, session 2 Monday 26 June
2023, session 3 Saturday 15 July 2023.
"""

from __future__ import annotations

import math
from collections import defaultdict

import numpy as np
import pytest
from conftest import TESTCONV_SESSIONS, expected_propagation, topic_similarity

from hypermem.ingest.topics import TOPIC_CENTER_PRIOR

ALL_DIA_IDS = [t["dia_id"] for _, turns in TESTCONV_SESSIONS for t in turns]
PHATIC = {"D2:12"}  # "Haha yes, thanks!": no fact

# surface phrase -> (turn, the absolute date it means, its display form in the fact)
RELATIVE_DATES = {
    "last Saturday": ("D1:1", "2023-06-10", "10 June 2023"),  # Saturday before Monday 12 June
    "yesterday": ("D1:2", "2023-06-11", "11 June 2023"),
    "two weeks ago": ("D2:1", "2023-06-12", "12 June 2023"),  # 26 June - 14 days
    "a few days ago": ("D2:7", "2023-06-23", "23 June 2023"),  # dateparser gives None: rule, 3 days
    "last weekend": ("D3:3", "2023-07-08", "8 July 2023"),  # dateparser gives None: the Saturday before
}


@pytest.fixture(scope="module")
def g(hm_service, hm_ingested):
    """A Cypher runner scoped to the test memory: ``g(cypher, **params)`` with ``$m`` bound."""

    def run(cypher: str, **params):
        return hm_service.store.run_cypher(cypher, {"m": hm_ingested.memory_id, **params})

    return run


@pytest.fixture(scope="module")
def episodes(g) -> dict[str, list[str]]:
    """Episode id -> dia_ids of its turns in dialogue order."""
    rows = g(
        "MATCH (e:Episode)-[:FROM_TURN]->(t:Turn) WHERE e.memory_id = $m "
        "WITH e, t ORDER BY t.seq RETURN e.id AS id, collect(t.dia_id) AS dia_ids"
    )
    return {r["id"]: r["dia_ids"] for r in rows}


# --- counts ---------------------------------------------------------------------------------------------
def test_report_counts(hm_ingested, hm_service):
    report = hm_ingested.report
    assert report.turns == 22
    assert report.facts == 22 - len(PHATIC)
    assert report.episodes == 4  # sessions 1 and 3 are too short to split; session 2 splits at the topic change
    assert report.persons == 3  # Nadia, Omar, and Leila (mentioned once)
    assert report.times == 7  # 3 session dates + 4 other resolved dates (12 June is both S1 and "two weeks ago")
    assert {"lisbon", "berlin"} <= {
        r["n"]
        for r in hm_service.store.run_cypher(
            "MATCH (x:Location) WHERE x.memory_id = 'testconv' RETURN toLower(x.name) AS n"
        )
    }
    assert report.sessions_ingested == 3 and report.sessions_skipped == 0
    assert report.llm is False
    counts = hm_service.store.counts(hm_ingested.memory_id)
    assert counts["Turn"] == report.turns and counts["Fact"] == report.facts and counts["Topic"] == report.topics
    # one episode hyperedge per episode, one topic hyperedge per topic, at most one segment hyperedge per episode
    assert report.episodes * 2 + report.topics >= report.hyperedges >= report.episodes + report.topics + 1
    assert counts["IngestState"] == 3


def test_episodes_cover_each_session_in_order(episodes):
    assert sorted(episodes) == sorted(
        ["testconv/episode/D1:1", "testconv/episode/D2:1", "testconv/episode/D2:7", "testconv/episode/D3:1"]
    )
    assert episodes["testconv/episode/D1:1"] == ALL_DIA_IDS[0:5]
    # the boundary is where Omar changes the subject from pottery to camping (and brings a new date)
    assert episodes["testconv/episode/D2:1"] == [f"D2:{i}" for i in range(1, 7)]
    assert episodes["testconv/episode/D2:7"] == [f"D2:{i}" for i in range(7, 13)]
    assert episodes["testconv/episode/D3:1"] == ALL_DIA_IDS[17:]


def test_episode_fields(g):
    rows = g("MATCH (e:Episode) WHERE e.memory_id = $m RETURN e.id AS id, e.title AS title, e.summary AS summary, "
             "e.start AS start, e.end AS end, e.participants AS participants, e.session AS session")  # fmt: skip
    by_id = {r["id"]: r for r in rows}
    first = by_id["testconv/episode/D1:1"]
    assert first["start"] == first["end"] == "2023-06-12T14:15:00"
    assert first["session"] == "1"
    assert first["participants"] == ["Nadia", "Omar"]
    assert "pottery" in by_id["testconv/episode/D2:1"]["title"].lower()
    for row in rows:
        assert row["title"] and row["summary"].split(":")[0] in ("Nadia", "Omar")  # extractive: "Speaker: words"


# --- turns ----------------------------------------------------------------------------------------------
def test_turns_keep_timestamps_order_and_the_photo(g):
    rows = g("MATCH (t:Turn) WHERE t.memory_id = $m RETURN t.dia_id AS dia_id, t.text AS text, "
             "t.timestamp AS ts, t.seq AS seq, t.speaker AS speaker ORDER BY t.seq")  # fmt: skip
    assert [r["dia_id"] for r in rows] == ALL_DIA_IDS
    assert [r["seq"] for r in rows] == list(range(22))
    photo = next(r for r in rows if r["dia_id"] == "D1:2")
    assert photo["text"] == (
        "Congratulations Nadia! I adopted a puppy yesterday, look at him. "
        "[shares a photo: a photo of a golden retriever puppy sitting on a sandy beach]"
    )
    assert {r["ts"] for r in rows if r["dia_id"].startswith("D3:")} == {"2023-07-15T10:05:00"}
    chain = g("MATCH (a:Turn)-[:NEXT]->(b:Turn) WHERE a.memory_id = $m RETURN a.dia_id AS a, b.dia_id AS b")
    # NEXT chains turns within a session (the sessions' rebuilds are independent)
    assert {(r["a"], r["b"]) for r in chain} == {
        (a, b) for a, b in zip(ALL_DIA_IDS, ALL_DIA_IDS[1:]) if a.split(":")[0] == b.split(":")[0]
    }


# --- dates ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("phrase", list(RELATIVE_DATES))
def test_relative_date_resolved_on_time_node_and_fact(g, phrase):
    dia_id, iso, display = RELATIVE_DATES[phrase]
    time_ids = {r["id"] for r in g("MATCH (x:Time) WHERE x.memory_id = $m RETURN x.id AS id")}
    assert f"testconv/time/{iso}" in time_ids
    fact = g("MATCH (f:Fact)-[:FROM_TURN]->(t:Turn {dia_id: $d}) WHERE f.memory_id = $m "
             "RETURN f.content AS content, f.date AS date", d=dia_id)  # fmt: skip
    assert len(fact) == 1
    assert f"{phrase} ({display})" in fact[0]["content"]
    assert fact[0]["date"] == iso
    # the Time node hangs off the segment hyperedge of the episode holding that turn
    joined = g("MATCH (e:Episode)-[:FROM_TURN]->(:Turn {dia_id: $d}) WHERE e.memory_id = $m "
               "MATCH (e)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'segment'})-[:MEMBER]->(x:Time {value: $iso}) "
               "RETURN count(x) AS n", d=dia_id, iso=iso)  # fmt: skip
    assert joined[0]["n"] == 1


def test_all_time_nodes_are_iso_dates_of_this_conversation(g):
    values = sorted(r["v"] for r in g("MATCH (x:Time) WHERE x.memory_id = $m RETURN x.value AS v"))
    assert values == ["2023-06-10", "2023-06-11", "2023-06-12", "2023-06-23", "2023-06-26", "2023-07-08", "2023-07-15"]


def test_facts_name_speaker_and_date(g):
    rows = g("MATCH (f:Fact)-[:FROM_TURN]->(t:Turn) WHERE f.memory_id = $m "
             "RETURN f.content AS content, t.speaker AS speaker, t.dia_id AS dia_id")  # fmt: skip
    said = {"D1": "12 June 2023", "D2": "26 June 2023", "D3": "15 July 2023"}
    for row in rows:
        assert row["content"].startswith(f"{row['speaker']} said on {said[row['dia_id'].split(':')[0]]}: ")


# --- provenance -----------------------------------------------------------------------------------------
def test_every_fact_and_episode_traces_back_to_existing_dia_ids(g):
    for label in ("Fact", "Episode"):
        rows = g(f"MATCH (n:{label}) WHERE n.memory_id = $m OPTIONAL MATCH (n)-[:FROM_TURN]->(t:Turn) "
                 "RETURN n.id AS id, collect(t.dia_id) AS dia_ids, collect(t.memory_id) AS mids")  # fmt: skip
        assert rows
        for row in rows:
            assert row["dia_ids"], f"{row['id']} has no FROM_TURN"
            assert set(row["dia_ids"]) <= set(ALL_DIA_IDS)
            assert set(row["mids"]) == {"testconv"}
    facts = g("MATCH (f:Fact)-[:FROM_TURN]->(t:Turn) WHERE f.memory_id = $m RETURN f.id AS id, t.dia_id AS dia_id")
    assert sorted(r["dia_id"] for r in facts) == sorted(set(ALL_DIA_IDS) - PHATIC)
    for row in facts:
        assert row["id"].split("/")[-1].split("#")[0] == row["dia_id"]


def test_fact_belongs_to_the_episode_whose_hyperedge_holds_it(g, episodes):
    rows = g("MATCH (e:Episode)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'episode'})-[m:MEMBER]->(f:Fact)-[:FROM_TURN]->(t:Turn) "
             "WHERE e.memory_id = $m RETURN e.id AS e, f.episode_id AS fe, t.dia_id AS d, m.weight AS w")  # fmt: skip
    assert len(rows) == 21
    for row in rows:
        assert row["e"] == row["fe"]
        assert row["d"] in episodes[row["e"]]
        assert 0.0 <= row["w"] <= 1.0


def test_no_orphan_hyperedges(g):
    rows = g("MATCH (h:Hyperedge) WHERE h.memory_id = $m OPTIONAL MATCH (o)-[:HAS_HYPEREDGE]->(h) "
             "OPTIONAL MATCH (h)-[:MEMBER]->(x) RETURN h.id AS id, h.kind AS kind, count(DISTINCT o) AS owners, "
             "count(DISTINCT x) AS members, h.size AS size")  # fmt: skip
    assert {r["kind"] for r in rows} == {"topic", "episode", "segment"}
    for row in rows:
        assert row["owners"] >= 1 and row["members"] >= 1, row
        assert row["size"] == row["members"]


# --- segments, salience ---------------------------------------------------------------------------------
def test_segment_hyperedges_join_each_episodes_elements(g):
    rows = g("MATCH (e:Episode)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'segment'})-[m:MEMBER]->(x:Element) "
             "WHERE e.memory_id = $m RETURN e.id AS e, collect(x.id) AS xs, collect(m.weight) AS ws")  # fmt: skip
    by_episode = {r["e"]: set(r["xs"]) for r in rows}
    assert by_episode["testconv/episode/D1:1"] >= {
        "testconv/person/nadia", "testconv/person/omar", "testconv/person/leila",
        "testconv/time/2023-06-10", "testconv/time/2023-06-11", "testconv/location/lisbon",
    }  # fmt: skip
    # the move: Lisbon in sessions 1 and 3, Berlin only in session 3
    assert "testconv/location/berlin" in by_episode["testconv/episode/D3:1"]
    assert "testconv/location/berlin" not in by_episode["testconv/episode/D1:1"]
    assert "testconv/location/lisbon" in by_episode["testconv/episode/D3:1"]
    for row in rows:
        assert max(row["ws"]) == 1.0 and min(row["ws"]) > 0.0  # w = mentions / most mentions


def test_salience_matches_frequency_centrality_diversity(g):
    """Recompute HingeMem salience from the graph structure by hand and compare with the Cypher's."""
    seg = g("MATCH (h:Hyperedge {kind: 'segment'})-[:MEMBER]->(x:Element) WHERE h.memory_id = $m "
            "RETURN h.id AS h, collect(x.id) AS xs")  # fmt: skip
    topic_of = {r["e"]: r["t"] for r in g(
        "MATCH (t:Topic)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'topic'})-[:MEMBER]->(e:Episode) "
        "WHERE t.memory_id = $m RETURN e.id AS e, t.id AS t")}  # fmt: skip
    owners = defaultdict(set)
    for r in g("MATCH (e:Episode)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'segment'}) WHERE e.memory_id = $m "
               "RETURN h.id AS h, e.id AS e"):  # fmt: skip
        owners[r["h"]].add(r["e"])
    freq, co, topics = defaultdict(int), defaultdict(set), defaultdict(set)
    for row in seg:
        for x in row["xs"]:
            freq[x] += 1
            co[x] |= set(row["xs"]) - {x}
            topics[x] |= {topic_of[e] for e in owners[row["h"]]}
    mf, mc, md = max(freq.values()), max(len(v) for v in co.values()), max(len(v) for v in topics.values())
    stored = {r["id"]: r for r in g("MATCH (x:Element) WHERE x.memory_id = $m RETURN x.id AS id, x.salience AS s, "
                                    "x.frequency AS f, x.centrality AS c, x.diversity AS d")}  # fmt: skip
    assert set(stored) == set(freq)
    for x, row in stored.items():
        assert (row["f"], row["c"], row["d"]) == (freq[x], len(co[x]), len(topics[x]))
        expected = (math.log(1 + freq[x]) / math.log(2 + mf) + len(co[x]) / mc + len(topics[x]) / md) / 3
        assert row["s"] == pytest.approx(expected, abs=1e-9)
        assert 0.0 <= row["s"] <= 1.0
    assert stored["testconv/person/nadia"]["s"] > stored["testconv/person/leila"]["s"]
    assert stored["testconv/person/omar"]["s"] > stored["testconv/location/berlin"]["s"]


# --- topics and propagation -----------------------------------------------------------------------------
def _unit(v):
    v = np.asarray(v, dtype=np.float64)
    return v / np.linalg.norm(v)


def test_topics_follow_the_incremental_rule(g, hm_service):
    """Replay HyperMem topic assignment by hand: in start order, an episode joins the topic with the best
    centred cosine (centre = sum of the earlier episodes / (their count + TOPIC_CENTER_PRIOR)) when it
    reaches the threshold, else starts a new topic."""
    rows = g("MATCH (e:Episode) WHERE e.memory_id = $m RETURN e.id AS id, e.start AS start, e.embedding_raw AS raw")
    threshold = hm_service.settings.topic_join_similarity
    vectors = {r["id"]: np.asarray(r["raw"], dtype=np.float64) for r in rows}
    groups: list[list[str]] = []
    seen: list[np.ndarray] = []
    for row in sorted(rows, key=lambda r: (r["start"], int(r["id"].split(":")[-1]))):
        vector = vectors[row["id"]]
        center = np.sum(seen, axis=0) / (len(seen) + TOPIC_CENTER_PRIOR) if seen else np.zeros_like(vector)
        seen.append(vector)
        sims = [topic_similarity(vector, [vectors[e] for e in grp], center) for grp in groups]
        if sims and max(sims) >= threshold:
            groups[int(np.argmax(sims))].append(row["id"])
        else:
            groups.append([row["id"]])
    stored = g("MATCH (t:Topic)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'topic'})-[m:MEMBER]->(e:Episode) "
               "WHERE t.memory_id = $m RETURN t.id AS t, collect(e.id) AS eps, collect(m.weight) AS ws, "
               "t.embedding AS emb")  # fmt: skip
    assert sorted(sorted(r["eps"]) for r in stored) == sorted(sorted(grp) for grp in groups)
    for row in stored:
        center = _unit(np.mean([_unit(vectors[e]) for e in row["eps"]], axis=0))
        assert np.allclose(_unit(row["emb"]), center, atol=1e-5)
        for e, w in zip(row["eps"], row["ws"]):
            assert w == pytest.approx((1 + vectors[e] @ center) / 2, abs=1e-5)


def test_raw_and_propagated_vectors_are_stored_and_propagation_is_exact(g, hm_service):
    lam = hm_service.settings.propagation_lambda
    # a raw_is_turn fact's raw vector is its turn's (test_a_fact_stores_its_raw_vector_unless_it_is_its_turns)
    rows = g("MATCH (e:Episode)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'episode'})-[m:MEMBER]->(f:Fact) "
             "WHERE e.memory_id = $m OPTIONAL MATCH (f)-[:FROM_TURN]->(t:Turn) WHERE f.raw_is_turn = true "
             "RETURN h.id AS h, f.id AS f, m.weight AS w, f.embedding AS emb, coalesce(f.embedding_raw, t.embedding) AS raw")  # fmt: skip
    by_edge = defaultdict(dict)
    for r in rows:
        by_edge[r["h"]][r["f"]] = (np.asarray(r["raw"], dtype=np.float64), r["w"], np.asarray(r["emb"]))
    for members in by_edge.values():
        expected = expected_propagation({k: (v[0], v[1]) for k, v in members.items()}, lam)
        for fid, (raw, _, stored) in members.items():
            assert np.allclose(stored, expected[fid], atol=1e-5), fid
            if len(members) > 1:  # a one-member hyperedge propagates a node onto itself
                assert not np.allclose(stored, raw, atol=1e-3), f"{fid}: propagated == raw"
    topics = g("MATCH (:Topic)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'topic'})-[m:MEMBER]->(e:Episode) "
               "WHERE h.memory_id = $m RETURN h.id AS h, e.id AS e, m.weight AS w, e.embedding AS emb, e.embedding_raw AS raw")  # fmt: skip
    by_topic = defaultdict(dict)
    for r in topics:
        by_topic[r["h"]][r["e"]] = (np.asarray(r["raw"], dtype=np.float64), r["w"], np.asarray(r["emb"]))
    for members in by_topic.values():
        expected = expected_propagation({k: (v[0], v[1]) for k, v in members.items()}, lam)
        for eid, (raw, _, stored) in members.items():
            assert np.allclose(stored, expected[eid], atol=1e-5), eid
            assert np.allclose(stored, raw, atol=1e-5) == (len(members) == 1)
    assert max(len(m) for m in by_edge.values()) > 1


def test_a_fact_stores_its_raw_vector_unless_it_is_its_turns(g):
    """A fact of one turn whose raw vector is that turn's, bit for bit, is marked ``raw_is_turn`` and stores no
    ``embedding_raw``; every other fact stores its own, which then differs from its turn's."""
    rows = g("MATCH (f:Fact)-[:FROM_TURN]->(t:Turn) WHERE f.memory_id = $m "
             "RETURN f.id AS id, f.raw_is_turn AS flag, f.embedding_raw AS raw, collect(t.embedding) AS turns")  # fmt: skip
    flagged = [r for r in rows if r["flag"]]
    assert len(flagged) + sum(r["flag"] is False for r in rows) == len(rows)
    assert 0 < len(flagged) < len(rows)
    for r in flagged:
        assert r["raw"] is None and len(r["turns"]) == 1, r["id"]
    for r in rows:
        if not r["flag"]:
            assert r["raw"] is not None, r["id"]
            if len(r["turns"]) == 1:
                own = np.asarray(r["raw"], dtype=np.float32)
                assert not np.array_equal(own, np.asarray(r["turns"][0], dtype=np.float32)), r["id"]
