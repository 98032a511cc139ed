"""The typed query result: built from the pipeline's candidate dicts, serialized once by ``to_dict`` in the
JSON shape of the API (optional keys only when set, a fact's internal ``sources`` never)."""

from __future__ import annotations

import json

import pytest

from hypermem.retrieve.analysis import QueryAnalysis
from hypermem.retrieve.config import SearchConfig
from hypermem.retrieve.result import QueryResult
from hypermem.retrieve.stopping import StopDecision

RANKERS = {"bm25": {"rank": 1, "score": 2.5}, "dense": {"rank": 2, "score": 0.61}}
QUERY = {"level": "query", "id": "query"}
TOPIC = {"level": "topic", "id": "m/topic/D1:1", "score": 0.18, "rank": 1, "title": "pets", "rankers": RANKERS}
EDGE = {"level": "hyperedge", "id": "m/hyperedge/topic:D1:1", "kind": "topic", "weight": 0.9}
FACT_STEP = {"level": "fact", "id": "m/fact/D1:1#0", "score": 0.2, "rankers": RANKERS}
SUPERSEDED = {"level": "superseded", "id": "m/fact/D1:1#0", "by": "m/fact/D2:1#0", "latest": "m/fact/D2:1#0"}
TURN_STEP = {"level": "turn", "id": "m/turn/D1:2", "dia_id": "D1:2", "reply_to": "D1:1"}
SOURCE = {"id": "m/turn/D1:1", "dia_id": "D1:1", "speaker": "Ann", "text": "I live in Porto?", "seq": 1, "reply": None,
          "timestamp": "2023-05-08T13:56:00"}  # fmt: skip

EPISODE = {"id": "m/e", "rank": 1, "title": "t", "summary": None, "start": "2023-05-08", "end": None, "score": 0.3,
           "path": [QUERY, TOPIC, EDGE]}  # fmt: skip
TURN = {"dia_id": "D1:2", "speaker": "Bob", "timestamp": "2023-05-08T13:57:00", "text": "Nice", "score": 0.2,
        "path": [QUERY, FACT_STEP, TURN_STEP], "snippet": "a passage"}  # fmt: skip


def _candidates(**fact_extra) -> dict:
    fact = {"id": "m/fact/D1:1#0", "kind": "fact", "content": "Ann lives in Porto", "date": None, "episode_id": "m/e",
            "score": 0.2, "cosine": 0.61, "source_dia_ids": ["D1:1"], "sources": [SOURCE],
            "path": [QUERY, TOPIC, EDGE, FACT_STEP], **fact_extra}  # fmt: skip
    return {
        "topics": [{"id": TOPIC["id"], "title": "pets", "rank": 1, "score": 0.18, "rankers": RANKERS}],
        "episodes": [EPISODE],
        "facts": [fact],
        "turns": [TURN],
    }


def _result(**fact_extra) -> QueryResult:
    return QueryResult.build(
        query_id="q1", memory_id="m", query="Where does Ann live?", analysis=QueryAnalysis("precision"),
        config=SearchConfig(), stop=StopDecision("precision", "80%-of-best", 1, 1, 0.16),
        rerank={"enabled": False, "reason": "no reranker_model configured"}, selection={"enabled": False, "reason": "x"},
        context="Memory for: …", context_tokens=4, answer=None, timings_ms={"total": 1.5},
        **_candidates(**fact_extra),
    )  # fmt: skip


def test_to_dict_is_the_json_shape_of_the_candidates():
    result = _result()
    out = result.to_dict()
    assert json.loads(json.dumps(out)) == out
    assert list(out) == ["query_id", "memory_id", "query", "analysis", "config", "topics", "episodes", "facts",
                         "turns", "stop", "rerank", "selection", "context", "context_tokens", "answer", "timings_ms"]  # fmt: skip
    expected = _candidates()
    del expected["facts"][0]["sources"]  # internal: the source turns travel as source_dia_ids
    for level in ("topics", "episodes", "facts", "turns"):
        assert out[level] == expected[level]
    assert out["stop"] == {"query_type": "precision", "rule": "80%-of-best", "cut_at": 1, "considered": 1,
                           "threshold": 0.16, "counts": "facts"}  # fmt: skip
    assert out["config"]["turn_budget"] == 8 and out["analysis"]["query_type"] == "precision"
    step = result.turns[0].path[-1]
    assert (step.level, step.dia_id, step.reply_to, step.score) == ("turn", "D1:2", "D1:1", None)


def test_optional_keys_appear_only_when_set():
    plain = _result().to_dict()
    assert "superseded_by" not in plain["facts"][0] and "rerank_score" not in plain["facts"][0]
    replaced = _result(superseded_by="m/fact/D2:1#0", path=[QUERY, FACT_STEP, SUPERSEDED])
    fact = replaced.to_dict()["facts"][0]
    assert fact["superseded_by"] == "m/fact/D2:1#0" and fact["path"][-1] == SUPERSEDED
    assert replaced.facts[0].path[-1].by == "m/fact/D2:1#0"


def test_a_candidate_key_no_evidence_type_declares_is_refused():
    with pytest.raises(TypeError, match="novel"):
        _result(novel=1)
