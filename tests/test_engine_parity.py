"""Engine parity: LoCoMo conv-30 (the smallest dev conversation) ingested on the embedded FalkorDB and
on Neo4j builds the same hypergraph: the same nodes per label (turns, episodes, topics, facts, Person /
Time / Location elements, hyperedges), the same hyperedge memberships and the same node ids.
Recall on both engines is compared by ``bench/bench_engine_parity.py``.
"""

from __future__ import annotations

import json

import pytest
from conftest import LOCOMO
from engines import engine_settings

from hypermem.ingest.locomo import conversation_from_record
from hypermem.service import MemoryService

MEMORY = "parity-conv-30"


def _ingest(engine: str, path) -> tuple[dict[str, int], set[str]]:
    """Ingest conv-30 as ``MEMORY`` on ``engine``: (counts per label + memberships, node ids)."""
    records = {r["sample_id"]: r for r in json.loads(LOCOMO.read_text(encoding="utf-8"))}
    conversation = conversation_from_record({**records["conv-30"], "sample_id": MEMORY})
    with MemoryService.open(engine_settings(engine, path), use_llm=False) as svc:
        svc.store.delete_memory(MEMORY)
        svc.ingest_conversation(conversation)
        counts = svc.store.counts(MEMORY)
        ids = {
            r["id"] for r in svc.store.run_cypher("MATCH (n) WHERE n.memory_id = $m RETURN n.id AS id", {"m": MEMORY})
        }
        svc.store.delete_memory(MEMORY)
    return counts, ids


@pytest.mark.neo4j
def test_conv30_builds_the_same_hypergraph_on_both_engines(tmp_path):
    if not LOCOMO.is_file():
        pytest.skip(f"LoCoMo dev data not found at {LOCOMO}")
    falkordb_counts, falkordb_ids = _ingest("falkordb", tmp_path / "db")
    neo4j_counts, neo4j_ids = _ingest("neo4j", tmp_path)
    assert falkordb_counts["Turn"] == 369 and falkordb_counts["Episode"] > 0 and falkordb_counts["Fact"] > 0
    assert neo4j_counts == falkordb_counts
    assert neo4j_ids == falkordb_ids
