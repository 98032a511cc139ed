"""The store's full-text ranking is Okapi BM25 (issue 11): equal to ``bm25s`` on a tiny corpus, before and
after an incremental write, and as seen by a second store handle on the same embedded server."""

from __future__ import annotations

import math

import pytest
from engines import ENGINES, engine_settings

from hypermem.config import Settings
from hypermem.embed import Embedder
from hypermem.eval.baselines import BM25Ranker
from hypermem.store import bm25, open_store

MEMORY = "bm25-tiny"
# Every text says "today", so a query with "today" matches every document and BM25's avgdl is exact.
FIRST = [
    ("Alice", "Today I went running in the park by the lake"),
    ("Bob", "Today the park was closed for the running races, running late"),
    ("Alice", "Today I love painting sunsets"),
    ("Bob", "Today my sister adopted a puppy"),
]
LATER = [
    ("Alice", "Today Bob and I went running again, the park reopened"),
    ("Bob", "Today painting class was fun"),
]
QUERY = "Who went running in the park today?"


def _rows(embedder: Embedder, turns: list[tuple[str, str]], start: int) -> list[dict]:
    vectors = embedder.encode([text for _, text in turns])
    return [
        {"memory_id": MEMORY, "id": f"{MEMORY}/turn/D1:{start + i}", "dia_id": f"D1:{start + i}", "speaker": speaker,
         "text": text, "timestamp": "2023-05-07T10:00:00", "session": "1", "seq": start + i,
         "embedding": vectors[i].tolist(), "prev_id": None}
        for i, (speaker, text) in enumerate(turns)
    ]  # fmt: skip


def _expected(turns: list[tuple[str, str]]) -> dict[str, float]:
    scores = BM25Ranker([f"{speaker}: {text}" for speaker, text in turns]).scores(QUERY)
    return {f"{MEMORY}/turn/D1:{i}": float(s) for i, s in enumerate(scores) if s > 0}


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


def test_store_bm25_equals_bm25s_and_follows_writes(tmp_path, embedder):
    settings = Settings(store=f"falkordb://{tmp_path}/db", llm_base_url=None)
    with open_store(settings) as store:
        store.ensure_schema(settings.embedding_model, embedder.dimension)
        store.write("write/turns", _rows(embedder, FIRST, 0))
        hits = store.fulltext_search("Turn", MEMORY, QUERY, 10)
        expected = _expected(FIRST)
        assert [h.id for h in hits] == sorted(expected, key=expected.get, reverse=True)
        assert {h.id: h.score for h in hits} == pytest.approx(expected, rel=1e-5)
        assert hits[0].id == f"{MEMORY}/turn/D1:0"  # shorter than D1:1, which says "running" twice

        reader = open_store(settings, keep_server=True)  # a second handle, as another process would open
        try:
            assert {h.id: h.score for h in reader.fulltext_search("Turn", MEMORY, QUERY, 10)} == pytest.approx(
                expected, rel=1e-5
            )
            store.write("write/turns", _rows(embedder, LATER, len(FIRST)))
            after = _expected(FIRST + LATER)
            assert after != pytest.approx(expected)  # more documents: every idf and avgdl moved
            assert {h.id: h.score for h in store.fulltext_search("Turn", MEMORY, QUERY, 10)} == pytest.approx(
                after, rel=1e-5
            )
            reader._stats_cache.clear()  # what STATS_CACHE_SECONDS later looks like in the other process
            reader._ranking_cache.clear()
            assert {h.id: h.score for h in reader.fulltext_search("Turn", MEMORY, QUERY, 10)} == pytest.approx(
                after, rel=1e-5
            )
            only = reader.fulltext_search("Turn", MEMORY, QUERY, 10, candidates=[f"{MEMORY}/turn/D1:4"])
            assert [(h.id, h.score) for h in only] == [
                (f"{MEMORY}/turn/D1:4", pytest.approx(after[f"{MEMORY}/turn/D1:4"], rel=1e-5))
            ]
        finally:
            reader.db.connection.close()


def test_speaker_names_count_as_terms():
    stats = bm25.CorpusStats(documents=4, words=20, speakers={"Alice": 2, "Bob": 2})
    matches = [
        {"id": "a", "speaker": "Alice", "text": "a red kite"},
        {"id": "b", "speaker": "Bob", "text": "Alice flew a kite"},
    ]
    ranked = dict(bm25.score("Alice kite", matches, stats))
    # df(alice) = 2 Alice documents + 1 text mention by Bob; both matches hold "alice" and "kite" once.
    assert set(ranked) == {"a", "b"}
    assert ranked["a"] > ranked["b"]  # "a" is shorter (3 terms vs 4)


def test_scores_follow_the_formula_with_repeated_terms_names_and_idle_matches():
    """The documented formula, by hand: tf counts repeats, a speaker's name is a term of each of its documents,
    and a match holding no query term scores nothing but still counts towards the mean length."""
    stats = bm25.CorpusStats(documents=10, words=50, speakers={"Alice": 4, "Bob": 6})
    matches = [
        {"id": "a", "speaker": "Alice", "text": "kites kite red"},  # kite x2, alice (name), red
        {"id": "b", "speaker": "Bob", "text": "a kite for Alice"},  # kite, alice (text), bob
        {"id": "c", "speaker": "Bob", "text": "flying high"},  # no query term
    ]
    ranked = dict(bm25.score("Alice kite", matches, stats))
    # analyzed terms: a 3 + 1 name, b 2 + 1, c 2 + 1 = 10 terms over 3 + 4 + 2 words + 3 names = 12 words
    avgdl = 50 / 10 * 10 / 12
    df = {"kite": 2, "alice": 4 + 1}  # kite in a and b; alice: Alice's 4 documents + b's text
    idf = {t: math.log(1 + (10 - d + 0.5) / (d + 0.5)) for t, d in df.items()}

    def part(t: str, f: int, length: int) -> float:
        return idf[t] * f / (f + bm25.K1 * (1 - bm25.B + bm25.B * length / avgdl))

    assert set(ranked) == {"a", "b"}
    assert ranked["a"] == pytest.approx(part("kite", 2, 4) + part("alice", 1, 4), rel=1e-12)
    assert ranked["b"] == pytest.approx(part("kite", 1, 3) + part("alice", 1, 3), rel=1e-12)


def test_fulltext_search_stays_in_its_memory_whatever_the_memory_id(tmp_path, embedder):
    """The embedded engine narrows the full-text query to the memory inside its index (``@memory_id``
    tokens, so 1,000 memories cost what one does); every allowed id shape still finds all of its own
    nodes and none of another memory's, with the scores a lone memory gets."""
    ids = ["a-the", "X_y.Z:1", "conv-26", "conv-26-b", "it", "2023", "m.1"]
    settings = Settings(store=f"falkordb://{tmp_path}/db", llm_base_url=None)
    with open_store(settings) as store:
        store.ensure_schema(settings.embedding_model, embedder.dimension)
        base = _rows(embedder, FIRST[:2], 0)
        for memory in ids:
            store.write("write/turns", [{**row, "memory_id": memory, "id": row["id"].replace(MEMORY, memory)}
                                        for row in base])  # fmt: skip
        expected = _expected(FIRST[:2])
        for memory in ids:
            hits = store.fulltext_search("Turn", memory, QUERY, 10)
            assert {h.id: h.score for h in hits} == pytest.approx(
                {k.replace(MEMORY, memory): v for k, v in expected.items()}, rel=1e-5
            )


def test_ties_are_ordered_by_id_whatever_order_the_engine_returned_them_in():
    stats = bm25.CorpusStats(documents=10, words=40, speakers={"Ana": 10})
    matches = [{"id": i, "speaker": "Ana", "text": "we flew a kite"} for i in ("c", "a", "b")]
    matches.append({"id": "d", "speaker": "Ana", "text": "a kite"})  # shorter: scores higher
    first = bm25.score("kite", matches, stats)
    assert [doc for doc, _ in first] == ["d", "a", "b", "c"]
    assert bm25.score("kite", list(reversed(matches)), stats) == first


@pytest.fixture(params=ENGINES)
def stats_store(request, tmp_path, embedder):
    settings = engine_settings(request.param, tmp_path / "db")
    with open_store(settings) as store:
        store.ensure_schema(settings.embedding_model, embedder.dimension)
        store.delete_memory(STATS_MEMORY)
        yield store
        store.delete_memory(STATS_MEMORY)


STATS_MEMORY = "bm25-stats"


def _stats_turns(embedder: Embedder, turns: list[tuple[str, str]], start: int) -> list[dict]:
    """Turns of ``STATS_MEMORY`` as an ingest writes them: with their text's stored analysis (``terms``, ``words``),
    which a search scores instead of the text (``_rows`` leaves it out, as an ingest before it did)."""
    return [{**r, "memory_id": STATS_MEMORY, "id": r["id"].replace(MEMORY, STATS_MEMORY), **bm25.stored_analysis(r["text"])}
            for r in _rows(embedder, turns, start)]  # fmt: skip


def _stats_rows(store) -> dict[str, tuple[list, list, list]]:
    rows = store.query("retrieve/corpus_stats", memory_id=STATS_MEMORY)
    return {r["label"]: (list(r["speakers"]), list(r["documents"]), list(r["words"])) for r in rows}


def test_corpus_stats_nodes_count_the_memory_and_rank_as_counting_it_now(stats_store, embedder):
    """``refresh_corpus_stats`` writes each searched label's N, Σ|d| and documents per speaker to one node per
    (memory, label); a search reads them there, scores the nodes' stored analysis (the engine returns no text) and
    ranks as bm25s does, before and after more writes; the nodes go with their memory."""
    store = stats_store
    store.write("write/turns", _stats_turns(embedder, FIRST, 0))
    store.refresh_corpus_stats(STATS_MEMORY)
    stats = _stats_rows(store)
    assert set(stats) == {"Turn", "Episode", "Topic", "Fact"}
    speakers, documents, words = stats["Turn"]
    per_speaker = {s: (d, w) for s, d, w in zip(speakers, documents, words)}
    # Alice: 10 + 5 words of text, Bob: 11 + 6, each turn + 1 for its speaker's name
    assert per_speaker == {"Alice": (2, 10 + 5 + 2), "Bob": (2, 11 + 6 + 2)}
    assert stats["Fact"] == stats["Episode"] == stats["Topic"] == ([], [], [])

    expected = {k.replace(MEMORY, STATS_MEMORY): v for k, v in _expected(FIRST).items()}
    store._stats_cache.clear()
    store._ranking_cache.clear()
    matches = store.run_cypher(store.dialect.fulltext("Turn"), {
        "text": store.dialect.fulltext_text(bm25.query_words(QUERY), STATS_MEMORY), "memory_id": STATS_MEMORY,
        "limit": 10})  # fmt: skip
    assert len(matches) == 4 and all(m["text"] is None and m["terms"].startswith("today ") for m in matches)
    assert {h.id: h.score for h in store.fulltext_search("Turn", STATS_MEMORY, QUERY, 10)} == pytest.approx(
        expected, rel=1e-5
    )

    store.write("write/turns", _stats_turns(embedder, LATER, len(FIRST)))
    store.refresh_corpus_stats(STATS_MEMORY)
    after = {k.replace(MEMORY, STATS_MEMORY): v for k, v in _expected(FIRST + LATER).items()}
    assert {h.id: h.score for h in store.fulltext_search("Turn", STATS_MEMORY, QUERY, 10)} == pytest.approx(
        after, rel=1e-5
    )
    assert sum(_stats_rows(store)["Turn"][1]) == 6

    store.delete_memory(STATS_MEMORY)
    assert _stats_rows(store) == {}


def test_ensure_corpus_stats_counts_a_store_built_before_them_once(stats_store, embedder):
    store = stats_store
    store.write("write/turns", _stats_turns(embedder, FIRST, 0))
    store.run_cypher("MATCH (m:StoreMeta {id: 'meta'}) SET m.corpus_stats = null")
    assert _stats_rows(store) == {}
    counted = store.ensure_corpus_stats()
    assert counted == len(store.memory_ids()) >= 1
    assert sum(_stats_rows(store)["Turn"][1]) == 4
    assert store.ensure_corpus_stats() == 0  # recorded in the store's meta


def test_statistics_behind_the_graph_never_drop_the_matches():
    """A memory whose ``CorpusStats`` lag its nodes (an ingest killed after writing turns, before counting them):
    N is taken as at least the matches and every df, so idf stays positive and the matches are ranked, as with
    statistics counted now; with none counted yet (N = 0) the matches' own mean length stands in for avgdl."""
    matches = [{"id": f"t{i}", "speaker": "", "text": f"cello practice {i}" if i < 40 else "trams are noisy"}
               for i in range(44)]  # fmt: skip
    stale = bm25.CorpusStats(documents=4, words=12, speakers={})
    ranked = bm25.score("cello", matches, stale)
    assert len(ranked) == 40 and all(doc.startswith("t") and int(doc[1:]) < 40 for doc, _ in ranked)
    assert all(value > 0 for _, value in ranked)
    counted = bm25.CorpusStats(documents=44, words=3 * 44, speakers={})
    assert [doc for doc, _ in ranked] == [doc for doc, _ in bm25.score("cello", matches, counted)]
    assert [doc for doc, _ in bm25.score("cello", matches, bm25.CorpusStats(0, 0, {}))] == [doc for doc, _ in ranked]
