"""The LLM stages of ingest and retrieval, end to end on the real store with real embeddings.

The LLM is the scripted stand-in (``llm_double.ScriptedClient``); the stages are built by
``hypermem.stages`` as ``MemoryService`` builds them, and passed into ``Ingestor`` and ``Retriever``.
Memory ``llm-stages``: one session of four turns. The LLM cuts it into episodes L1-L3 and L4,
extracts two facts from the first (one from two turns) and none from the second, whose turn keeps
its no-LLM fact; the second episode's topic is the LLM's decision too.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from llm_double import ScriptedClient
from support.counting import CountingEmbedder

from hypermem.ingest.pipeline import Ingestor
from hypermem.model import Message
from hypermem.retrieve.pipeline import Retriever
from hypermem.stages import ingest_stages, retrieval_stages
from hypermem.vocabulary import vocabulary

MEMORY = "llm-stages"
WHEN = datetime(2023, 5, 8, 18, 30)
MESSAGES = [
    Message("L1", "Ana", "I adopted a grey cat named Pixel from the shelter yesterday.", WHEN, "1"),
    Message("L2", "Ben", "Lovely! How is the little one settling in?", WHEN, "1"),
    Message("L3", "Ana", "She hides under the sofa all day, but she purrs a lot at night.", WHEN, "1"),
    Message("L4", "Ben", "I start my new job at the bakery on Monday.", WHEN, "1"),
]
ADOPTED = "Ana adopted a grey cat named Pixel from the shelter on 7 May 2023."
HIDES = "Ana's cat Pixel hides under the sofa and purrs at night."


def _fact(content: str, *dia_ids: str) -> dict:
    return {"content": content, "potential": [], "keywords": ["Pixel"], "date": "2023-05-07",
            "source_dia_ids": list(dia_ids)}  # fmt: skip


def _client() -> ScriptedClient:
    return ScriptedClient(
        segment_episodes=[{"episodes": [{"start_idx": 0, "end_idx": 2, "title": "Pixel", "summary": ""},
                                        {"start_idx": 3, "end_idx": 3, "title": "Bakery", "summary": ""}]}],
        extract_facts=[{"facts": [_fact(ADOPTED, "L1"), _fact(HIDES, "L2", "L3")]}, {"facts": []}],
        topic_decision=[{"action": "new", "topic_id": None, "title": "Bakery job", "summary": ""}],
    )  # fmt: skip


@pytest.fixture(scope="module")
def ingested(hm_service):
    client = _client()
    stages = ingest_stages(hm_service.settings, hm_service.embedder, client)
    ingestor = Ingestor(hm_service.settings, hm_service.store, hm_service.embedder, stages)
    return ingestor.ingest(MEMORY, MESSAGES), client


def test_llm_ingest_calls_each_stage_once_per_unit(ingested):
    report, client = ingested
    # one segmentation per session, one extraction per episode, a topic decision once a topic exists
    assert client.tasks == ["segment_episodes", "extract_facts", "extract_facts", "topic_decision"]
    assert report.llm and report.sessions_ingested == 1


def test_llm_ingest_stores_the_llm_episodes_and_topics(ingested, hm_service):
    rows = hm_service.store.run_cypher(
        "MATCH (e:Episode)-[:FROM_TURN]->(t:Turn) WHERE e.memory_id = $m RETURN e.id AS e, collect(t.dia_id) AS d",
        {"m": MEMORY},
    )
    assert {r["e"]: sorted(r["d"]) for r in rows} == {
        f"{MEMORY}/episode/L1": ["L1", "L2", "L3"],
        f"{MEMORY}/episode/L4": ["L4"],
    }
    assert ingested[0].topics == 2  # the LLM said "new" for the second episode


def test_llm_ingest_stores_the_llm_facts_with_their_source_dia_ids(ingested, hm_service):
    rows = hm_service.store.run_cypher(
        "MATCH (f:Fact)-[:FROM_TURN]->(t:Turn) WHERE f.memory_id = $m "
        "RETURN f.content AS content, f.episode_id AS episode, collect(t.dia_id) AS dia_ids",
        {"m": MEMORY},
    )
    facts = {r["content"]: (r["episode"], sorted(r["dia_ids"])) for r in rows}
    assert facts[ADOPTED] == (f"{MEMORY}/episode/L1", ["L1"])
    assert facts[HIDES] == (f"{MEMORY}/episode/L1", ["L2", "L3"])
    # the turn the LLM left without a fact keeps its no-LLM fact, in its own episode
    fallback = [c for c in facts if c not in (ADOPTED, HIDES)]
    assert len(fallback) == 1 and fallback[0].startswith("Ben said on ") and "bakery" in fallback[0]
    assert facts[fallback[0]] == (f"{MEMORY}/episode/L4", ["L4"])


def test_an_edited_turn_re_embeds_only_its_own_text_on_the_llm_path(hm_service):
    """Rebuilt after an edit, the session's LLM facts (same content) keep their stored vectors: the model
    is sent the edited turn alone (its no-LLM fact's vector is derived from it, not embedded)."""

    def ingest(messages: list[Message]) -> list[str]:
        counting = CountingEmbedder(hm_service.embedder)
        stages = ingest_stages(hm_service.settings, hm_service.embedder, _client())
        Ingestor(hm_service.settings, hm_service.store, counting, stages).ingest("llm-reuse", messages)
        return counting.sent

    first = ingest(MESSAGES)
    assert f"Ana: {MESSAGES[0].text}" in first and ADOPTED in first and HIDES in first
    edited = Message("L4", "Ben", "I start my new job at the bakery on Tuesday.", WHEN, "1")
    # besides the words new to the memory's vocabulary
    sent = ingest([*MESSAGES[:3], edited])
    assert [t for t in sent if t not in vocabulary([edited.text])] == [f"Ben: {edited.text}"]
    stored = hm_service.store.run_cypher(
        "MATCH (f:Fact) WHERE f.memory_id = 'llm-reuse' AND f.content = $c RETURN f.embedding_raw AS v", {"c": ADOPTED}
    )
    assert np.array_equal(np.float32(stored[0]["v"]), hm_service.embedder.encode([ADOPTED])[0])


def test_llm_query_keeps_the_selected_turns_and_answers(ingested, hm_service):
    client = ScriptedClient(
        analyze_query=[{"query_type": "recall", "persons": ["Ana"], "locations": [], "times": []}],
        select_turns=[{"dia_ids": ["L1"]}],
        answer=["A grey cat named Pixel."],
    )
    retriever = Retriever(hm_service.settings, hm_service.store, hm_service.embedder, retrieval_stages(client))
    result = retriever.query(MEMORY, "What pet did Ana adopt?")
    assert client.tasks == ["analyze_query", "select_turns", "answer"]
    assert result.analysis.source == "llm"
    assert result.analysis.query_type == "recall"  # the rules say "precision": the LLM's type is used
    assert result.selection == {"enabled": True, "kept": 1}
    assert [t.dia_id for t in result.turns] == ["L1"]
    assert all(f.source_dia_ids == ["L1"] for f in result.facts) and result.facts
    assert result.answer == "A grey cat named Pixel."
    assert "Pixel" in client.user_text and "bakery" not in client.user_text  # the answer saw the kept turn only
