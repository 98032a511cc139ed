"""The HTTP API through the Flask test client, on each engine (an embedded FalkorDB in tmp_path; Neo4j
when ``NEO4J_URI`` is set).

Browse and tenant-isolation tests run on a small hypergraph written here with the
``cypher/write`` files and real embeddings, so they do not depend on the ingest pipeline;
the ingest -> query -> explanation flow runs the real pipelines.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import time
from datetime import datetime

import pytest
from engines import ENGINES, engine_settings

from hypermem.api import create_app
from hypermem.config import Settings
from hypermem.model import node_id

ADMIN = "admin-secret-for-tests"
MEMORY = "conv-a"  # written below, owned by tenant acme
OTHER = "conv-b"  # written below, owned by tenant globex


def build_sample_graph(store, embedder, memory_id: str) -> None:
    """Two sessions of Caroline and Melanie: 5 turns, 2 episodes, 5 facts, 2 topics, 4 elements, 6 hyperedges."""
    m = memory_id
    turn = lambda dia: node_id(m, "turn", dia)  # noqa: E731
    turns = [
        (
            "D1:1",
            "Caroline",
            "I went to the LGBTQ support group yesterday, it was powerful.",
            "2023-05-08T13:56:00",
            "s1",
        ),
        (
            "D1:2",
            "Melanie",
            "That sounds great! I painted a sunrise over the lake last week.",
            "2023-05-08T13:57:00",
            "s1",
        ),
        ("D1:3", "Caroline", "I want to study counseling and help trans youth.", "2023-05-08T13:58:00", "s1"),
        ("D2:1", "Melanie", "We went camping in the mountains near Boston with the kids.", "2023-05-25T10:00:00", "s2"),
        ("D2:2", "Caroline", "I adopted a dog named Max from the shelter.", "2023-05-25T10:01:00", "s2"),
    ]
    vectors = embedder.encode([t[2] for t in turns]).tolist()
    rows, prev = [], None
    for seq, ((dia, speaker, text, ts, session), vector) in enumerate(zip(turns, vectors)):
        rows.append(dict(memory_id=m, id=turn(dia), dia_id=dia, speaker=speaker, text=text, timestamp=ts,
                         session=session, seq=seq, embedding=vector, prev_id=prev))  # fmt: skip
        prev = turn(dia)
    store.write("write/turns", rows)
    elements = [
        dict(memory_id=m, id=node_id(m, "person", "caroline"), kind="Person", name="Caroline", value="Caroline"),
        dict(memory_id=m, id=node_id(m, "person", "melanie"), kind="Person", name="Melanie", value="Melanie"),
        dict(memory_id=m, id=node_id(m, "time", "2023-05-08"), kind="Time", name="8 May 2023", value="2023-05-08"),
        dict(memory_id=m, id=node_id(m, "location", "boston"), kind="Location", name="Boston", value="Boston"),
    ]
    store.write("write/elements", elements)
    episodes = [
        dict(id=node_id(m, "episode", "s1-0"), session="s1", title="Support group and painting",
             summary="Caroline went to an LGBTQ support group; Melanie painted a sunrise.",
             start="2023-05-08T13:56:00", end="2023-05-08T13:58:00", participants=["Caroline", "Melanie"],
             turn_ids=[turn("D1:1"), turn("D1:2"), turn("D1:3")]),
        dict(id=node_id(m, "episode", "s2-0"), session="s2", title="Camping and a new dog",
             summary="Melanie went camping near Boston; Caroline adopted a dog.",
             start="2023-05-25T10:00:00", end="2023-05-25T10:01:00", participants=["Melanie", "Caroline"],
             turn_ids=[turn("D2:1"), turn("D2:2")]),
    ]  # fmt: skip
    for episode, vector in zip(episodes, embedder.encode([f"{e['title']}. {e['summary']}" for e in episodes]).tolist()):
        episode.update(
            memory_id=m, text=f"{episode['title']}. {episode['summary']}", embedding=vector, embedding_raw=vector
        )
    store.write("write/episodes", episodes)
    facts = [
        ("f1", 0, "Caroline attended an LGBTQ support group.", "2023-05-07", ["D1:1"]),
        ("f2", 0, "Melanie painted a sunrise over a lake.", "2023-05-01", ["D1:2"]),
        ("f3", 0, "Caroline wants to study counseling.", "2023-05-08", ["D1:3"]),
        ("f4", 1, "Melanie went camping with her kids.", "2023-05-24", ["D2:1"]),
        ("f5", 1, "She adopted a dog named Max.", "2023-05-25", ["D2:2"]),
    ]
    fact_rows = [
        dict(memory_id=m, id=node_id(m, "fact", key), episode_id=episodes[ep]["id"], content=content, potential=[],
             keywords=[], date=day, text=content, turn_ids=[turn(d) for d in dias], embedding=vector, embedding_raw=vector)
        for (key, ep, content, day, dias), vector in zip(facts, embedder.encode([f[2] for f in facts]).tolist())
    ]  # fmt: skip
    store.write("write/facts", fact_rows)
    topics = [
        dict(id=node_id(m, "topic", "identity"), title="Identity and support", summary="Caroline's journey."),
        dict(id=node_id(m, "topic", "family"), title="Family time", summary="Outings and pets."),
    ]
    for topic, vector in zip(topics, embedder.encode([t["title"] for t in topics]).tolist()):
        topic.update(memory_id=m, text=topic["title"], embedding=vector)
    store.write("write/topics", topics)
    ep0, ep1 = episodes[0]["id"], episodes[1]["id"]
    hyperedge = lambda key, kind, owner, members: dict(  # noqa: E731
        memory_id=m, id=node_id(m, "hyperedge", key), kind=kind, owner_ids=[owner],
        members=[{"id": i, "weight": w} for i, w in members],
    )  # fmt: skip
    store.write("write/hyperedges", [
        hyperedge("topic-identity", "topic", topics[0]["id"], [(ep0, 0.9)]),
        hyperedge("topic-family", "topic", topics[1]["id"], [(ep1, 0.8), (ep0, 0.3)]),
        hyperedge("ep-s1-0", "episode", ep0, [(f["id"], 1.0) for f in fact_rows[:3]]),
        hyperedge("ep-s2-0", "episode", ep1, [(f["id"], 0.7) for f in fact_rows[3:]]),
        hyperedge("seg-1", "segment", ep0, [(elements[0]["id"], 0.9), (elements[2]["id"], 0.6)]),
        hyperedge("seg-2", "segment", ep1, [(elements[1]["id"], 0.9), (elements[3]["id"], 0.7)]),
    ])  # fmt: skip


@pytest.fixture(scope="module", params=ENGINES)
def app(request, tmp_path_factory):
    data = tmp_path_factory.mktemp("api") / "falkordb"
    settings = engine_settings(request.param, data, admin_key=ADMIN, max_request_bytes=64_000, max_message_chars=500)
    app = create_app(settings, sync_batch_limit=3)
    state = app.extensions["hypermem"]
    for memory_id in (MEMORY, OTHER):
        build_sample_graph(state.store, state.service.embedder, memory_id)
    yield app
    state.close()


@pytest.fixture(scope="module")
def client(app):
    return app.test_client()


def bearer(key: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}"}


@pytest.fixture(scope="module")
def keys(client):
    """Tenant keys of acme (owns conv-a) and globex (owns conv-b)."""
    out = {}
    for tenant, memory_id in (("acme", MEMORY), ("globex", OTHER)):
        created = client.post(f"/v1/tenants/{tenant}/keys", headers=bearer(ADMIN))
        assert created.status_code == 201, created.get_json()
        out[tenant] = created.get_json()["key"]
        assigned = client.put(f"/v1/tenants/{tenant}/memories/{memory_id}", headers=bearer(ADMIN))
        assert assigned.get_json() == {"tenant": tenant, "memory_id": memory_id, "previous_owner": None}
    return out


@pytest.fixture(scope="module")
def acme(keys):
    return bearer(keys["acme"])


@pytest.fixture(scope="module")
def globex(keys):
    return bearer(keys["globex"])


def message(i: int, text: str, speaker: str = "Caroline", day: str = "2023-06-01") -> dict:
    return {
        "message_id": f"m{i}",
        "speaker": speaker,
        "text": text,
        "timestamp": f"{day}T10:{i:02d}:00",
        "session_id": day,
    }


# --- probes and documents ------------------------------------------------------------------
def test_health_and_ready_need_no_key(client):
    assert client.get("/v1/health").get_json() == {"status": "ok"}
    ready = client.get("/v1/ready").get_json()
    assert ready["status"] == "ready"
    assert ready["engine"].startswith(("FalkorDB 4.", "Neo4j 5."))
    assert ready["embedding_model"] == "minilm-int8"


def test_engine_restart_without_vector_indexes_is_not_ready_then_recovers(app, client, acme):
    """After a crash the vector indexes may be missing: readiness says so (503, naming them) and the next
    query recreates them after the restart instead of failing with a 500."""
    store = app.extensions["hypermem"].store
    if not hasattr(store, "server"):
        pytest.skip("an embedded engine only")
    store.vector_indexes = True  # as HYPERMEM_FALKORDB_VECTOR_INDEXES=true opens it (the default keeps none)
    try:
        store.drop_vector_indexes()
        not_ready = client.get("/v1/ready")
        assert not_ready.status_code == 503
        assert "Turn.embedding" in not_ready.get_json()["message"]
        os.kill(store.server.process.pid, signal.SIGKILL)
        store.server.process.wait()
        query = {"query": "What did Caroline adopt?"}
        answered = client.post(f"/v1/memories/{MEMORY}/query", headers=acme, json=query)
        assert answered.status_code == 200, answered.get_json()
        assert store.missing_vector_indexes() == []
        assert client.get("/v1/ready").get_json()["status"] == "ready"
    finally:
        store.vector_indexes = False
        store.drop_vector_indexes()
    assert client.get("/v1/ready").get_json()["status"] == "ready"  # without them there is nothing to miss


def test_moving_another_tenants_memory_needs_transfer(client, acme, globex):
    moved = client.put(f"/v1/tenants/globex/memories/{MEMORY}", headers=bearer(ADMIN))
    assert moved.status_code == 409 and "owned by tenant 'acme'" in moved.get_json()["message"]
    assert "transfer" in moved.get_json()["errors"]["query"]
    assert client.get(f"/v1/memories/{MEMORY}", headers=acme).status_code == 200  # still acme's
    again = client.put(f"/v1/tenants/acme/memories/{MEMORY}", headers=bearer(ADMIN))  # its own owner: a no-op
    assert again.get_json() == {"tenant": "acme", "memory_id": MEMORY, "previous_owner": "acme"}
    there = client.put(f"/v1/tenants/globex/memories/{MEMORY}?transfer=true", headers=bearer(ADMIN))
    assert there.get_json() == {"tenant": "globex", "memory_id": MEMORY, "previous_owner": "acme"}
    assert client.get(f"/v1/memories/{MEMORY}", headers=acme).status_code == 404
    back = client.put(f"/v1/tenants/acme/memories/{MEMORY}?transfer=true", headers=bearer(ADMIN))
    assert back.status_code == 200 and client.get(f"/v1/memories/{MEMORY}", headers=acme).status_code == 200


def test_assigning_a_memory_that_does_not_exist_is_404_and_creates_nothing(app, client):
    response = client.put("/v1/tenants/acme/memories/never-ingested", headers=bearer(ADMIN))
    assert response.status_code == 404
    assert "never-ingested" in response.get_json()["message"]
    store = app.extensions["hypermem"].store
    assert not store.run_cypher("MATCH (n) WHERE n.memory_id = 'never-ingested' RETURN n.id AS id LIMIT 1")


def test_openapi_document_lists_every_route_with_schemas(app, client):
    spec = client.get("/openapi.json").get_json()
    assert spec["openapi"].startswith("3.")
    assert spec["components"]["securitySchemes"]["bearerAuth"] == {"type": "http", "scheme": "bearer"}
    rules = {str(r.rule) for r in app.url_map.iter_rules() if str(r.rule).startswith("/v1/")}
    assert len(spec["paths"]) == len(rules)
    ingest = spec["paths"]["/v1/memories/{memory_id}/messages"]["post"]
    assert ingest["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/IngestRequest")
    assert set(ingest["responses"]) >= {"200", "202", "422"}
    assert spec["paths"]["/v1/health"]["get"]["security"] == []
    docs = client.get("/docs")
    assert docs.status_code == 200 and b"swagger-ui" in docs.data


# --- authentication -------------------------------------------------------------------------
@pytest.mark.parametrize(
    "header",
    [None, "Bearer", "Basic dXNlcjpwYXNz", "Bearer nonsense", "Bearer hmk_0000000000000000_forged", f"Bearer {ADMIN}x"],
)
def test_missing_or_invalid_key_gets_401_json(client, header):
    response = client.get(f"/v1/memories/{MEMORY}/topics", headers={"Authorization": header} if header else {})
    assert response.status_code == 401
    assert response.get_json()["code"] == 401
    assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_admin_key_manages_keys_but_reads_no_memory(client, acme):
    assert client.get(f"/v1/memories/{MEMORY}/topics", headers=bearer(ADMIN)).status_code == 403
    assert client.post("/v1/tenants/acme/keys", headers=acme).status_code == 403
    assert client.put(f"/v1/tenants/acme/memories/{OTHER}", headers=acme).status_code == 403


def test_a_key_request_takes_no_fields(client):
    refused = client.post("/v1/tenants/initech/keys", headers=bearer(ADMIN), json={"x": 1})
    assert refused.status_code == 422 and "x" in refused.get_json()["errors"]["json"]
    assert client.post("/v1/tenants/initech/keys", headers=bearer(ADMIN), json={}).status_code == 201
    text = client.post("/v1/tenants/initech/keys", headers=bearer(ADMIN), data="hello", content_type="text/plain")
    assert (
        text.status_code == 422
        and text.get_json()["message"] == "this request takes no body (got 5 bytes of text/plain)"
    )


def test_a_delete_with_a_body_is_refused_and_deletes_nothing(client, acme):
    """A client trying to delete some messages (no route does) gets 422 naming the fields, not a deleted memory."""
    before = client.get(f"/v1/memories/{MEMORY}/topics", headers=acme).get_json()["topics"]
    refused = client.delete(f"/v1/memories/{MEMORY}", headers=acme, json={"message_ids": ["D1:1"]})
    assert refused.status_code == 422
    assert refused.get_json()["errors"]["json"] == {"message_ids": ["Unknown field."]}
    assert client.get(f"/v1/memories/{MEMORY}/topics", headers=acme).get_json()["topics"] == before
    moved = client.put(f"/v1/tenants/acme/memories/{MEMORY}", headers=bearer(ADMIN), json={"transfer": True})
    assert moved.status_code == 422 and "transfer" in moved.get_json()["errors"]["json"]
    assert moved.get_json()["message"].endswith("its settings are query parameters (?name=value)")
    revoked = client.delete("/v1/tenants/acme/keys/0123456789abcdef", headers=bearer(ADMIN), json={"all": True})
    assert revoked.status_code == 422 and "all" in revoked.get_json()["errors"]["json"]


@pytest.mark.parametrize(
    ("method", "path", "status", "named"),
    [("post", "/v1/memories/hx/messagez", 404, None), ("put", f"/v1/memories/{MEMORY}/messages", 405, None),
     ("post", "/v1/nonexistent", 404, None), ("post", "/v1/memories/a%20/messages", 422, "memory_id"),
     ("post", "/v1/memories/a%20/query", 422, "memory_id")],
)  # fmt: skip
def test_a_body_sent_to_no_route_gets_the_routes_answer_not_a_body_refusal(client, acme, method, path, status, named):
    """A typo in the URL is reported as one (404, 405, or 422 naming the path parameter), whatever the body."""
    response = getattr(client, method)(path, headers=acme, json={"messages": [], "query": "bike"})
    body = response.get_json()
    assert response.status_code == status, body
    assert "takes no body" not in body.get("message", "")
    if named:
        assert list(body["errors"]["path"]) == [named]


def test_static_paths_are_no_route_with_or_without_a_key_but_the_explorers_assets_are_served(client, acme):
    """No app-wide ``/static`` route (it answered 401 without a key, 404 with one); the explorer serves its own."""
    assert client.get("/static/x").status_code == 404
    assert client.get("/static/x", headers=acme).status_code == 404
    assert client.get("/explore").status_code == 200


def test_keys_are_stored_hashed_and_revocable(app, client):
    created = client.post("/v1/tenants/initech/keys", headers=bearer(ADMIN)).get_json()
    key, key_id = created["key"], created["key_id"]
    rows = app.extensions["hypermem"].store.run_cypher(
        "MATCH (k:ApiKey {id: $id}) RETURN properties(k) AS props", {"id": key_id}
    )
    props = rows[0]["props"]
    assert props["tenant"] == "initech"
    assert props["hash"] == hashlib.sha256(key.encode()).hexdigest()
    assert key not in json.dumps(props)
    assert client.get("/v1/memories", headers=bearer(key)).get_json() == {"memories": []}
    assert client.delete(f"/v1/tenants/globex/keys/{key_id}", headers=bearer(ADMIN)).status_code == 404
    assert client.delete(f"/v1/tenants/initech/keys/{key_id}", headers=bearer(ADMIN)).get_json()["revoked"] is True
    assert client.get("/v1/memories", headers=bearer(key)).status_code == 401


# --- browse ---------------------------------------------------------------------------------
def test_topics_most_episodes_first(client, acme):
    topics = client.get(f"/v1/memories/{MEMORY}/topics", headers=acme).get_json()["topics"]
    assert [(t["id"], t["episodes"]) for t in topics] == [
        (f"{MEMORY}/topic/family", 2),
        (f"{MEMORY}/topic/identity", 1),
    ]
    assert topics[0]["first"] == "2023-05-08T13:56:00" and topics[0]["last"] == "2023-05-25T10:01:00"
    page = client.get(f"/v1/memories/{MEMORY}/topics?offset=1&limit=1", headers=acme).get_json()["topics"]
    assert [t["id"] for t in page] == [f"{MEMORY}/topic/identity"]


def test_topic_with_episodes_in_date_order(client, acme):
    topic = client.get(f"/v1/memories/{MEMORY}/topics/{MEMORY}/topic/family", headers=acme).get_json()
    assert topic["title"] == "Family time"
    assert [(e["id"], e["weight"]) for e in topic["episodes"]] == [
        (f"{MEMORY}/episode/s1-0", 0.3),
        (f"{MEMORY}/episode/s2-0", 0.8),
    ]


def test_episode_with_facts_turns_and_elements(client, acme):
    episode = client.get(f"/v1/memories/{MEMORY}/episodes/{MEMORY}%2Fepisode%2Fs1-0", headers=acme).get_json()
    assert [f["id"].rsplit("/", 1)[1] for f in episode["facts"]] == ["f2", "f1", "f3"]  # by date
    assert episode["facts"][1]["turn_ids"] == [f"{MEMORY}/turn/D1:1"]
    assert [t["dia_id"] for t in episode["turns"]] == ["D1:1", "D1:2", "D1:3"]
    assert [(e["kind"], e["name"]) for e in episode["elements"]] == [("Person", "Caroline"), ("Time", "8 May 2023")]


def test_people_and_timeline(client, acme):
    people = client.get(f"/v1/memories/{MEMORY}/people", headers=acme).get_json()["people"]
    assert sorted(p["name"] for p in people) == ["Caroline", "Melanie"]
    items = client.get(f"/v1/memories/{MEMORY}/people/caroline/timeline", headers=acme).get_json()["items"]
    # f5 ("She adopted a dog") names nobody but comes from Caroline's own turn.
    # on one day, the episode before its facts
    assert [(i["kind"], i["id"].rsplit("/", 1)[1]) for i in items] == [
        ("fact", "f1"), ("episode", "s1-0"), ("fact", "f3"), ("episode", "s2-0"), ("fact", "f5"),
    ]  # fmt: skip
    # an episode's date is a day, as a fact's reads; its first turn's timestamp is beside it
    assert [(i["date"], i["start"]) for i in items if i["kind"] == "episode"] == [
        ("2023-05-08", "2023-05-08T13:56:00"), ("2023-05-25", "2023-05-25T10:00:00"),
    ]  # fmt: skip
    window = client.get(
        f"/v1/memories/{MEMORY}/people/Caroline/timeline?from=2023-05-08&to=2023-05-08", headers=acme
    ).get_json()["items"]
    assert [i["id"].rsplit("/", 1)[1] for i in window] == ["s1-0", "f3"]
    backwards = client.get(
        f"/v1/memories/{MEMORY}/people/Caroline/timeline?from=2023-06-01&to=2023-05-01", headers=acme
    )
    assert backwards.status_code == 422 and "to" in backwards.get_json()["errors"]["query"]
    nobody = client.get(f"/v1/memories/{MEMORY}/people/Zelda/timeline", headers=acme)
    assert nobody.status_code == 404 and "no person 'Zelda'" in nobody.get_json()["message"]
    quiet = client.get(f"/v1/memories/{MEMORY}/people/melanie/timeline?from=2030-01-01", headers=acme)
    assert quiet.status_code == 200 and quiet.get_json()["items"] == []  # a known person, nothing in the window


def test_a_person_is_found_whichever_unicode_form_names_them(client, acme):
    message = {"message_id": "z1", "speaker": "Zo\u00eb", "text": "I started learning the cello at the conservatory.",
               "timestamp": "2024-03-01T10:00:00", "session_id": "s1"}  # fmt: skip
    assert (
        client.post("/v1/memories/unicode-names/messages", headers=acme, json={"messages": [message]}).status_code
        == 200
    )
    composed = client.get("/v1/memories/unicode-names/people/Zo%C3%AB/timeline", headers=acme).get_json()["items"]
    decomposed = client.get("/v1/memories/unicode-names/people/Zoe%CC%88/timeline", headers=acme)
    assert composed and decomposed.status_code == 200 and decomposed.get_json()["items"] == composed
    not_utf8 = client.get("/v1/memories/unicode-names/people/%ff/timeline", headers=acme)
    assert not_utf8.status_code == 400 and "person" in not_utf8.get_json()["errors"]["path"]


def test_a_timeline_holds_the_facts_naming_the_person_as_a_word_not_inside_other_words(client, acme):
    messages = [
        {"message_id": "w1", "speaker": "Al", "text": "I fixed the garden fence on Sunday morning."},
        {"message_id": "w2", "speaker": "Eve", "text": "Also, I totally loved visiting the Alhambra really."},
        {"message_id": "w3", "speaker": "Eve", "text": "My brother Al is a very good cook."},
    ]
    for message in messages:
        message.update(timestamp="2024-03-01T10:00:00", session_id="s1")
    posted = client.post("/v1/memories/word-names/messages", headers=acme, json={"messages": messages})
    assert posted.status_code == 200
    items = client.get("/v1/memories/word-names/people/Al/timeline", headers=acme).get_json()["items"]
    facts = sorted(i["text"] for i in items if i["kind"] == "fact")
    assert len(facts) == 2 and not any("Alhambra" in text for text in facts), facts
    assert any("garden fence" in text for text in facts) and any("brother Al" in text for text in facts)


def test_a_person_whose_name_holds_a_slash_has_a_timeline(client, acme):
    """``/people`` lists every speaker, so the timeline of each is reachable: "AC/DC" as ``AC%2FDC`` (the
    explorer's ``encodeURIComponent``)."""
    message = {"message_id": "a1", "speaker": "AC/DC", "text": "We recorded the new album in Sydney this spring.",
               "timestamp": "2024-03-01T10:00:00", "session_id": "s1"}  # fmt: skip
    assert (
        client.post("/v1/memories/slash-names/messages", headers=acme, json={"messages": [message]}).status_code == 200
    )
    people = client.get("/v1/memories/slash-names/people", headers=acme).get_json()["people"]
    assert [p["name"] for p in people] == ["AC/DC"]
    timeline = client.get("/v1/memories/slash-names/people/AC%2FDC/timeline", headers=acme)
    assert timeline.status_code == 200 and timeline.get_json()["person"] == "AC/DC"
    assert sorted(i["kind"] for i in timeline.get_json()["items"]) == ["episode", "fact"]
    assert client.get("/v1/memories/slash-names/people/AC%2FXX/timeline", headers=acme).status_code == 404


@pytest.mark.parametrize(
    ("path", "name"),
    [("people/%ZZ/timeline", "person"), ("people/Caro%2/timeline", "person"), ("people/100%/timeline", "person"),
     (f"episodes/{MEMORY}/episode/s1-%zz", "episode_id")],
)  # fmt: skip
def test_a_bad_percent_escape_in_a_path_part_is_400_naming_it(client, acme, path, name):
    response = client.get(f"/v1/memories/{MEMORY}/{path}", headers=acme)
    body = response.get_json()
    assert response.status_code == 400 and list(body["errors"]["path"]) == [name], body
    assert body["message"].startswith(f"{name}: a bad %-escape")
    assert client.get(f"/v1/memories/{MEMORY}/{path}").status_code == 401  # no key: 401 first


def test_an_escaped_percent_in_a_name_is_a_percent(client, acme):
    literal = client.get(f"/v1/memories/{MEMORY}/people/%25ZZ/timeline", headers=acme)
    assert literal.status_code == 404 and "no person '%ZZ'" in literal.get_json()["message"]


def test_hyperedges_around_nodes(client, acme):
    around = client.get(
        f"/v1/memories/{MEMORY}/hyperedges", query_string={"node_id": f"{MEMORY}/episode/s1-0"}, headers=acme
    )
    body = around.get_json()
    assert body["node"] == {"id": f"{MEMORY}/episode/s1-0", "label": "Episode", "caption": "Support group and painting"}
    roles = {(h["id"].rsplit("/", 1)[1], h["role"], h["weight"]) for h in body["hyperedges"]}
    assert roles == {("ep-s1-0", "owner", None), ("seg-1", "owner", None),
                     ("topic-identity", "member", 0.9), ("topic-family", "member", 0.3)}  # fmt: skip
    family = next(h for h in body["hyperedges"] if h["id"].endswith("topic-family"))
    assert [m["weight"] for m in family["members"]] == [0.8, 0.3]
    assert family["owners"] == [{"id": f"{MEMORY}/topic/family", "label": "Topic", "caption": "Family time"}]
    person = client.get(f"/v1/memories/{MEMORY}/hyperedges?node_id={MEMORY}/person/caroline", headers=acme).get_json()
    assert [(h["kind"], h["role"]) for h in person["hyperedges"]] == [("segment", "member")]


def test_ids_of_another_memory_are_not_found_through_ones_own(client, acme):
    # conv-b's nodes exist, but asking for them under conv-a must not reach them.
    assert client.get(f"/v1/memories/{MEMORY}/topics/{OTHER}/topic/family", headers=acme).status_code == 404
    assert client.get(f"/v1/memories/{MEMORY}/episodes/{OTHER}/episode/s1-0", headers=acme).status_code == 404
    missing = client.get(f"/v1/memories/{MEMORY}/hyperedges?node_id={OTHER}/episode/s1-0", headers=acme)
    assert missing.status_code == 404 and "node_id" in missing.get_json()["errors"]["query"]


# --- tenant isolation on every memory endpoint ----------------------------------------------
def _memory_endpoints(query_id: str, job_id: str) -> list[tuple[str, str, dict | None]]:
    """(method, url, json) for every route reading or writing conv-a, owned by acme."""
    m = MEMORY
    return [
        ("GET", f"/v1/memories/{m}", None),
        ("POST", f"/v1/memories/{m}/messages", {"messages": [message(1, "Hello there, I like hiking.")]}),
        ("POST", f"/v1/memories/{m}/query", {"query": "What did Caroline adopt?"}),
        ("GET", f"/v1/queries/{query_id}/explanation", None),
        ("GET", f"/v1/jobs/{job_id}", None),
        ("GET", f"/v1/memories/{m}/topics", None),
        ("GET", f"/v1/memories/{m}/topics/{m}/topic/family", None),
        ("GET", f"/v1/memories/{m}/episodes?order=recent", None),
        ("GET", f"/v1/memories/{m}/episodes/{m}/episode/s1-0", None),
        ("GET", f"/v1/memories/{m}/people", None),
        ("GET", f"/v1/memories/{m}/people/Caroline/timeline", None),
        ("GET", f"/v1/memories/{m}/hyperedges?node_id={m}/episode/s1-0", None),
        ("DELETE", f"/v1/memories/{m}", None),
    ]


@pytest.fixture(scope="module")
def records(app):
    """A stored query and a job of conv-a, written as the routes write them."""
    store = app.extensions["hypermem"].store
    result = {
        "query_id": "q-isolation",
        "memory_id": MEMORY,
        "query": "dog?",
        "facts": [],
        "created_at": "2024-01-01T00:00:00+00:00",
    }
    store.query("api/save_query", id="q-isolation", memory_id=MEMORY, query="dog?", created_at=result["created_at"],
                result=json.dumps(result))  # fmt: skip
    store.query(
        "api/create_job",
        id="ab" * 16,
        memory_id=MEMORY,
        messages=7,
        now="2024-01-01T00:00:00+00:00",
        worker=None,
        batch=None,
    )
    return "q-isolation", "ab" * 16


def test_isolation_table_covers_every_memory_route(app, records):
    adapter = app.url_map.bind("localhost")
    covered = {
        (method, adapter.match(url.split("?")[0], method=method)[0]) for method, url, _ in _memory_endpoints(*records)
    }
    routes = {
        (method, rule.endpoint)
        for rule in app.url_map.iter_rules()
        if str(rule.rule).startswith(("/v1/memories/", "/v1/jobs/", "/v1/queries/"))
        for method in rule.methods - {"HEAD", "OPTIONS"}
    }
    assert covered == routes


def test_another_tenants_key_gets_404_on_every_memory_endpoint(app, client, globex, records):
    store = app.extensions["hypermem"].store
    before = store.counts(MEMORY)
    for method, url, body in _memory_endpoints(*records):
        response = client.open(url, method=method, json=body, headers=globex)
        assert response.status_code == 404, (method, url, response.get_json())
        assert MEMORY not in json.dumps(response.get_json().get("errors", {}))
    assert store.counts(MEMORY) == before  # globex's write and delete changed nothing
    assert MEMORY not in [m["memory_id"] for m in client.get("/v1/memories", headers=globex).get_json()["memories"]]


def test_owner_reads_every_browse_endpoint_and_its_records(client, acme, records):
    query_id, job_id = records
    for method, url, _ in _memory_endpoints(*records):
        if method == "GET":
            response = client.get(url, headers=acme)
            assert response.status_code == 200, (url, response.get_json())
    assert client.get(f"/v1/queries/{query_id}/explanation", headers=acme).get_json()["query"] == "dog?"
    assert client.get(f"/v1/jobs/{job_id}", headers=acme).get_json()["messages"] == 7


def test_unowned_memory_with_data_is_not_claimable_by_writing(app, client, acme):
    store = app.extensions["hypermem"].store
    build_sample_graph(store, app.extensions["hypermem"].service.embedder, "cli-made")
    response = client.post("/v1/memories/cli-made/messages", json={"messages": [message(1, "hi there")]}, headers=acme)
    assert response.status_code == 404
    assert store.counts("cli-made")["Turn"] == 5


# --- request errors -------------------------------------------------------------------------
def test_validation_errors_name_the_field(client, acme):
    url = f"/v1/memories/{MEMORY}/messages"
    bad = client.post(url, headers=acme, json={"messages": [
        {"message_id": "x/y", "speaker": " ", "text": "", "timestamp": "yesterday"},
        {**message(2, "ok"), "colour": "red"},
    ]})  # fmt: skip
    assert bad.status_code == 422
    errors = bad.get_json()["errors"]["json"]["messages"]
    assert set(errors["0"]) == {"message_id", "speaker", "timestamp"}
    assert errors["1"] == {"colour": ["Unknown field."]}
    blank = client.post(url, headers=acme, json={"messages": [message(1, "  ")]})
    assert blank.get_json()["errors"]["json"]["messages"]["0"] == {"text": ["text or image_caption must be non-blank"]}
    duplicate = client.post(url, headers=acme, json={"messages": [message(1, "a"), message(1, "b")]})
    assert duplicate.get_json()["errors"]["json"]["messages"]["1"]["message_id"] == [
        "repeats an earlier message_id in this batch"
    ]
    alike = [{**message(1, "a"), "message_id": "A b"}, {**message(2, "b"), "message_id": "\uff21 b"}]  # fullwidth A
    same = client.post(url, headers=acme, json={"messages": alike})
    assert same.status_code == 422
    assert same.get_json()["errors"]["json"]["messages"]["1"]["message_id"] == [
        "repeats an earlier message_id in this batch ('\\uff21 b' is the same id as 'A b' after Unicode NFKC "
        "normalisation)"
    ]
    assert client.post(url, headers=acme, json={}).get_json()["errors"]["json"] == {
        "messages": ["Missing data for required field."]
    }
    nul = client.post(f"/v1/memories/{MEMORY}/query", headers=acme, json={"query": "a\x00b"})
    assert nul.get_json()["errors"]["json"]["query"] == ["must not be blank or contain NUL characters"]
    # each id names the rule it breaks, as the CLI and MCP do
    for message_id, problem in [
        ("a/b", "must not contain '/'"),
        ("a\tb", "must not contain control characters (tabs and line breaks included)"),
        ("ab ", "must not start or end with whitespace (or a braille blank)"),
        ("a\u200bb", "must not contain invisible format characters (zero-width, bidi marks, fillers, tags)"),
    ]:
        bad = client.post(url, headers=acme, json={"messages": [{**message(1, "a"), "message_id": message_id}]})
        assert bad.get_json()["errors"]["json"]["messages"]["0"]["message_id"] == [problem]
    early = client.post(url, headers=acme, json={"messages": [{**message(1, "a"), "timestamp": "1066-10-14T09:00:00"}]})
    assert "timestamp" in early.get_json()["errors"]["json"]["messages"]["0"]


def test_settings_limit_on_message_length_names_the_field(client, acme):
    response = client.post(f"/v1/memories/{MEMORY}/messages", headers=acme, json={"messages": [message(1, "y" * 501)]})
    assert response.status_code == 422
    assert response.get_json()["errors"]["json"] == {"messages": {"0": {"text": ["501 characters; the limit is 500"]}}}


def test_the_message_schema_leaves_length_to_the_settings_and_the_body_limit():
    from hypermem.api.schemas import MessageSchema

    loaded = MessageSchema().load({**message(1, "z" * 1_500_000)})
    assert len(loaded["text"]) == 1_500_000  # a 350k (or 1.5M) character answer is not refused by the schema
    assert Settings().max_message_chars >= Settings().max_request_bytes


def test_malformed_json_and_oversized_bodies(client, acme):
    url = f"/v1/memories/{MEMORY}/query"
    broken = client.post(url, headers=acme, data="{not json", content_type="application/json")
    assert broken.status_code == 400 and broken.get_json()["code"] == 400
    huge = client.post(url, headers=acme, json={"query": "x" * 70_000})
    assert huge.status_code == 413
    assert huge.get_json()["code"] == 413


def test_unknown_routes_are_json_404_and_bad_ids_name_the_parameter(client, acme):
    response = client.get("/v1/nothing", headers=acme)
    assert response.status_code == 404 and response.get_json()["code"] == 404
    for url, name in (("/v1/memories/bad%20id/topics", "memory_id"), ("/v1/jobs/not-hex", "job_id")):
        response = client.get(url, headers=acme)
        assert response.status_code == 422, url
        assert list(response.get_json()["errors"]["path"]) == [name]
    for url in ("/v1/memories/", "/v1/memories//topics"):  # an empty segment names no parameter: no such route
        assert client.get(url, headers=acme).status_code == 404, url


# --- ingest, query, explanation (the real pipelines) --------------------------------------------
def test_ingest_query_explain_and_delete(app, client, acme, globex):
    url = "/v1/memories/live-1/messages"
    batch = [
        message(1, "I just got back from a pottery class, I made a blue bowl."),
        message(2, "That is lovely! I have been training for the Boston marathon.", speaker="Melanie"),
    ]
    first = client.post(url, headers=acme, json={"messages": batch})
    assert first.status_code == 200, first.get_json()
    assert first.get_json()["status"] == "done" and first.get_json()["report"]["turns"] == 2
    again = client.post(url, headers=acme, json={"messages": batch})  # idempotent by message_id
    assert again.get_json()["report"]["turns"] == 2
    assert client.post(url, headers=globex, json={"messages": batch}).status_code == 404

    answer = client.post(
        "/v1/memories/live-1/query", headers=acme, json={"query": "What did Caroline make in pottery class?"}
    )
    assert answer.status_code == 200, answer.get_json()
    result = answer.get_json()
    turn_texts = [t.get("text", "") for t in result["turns"]]
    assert any("blue bowl" in text for text in turn_texts)
    assert all(step["level"] for item in result["turns"] for step in item["path"])
    explained = client.get(f"/v1/queries/{result['query_id']}/explanation", headers=acme).get_json()
    assert explained["turns"] == result["turns"] and explained["query"] == result["query"]
    assert client.get(f"/v1/queries/{result['query_id']}/explanation", headers=globex).status_code == 404

    deleted = client.delete("/v1/memories/live-1", headers=acme).get_json()
    assert deleted["deleted_nodes"] > 2
    assert app.extensions["hypermem"].store.counts("live-1") == {"memberships": 0}
    assert client.get(f"/v1/queries/{result['query_id']}/explanation", headers=acme).status_code == 404


def test_an_explanation_kept_without_its_evidence_says_so(app, client, acme, monkeypatch):
    """A result over ``query_record_max_bytes`` is stored without its evidence lists; the explanation says
    ``truncated: true`` rather than looking like a query that found nothing."""
    state = app.extensions["hypermem"]
    monkeypatch.setattr(state, "settings", state.settings.model_copy(update={"query_record_max_bytes": 1_000}))
    result = client.post(f"/v1/memories/{MEMORY}/query", headers=acme, json={"query": "Where did Melanie camp?"})
    assert result.status_code == 200 and result.get_json()["turns"] and "truncated" not in result.get_json()
    explained = client.get(f"/v1/queries/{result.get_json()['query_id']}/explanation", headers=acme).get_json()
    assert (
        explained["truncated"] is True and explained["turns"] == [] and explained["query"] == "Where did Melanie camp?"
    )


def _finished(client, headers, job_id: str) -> dict:
    job = {}
    for _ in range(1200):  # poll as a client would (at most ~2 minutes)
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).get_json()
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.1)
    assert job["status"] == "done", job
    return job


def test_a_query_while_the_first_ingest_job_is_queued_is_a_409_naming_the_job(app, client, acme):
    """The memory exists (owned, its batch accepted as a job) but holds no dialogue yet: a 409, not a 404."""
    from hypermem.records import owners

    store = app.extensions["hypermem"].store
    assert owners.tenant_owner(store, "acme", "queued-1", claim=True) is not None
    job_id = "cd" * 16  # not the isolation fixture's
    store.query("api/create_job", id=job_id, memory_id="queued-1", messages=1, now="2026-12-02T00:00:00+00:00",
                worker="elsewhere:1", batch="[]")  # fmt: skip
    try:
        asked = client.post("/v1/memories/queued-1/query", headers=acme, json={"query": "What did I practise?"})
        assert asked.status_code == 409, asked.get_json()
        assert f"its ingest job {job_id} is queued" in asked.get_json()["message"]
    finally:
        client.delete("/v1/memories/queued-1", headers=acme)  # the job and the owner go with the memory
    assert client.post("/v1/memories/queued-1/query", headers=acme, json={"query": "What?"}).status_code == 404


def test_large_batch_runs_as_a_background_job(app, client, acme):
    batch = [message(i, f"Day {i}: I practised the violin for {i} hours and then cooked pasta.") for i in range(1, 6)]
    accepted = client.post("/v1/memories/live-2/messages", headers=acme, json={"messages": batch})
    assert accepted.status_code == 202
    body = accepted.get_json()
    assert body["status"] == "queued" and body["messages"] == 5
    assert accepted.headers["Location"] == f"/v1/jobs/{body['job_id']}"
    job = _finished(client, acme, body["job_id"])
    assert job["report"]["turns"] == 5
    assert datetime.fromisoformat(job["updated_at"]) >= datetime.fromisoformat(job["created_at"])


def test_a_batch_with_more_text_than_the_sync_limit_runs_as_a_background_job(app, client, acme):
    state = app.extensions["hypermem"]
    default, state.sync_text_limit = state.sync_text_limit, 200  # two messages of 150 characters: 300 > 200
    try:
        batch = [message(i, f"Day {i}: " + "I practised the violin, then cooked pasta. " * 3) for i in (1, 2)]
        assert all(len(m["text"]) < 200 for m in batch)
        accepted = client.post("/v1/memories/live-long/messages", headers=acme, json={"messages": batch})
        assert accepted.status_code == 202 and accepted.get_json()["status"] == "queued"
        assert _finished(client, acme, accepted.get_json()["job_id"])["report"]["turns"] == 2
        one = client.post("/v1/memories/live-long/messages", headers=acme, json={"messages": [message(3, "Short.")]})
        assert one.status_code == 200  # within both limits: answered with its report
    finally:
        state.sync_text_limit = default


def test_a_batch_with_more_model_tokens_than_the_sync_limit_runs_as_a_background_job(app, client, acme):
    """Short tokens with digits take a model token per 1-3 characters: what the ingest embeds grows with tokens."""
    state = app.extensions["hypermem"]
    count = state.service.embedder.count_tokens
    default, state.sync_token_limit = state.sync_token_limit, 40
    try:
        dense = " ".join(f"ab{i}cd" for i in range(20))  # 129 characters, 60 tokens
        assert len(dense) > 40 and count(dense) > 40
        accepted = client.post(
            "/v1/memories/live-tokens/messages", headers=acme, json={"messages": [message(1, dense)]}
        )
        assert accepted.status_code == 202 and accepted.get_json()["status"] == "queued"
        assert _finished(client, acme, accepted.get_json()["job_id"])["report"]["turns"] == 1
        short = client.post("/v1/memories/live-tokens/messages", headers=acme,
                            json={"messages": [message(2, "I practised the violin.")]})  # fmt: skip
        assert short.status_code == 200  # fewer characters than the limit: not even tokenized
        prose = "The violin and the pasta were lovely, and so were the lantern and the harbour at the end of it."
        assert len(prose) > 40 and count(prose) <= 40
        counted = client.post("/v1/memories/live-tokens/messages", headers=acme, json={"messages": [message(3, prose)]})
        assert counted.status_code == 200  # more characters than the limit, within it in tokens
    finally:
        state.sync_token_limit = default


def test_a_batch_with_more_distinct_words_than_the_sync_limit_runs_as_a_background_job(app, client, acme):
    state = app.extensions["hypermem"]
    default, state.sync_word_limit = state.sync_word_limit, 8
    try:
        words = "violin pasta kiln glaze teapot bicycle harbour lantern meadow"  # 9 content words, 63 characters
        accepted = client.post("/v1/memories/live-words/messages", headers=acme, json={"messages": [message(1, words)]})
        assert accepted.status_code == 202 and accepted.get_json()["status"] == "queued"
        assert _finished(client, acme, accepted.get_json()["job_id"])["report"]["turns"] == 1
        few = client.post("/v1/memories/live-words/messages", headers=acme,
                          json={"messages": [message(2, "The violin, the violin, the pasta!")]})  # fmt: skip
        assert few.status_code == 200  # 2 distinct words: answered with its report
    finally:
        state.sync_word_limit = default


def test_a_job_report_sums_the_counters_of_all_its_chunks(app, client, acme):
    # six one-message sessions: two chunks of three (the sync limit) in one background job
    batch = [message(i, f"I practised the violin for {i} hours.", day=f"2023-06-{i:02d}") for i in range(1, 7)]
    url = "/v1/memories/live-3/messages"
    first = _finished(client, acme, client.post(url, headers=acme, json={"messages": batch}).get_json()["job_id"])
    report = first["report"]
    assert (report["sessions_ingested"], report["sessions_skipped"], report["turns"]) == (6, 0, 6)
    again = _finished(client, acme, client.post(url, headers=acme, json={"messages": batch}).get_json()["job_id"])
    assert (again["report"]["sessions_ingested"], again["report"]["sessions_skipped"]) == (0, 6)
    batch[0]["text"], batch[4]["text"] = "I tuned the cello.", "I bought new strings."
    edited = _finished(client, acme, client.post(url, headers=acme, json={"messages": batch}).get_json()["job_id"])
    assert (edited["report"]["sessions_ingested"], edited["report"]["sessions_skipped"]) == (2, 4)
    assert (edited["report"]["updated"], edited["report"]["updated_ids"]) == (2, ["m1", "m5"])


def test_recent_episodes_view(client, keys):
    auth = bearer(keys["acme"])
    recent = client.get(f"/v1/memories/{MEMORY}/episodes?order=recent&limit=5", headers=auth)
    assert recent.status_code == 200, recent.get_json()
    items = recent.get_json()["episodes"]
    assert [(e["id"], e["facts"]) for e in items] == [
        (node_id(MEMORY, "episode", "s2-0"), 2),
        (node_id(MEMORY, "episode", "s1-0"), 3),
    ]
    oldest = client.get(f"/v1/memories/{MEMORY}/episodes?order=oldest&limit=1", headers=auth).get_json()["episodes"]
    assert [e["id"] for e in oldest] == [node_id(MEMORY, "episode", "s1-0")]
    default = client.get(f"/v1/memories/{MEMORY}/episodes", headers=auth).get_json()["episodes"]
    assert [e["id"] for e in default] == [e["id"] for e in items]
    bad = client.get(f"/v1/memories/{MEMORY}/episodes?order=sideways", headers=auth)
    assert bad.status_code == 422 and "order" in json.dumps(bad.get_json())
    assert client.get(f"/v1/memories/{MEMORY}/episodes", headers=bearer(keys["globex"])).status_code == 404


def test_a_timeline_window_keeps_facts_dated_to_a_month_or_a_year_whichever_episode_told_them(app, client, acme):
    """Rosa tells in 2023 of a move in 2019 and of a start last month: a window overlapping 2019 (or February
    2023) shows that fact, though its episode is of March 2023."""
    url = "/v1/memories/tl-window/messages"
    messages = [
        message(1, "I moved to Berlin in 2019 and I have loved the city ever since then.", "Rosa", "2023-03-10"),
        message(2, "Last month I started learning the violin with a teacher near my flat.", "Rosa", "2023-03-10"),
    ]
    assert client.post(url, headers=acme, json={"messages": messages}).status_code == 200
    timeline = "/v1/memories/tl-window/people/Rosa/timeline"
    items = client.get(timeline, headers=acme).get_json()["items"]
    assert sorted(i["date"] for i in items if i["kind"] == "fact") == ["2019", "2023-02"], items  # year, month

    def window(start: str, end: str) -> list:
        got = client.get(f"{timeline}?from={start}&to={end}", headers=acme).get_json()["items"]
        return sorted((i["kind"], i["date"]) for i in got)

    assert window("2018-01-01", "2020-12-31") == [("fact", "2019")]
    assert window("2019-06-01", "2019-06-30") == [("fact", "2019")]
    assert window("2023-02-01", "2023-02-28") == [("fact", "2023-02")]
    assert window("2023-03-10", "2023-03-10") == [("episode", "2023-03-10")]  # neither fact's date is that day
    assert window("2020-01-01", "2022-12-31") == []


def test_admin_routes_without_an_admin_key_say_so(hm_service):
    """With no admin key configured, an admin route's 401 says that, not "unknown key"; other routes are as before."""
    assert hm_service.settings.admin_key is None
    app = create_app(service=hm_service)
    try:
        client = app.test_client()
        refused = client.post("/v1/tenants/acme/keys", headers=bearer("anything"))
        assert refused.status_code == 401
        assert refused.json["message"] == "no admin key is configured (set HYPERMEM_ADMIN_KEY)"
        assert client.get("/v1/memories", headers=bearer("anything")).json["message"] == "unknown or revoked API key"
    finally:
        app.extensions["hypermem"].close()
