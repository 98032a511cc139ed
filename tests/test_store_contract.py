"""The GraphStore contract, run on every engine: the embedded FalkorDB always, Neo4j when
``NEO4J_URI`` is set (``tests/engines.py``).

Batched idempotent writes through the real ``cypher/write`` files, vector and full-text
search, memory isolation, deletion without orphans, the embedding-dimension check, nasty
full-text input, and HNSW recall@10 against exact numpy cosine on 5,000 real sentence
embeddings (alone, and with 50 other memories sharing the index).
"""

from __future__ import annotations

import itertools
import random
import time
import uuid

import numpy as np
import pytest
from engines import INDEX_VARIANTS, engine_settings

from hypermem.config import Settings
from hypermem.embed import Embedder
from hypermem.store import SchemaMismatch, open_store
from hypermem.store.ordered_writes import OrderedWrites

EMBEDDING_MODEL = Settings().embedding_model


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(EMBEDDING_MODEL)


@pytest.fixture(scope="module", params=INDEX_VARIANTS)
def store(request, tmp_path_factory, embedder):
    settings = engine_settings(request.param, tmp_path_factory.mktemp("contract") / "db")
    graph = open_store(settings)
    graph.ensure_schema(EMBEDDING_MODEL, embedder.dimension)
    yield graph
    graph.close()


@pytest.fixture
def memory(store):
    """A fresh memory id, deleted after the test (the Neo4j database outlives the run)."""
    memory_id = f"contract-{uuid.uuid4().hex[:10]}"
    yield memory_id
    store.delete_memory(memory_id)


# --- a small conversation graph, written through every write file ------------------------------

TURNS = [
    ("Caroline", "Hey Mel, Caroline here. I went to the LGBTQ support group yesterday, it was so powerful."),
    ("Melanie", "That's great! I painted a sunset over the lake on 2023-05-07."),
    ("Caroline", "Caroline's big news: my new job is school counseling, I start next month."),
    ("Melanie", "Congrats! Email me at melanie@example.com with the details."),
    ("Caroline", "Caroline is moving to Sweden, her grandmother's home country."),
    ("Melanie", "I took the kids camping in the mountains last weekend."),
]


def _graph_rows(memory_id: str, embedder: Embedder) -> dict[str, list[dict]]:
    """Rows for every ``write/*`` file: 6 turns, 4 elements, 2 episodes, 3 facts, 1 topic, 4 hyperedges."""

    def nid(kind: str, local: str) -> str:
        return f"{memory_id}/{kind}/{local}"

    turn_vectors = embedder.encode([text for _, text in TURNS])
    turns = [
        {
            "memory_id": memory_id, "id": nid("turn", f"D1:{i}"), "dia_id": f"D1:{i}", "speaker": speaker, "text": text,
            "timestamp": f"2023-05-07T10:{i:02d}:00", "session": "1", "seq": i, "embedding": turn_vectors[i].tolist(),
            "prev_id": nid("turn", f"D1:{i - 1}") if i else None,
        }
        for i, (speaker, text) in enumerate(TURNS)
    ]  # fmt: skip
    elements = [
        {
            "memory_id": memory_id,
            "id": nid("person", "caroline"),
            "kind": "Person",
            "name": "Caroline",
            "value": "Caroline",
        },
        {
            "memory_id": memory_id,
            "id": nid("person", "melanie"),
            "kind": "Person",
            "name": "Melanie",
            "value": "Melanie",
        },
        {
            "memory_id": memory_id,
            "id": nid("time", "2023-05-07"),
            "kind": "Time",
            "name": "7 May 2023",
            "value": "2023-05-07",
        },
        {
            "memory_id": memory_id,
            "id": nid("location", "sweden"),
            "kind": "Location",
            "name": "Sweden",
            "value": "Sweden",
        },
    ]
    episode_texts = [
        "Caroline's support group and new job. Caroline went to a support group and will work in school counseling.",
        "Melanie's painting and camping. Melanie painted a sunset and took the kids camping.",
    ]
    episode_vectors = embedder.encode(episode_texts)
    episodes = [
        {
            "memory_id": memory_id, "id": nid("episode", str(i)), "session": "1", "title": text.split(". ")[0],
            "summary": text.split(". ")[1], "text": text, "start": f"2023-05-07T10:0{3 * i}:00",
            "end": f"2023-05-07T10:0{3 * i + 2}:00", "participants": ["Caroline", "Melanie"],
            "turn_ids": [nid("turn", f"D1:{j}") for j in range(3 * i, 3 * i + 3)],
            "embedding": episode_vectors[i].tolist(), "embedding_raw": episode_vectors[i].tolist(),
        }
        for i, text in enumerate(episode_texts)
    ]  # fmt: skip
    fact_specs = [
        ("0", "Caroline attended an LGBTQ support group.", "D1:0"),
        ("0", "Caroline's new job is school counseling.", "D1:2"),
        ("1", "Melanie painted a sunset over the lake on 2023-05-07.", "D1:1"),
    ]
    fact_vectors = embedder.encode([content for _, content, _ in fact_specs])
    facts = [
        {
            "memory_id": memory_id, "id": nid("fact", str(i)), "episode_id": nid("episode", episode), "content": content,
            "potential": [], "keywords": [], "date": "2023-05-07", "text": content, "turn_ids": [nid("turn", turn)],
            "embedding": fact_vectors[i].tolist(), "embedding_raw": fact_vectors[i].tolist(),
        }
        for i, (episode, content, turn) in enumerate(fact_specs)
    ]  # fmt: skip
    topic_text = "Life updates. Support groups, careers, art and family trips."
    topics = [
        {
            "memory_id": memory_id, "id": nid("topic", "0"), "title": "Life updates", "summary": topic_text,
            "text": topic_text, "embedding": embedder.encode_one(topic_text).tolist(),
        }
    ]  # fmt: skip
    hyperedges = [
        {"memory_id": memory_id, "id": nid("he", "topic-0"), "kind": "topic", "owner_ids": [nid("topic", "0")],
         "members": [{"id": nid("episode", "0"), "weight": 0.9}, {"id": nid("episode", "1"), "weight": 0.6}]},
        {"memory_id": memory_id, "id": nid("he", "episode-0"), "kind": "episode", "owner_ids": [nid("episode", "0")],
         "members": [{"id": nid("fact", "0"), "weight": 1.0}, {"id": nid("fact", "1"), "weight": 0.8}]},
        {"memory_id": memory_id, "id": nid("he", "episode-1"), "kind": "episode", "owner_ids": [nid("episode", "1")],
         "members": [{"id": nid("fact", "2"), "weight": 1.0}]},
        {"memory_id": memory_id, "id": nid("he", "segment-0"), "kind": "segment",
         "owner_ids": [nid("episode", "0"), nid("episode", "1")],
         "members": [{"id": nid("person", "caroline"), "weight": 1.0}, {"id": nid("person", "melanie"), "weight": 0.7},
                     {"id": nid("time", "2023-05-07"), "weight": 0.5}, {"id": nid("location", "sweden"), "weight": 0.3}]},
    ]  # fmt: skip
    return {
        "write/turns": turns,
        "write/elements": elements,
        "write/episodes": episodes,
        "write/facts": facts,
        "write/topics": topics,
        "write/hyperedges": hyperedges,
    }


EXPECTED_NODES = {"Turn": 6, "Person": 2, "Time": 1, "Location": 1, "Episode": 2, "Fact": 3, "Topic": 1, "Hyperedge": 4}
# NEXT 5 + FROM_TURN (episodes 6, facts 3) + HAS_HYPEREDGE 5 + MEMBER 9
EXPECTED_RELATIONSHIPS = 28


def _write_graph(store, memory_id: str, embedder: Embedder) -> None:
    for name, rows in _graph_rows(memory_id, embedder).items():
        store.write(name, rows)


def _relationship_count(store, memory_id: str) -> int:
    rows = store.run_cypher(
        "MATCH (a)-[r]->(b) WHERE a.memory_id = $m OR b.memory_id = $m RETURN count(r) AS c", {"m": memory_id}
    )
    return int(rows[0]["c"])


def test_batched_writes_are_idempotent(store, memory, embedder):
    saved = store.write_batch_size, store.vector_write_batch_size
    store.write_batch_size = store.vector_write_batch_size = 2  # several UNWIND batches per file
    try:
        _write_graph(store, memory, embedder)
        first = (store.counts(memory), _relationship_count(store, memory))
        _write_graph(store, memory, embedder)
        second = (store.counts(memory), _relationship_count(store, memory))
    finally:
        store.write_batch_size, store.vector_write_batch_size = saved
    assert first == second
    assert first[0] == {**EXPECTED_NODES, "memberships": 9}
    assert first[1] == EXPECTED_RELATIONSHIPS


def test_hyperedge_rewrite_replaces_member_set(store, memory, embedder):
    _write_graph(store, memory, embedder)
    segment = _graph_rows(memory, embedder)["write/hyperedges"][3]
    store.write("write/hyperedges", [{**segment, "members": segment["members"][:2]}])
    assert store.counts(memory)["memberships"] == 7


def test_vector_search_ranks_by_cosine(store, memory, embedder):
    _write_graph(store, memory, embedder)
    query = embedder.encode_one("Which country is Caroline moving to?")
    hits = store.vector_search("Turn", memory, query, 3)
    assert hits[0].id == f"{memory}/turn/D1:4"
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    turn_vectors = embedder.encode([text for _, text in TURNS])
    assert hits[0].score == pytest.approx(float(turn_vectors[4] @ query), abs=1e-4)
    exact = store.vector_search(
        "Fact",
        memory,
        embedder.encode_one("what is Caroline's job?"),
        1,
        candidates=[f"{memory}/fact/1", f"{memory}/fact/2"],
    )
    assert [h.id for h in exact] == [f"{memory}/fact/1"]


def test_fulltext_search_ors_terms(store, memory, embedder):
    _write_graph(store, memory, embedder)
    hits = store.fulltext_search("Turn", memory, "what's Caroline's job?", 5)
    assert hits and hits[0].id == f"{memory}/turn/D1:2"
    spread = store.fulltext_search("Turn", memory, "counseling Sweden", 5)  # no turn has both words
    assert spread and {h.id for h in spread} <= {f"{memory}/turn/D1:2", f"{memory}/turn/D1:4"}
    dated = store.fulltext_search("Turn", memory, "2023-05-07", 5)
    assert dated[0].id == f"{memory}/turn/D1:1"
    email = store.fulltext_search("Turn", memory, "melanie@example.com", 5)
    assert email[0].id == f"{memory}/turn/D1:3"
    stemmed = store.fulltext_search("Turn", memory, "paintings", 5)  # English stemming: painting(s) ~ painted
    assert [h.id for h in stemmed] == [f"{memory}/turn/D1:1"]
    only = store.fulltext_search("Fact", memory, "Caroline", 5, candidates=[f"{memory}/fact/1"])
    assert [h.id for h in only] == [f"{memory}/fact/1"]


NASTY_QUERIES = [
    "",
    "   ",
    "?!?",
    "2023-05-07",
    "7/5/2023 10:30",
    "melanie@example.com",
    "what's Caroline's job?",
    "a | b",
    "-caroline",
    "caroline*",
    "%caroline%",
    "job:counselor",
    '"support group"',
    "(caroline) {melanie} [sweden]",
    "a; DROP GRAPH hypermem;",
    "@speaker:Caroline",
    "C:\\Users\\caroline\\file.txt",
    "/etc/passwd",
    "~caroline^2",
    "caroline AND melanie",
    "caroline OR melanie",
    "NOT caroline",
    "AND OR NOT",
    "+caroline -melanie && sweden || camping !painting",
    'caroline~0.8 "group"~3 job^4 c?roline',
    "🎨🏕️ 🇸🇪 ❤️",
    "painting 🎨 with Melanie 😊",
    "카롤라인 스웨덴 Ünïcödé ßtraße",
    "\x00\x01\t\n\r",
    "' OR 1=1 --",
    "$rows",
    "${memory_id}",
    "x" * 10_000,
    " ".join(["caroline"] * 2_000),
]


def test_nasty_fulltext_queries_never_raise(store, memory, embedder):
    _write_graph(store, memory, embedder)
    alphabet = "ab ca-|*%:\"(){}[];@\\/~^!?+&'.,#$<>=\t😊é"
    rng = random.Random(11)
    fuzz = ["".join(rng.choice(alphabet) for _ in range(rng.randint(1, 40))) for _ in range(60)]
    for label in ("Turn", "Episode", "Fact", "Topic"):
        for text in NASTY_QUERIES + fuzz:
            hits = store.fulltext_search(label, memory, text, 10)
            assert isinstance(hits, list)
            assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True), text
            assert all(h.id.startswith(f"{memory}/") for h in hits)
    assert store.fulltext_search("Turn", memory, "", 10) == []
    assert store.fulltext_search("Turn", memory, "🎨🏕️ 🇸🇪 ❤️", 10) == []
    assert store.fulltext_search("Turn", memory, "AND OR NOT", 10) == []
    assert store.fulltext_search("Turn", memory, "-caroline", 10)  # '-' is not a NOT: Caroline's turns come back


def test_memories_are_isolated(store, embedder):
    a, b = f"iso-a-{uuid.uuid4().hex[:8]}", f"iso-b-{uuid.uuid4().hex[:8]}"
    try:
        _write_graph(store, a, embedder)
        _write_graph(store, b, embedder)
        query = embedder.encode_one("camping in the mountains")
        for memory_id in (a, b):
            vector_hits = store.vector_search("Turn", memory_id, query, 10)
            text_hits = store.fulltext_search("Turn", memory_id, "camping mountains", 10)
            assert len(vector_hits) == len(TURNS)
            assert text_hits and vector_hits[0].id == text_hits[0].id == f"{memory_id}/turn/D1:5"
            assert all(h.id.startswith(f"{memory_id}/") for h in vector_hits + text_hits)
        assert {a, b} <= set(store.memory_ids())
    finally:
        store.delete_memory(a)
        store.delete_memory(b)


def test_delete_memory_leaves_no_orphans(store, embedder):
    a, b = f"del-a-{uuid.uuid4().hex[:8]}", f"del-b-{uuid.uuid4().hex[:8]}"
    try:
        _write_graph(store, a, embedder)
        _write_graph(store, b, embedder)
        removed = store.delete_memory(a)
        assert removed == sum(EXPECTED_NODES.values())
        assert store.counts(a) == {"memberships": 0}
        left = store.run_cypher(
            "MATCH (n) WHERE n.memory_id = $m OR n.id STARTS WITH $prefix RETURN count(n) AS c",
            {"m": a, "prefix": f"{a}/"},
        )
        assert left[0]["c"] == 0
        dangling = store.run_cypher(
            "MATCH (a)-[r]->(b) WHERE a.memory_id IS NULL OR b.memory_id IS NULL OR a.memory_id <> b.memory_id "
            "RETURN count(r) AS c"
        )
        assert dangling[0]["c"] == 0
        assert store.counts(b) == {**EXPECTED_NODES, "memberships": 9}
        assert _relationship_count(store, b) == EXPECTED_RELATIONSHIPS
        assert a not in store.memory_ids()
        assert store.delete_memory(a) == 0
    finally:
        store.delete_memory(b)


def test_dimension_mismatch_is_refused(store, embedder):
    with pytest.raises(SchemaMismatch, match=str(embedder.dimension)):
        store.ensure_schema("some-other-model", embedder.dimension + 128)
    store.ensure_schema(EMBEDDING_MODEL, embedder.dimension)  # the right one still opens
    assert int(store.meta()["dimension"]) == embedder.dimension


def test_another_model_of_the_same_dimension_is_refused(store, embedder):
    """minilm-int8 and e5-small-q4 both give 384 dimensions: their vectors must not meet in one index."""
    with pytest.raises(SchemaMismatch, match=f"built with {EMBEDDING_MODEL} .*other-model-of-the-same-size"):
        store.ensure_schema("other-model-of-the-same-size", embedder.dimension)
    assert store.meta()["embedding_model"] == EMBEDDING_MODEL


def test_indexes_cover_the_schema(store, request):
    found = {(i["label"], i["property"], i["type"]) for i in store.indexes()}
    for label in ("Turn", "Episode", "Topic", "Fact"):
        assert ((label, "embedding", "VECTOR") in found) is store.vector_indexes  # the embedded default has none
        assert (label, "text", "FULLTEXT") in found
        assert (label, "memory_id", "RANGE") in found
    assert (("Fact", "embedding_raw", "VECTOR") in found) is store.vector_indexes
    # Neo4j always indexes; the embedded engine only with HYPERMEM_FALKORDB_VECTOR_INDEXES
    assert store.vector_indexes is (request.node.callspec.params["store"] in ("neo4j", "falkordb-hnsw"))
    assert ("Episode", "embedding_raw", "VECTOR") not in found  # model.UNINDEXED_VECTORS: searched exactly
    assert ("Term", "embedding", "VECTOR") not in found  # searched in-process (store.vocabulary_matrix)
    assert ("Hyperedge", "id", "RANGE") in found
    assert {("Turn", "embed_key", "RANGE"), ("Fact", "embed_key", "RANGE"), ("Term", "embed_key", "RANGE")} <= found


def test_an_unindexed_vector_is_searched_exactly_and_its_old_index_is_dropped(store, memory, embedder):
    _write_graph(store, memory, embedder)
    query = embedder.encode_one("Melanie went camping with the kids")
    hits = store.vector_search("Episode", memory, query, 2, prop="embedding_raw")
    vectors = embedder.encode([r["text"] for r in _graph_rows(memory, embedder)["write/episodes"]])
    assert [h.id for h in hits] == [f"{memory}/episode/1", f"{memory}/episode/0"]
    assert [h.score for h in hits] == pytest.approx([float(vectors[1] @ query), float(vectors[0] @ query)], abs=1e-5)
    old_index = {  # what earlier versions created
        "falkordb": "CREATE VECTOR INDEX FOR (n:Episode) ON (n.embedding_raw) OPTIONS {dimension:384, similarityFunction:'cosine'}",
        "neo4j": "CREATE VECTOR INDEX vector_index_Episode_embedding_raw IF NOT EXISTS FOR (n:Episode) ON (n.embedding_raw) "
                 "OPTIONS {indexConfig: {`vector.dimensions`: 384, `vector.similarity_function`: 'cosine'}}",
    }[store.dialect.name]  # fmt: skip
    store.run_cypher(old_index)
    assert ("Episode", "embedding_raw", "VECTOR") in {(i["label"], i["property"], i["type"]) for i in store.indexes()}
    if store.dialect.name == "falkordb":  # an old store's index is built; FalkorDB builds a new one in the background
        deadline = time.monotonic() + 120  # a label's other indexes are rebuilt with it: seconds on a loaded machine
        while True:
            rows = store.run_cypher(
                "CALL db.indexes() YIELD label, properties, status RETURN label, properties, status"
            )
            if all(r["status"] == "OPERATIONAL" for r in rows if r["label"] == "Episode"):
                break
            assert time.monotonic() < deadline, rows
            time.sleep(0.05)
    store.ensure_schema(EMBEDDING_MODEL, embedder.dimension)
    assert ("Episode", "embedding_raw", "VECTOR") not in {
        (i["label"], i["property"], i["type"]) for i in store.indexes()
    }
    assert store.vector_search("Episode", memory, query, 2, prop="embedding_raw") == hits


def _fact_rows_of_turns(memory_id: str, embedder: Embedder, borrowed: bool) -> list[dict]:
    """Five facts: four of one turn each (two of turn D1:4) whose raw vector is that turn's, stored on the fact
    (``borrowed`` False: the layout before ``raw_is_turn``) or borrowed from the turn; one with its own vector."""
    turn_vectors = embedder.encode([text for _, text in TURNS])
    own = embedder.encode_one("Caroline moves to her grandmother's country.")
    specs = [("D1:0", 0), ("D1:2", 2), ("D1:4", 4), ("D1:4", 4), ("D1:4", None)]
    return [
        {"memory_id": memory_id, "id": f"{memory_id}/fact/{n}", "episode_id": f"{memory_id}/episode/0",
         "content": TURNS[turn][1] if turn is not None else "moves", "potential": [], "keywords": [], "date": "",
         "text": "x", "turn_ids": [f"{memory_id}/turn/{dia}"], "embedding": own.tolist(),
         "embedding_raw": None if borrowed and turn is not None else (turn_vectors[turn] if turn is not None else own).tolist(),
         "raw_is_turn": borrowed and turn is not None}
        for n, (dia, turn) in enumerate(specs)
    ]  # fmt: skip


def test_a_borrowed_raw_vector_is_searched_like_a_stored_one(store, embedder):
    """Facts borrowing their turn's vector (``raw_is_turn``) rank as the same facts storing it: same ids, same
    scores, ties by id, with ANN, with its fallback and within candidates, beside a memory of the old layout."""
    memories = {layout: f"contract-{layout}-{uuid.uuid4().hex[:8]}" for layout in ("stored", "borrowed")}
    try:
        for layout, memory_id in memories.items():
            store.write("write/turns", _graph_rows(memory_id, embedder)["write/turns"])
            store.write("write/facts", _fact_rows_of_turns(memory_id, embedder, layout == "borrowed"))
        borrowed = memories["borrowed"]
        stored = store.run_cypher("MATCH (f:Fact) WHERE f.memory_id = $m AND f.embedding_raw IS NOT NULL "
                                  "RETURN f.id AS id", {"m": borrowed})  # fmt: skip
        assert [r["id"] for r in stored] == [f"{borrowed}/fact/4"]

        def search(layout: str, text: str, k: int, candidates=None) -> list[tuple[str, float]]:
            memory_id = memories[layout]
            ids = None if candidates is None else [f"{memory_id}/fact/{n}" for n in candidates]
            hits = store.vector_search("Fact", memory_id, embedder.encode_one(text), k, prop="embedding_raw",
                                       candidates=ids)  # fmt: skip
            return [(h.id.rsplit("/", 1)[1], round(h.score, 6)) for h in hits]

        for text in ("Which country is Caroline moving to?", "What is Caroline's new job?"):
            for k, candidates in ((5, None), (3, None), (2, [0, 2, 3, 4]), (9, [1, 3])):
                old = search("stored", text, k, candidates)
                assert search("borrowed", text, k, candidates) == sorted(old, key=lambda h: (-h[1], h[0])), (text, k)
        top = search("borrowed", "Which country is Caroline moving to?", 5)
        ids = [n for n, _ in top]
        assert sorted(ids) == ["0", "1", "2", "3", "4"] and ids.index("2") < 2  # the turn about Sweden comes first
        assert ids[ids.index("2") + 1] == "3" and top[ids.index("2")][1] == top[ids.index("3")][1]  # tied, by id
    finally:
        for memory_id in memories.values():
            store.delete_memory(memory_id)


def test_a_borrowed_vector_whose_turn_lost_its_vector_is_left_out(store, embedder):
    """While a reindex has reset a turn's vector (``maintain/reset_embeddings``) and not yet re-embedded it, the facts
    borrowing it are not scored (a query beside a reindex answers from the rest), with ANN, its fallback and within
    candidates."""
    memory_id = f"contract-reset-{uuid.uuid4().hex[:8]}"
    try:
        store.write("write/turns", _graph_rows(memory_id, embedder)["write/turns"])
        store.write("write/facts", _fact_rows_of_turns(memory_id, embedder, borrowed=True))
        store.run_cypher("MATCH (t:Turn {id: $id}) REMOVE t.embedding", {"id": f"{memory_id}/turn/D1:4"})
        vector = embedder.encode_one("Which country is Caroline moving to?")
        for k, candidates in ((5, None), (2, None), (9, ["1", "2", "3"])):
            ids = None if candidates is None else [f"{memory_id}/fact/{n}" for n in candidates]
            hits = store.vector_search("Fact", memory_id, vector, k, prop="embedding_raw", candidates=ids)
            found = sorted(h.id.rsplit("/", 1)[1] for h in hits)
            expected = {"1"} if candidates else {"0", "1", "4"}  # facts 2 and 3 borrow D1:4's vector
            assert set(found) <= expected and len(found) == min(k, len(expected)), (k, candidates, found)
            assert all(-1.0 <= h.score <= 1.0 for h in hits)
    finally:
        store.delete_memory(memory_id)


# --- HNSW recall on real sentence embeddings ---------------------------------------------------

_NAMES = ["Caroline", "Melanie", "John", "Maria", "Deborah", "Jolene", "Evan", "Sam", "Tim", "Audrey", "Andrew",
          "Nate", "Joanna", "Calvin", "Dave", "Gina", "Jon", "James", "Priya", "Kenji", "Lucia", "Omar", "Fatima",
          "Ivan", "Zoe"]  # fmt: skip
_ACTIVITIES = [
    "went hiking in the mountains", "adopted a rescue dog", "started learning the violin", "painted a sunset over the lake",
    "ran a charity marathon", "baked sourdough bread", "visited a pottery class", "joined an LGBTQ support group",
    "applied for a counseling job", "read a novel about time travel", "planted tomatoes in the garden",
    "took the kids camping", "fixed an old motorcycle", "wrote a poem about the ocean", "attended a jazz concert",
    "moved to a new apartment", "volunteered at the animal shelter", "started a vegan diet", "got a promotion at work",
    "learned to surf", "bought a vintage camera", "organized a book club", "went to a yoga retreat",
    "repaired the kitchen sink", "travelled to Sweden", "celebrated a birthday with friends", "adopted a kitten",
    "lost a job at the factory", "signed up for a painting workshop", "finished a degree in psychology",
    "played chess in the park", "cooked a traditional family recipe", "went to a Pride parade",
    "started a podcast about games", "trained for a triathlon", "built a treehouse", "gave a talk at the library",
    "got engaged on the beach", "saw a doctor about back pain", "took photos of wild birds",
]  # fmt: skip
_WHEN = ["last weekend", "yesterday", "two weeks ago", "in May 2023", "on Sunday morning", "after work",
         "during the summer", "before the holidays", "last night", "early this year"]  # fmt: skip
N_DOCS, N_QUERIES, K = 5_000, 50, 10


@pytest.fixture(scope="module")
def corpus(embedder) -> tuple[np.ndarray, np.ndarray]:
    """5,000 distinct template sentences + 50 held-out query sentences, embedded: (docs, queries)."""
    combos = list(itertools.product(_NAMES, _ACTIVITIES, _WHEN))
    random.Random(0).shuffle(combos)
    sentences = [f"{name} {activity} {when}." for name, activity, when in combos[: N_DOCS + N_QUERIES]]
    assert len(set(sentences)) == N_DOCS + N_QUERIES
    vectors = embedder.encode(sentences)
    return vectors[:N_DOCS], vectors[N_DOCS:]


def _turn_rows(memory_id: str, vectors: np.ndarray, offset: int = 0) -> list[dict]:
    return [
        {"memory_id": memory_id, "id": f"{memory_id}/turn/{offset + i}", "dia_id": str(offset + i), "speaker": "s",
         "text": "", "timestamp": "2023-05-07T10:00:00", "session": "1", "seq": offset + i,
         "embedding": vector.tolist(), "prev_id": None}
        for i, vector in enumerate(vectors)
    ]  # fmt: skip


def _recall(store, memory_id: str, docs: np.ndarray, queries: np.ndarray) -> float:
    """Mean recall@K of ``store.vector_search`` (ANN path) against exact cosine over ``docs``."""
    exact = np.argsort(-(queries @ docs.T), axis=1)[:, :K]
    recalls = []
    for query, truth in zip(queries, exact):
        hits = store.vector_search("Turn", memory_id, query, K)
        assert all(h.id.startswith(f"{memory_id}/") for h in hits)
        got = {int(h.id.rsplit("/", 1)[1]) for h in hits}
        recalls.append(len(got & set(truth.tolist())) / K)
    return float(np.mean(recalls))


def test_hnsw_recall_at_10_on_5000_sentence_embeddings(store, corpus):
    docs, queries = corpus
    memory_id = f"recall-{uuid.uuid4().hex[:8]}"
    try:
        store.write("write/turns", _turn_rows(memory_id, docs))
        recall = _recall(store, memory_id, docs, queries)
        print(
            f"\n{store.engine_version()}: HNSW recall@{K} = {recall:.3f} over {len(queries)} queries, {len(docs)} vectors"
        )
        assert recall >= 0.95
    finally:
        store.delete_memory(memory_id)


def test_per_memory_recall_with_50_other_memories(store, corpus):
    """A global index returns the global top-k: the oversample + exact fallback keeps per-memory recall."""
    docs, queries = corpus
    run = uuid.uuid4().hex[:8]
    target, mine = f"target-{run}", docs[:500]
    others = [(f"other-{run}-{i}", chunk) for i, chunk in enumerate(np.array_split(docs[500:], 50))]
    try:
        store.write("write/turns", _turn_rows(target, mine))
        for memory_id, chunk in others:
            store.write("write/turns", _turn_rows(memory_id, chunk))
        recall = _recall(store, target, mine, queries)
        print(f"\n{store.engine_version()}: per-memory recall@{K} = {recall:.3f} with 50 other memories in the index")
        assert recall >= 0.95
    finally:
        for memory_id in [target] + [m for m, _ in others]:
            store.delete_memory(memory_id)


def test_a_small_share_of_the_index_goes_to_exact_search_without_asking_the_ann(store, corpus, monkeypatch):
    """A memory holding less than 1 / vector_oversample of a label's nodes is searched exactly at once: the ANN's
    global neighbours would hold too few of its nodes (it starves), so asking it first only costs time."""
    docs, queries = corpus
    run = uuid.uuid4().hex[:8]
    small, big = f"small-{run}", f"big-{run}"
    statements: list[str] = []
    try:
        store.write("write/turns", _turn_rows(small, docs[:200]))
        store.write("write/turns", _turn_rows(big, docs[200:], offset=200))
        seen = store.run_cypher
        monkeypatch.setattr(store, "_counts", {})  # no label counts kept from the module's other tests
        monkeypatch.setattr(
            store, "run_cypher", lambda cypher, params=None: statements.append(cypher) or seen(cypher, params)
        )
        exact = np.argsort(-(queries @ docs[:200].T), axis=1)[:, :K]
        for query, truth in zip(queries[:5], exact[:5]):
            hits = store.vector_search("Turn", small, query, K)
            assert [int(h.id.rsplit("/", 1)[1]) for h in hits] == truth.tolist()
        assert not [c for c in statements if "queryNodes" in c]  # never the ANN
        # the share, asked once: the memory's counts, the store's (a store without vector indexes needs neither)
        assert sum("count(n)" in c for c in statements) == (2 if store.vector_indexes else 0)
        statements.clear()
        store.vector_search("Turn", big, queries[0], K)  # 96% of the index: the ANN answers (when there is one)
        assert bool([c for c in statements if "queryNodes" in c]) is store.vector_indexes
    finally:
        monkeypatch.undo()
        for memory_id in (small, big):
            store.delete_memory(memory_id)


# --- the Neo4j schema (checked without a server) -----------------------------------------------


def test_neomodel_schema_declares_every_constraint_and_index():
    from hypermem.model import KEY_INDEXES, LABELS, SEARCH_LABELS, VECTOR_INDEXES
    from hypermem.store.dialect import Neo4jDialect
    from hypermem.store.neo4j_schema import declared_indexes, node_classes

    classes = node_classes(384)
    declared = declared_indexes(classes)
    assert {(label, "id", "UNIQUE") for label in LABELS} <= declared
    assert {(label, "memory_id", "RANGE") for label in LABELS} <= declared
    assert {(label, prop, "RANGE") for label, prop in KEY_INDEXES} <= declared
    assert {(label, "text", "FULLTEXT") for label in SEARCH_LABELS} <= declared
    assert {(label, prop) for label, prop, kind in declared if kind == "VECTOR"} == set(VECTOR_INDEXES)
    by_label = {cls.__label__: cls for cls in classes}
    assert by_label["Person"].inherited_labels() == ["Person", "Element"]
    assert by_label["Fact"].defined_properties()["embedding_raw"].vector_index.dimensions == 384
    assert by_label["Episode"].defined_properties()["embedding_raw"].vector_index is None  # UNINDEXED_VECTORS
    assert by_label["Term"].defined_properties()["embedding"].vector_index is None
    assert by_label["Fact"].defined_properties()["text"].fulltext_index.analyzer == "english"  # stems, stop words
    # The dialect's fallback DDL and its queries use neomodel's index names.
    ddl = "\n".join(Neo4jDialect().index_statements(384, 200))
    for label, prop in VECTOR_INDEXES:
        assert f"CREATE VECTOR INDEX vector_index_{label}_{prop} IF NOT EXISTS" in ddl
    for label in SEARCH_LABELS:
        assert f"CREATE FULLTEXT INDEX fulltext_index_{label}_text IF NOT EXISTS" in ddl
    for label, prop in KEY_INDEXES:
        assert f"CREATE INDEX index_{label}_{prop} IF NOT EXISTS" in ddl
    assert ddl.count("`fulltext.analyzer`: 'english'") == len(SEARCH_LABELS)
    assert "'vector_index_Fact_embedding'" in Neo4jDialect().vector_ann("Fact", "embedding")


def test_unreachable_neo4j_is_a_store_error():
    from hypermem.store import StoreError

    with pytest.raises(StoreError, match="not reachable") as info:
        open_store(Settings(store="bolt://127.0.0.1:1"))
    assert "\n" not in str(info.value)  # one line, not the driver's dump
    assert str(info.value).endswith("(Connection refused)")  # the reason beneath the driver's wrapping
    with pytest.raises(StoreError, match=r"routing information \(Connection refused\)$"):
        open_store(Settings(store="neo4j://127.0.0.1:1"))


@pytest.mark.neo4j
def test_a_wrong_neo4j_password_is_reported_as_refused_credentials():
    """One failed login only (Neo4j locks a user after a few in a row)."""
    from engines import neo4j_credentials

    from hypermem.store import StoreError

    credentials = {**neo4j_credentials(), "neo4j_password": "hypermem-wrong-password"}
    with pytest.raises(StoreError) as info:
        open_store(Settings(**credentials, llm_base_url=None))
    message = str(info.value)
    assert message.startswith("Neo4j at ") and "hypermem-wrong-password" not in message and "\n" not in message
    assert f"refused the credentials for user {credentials['neo4j_user']};" in message, message
    assert message.endswith("HYPERMEM_NEO4J_USER and HYPERMEM_NEO4J_PASSWORD, or user:password@ in HYPERMEM_STORE")
    assert "@" not in message.split(" refused")[0]  # the URL is shown without credentials


def test_stored_vectors_equal_the_written_float32_vectors(store, memory, embedder):
    """Vectors reach the engine exactly (FalkorDB: as float32's shortest exact decimals)."""
    rows = _graph_rows(memory, embedder)
    store.write("write/turns", rows["write/turns"])
    stored = store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m RETURN t.id AS id, t.embedding AS embedding ORDER BY t.seq",
        {"m": memory},
    )
    written = np.asarray([r["embedding"] for r in rows["write/turns"]], dtype=np.float32)
    assert [r["id"] for r in stored] == [r["id"] for r in rows["write/turns"]]
    assert np.array_equal(np.asarray([r["embedding"] for r in stored], dtype=np.float32), written)
    # float32 at every magnitude (tiny, subnormal, huge, negative zero): written as decimals, read back the same
    wild = np.random.default_rng(7).standard_normal((20, 384)).astype(np.float32)
    wild *= np.float32(10.0) ** np.random.default_rng(8).integers(-44, 38, (20, 384)).astype(np.float32)
    wild[0, :3] = [np.float32(-0.0), np.float32(1.4e-45), np.float32(3.4028235e38)]
    extreme = _turn_rows(memory, wild, offset=100)
    store.write("write/turns", extreme)
    back = store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m AND t.seq >= 100 RETURN t.embedding AS e ORDER BY t.seq", {"m": memory}
    )
    assert np.array_equal(np.asarray([r["e"] for r in back], dtype=np.float32), wild)


def test_stored_vectors_find_a_borrowed_raw_vector_through_its_turn(store, memory, embedder):
    """``ingest/stored_vectors`` finds a ``raw_is_turn`` fact's raw vector by the fact's ``embed_key``: its turn's
    vector, bit for bit (the fact stores none), once per key; a fact storing its own gives that one."""
    store.write("write/turns", _graph_rows(memory, embedder)["write/turns"])
    facts = [{**row, "embed_key": f"key-{n}"} for n, row in enumerate(_fact_rows_of_turns(memory, embedder, True))]
    store.write("write/facts", facts)
    rows = store.query("ingest/stored_vectors", memory_id=memory, keys=[f"key-{n}" for n in range(6)])
    found = {r["key"]: np.asarray(r["embedding"], dtype=np.float32) for r in rows}
    assert len(rows) == len(found) == 5
    turn_vectors = embedder.encode([text for _, text in TURNS])
    for n, turn in enumerate([0, 2, 4, 4]):
        assert np.array_equal(found[f"key-{n}"], turn_vectors[turn]), n
    assert np.array_equal(found["key-4"], np.float32(facts[4]["embedding_raw"]))


def test_rewriting_a_vector_replaces_it(store, memory, embedder):
    """A second write of a node's vector stores the new one (FalkorDB 4.16 kept the old one on a bare SET)."""
    rows = _graph_rows(memory, embedder)
    _write_graph(store, memory, embedder)
    other = embedder.encode(["a different sentence about tax returns and spreadsheets"])[0].tolist()
    turn = {**rows["write/turns"][0], "embedding": other}
    topic = {**rows["write/topics"][0], "embedding": other}
    episode = rows["write/episodes"][0]["id"]
    store.write("write/turns", [turn])
    store.write("write/topics", [topic])
    store.write("write/episode_embeddings", [{"id": episode, "embedding": other}])
    stored = store.run_cypher(
        "MATCH (n) WHERE n.id IN $ids RETURN n.id AS id, n.embedding AS embedding",
        {"ids": [turn["id"], topic["id"], episode]},
    )
    assert len(stored) == 3
    for row in stored:
        assert np.array_equal(np.asarray(row["embedding"], dtype=np.float32), np.float32(other)), row["id"]
    assert store.vector_search("Turn", memory, other, 1)[0].id == turn["id"]


def test_rows_with_vectors_go_in_smaller_batches(store, memory, embedder):
    """A write batch holds the engine's write lock: vector rows use ``vector_write_batch_size``."""
    rows = _graph_rows(memory, embedder)
    statements = []
    run = store.run_cypher
    saved = store.write_batch_size, store.vector_write_batch_size
    store.write_batch_size, store.vector_write_batch_size = 500, 4
    store.run_cypher = lambda cypher, params=None: statements.append(len(params["rows"])) or run(cypher, params)
    try:
        store.write("write/turns", rows["write/turns"])  # 6 rows with vectors
        store.write("write/elements", rows["write/elements"])  # 4 rows without
    finally:
        del store.run_cypher
        store.write_batch_size, store.vector_write_batch_size = saved
    assert statements == [4, 2, 4]
    assert store.counts(memory)["Turn"] == 6


def test_counts_read_every_label_through_its_own_index():
    """``GraphStore.counts`` asks each label apart (its memory_id index; a label-less MATCH scans every node of
    the store): the query names every label but ``Element``, whose nodes count under Person / Time / Location, and
    ``WordVector``, whose nodes are the store's, no memory's."""
    import re

    from hypermem.model import LABELS
    from hypermem.store import queries

    cypher = queries.load("maintain/count_nodes")
    assert re.findall(r"MATCH \(n:(\w+)\) WHERE n\.memory_id = \$memory_id RETURN '(\w+)'", cypher) == [
        (label, label) for label in LABELS if label not in ("Element", "WordVector")
    ]
    assert "MATCH (n)" not in cypher


def test_an_embedded_store_opened_without_vector_indexes_keeps_them_and_searches_exactly(tmp_path, embedder, corpus):
    """``HYPERMEM_FALKORDB_VECTOR_INDEXES`` off (the default) on a store built with them: the HNSW indexes stay (a
    process serving the store with them still finds them: readiness holds), and every search is the exact top-k the
    ANN approximated (the same ids here, scores to float32 rounding)."""
    docs, queries = corpus
    memory_id = "indexed"
    with open_store(engine_settings("falkordb-hnsw", tmp_path / "db")) as indexed:
        indexed.ensure_schema(EMBEDDING_MODEL, embedder.dimension)
        indexed.write("write/turns", _turn_rows(memory_id, docs[:1000]))
        before = [indexed.vector_search("Turn", memory_id, q, K) for q in queries[:10]]
        with open_store(engine_settings("falkordb", tmp_path / "db")) as exact:  # a CLI beside the server
            exact.ensure_schema(EMBEDDING_MODEL, embedder.dimension)
            statements: list[str] = []
            seen = exact.run_cypher
            exact.run_cypher = lambda cypher, params=None: statements.append(cypher) or seen(cypher, params)
            after = [exact.vector_search("Turn", memory_id, q, K) for q in queries[:10]]
            del exact.run_cypher
            assert exact.missing_vector_indexes() == []
        assert not [c for c in statements if "queryNodes" in c]  # exact scans only
        assert indexed.missing_vector_indexes() == []  # still there for the process that uses them
    truth = np.argsort(-(queries[:10] @ docs[:1000].T), axis=1)[:, :K]
    assert [[int(h.id.rsplit("/", 1)[1]) for h in hits] for hits in after] == truth.tolist()
    assert [[h.id for h in hits] for hits in after] == [[h.id for h in hits] for hits in before]
    assert [h.score for hits in after for h in hits] == pytest.approx(
        [h.score for hits in before for h in hits], abs=1e-5
    )


def test_ordered_writes_run_in_call_order_and_none_after_a_failure(store, memory, corpus):
    """``OrderedWrites`` (the ingest's writes on a writer thread): batches run in call order (each turn's NEXT
    needs the batch before it written), and a failed statement stops every later one and is raised."""
    docs, _ = corpus
    rows = _turn_rows(memory, docs[:250])
    for n, row in enumerate(rows):
        row["prev_id"] = rows[n - 1]["id"] if n else None
    with OrderedWrites(store) as writes:
        writes.write("write/turns", rows)  # 3 batches of vector rows
    chained = store.run_cypher(
        "MATCH (:Turn {memory_id: $m})-[r:NEXT]->(:Turn {memory_id: $m}) RETURN count(r) AS n", {"m": memory}
    )
    assert chained == [{"n": 249}]
    late = _turn_rows(memory, docs[250:260], offset=250)
    with pytest.raises(Exception, match="(?i)null"):
        with OrderedWrites(store) as writes:
            writes.write(
                "write/elements", [{"memory_id": memory, "id": None, "kind": "Person", "name": "x", "value": "x"}]
            )
            writes.write("write/turns", late)
    assert store.counts(memory)["Turn"] == 250  # the write after the failure never ran
