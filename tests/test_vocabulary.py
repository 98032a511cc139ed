"""The store-wide vocabulary (``hypermem.vocabulary``) and query expansion through it
(``hypermem.retrieve.expansion``), on both engines with the real embedding model (issue 11)."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from conftest import TESTCONV_ID
from engines import engine_settings

from hypermem.model import Message
from hypermem.retrieve.expansion import MIN_COSINE, QueryExpander
from hypermem.service import MemoryService
from hypermem.store import bm25
from hypermem.store.ids import term_id
from hypermem.vocabulary import VERSION, add_words, vocabulary, words


def test_words_are_lowercase_content_words_once_in_order():
    # stop words ("when", "did", "the", "it", "in", "may"), digits and repeats are left out
    assert words("When did Nadia run the Porto half-marathon? Nadia ran it in May 2023!") == [
        "nadia", "run", "porto", "half", "marathon", "ran",
    ]  # fmt: skip
    assert words("café Zürich") == ["café", "zürich"]
    assert words("ok go") == []  # fewer than 3 letters
    long = "a" * 25
    assert words(f"{long} pottery {'b' * 24}") == ["pottery", "b" * 24]  # a 25-letter run is no word, nor part of one
    assert words("x_ray kiln2kiln") == ["ray", "kiln"]
    assert vocabulary(["Pottery class", "pottery wheel"]) == {"pottery", "class", "wheel"}


def test_term_ids_never_hold_raw_unsafe_text():
    assert term_id("pottery") == "term/pottery"
    assert term_id("café").startswith("term/~") and " " not in term_id("café")


def test_weighted_bm25_multiplies_each_terms_part_by_its_weight():
    stats = bm25.CorpusStats(documents=4, words=16, speakers={})
    matches = [
        {"id": "a", "speaker": "", "text": "a novel about dunes"},
        {"id": "b", "speaker": "", "text": "books and more books"},
    ]
    plain = dict(bm25.weighted_score({"novel": 1.0, "book": 1.0}, matches, stats))
    weighted = dict(bm25.weighted_score({"novel": 0.25, "book": 1.0}, matches, stats))
    assert weighted["a"] == pytest.approx(0.25 * plain["a"]) and weighted["b"] == pytest.approx(plain["b"])
    assert dict(bm25.score("novel book", matches, stats)) == pytest.approx(plain)


@pytest.fixture
def vocabulary_store(hm_engine, tmp_path, hm_service):
    """An empty store on ``hm_engine`` with its schema, and the session's embedder."""
    service = MemoryService.open(engine_settings(hm_engine, tmp_path / "vocab"), use_llm=False)
    yield service
    service.close()


def test_add_words_embeds_only_new_words_and_finds_them_again(vocabulary_store):
    # Words no other test uses: on Neo4j every test store is one database, and the vocabulary is store-wide.
    store, embedder = vocabulary_store.store, vocabulary_store.embedder
    assert add_words(store, embedder, ["The quixotry of zymurgy: a novelette about a snarky xylophonist."]) == 5
    assert add_words(store, embedder, ["Zymurgy, again, and one more xylophonists!"]) == 1  # the others are known
    rows = store.run_cypher("UNWIND $ids AS id MATCH (t:Term {id: id}) RETURN t.word AS word ORDER BY word",
                            {"ids": [term_id(w) for w in ("novelette", "quixotry", "snarky", "xylophonist",
                                                          "xylophonists", "zymurgy", "again")]})  # fmt: skip
    assert [r["word"] for r in rows] == ["novelette", "quixotry", "snarky", "xylophonist", "xylophonists", "zymurgy"]
    novella = embedder.encode(["novella"])[0]
    nearest = store.nearest_terms(["novella", "zymurgy", "absentword"], 3, vectors={"novella": novella})
    assert set(nearest) == {"novella", "zymurgy"}  # "absentword": neither stored nor given
    assert nearest["novella"][0][0] == "novelette", nearest  # the nearest stored word to "novella"
    assert nearest["zymurgy"][0] == ("zymurgy", pytest.approx(1.0, abs=1e-4))  # searched with its stored vector
    assert all(len(n) == 3 and n == sorted(n, key=lambda x: -x[1]) for n in nearest.values())


def test_expansion_reaches_the_turn_that_shares_no_word_with_the_query(vocabulary_store):
    """ "Which books …" shares no word with the novel turn; expanded through the vocabulary, BM25 finds it."""
    service = vocabulary_store
    texts = [("Ann", "I finished a thrilling novel about a desert planet last night."),
             ("Ben", "Nice. I fixed the bike and went for a long ride by the river."),
             ("Ann", "Tomorrow I will bake bread and visit my sister.")]  # fmt: skip
    at = datetime(2024, 3, 1, 9, 0)
    service.ingest_messages("books", [Message(str(i), who, text, at, "s1") for i, (who, text) in enumerate(texts, 1)])
    expander = QueryExpander(service.store, service.embedder)
    expanded = expander.expand("Which books has Ann read?", ["Ann"])
    assert expanded["books"] == 1.0 and expanded["read"] == 1.0 and "ann" not in expanded
    assert 0 < expanded.get("novel", 0) < 1.0, expanded  # cos² of books ~ novel
    assert all(w == 1.0 or MIN_COSINE**2 <= w < 1.0 for w in expanded.values())
    plain = service.store.fulltext_search("Turn", "books", "Which books has Ann read?", 5)
    hits = service.store.weighted_fulltext_search("Turn", "books", expanded, 5)
    assert plain == [] and hits[0].id == "books/turn/1", (plain, hits)
    assert expander.expand("Who is Ann?", ["Ann"]) == {}


def test_ingest_adds_the_dialogues_words_to_the_vocabulary(hm_service, hm_ingested):
    rows = hm_service.store.run_cypher(
        "UNWIND $ids AS id MATCH (t:Term {id: id}) RETURN t.word AS word",
        {"ids": [term_id(w) for w in ("pottery", "biscuit", "kreuzberg", "the")]},
    )
    assert sorted(r["word"] for r in rows) == ["biscuit", "kreuzberg", "pottery"]  # "the" is a stop word
    vector = hm_service.store.run_cypher("MATCH (t:Term {id: 'term/pottery'}) RETURN t.embedding AS v")[0]["v"]
    expected = hm_service.embedder.encode(["pottery"])[0]
    assert np.allclose(np.asarray(vector, dtype=np.float32), expected, atol=1e-5)
    assert TESTCONV_ID in hm_service.store.memory_ids()  # Terms carry no memory: the memory list is unchanged


def test_a_store_without_a_vocabulary_gets_one_when_opened(vocabulary_store):
    service = vocabulary_store
    at = datetime(2024, 3, 1, 9, 0)
    service.ingest_messages("old", [Message("1", "Ann", "The kiln cracked my teapot.", at, "s1")])
    stored = [r["text"] for r in service.store.run_cypher("MATCH (t:Turn) RETURN t.text AS text")]
    assert service.store.delete_terms() >= 3  # as a store written before the vocabulary existed
    service.store.run_cypher("MATCH (m:StoreMeta) REMOVE m.vocabulary")
    assert service.store.run_cypher("MATCH (t:Term) RETURN count(t) AS n")[0]["n"] == 0
    reopened = MemoryService(service.settings, service.store, service.embedder, use_llm=False)
    terms = {r["w"] for r in reopened.store.run_cypher("MATCH (t:Term) RETURN t.word AS w")}
    assert {"kiln", "cracked", "teapot"} <= terms and terms == vocabulary(stored)  # every stored turn's words
    assert reopened.store.meta()["vocabulary"] == VERSION
