"""LoCoMo dev conversations ingested without an LLM (issue 3, Must show): counts and provenance.

conv-30 (the smallest) and conv-26 are ingested once per test session into the shared store
(conftest ``hm_conv30`` / ``hm_conv26``); skipped when ../shared/data/locomo-dev.json is absent.
"""

from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from conftest import LOCOMO, expected_propagation

pytestmark = pytest.mark.locomo


def _file_turns(sample_id: str) -> dict[str, str]:
    """dia_id -> session number for every turn of ``sample_id`` in the LoCoMo file."""
    record = next(r for r in json.loads(LOCOMO.read_text(encoding="utf-8")) if r["sample_id"] == sample_id)
    conv = record["conversation"]
    return {
        turn["dia_id"]: key.split("_")[1]
        for key, turns in conv.items()
        if key.startswith("session_") and isinstance(turns, list)
        for turn in turns
    }


@pytest.mark.parametrize("fixture", ["hm_conv30", "hm_conv26"])
def test_counts_follow_the_file(request, hm_service, fixture):
    ingested = request.getfixturevalue(fixture)
    turns = _file_turns(ingested.memory_id)
    report = ingested.report
    assert report.turns == len(turns)
    assert report.sessions_ingested == len(set(turns.values())) == 19  # conv-26: 19 sessions, not its 35 date keys
    counts = hm_service.store.counts(ingested.memory_id)
    assert counts["IngestState"] == 19
    assert 19 <= report.episodes <= report.turns // 3 + 19  # at least one per session, episodes of >= 3 turns
    assert report.facts >= report.turns * 0.8  # nearly every turn of LoCoMo carries content
    assert report.persons >= 2 and report.times >= 19 and report.topics >= 1
    stored = hm_service.store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m RETURN t.dia_id AS d, t.session AS s", {"m": ingested.memory_id}
    )
    assert {r["d"]: r["s"] for r in stored} == turns


@pytest.mark.parametrize("fixture", ["hm_conv30", "hm_conv26"])
def test_every_fact_and_episode_traces_back_to_existing_dia_ids(request, hm_service, fixture):
    ingested = request.getfixturevalue(fixture)
    turns = _file_turns(ingested.memory_id)
    rows = hm_service.store.run_cypher(
        "MATCH (n) WHERE n.memory_id = $m AND (n:Fact OR n:Episode) OPTIONAL MATCH (n)-[:FROM_TURN]->(t:Turn) "
        "RETURN n.id AS id, collect(t.dia_id) AS dia_ids, collect(DISTINCT t.memory_id) AS mids",
        {"m": ingested.memory_id},
    )
    assert len(rows) == ingested.report.facts + ingested.report.episodes
    for row in rows:
        assert row["dia_ids"] and set(row["dia_ids"]) <= set(turns), row["id"]
        assert row["mids"] == [ingested.memory_id]
    episode_turns = hm_service.store.run_cypher(
        "MATCH (e:Episode)-[:FROM_TURN]->(t:Turn) WHERE e.memory_id = $m RETURN t.dia_id AS d, count(e) AS n",
        {"m": ingested.memory_id},
    )
    assert {r["d"] for r in episode_turns} == set(turns) and {r["n"] for r in episode_turns} == {1}  # a partition


def test_photo_captions_are_kept_as_text(hm_conv30, hm_service):
    record = next(r for r in json.loads(LOCOMO.read_text(encoding="utf-8")) if r["sample_id"] == "conv-30")
    photos = [t for k, v in record["conversation"].items() if k.startswith("session_") and isinstance(v, list)
              for t in v if t.get("blip_caption")]  # fmt: skip
    assert photos
    for turn in photos[:5]:
        row = hm_service.store.run_cypher(
            "MATCH (t:Turn {dia_id: $d}) WHERE t.memory_id = 'conv-30' RETURN t.text AS text", {"d": turn["dia_id"]}
        )
        assert row[0]["text"].endswith(f"[shares a photo: {turn['blip_caption'].strip()}]")


def test_topics_group_episodes_and_propagate_over_them(hm_conv30, hm_service):
    """Each episode sits in exactly one topic hyperedge; propagated episode vectors match the formula by hand."""
    rows = hm_service.store.run_cypher(
        "MATCH (:Topic)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'topic'})-[m:MEMBER]->(e:Episode) WHERE h.memory_id = 'conv-30' "
        "RETURN h.id AS h, e.id AS e, m.weight AS w, e.embedding AS emb, e.embedding_raw AS raw"
    )
    assert len(rows) == hm_conv30.report.episodes == len({r["e"] for r in rows})
    by_topic = defaultdict(dict)
    for r in rows:
        by_topic[r["h"]][r["e"]] = (np.asarray(r["raw"], dtype=np.float64), r["w"], np.asarray(r["emb"]))
    assert len(by_topic) == hm_conv30.report.topics and max(len(m) for m in by_topic.values()) > 1
    for members in by_topic.values():
        expected = expected_propagation(
            {k: (v[0], v[1]) for k, v in members.items()}, hm_service.settings.propagation_lambda
        )
        for eid, (raw, _, stored) in members.items():
            assert np.allclose(stored, expected[eid], atol=1e-5), eid
            assert np.allclose(stored, raw, atol=1e-5) == (len(members) == 1)
