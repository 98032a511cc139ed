"""A memory's vocabulary (``hypermem.vocabulary``) and query expansion through it
(``hypermem.retrieve.expansion``), on both engines with the real embedding model (issue 11)."""

from __future__ import annotations

import uuid
from datetime import datetime

import numpy as np
import pytest
from conftest import TESTCONV_ID
from engines import engine_settings
from support.counting import CountingEmbedder

from hypermem.model import Message
from hypermem.retrieve.expansion import MIN_COSINE, QueryExpander
from hypermem.service import MemoryService
from hypermem.store import bm25
from hypermem.store.ids import term_id, word_vector_id
from hypermem.store.packed import pack_vector, unpack_vector
from hypermem.vocabulary import VERSION, WORD_VECTORS, add_words, vocabulary, words


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
    # NFKC first, and invisible characters do not split a word
    assert words("ﬁnished lib\u2060rary astro\u00adnomy book\u200bshelf ｆｕｌｌｗｉｄｔｈ cafe\u0301") == [
        "finished", "library", "astronomy", "bookshelf", "fullwidth", "café",
    ]  # fmt: skip
    assert vocabulary(["Pottery class", "pottery wheel"]) == {"pottery", "class", "wheel"}


def test_term_ids_belong_to_their_memory_and_never_hold_raw_unsafe_text():
    assert term_id("m1", "pottery") == "m1/term/pottery"
    assert term_id("m1", "café").startswith("m1/term/~") and "é" not in term_id("m1", "café")


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
    store, embedder = vocabulary_store.store, vocabulary_store.embedder
    text = "The quixotry of zymurgy: a novelette about a snarky xylophonist."
    assert add_words(store, embedder, "v1", [text]) == 5
    assert add_words(store, embedder, "v1", ["Zymurgy, again, and one more xylophonists!"]) == 1  # the rest is known
    assert add_words(store, embedder, "v2", [text]) == 5  # another memory has a vocabulary of its own
    rows = store.run_cypher("MATCH (t:Term) WHERE t.memory_id = 'v1' RETURN t.word AS word ORDER BY word")
    assert [r["word"] for r in rows] == ["novelette", "quixotry", "snarky", "xylophonist", "xylophonists", "zymurgy"]
    novella = embedder.encode(["novella"])[0]
    nearest = store.vocabulary("v1").nearest(["novella", "zymurgy", "absentword"], 3, vectors={"novella": novella})
    assert set(nearest) == {"novella", "zymurgy"}  # "absentword": neither stored nor given
    assert nearest["novella"][0][0] == "novelette", nearest  # the nearest of v1's words to "novella"
    assert nearest["zymurgy"][0] == ("zymurgy", pytest.approx(1.0, abs=1e-4))  # searched with its stored vector
    assert all(len(n) == 3 and n == sorted(n, key=lambda x: -x[1]) for n in nearest.values())
    # the cosines are those of the model's vectors
    expected = float(novella @ embedder.encode(["novelette"])[0])
    assert nearest["novella"][0][1] == pytest.approx(expected, abs=1e-5)
    assert store.delete_terms("v1") == 6 and store.vocabulary("v1").nearest(["zymurgy"], 3) == {}
    assert store.vocabulary("v2").nearest(["zymurgy"], 1) == {"zymurgy": [("zymurgy", pytest.approx(1.0, abs=1e-4))]}


def test_a_processs_copy_of_a_vocabulary_follows_the_store(vocabulary_store, hm_engine, tmp_path):
    """The in-process matrix (``store.vocabulary_matrix``) is checked at every lookup: words another process adds
    join it, and a memory deleted and built again elsewhere never answers with its old words."""
    store, embedder = vocabulary_store.store, vocabulary_store.embedder
    other = MemoryService.open(engine_settings(hm_engine, tmp_path / "vocab"), use_llm=False, keep_server=True)
    try:
        add_words(store, embedder, "m", ["A kiln and a teapot."])
        assert set(store.vocabulary("m").words) == {"kiln", "teapot"}
        first = store.vocabulary("m").generation
        add_words(other.store, other.embedder, "m", ["The glaze on the teapot cracked."])
        grown = store.vocabulary("m")
        assert set(grown.words) == {"kiln", "teapot", "glaze", "cracked"} and grown.generation == first
        assert grown.nearest(["glaze"], 1) == {"glaze": [("glaze", pytest.approx(1.0, abs=1e-4))]}
        other.store.delete_terms("m")
        assert store.vocabulary("m").words == ()
        add_words(other.store, other.embedder, "m", ["Bicycle racing, pedal power."])  # as many words as before
        rebuilt = store.vocabulary("m")
        assert set(rebuilt.words) == {"bicycle", "racing", "pedal", "power"} and rebuilt.generation != first
        assert rebuilt.nearest(["bicycle"], 4)["bicycle"][0][0] == "bicycle"
        assert {w for w, _ in rebuilt.nearest(["bicycle"], 4)["bicycle"]} == set(rebuilt.words)
    finally:
        other.close()


def test_a_vocabulary_new_to_the_process_loads_in_one_statement_with_its_stamp(vocabulary_store, monkeypatch):
    """A memory this process holds no copy of is loaded by one statement, which also gives the copy the stamp
    (Term count, generation) the next lookup checks: that one then reads the stamp only and keeps the copy."""
    from hypermem.store.vocabulary_matrix import VocabularyMatrices

    store, embedder = vocabulary_store.store, vocabulary_store.embedder
    add_words(store, embedder, "one", ["A kiln, a teapot and a glaze."])
    stamp = store.query("retrieve/vocabulary_stamp", memory_id="one")[0]
    asked: list[str] = []
    query = store.query
    monkeypatch.setattr(store, "query", lambda name, **params: asked.append(name) or query(name, **params))
    matrices = VocabularyMatrices()
    first = matrices.get(store, "one")
    assert asked == ["retrieve/vocabulary_terms"]  # the word vectors: this process's (add_words embedded them)
    assert (first.count, first.generation) == (stamp["words"], stamp["generation"]) == (3, stamp["generation"])
    assert set(first.words) == {"kiln", "teapot", "glaze"}
    assert matrices.get(store, "one") is first and asked[1:] == ["retrieve/vocabulary_stamp"]
    empty = matrices.get(store, "never-ingested")
    assert (empty.words, empty.count, empty.generation) == ((), 0, None)
    assert matrices.get(store, "never-ingested") is empty  # the stamp of no Term: (0, None)


def test_a_words_vector_is_the_same_alone_and_in_any_batch(hm_service):
    """Word reuse across memories is exact only if ``encode`` is: a word's vector alone, in a sorted batch, in a
    shuffled batch padded beside a long text, and on the one-thread model are equal bit for bit (minilm-int8)."""
    embedder = hm_service.embedder
    found = ["pottery", "novelette", "quixotry", "zymurgy", "kiln", "glaze", "snarky", "xylophonist", "café"]
    batch = embedder.encode(found)
    long = "a much longer text that pads every other word of its batch to many more tokens " * 4
    mixed = embedder.encode([long, *reversed(found)])[1:][::-1]
    single = embedder.encode(found, single_thread=True)
    for n, word in enumerate(found):
        alone = embedder.encode([word])[0]
        assert np.array_equal(alone, batch[n]) and np.array_equal(alone, mixed[n]), word
        assert np.array_equal(alone, single[n]), word


def word_vector_rows(store, keys):
    """``{embed_key: vector}`` of the WordVector nodes of ``keys`` the store holds."""
    rows = store.run_cypher(
        "UNWIND $ids AS i MATCH (v:WordVector {id: i}) RETURN v.id AS id, v.embedding_b64 AS v",
        {"ids": [word_vector_id(k) for k in keys]},
    )
    return {r["id"].removeprefix("~word/"): unpack_vector(r["v"]) for r in rows}


def test_memories_share_one_vector_per_word_and_it_goes_with_the_last_of_them(vocabulary_store):
    """A word new to a memory is embedded only when no memory of the store holds it under the same model
    (``embed_key``: its one WordVector) and this process has not embedded it lately (``WORD_VECTORS``); whatever
    their source, the vectors are the model's bit for bit, so the expansions are the same. A WordVector goes when
    the last memory using it does."""
    store, embedder = vocabulary_store.store, vocabulary_store.embedder
    counting = CountingEmbedder(embedder)
    tag = "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:6])  # words no other test stored
    text = f"The quixotry{tag} of zymurgy{tag}: a novelette{tag} about a snarky{tag} xylophonist{tag}."
    shared = sorted(words(text))
    keys = [embedder.text_key(w) for w in shared]
    memory = {n: f"reuse-{tag}-{n}" for n in ("r1", "r2", "r3", "r4", "old")}

    def add(name: str, added_text: str) -> list[str]:
        counting.sent.clear()
        assert add_words(store, counting, memory[name], [added_text]) == len(words(added_text))
        return sorted(counting.sent)

    WORD_VECTORS.clear()
    assert add("r1", text) == shared  # a store and a process that know none of them
    assert add("r2", text) == []  # this process's cache
    WORD_VECTORS.clear()
    assert add("r3", text) == []  # r1's and r2's WordVectors
    stored = word_vector_rows(store, keys)
    assert sorted(stored) == sorted(keys)  # one node per word for three memories
    for word, key in zip(shared, keys):
        assert np.array_equal(stored[key], embedder.encode([word])[0]), word
    terms = store.run_cypher(
        "MATCH (t:Term) WHERE t.memory_id IN $m RETURN t.embed_key AS k, t.embedding_b64 AS v, t.embedding AS f",
        {"m": [memory[n] for n in ("r1", "r2", "r3")]},
    )
    assert len(terms) == 3 * len(shared) and all(t["v"] is None and t["f"] is None for t in terms)
    assert {t["k"] for t in terms} == set(keys)
    # a Term without embed_key (an older store's, holding its own vector) or of another model lends nothing
    old = memory["old"]
    store.run_cypher(
        "UNWIND $rows AS r CREATE (t:Term) SET t = r",
        {"rows": [
            {"memory_id": old, "id": term_id(old, f"wombat{tag}"), "word": f"wombat{tag}",
             "embedding_b64": pack_vector([1.0] * embedder.dimension)},
            {"memory_id": old, "id": term_id(old, f"pangolin{tag}"), "word": f"pangolin{tag}",
             "embed_key": "0" * 32, "embedding_b64": pack_vector([1.0] * embedder.dimension)},
        ]},
    )  # fmt: skip
    WORD_VECTORS.clear()
    assert add("r4", f"{text} A pangolin{tag} or wombat{tag}.") == [f"pangolin{tag}", f"wombat{tag}"]
    nearest = {n: store.vocabulary(memory[n]).nearest(shared, 3) for n in ("r1", "r2", "r3")}
    assert nearest["r1"] == nearest["r2"] == nearest["r3"] and set(nearest["r1"]) == set(shared)
    assert sorted(store.vocabulary(old).words) == [f"pangolin{tag}", f"wombat{tag}"]  # read from the Terms' own vectors
    # deleting memories keeps the vectors others use; the last one takes them
    assert store.delete_memory(memory["r1"]) == len(shared)  # its Terms
    assert store.delete_terms(memory["r2"]) == len(shared)
    assert sorted(word_vector_rows(store, keys)) == sorted(keys)
    assert store.delete_terms(memory["r3"]) == len(shared)  # r4 still says them
    assert store.delete_terms(memory["r4"]) == len(shared) + 2  # and, now unused, their WordVectors
    assert word_vector_rows(store, keys) == {}
    assert store.delete_terms(old) == 2  # no WordVector of its own


def test_expansion_reaches_the_turn_that_shares_no_word_with_the_query(vocabulary_store):
    """ "Which books …" shares no word with the novel turn; expanded through the vocabulary, BM25 finds it."""
    service = vocabulary_store
    texts = [("Ann", "I finished a thrilling novel about a desert planet last night."),
             ("Ben", "Nice. I fixed the bike and went for a long ride by the river."),
             ("Ann", "Tomorrow I will bake bread and visit my sister.")]  # fmt: skip
    at = datetime(2024, 3, 1, 9, 0)
    service.ingest_messages("books", [Message(str(i), who, text, at, "s1") for i, (who, text) in enumerate(texts, 1)])
    expander = QueryExpander(service.store, service.embedder)
    expanded = expander.expand("books", "Which books has Ann read?", ["Ann"])
    assert expanded["books"] == 1.0 and expanded["read"] == 1.0 and "ann" not in expanded
    assert 0 < expanded.get("novel", 0) < 1.0, expanded  # cos² of books ~ novel
    assert all(w == 1.0 or MIN_COSINE**2 <= w < 1.0 for w in expanded.values())
    plain = service.store.fulltext_search("Turn", "books", "Which books has Ann read?", 5)
    hits = service.store.weighted_fulltext_search("Turn", "books", expanded, 5)
    assert plain == [] and hits[0].id == "books/turn/1", (plain, hits)
    shown = service.query("books", "Which books has Ann read?").to_dict()["analysis"]["expansion"]
    assert shown["books"] == 1.0 and shown["novel"] == pytest.approx(expanded["novel"], abs=1e-4)  # the explanation
    assert expander.expand("books", "Who is Ann?", ["Ann"]) == {}
    # another memory's words never join this memory's expansions, and leave with their memory
    service.ingest_messages("flood", [Message("1", "Eve", "bookss booksa booksb novelly", at, "s1")])
    assert expander.expand("books", "Which books has Ann read?", ["Ann"]) == expanded
    service.delete_memory("flood")
    assert service.store.run_cypher("MATCH (t:Term) WHERE t.memory_id = 'flood' RETURN count(t) AS n")[0]["n"] == 0


def test_word_match_is_each_query_words_best_cosine_with_a_word_of_the_turn(vocabulary_store):
    """The turn ranker's ``word_match_max`` / ``word_match_mean``, recomputed here from the model's word vectors."""
    service = vocabulary_store
    texts = [("Ann", "I finished a thrilling novel last night."), ("Ben", "Nice, ok.")]
    at = datetime(2024, 3, 1, 9, 0)
    service.ingest_messages("match", [Message(str(i), who, text, at, "s1") for i, (who, text) in enumerate(texts, 1)])
    expander = QueryExpander(service.store, service.embedder)
    assert expander.query_words("Which books has Ann read?", ["Ann"]) == ["books", "read"]
    match = expander.word_match(service.store.vocabulary("match"), "Which books has Ann read?", ["Ann"],
                                {"t1": texts[0][1], "t2": texts[1][1], "t3": "Ann!"})  # fmt: skip
    assert set(match) == {"t1", "t2"}  # "Ann!" has no word of the vocabulary (the dialogue never says "ann")
    unit = {w: v / np.linalg.norm(v) for w, v in zip(
        ["books", "read", "finished", "thrilling", "novel", "night", "nice"],
        service.embedder.encode(["books", "read", "finished", "thrilling", "novel", "night", "nice"]))}  # fmt: skip
    best = [
        max(float(unit[q] @ unit[w]) for w in ("finished", "thrilling", "novel", "night")) for q in ("books", "read")
    ]
    assert match["t1"] == pytest.approx((max(best), sum(best) / 2), abs=1e-4)
    nice = [float(unit[q] @ unit["nice"]) for q in ("books", "read")]
    assert match["t2"] == pytest.approx((max(nice), sum(nice) / 2), abs=1e-4)
    assert expander.word_match(service.store.vocabulary("match"), "Who is Ann?", ["Ann"], {"t1": texts[0][1]}) == {}
    assert (
        expander.word_match(service.store.vocabulary("no-such-memory"), "Which books?", [], {"t1": texts[0][1]}) == {}
    )


def test_ingest_adds_the_dialogues_words_to_the_vocabulary(hm_service, hm_ingested):
    rows = hm_service.store.run_cypher(
        "UNWIND $ids AS id MATCH (t:Term {id: id}) RETURN t.word AS word, t.memory_id AS memory",
        {"ids": [term_id(TESTCONV_ID, w) for w in ("pottery", "biscuit", "kreuzberg", "the")]},
    )
    assert sorted((r["word"], r["memory"]) for r in rows) == [
        ("biscuit", TESTCONV_ID), ("kreuzberg", TESTCONV_ID), ("pottery", TESTCONV_ID),
    ]  # "the" is a stop word  # fmt: skip
    term = hm_service.store.run_cypher(
        "MATCH (t:Term {id: $id}) RETURN t.embed_key AS key, t.embedding_b64 AS v, t.embedding AS old",
        {"id": term_id(TESTCONV_ID, "pottery")},
    )[0]
    assert term["old"] is None and term["v"] is None and term["key"] == hm_service.embedder.text_key("pottery")
    vector = hm_service.store.run_cypher(
        "MATCH (v:WordVector {id: $id}) RETURN v.embedding_b64 AS v", {"id": word_vector_id(term["key"])}
    )[0]["v"]
    assert isinstance(vector, str)  # one base64 text, not a vector property
    assert np.array_equal(unpack_vector(vector), hm_service.embedder.encode(["pottery"])[0])  # bit for bit


def test_terms_an_older_ingest_wrote_as_vector_properties_are_read_alike(vocabulary_store):
    """Terms written before ``embedding_b64`` hold their vector as a vector property: the vocabulary reads it the
    same way, bit for bit. It lends it to no other memory (that one gets a WordVector, the same vector)."""
    store, embedder = vocabulary_store.store, vocabulary_store.embedder
    tag = "".join(chr(ord("a") + int(c, 16)) for c in uuid.uuid4().hex[:6])
    memory, word = f"older-{tag}", f"marzipan{tag}"
    vector = embedder.encode([word])[0]
    store.run_cypher(
        store.dialect.adapt(
            "CREATE (t:Term {id: $id, memory_id: $m, word: $w, generation: 'g', embed_key: $key, embedding: vecf32($v)})"
        ),
        {"id": term_id(memory, word), "m": memory, "w": word, "key": embedder.text_key(word), "v": vector.tolist()},
    )
    try:
        held = store.vocabulary(memory)
        assert held.words == (word,) and np.allclose(held.vectors[0], vector / np.linalg.norm(vector), atol=1e-7)
        WORD_VECTORS.clear()
        counting = CountingEmbedder(embedder)
        assert add_words(store, counting, f"{memory}-2", [f"A {word}."]) == 1 and counting.sent == [word]
        assert np.array_equal(store.vocabulary(f"{memory}-2").vectors[0], held.vectors[0])
    finally:
        for memory_id in (memory, f"{memory}-2"):
            store.delete_terms(memory_id)


def test_a_store_without_a_vocabulary_gets_one_when_opened(vocabulary_store):
    service = vocabulary_store
    at = datetime(2024, 3, 1, 9, 0)
    service.ingest_messages("old", [Message("1", "Ann", "The kiln cracked my teapot.", at, "s1")])
    assert service.store.delete_terms("old") == 3  # as a store written before the vocabulary existed
    service.store.run_cypher("MATCH (m:StoreMeta) REMOVE m.vocabulary")
    reopened = MemoryService(service.settings, service.store, service.embedder, use_llm=False)
    rows = reopened.store.run_cypher("MATCH (t:Term) WHERE t.memory_id = 'old' RETURN t.word AS w ORDER BY w")
    assert [r["w"] for r in rows] == ["cracked", "kiln", "teapot"]
    assert reopened.store.meta()["vocabulary"] == VERSION


def test_an_edited_message_takes_its_old_words_out_of_the_vocabulary(hm_service):
    """A fresh user's case: after an edit, the words only the old text used left the vocabulary (they showed in
    later queries' expansions, and were stored with them); a word another turn still uses stays."""
    at = datetime(2024, 5, 1, 10)
    memory = f"edit-{uuid.uuid4().hex[:8]}"
    hm_service.ingest_messages(memory, [
        Message("1", "Ana", "I secretly flew to Zanzibar with my lover Ricardo.", at, "s1"),
        Message("2", "Ben", "Ricardo called about the weekend.", at, "s1"),
    ])  # fmt: skip
    try:
        before = set(hm_service.store.vocabulary(memory).words)
        assert {"zanzibar", "lover", "ricardo", "secretly"} <= before
        report = hm_service.ingest_messages(memory, [Message("1", "Ana", "I stayed home last weekend.", at, "s1")])
        assert report.updated == 1
        after = set(hm_service.store.vocabulary(memory).words)
        assert not {"zanzibar", "lover", "secretly", "flew"} & after
        assert {"ricardo", "weekend", "stayed", "home"} <= after  # still used, or new
        expansion = hm_service.query(memory, "Where did Ana fly to?").analysis.expansion
        assert "zanzibar" not in expansion and "lover" not in expansion
    finally:
        hm_service.delete_memory(memory)


def test_a_cached_vocabulary_follows_an_edit_that_swaps_words(hm_service):
    """A second fresh user's case: a running server's copy of the vocabulary is checked by word count and
    generation; an edit that removes words and adds as many or more left it stale (the old words kept expanding
    queries, the new ones were missing). Removing words gives the memory a new generation."""
    at = datetime(2024, 5, 1, 10)
    memory = f"swap-{uuid.uuid4().hex[:8]}"
    hm_service.ingest_messages(memory, [Message("1", "Ana", "My locker code is 4512.", at, "s1"),
                                        Message("2", "Ben", "Noted, thanks.", at, "s1")])  # fmt: skip
    try:
        assert {"locker", "code"} <= set(hm_service.store.vocabulary(memory).words)  # cached in this process
        hm_service.ingest_messages(memory, [Message("1", "Ana", "My bicycle padlock combination is 7781.", at, "s1")])
        words_now = set(hm_service.store.vocabulary(memory).words)
        assert {"bicycle", "padlock", "combination"} <= words_now and not {"locker", "code"} & words_now
        hm_service.ingest_messages(memory, [Message("1", "Ana", "My canoe paddle cracked 7781.", at, "s1")])  # 3 for 3
        words_now = set(hm_service.store.vocabulary(memory).words)
        assert {"canoe", "paddle", "cracked"} <= words_now and not {"bicycle", "padlock", "combination"} & words_now
    finally:
        hm_service.delete_memory(memory)
