"""Property-based writes (issue 9 §1): generated strings through every write path never crash the engine.

Hypothesis generates unicode (whitespace, control characters, markup, Cypher-looking text, no lone
surrogates: those are refused at the door, see test_hostile_api) for message ids, speakers, texts,
session ids and image captions, ingested through ``MemoryService.ingest_messages``; and for element
names written through the name gate and ``store.ids``. Either the input is refused with
``IngestInputError`` naming a field, or it is stored and reads back exactly; the engine never
restarts, and every stored id is a safe key. Engines: embedded FalkorDB always, Neo4j when
``NEO4J_URI`` is set (``tests/engines.py``).
"""

from __future__ import annotations

import re
from datetime import datetime
from pathlib import Path

import pytest
from engines import engine_settings
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hypermem.ingest.names import clean_name
from hypermem.ingest.turns import IngestInputError
from hypermem.model import Message, node_id
from hypermem.service import MemoryService
from hypermem.store.ids import SAFE_KEY, name_key

WHEN = datetime(2024, 6, 2, 10, 0)
# Text that has crashed or confused engines: trailing whitespace, markup, quotes, Cypher, controls.
TRICKY = st.sampled_from([" ", "\t", "\n", "\r\n", "\x0b", "\x0c", "\u00a0", "\u2028", "\u200b", "\ufeff", "</button>", "<b>",
                          "'", '"', "\\", "`", "${x}", "MATCH (n) DETACH DELETE n", "//", "/*", "\x01", "\x1b[0m", "😀", "ﬁ"])  # fmt: skip
TEXT = st.lists(st.one_of(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12), TRICKY), max_size=6).map(
    "".join
)
WRITE = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)


@pytest.fixture(scope="module", params=["falkordb", pytest.param("neo4j", marks=pytest.mark.neo4j)])
def engine(request, hm_service):
    """A MemoryService on each engine: the session's embedded FalkorDB, or Neo4j at ``NEO4J_URI`` (``engines``)."""
    if request.param == "falkordb":
        yield hm_service
        return
    service = MemoryService.open(engine_settings("neo4j", Path("unused")), use_llm=False)
    yield service
    service.close()


def _restarts(service) -> int:
    return service.store.restarts


def _turn(service, memory_id: str, dia_id: str) -> list[dict]:
    return service.store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m AND t.dia_id = $d RETURN t.id AS id, t.speaker AS speaker, "
        "t.text AS text, t.session AS session", {"m": memory_id, "d": dia_id},
    )  # fmt: skip


@WRITE
@given(message_id=TEXT, speaker=TEXT, text=TEXT, session_id=TEXT, caption=st.none() | TEXT)
def test_generated_messages_are_stored_exactly_or_refused_by_field(
    engine, message_id, speaker, text, session_id, caption
):
    memory_id = "prop-msg"
    restarts = _restarts(engine)
    message = Message(message_id, speaker, text, WHEN, session_id, caption)
    try:
        engine.ingest_messages(memory_id, [message])
    except IngestInputError as exc:
        assert exc.field.split(".")[-1] in {"message_id", "speaker", "text", "session_id", "image_caption"}
        assert _restarts(engine) == restarts
        return
    assert _restarts(engine) == restarts, "a generated message crashed the engine"
    [row] = _turn(engine, memory_id, message_id)
    assert row["speaker"] == speaker.strip() and row["session"] == session_id
    prefix, _, local = row["id"].rpartition("/")
    assert prefix == f"{memory_id}/turn" and (SAFE_KEY.fullmatch(local) or re.fullmatch("~[0-9a-f]{20}", local))
    ids = [
        r["id"] for r in engine.store.run_cypher("MATCH (n) WHERE n.memory_id = $m RETURN n.id AS id", {"m": memory_id})
    ]
    assert all(not any(ch.isspace() for ch in i) and "<" not in i for i in ids)


@WRITE
@given(names=st.lists(TEXT, min_size=1, max_size=8))
def test_generated_element_names_pass_the_gate_and_write(engine, names):
    memory_id = "prop-el"
    restarts = _restarts(engine)
    rows = {}
    for raw in names:
        name = clean_name(raw)
        if name is None:
            continue
        assert name == name.strip() and "<" not in name and len(name) <= 80
        element_id = node_id(memory_id, "person", name_key(name))
        rows[element_id] = {"memory_id": memory_id, "id": element_id, "kind": "Person", "name": name, "value": name}
    engine.store.write("write/elements", list(rows.values()))
    assert _restarts(engine) == restarts, "a generated element name crashed the engine"
    for element_id, row in rows.items():
        stored = engine.store.run_cypher("MATCH (p:Person {id: $id}) RETURN p.name AS name", {"id": element_id})
        assert stored == [{"name": row["name"]}]


@WRITE
@given(query=TEXT)
def test_generated_queries_answer_or_are_refused(engine, query):
    from hypermem.retrieve.pipeline import QueryError

    # the memory exists whatever the generated messages before were (refused ones store nothing); idempotent
    engine.ingest_messages("prop-msg", [Message("anchor", "Nadia", "I went hiking near Porto today.", WHEN, "s1")])
    restarts = _restarts(engine)
    try:
        result = engine.query("prop-msg", query)
    except QueryError as exc:
        assert str(exc).startswith("query")
    else:
        assert isinstance(result.turns, list)
    assert _restarts(engine) == restarts
