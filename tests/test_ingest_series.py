"""Ingest of several memories in one call (``MemoryService.ingest_conversations``, ``Ingestor.ingest_series``).

The next memory's turn embedding and annotation run ahead, while the current one is written; the
graph must be the one that ingesting the memories one call after another writes. Each test writes
memories of its own in the shared store, and compares every node and edge (labels, properties, vectors
rounded to 6 decimals) with the memory id taken out.
"""

from __future__ import annotations

import hashlib
import json

from conftest import make_testconv_record

from hypermem.ingest.locomo import conversation_from_record
from hypermem.model import Conversation

EDITS = {"D2:3": "I threw a vase on the wheel, and it survived the kiln in one piece."}


def _conversations(prefix: str) -> list[Conversation]:
    """Three memories: the test conversation, an edited copy, and the test conversation again."""
    return [
        conversation_from_record(make_testconv_record(f"{prefix}-a")),
        conversation_from_record(make_testconv_record(f"{prefix}-b", EDITS)),
        conversation_from_record(make_testconv_record(f"{prefix}-c")),
    ]


def _graph(svc, memory_id: str) -> tuple[int, int, str]:
    """Nodes, edges and a sha256 of every node and edge of ``memory_id``, with the memory id taken out."""

    def value(v):
        if isinstance(v, list) and v and all(isinstance(x, float) for x in v):
            return [round(x, 6) for x in v]
        return v

    nodes = svc.store.run_cypher(
        "MATCH (n) WHERE n.memory_id = $m RETURN labels(n) AS l, properties(n) AS p", {"m": memory_id}
    )
    edges = svc.store.run_cypher(
        "MATCH (a)-[e]->(b) WHERE a.memory_id = $m OR b.memory_id = $m "
        "RETURN a.id AS a, type(e) AS t, properties(e) AS p, b.id AS b",
        {"m": memory_id},
    )
    lines = sorted(
        [json.dumps([sorted(r["l"]), {k: value(v) for k, v in r["p"].items()}], sort_keys=True) for r in nodes]
        + [
            json.dumps([r["a"], r["t"], r["b"], {k: value(v) for k, v in r["p"].items()}], sort_keys=True)
            for r in edges
        ]
    )
    text = "\n".join(lines).replace(memory_id, "MEMORY")
    return len(nodes), len(edges), hashlib.sha256(text.encode()).hexdigest()


def _spy(monkeypatch, obj, name: str, record: list) -> None:
    """Make ``obj.name`` append its first argument to ``record`` before it runs."""
    method = getattr(obj, name)

    def spy(first, *args):
        record.append(first)
        return method(first, *args)

    monkeypatch.setattr(obj, name, spy)


def test_ingest_conversations_writes_the_graph_of_one_call_per_conversation(hm_service, monkeypatch):
    ingestor = hm_service.ingestor
    ahead_calls: list[tuple[str, bool]] = []
    start_ahead = ingestor._start_ahead

    def recording(memory_id, messages):
        ahead = start_ahead(memory_id, messages)
        ahead_calls.append((memory_id, ahead is not None))
        return ahead

    monkeypatch.setattr(ingestor, "_start_ahead", recording)
    encoded: list[list] = []  # the turns of each _encode call
    _spy(monkeypatch, ingestor, "_encode", encoded)
    annotated: list[tuple] = []  # the input of each annotation submitted
    _spy(monkeypatch, ingestor, "_submit_annotation", annotated)
    for conversation in _conversations("serial"):
        hm_service.ingest_conversation(conversation)
    assert ahead_calls == []

    encoded.clear()
    annotated.clear()
    progress: dict[str, int] = {}
    overlapped = _conversations("overlap")
    reports = list(
        hm_service.ingest_conversations(
            overlapped, progress=lambda m, n: progress.__setitem__(m, progress.get(m, 0) + n)
        )
    )
    # the 2nd and 3rd memories were embedded and annotated ahead
    assert ahead_calls == [("overlap-b", True), ("overlap-c", True)]
    # every turn embedded and annotated once: what ran ahead was used, not redone
    turns = sum(len(c.messages) for c in overlapped)
    assert sum(len(t) for t in encoded) == sum(len(i[0]) for i in annotated) == turns
    assert [r.memory_id for r in reports] == ["overlap-a", "overlap-b", "overlap-c"]
    assert progress == {c.sample_id: len(c.messages) for c in overlapped}
    for name in "abc":
        sequential = _graph(hm_service, f"serial-{name}")
        assert sequential[0] > 0 and sequential[1] > 0
        assert _graph(hm_service, f"overlap-{name}") == sequential
    assert [r.sessions_ingested for r in reports] == [3, 3, 3]

    again = list(hm_service.ingest_conversations(overlapped))
    assert [(r.sessions_ingested, r.sessions_skipped) for r in again] == [(0, 3)] * 3
    assert [r.turns for r in again] == [r.turns for r in reports]


def test_a_stale_guess_ahead_still_writes_the_sequential_graph(hm_service):
    """The same memory twice in a row: what ran ahead of the 2nd ingest read the store before the 1st
    wrote (every session looked new; one changed), so only the vectors of unchanged texts are reused."""
    first, edited = (conversation_from_record(make_testconv_record("serialstale", e)) for e in (None, EDITS))
    hm_service.ingest_conversation(first)
    hm_service.ingest_conversation(edited)

    first, edited = (conversation_from_record(make_testconv_record("overlapstale", e)) for e in (None, EDITS))
    reports = list(hm_service.ingest_conversations([first, edited]))
    assert [(r.sessions_ingested, r.updated) for r in reports] == [(3, 0), (1, 1)]
    assert _graph(hm_service, "overlapstale") == _graph(hm_service, "serialstale")
