"""Long messages (issue 9 part 2): a long turn is stored whole and searched as passages, code is split on
lines and kept out of NER, the tail of a 30k-character answer is found, a 350k-character answer ingests.
Real embedded FalkorDB and real embeddings; speed is printed by ``bench/bench_long_message.py``."""

from __future__ import annotations

import re
from datetime import datetime

import pytest
from long_messages import TAIL, coding_chat, long_answer

from hypermem.ingest.passages import PassageSplitter, blocks, looks_like_code, prose_of

TAIL_QUESTION = "What was the root cause of the flaky deploys on staging?"


@pytest.fixture(scope="module")
def splitter(hm_service) -> PassageSplitter:
    return PassageSplitter(hm_service.embedder.count_tokens)


# --- splitting ------------------------------------------------------------------------------------------------
def test_passages_are_token_bounded_and_cover_the_text(splitter, hm_service):
    text = long_answer(20_000)
    passages = splitter.split(text)
    count = hm_service.embedder.count_tokens
    assert splitter.is_long(text) and len(passages) > 20
    assert max(count(p.text) for p in passages) <= 200
    covered = "\n".join(p.text for p in passages)
    for line in text.split("\n"):
        if line.strip() and not line.startswith("```"):
            assert line.strip() in covered, line  # every line of prose or code is in some passage, whole
    assert TAIL in passages[-1].text
    code = [p for p in passages if p.kind == "code" and p.language == "python"]
    assert code and all(p.text.split("\n")[0].startswith(("def handle_", "    ")) for p in code)


def test_overlap_carries_the_last_sentence(hm_service):
    small = PassageSplitter(hm_service.embedder.count_tokens, max_tokens=30, overlap_tokens=12, long_tokens=10)
    text = " ".join(f"Sentence number {i} talks about topic {i}." for i in range(12))
    passages = small.split(text)
    assert len(passages) > 2
    for before, after in zip(passages, passages[1:]):
        last = before.text.rsplit(". ", 1)[-1]
        assert after.text.startswith(last.rstrip(".")), (before.text, after.text)


def test_an_unbroken_line_is_cut_to_the_budget(splitter, hm_service):
    minified = "x=" + ";".join(f"v{i}=f({i})" for i in range(5_000))
    passages = splitter.split(minified)
    assert len(passages) > 5 and "".join(p.text for p in passages) == minified
    assert max(hm_service.embedder.count_tokens(p.text) for p in passages) <= 200


def test_a_run_the_tokenizer_reads_as_one_token_is_cut_too(splitter, hm_service):
    """WordPiece reads a word of over 100 characters as one unknown token: a 30,000-character run still becomes
    passages of at most 200 x 8 characters (shown whole as a snippet, it would be unreadable), and the sentence after
    it stays findable in its own passage."""
    text = "a" * 30_000 + " The secret code word for the vault is marmalade."
    assert hm_service.embedder.count_tokens(text) < 20  # what the tokenizer makes of it
    passages = splitter.split(text)
    assert splitter.is_long(text) and len(passages) >= 30_000 // 1_600
    assert max(len(p.text) for p in passages) <= 1_600 and "marmalade" in passages[-1].text
    assert "".join(p.text.replace(" ", "") for p in passages).count("marmalade") == 1


@pytest.mark.parametrize(
    ("line", "code"),
    [('<button id="toggleDarkMode">Toggle Dark Mode</button>', True), ("</div>", True),
     ("def handle(request):", True), ("2024-06-03 12:01:00 ERROR worker: timeout", True),
     ("    return cache.get(key);", True), ('File "app.py", line 12, in main', True),
     ("Hey Mel! :) How was the trip?", False), ("I went to the LGBTQ support group yesterday.", False),
     ("[shares a photo: a dog on a beach]", False), ("Wow, 10/10 would go again!", False)],
)  # fmt: skip
def test_code_lines(line, code):
    assert looks_like_code(line) is code


def test_blocks_and_prose():
    text = "Here is the fix.\n\n```js\nconst a = 1;\nlet b = a + 1;\n```\n\nThen run:\n\n    npm test\n\nDone, Ana."
    kinds = [(b.kind, b.language) for b in blocks(text)]
    assert kinds == [("prose", None), ("code", "js"), ("prose", None), ("code", None), ("prose", None)]
    assert prose_of(text) == "Here is the fix.\n\nThen run:\n\nDone, Ana."
    assert prose_of("Plain words only.") == "Plain words only."


def test_markup_is_not_a_person(hm_extractor):
    turn = 'Add this:\n<div>\n<button id="toggleDarkMode">Toggle Dark Mode</button>\n</div>\nAna will review it.'
    found = hm_extractor.extract([turn], [datetime(2024, 6, 3)])[0]
    assert not any("Dark Mode" in p or "<" in p for p in found.persons)


# --- through the pipeline ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def long30k(hm_service):
    messages = coding_chat(30_000)
    hm_service.ingest_messages("long-30k", messages)
    return messages


def test_the_tail_of_a_long_answer_is_found(hm_service, long30k):
    result = hm_service.query("long-30k", TAIL_QUESTION)
    passages = [f for f in result.facts if f.kind == "passage" and "certbot" in f.content]
    assert passages and passages[0].source_dia_ids == ["C1:4"]
    turn = next(t for t in result.turns if t.dia_id == "C1:4")
    assert "certbot" in turn.snippet and len(turn.snippet) < 2_000
    assert len(turn.text) == len(long30k[3].text)  # the turn keeps its whole text
    assert "certbot" in result.context and len(result.context) < 12_000


def test_code_identifiers_stay_searchable(hm_service, long30k):
    name = re.search(r"def (handle_\w+)\(", long30k[3].text).group(1)
    result = hm_service.query("long-30k", f"Where is {name} defined?")
    hits = [f for f in result.facts if f.kind == "passage" and f"def {name}(" in f.content]
    assert hits and hits[0].source_dia_ids == ["C1:4"] and "python" in hits[0].content.split(":", 1)[0]


def test_a_long_turn_is_stored_whole_with_passages(hm_service, long30k):
    rows = hm_service.store.run_cypher(
        "MATCH (f:Fact)-[:FROM_TURN]->(t:Turn) WHERE t.memory_id = $m AND t.dia_id = 'C1:4' "
        "RETURN t.text AS text, collect(f.kind) AS kinds, count(f) AS n",
        {"m": "long-30k"},
    )
    assert rows[0]["text"] == long30k[3].text
    assert set(rows[0]["kinds"]) == {"passage"} and rows[0]["n"] > 50


def test_a_350k_character_answer_ingests(hm_service):
    messages = coding_chat(350_000)
    assert len(messages[3].text) >= 350_000
    report = hm_service.ingest_messages("long-350k", messages)
    assert report.turns == len(messages) and report.facts > 800
    stored = hm_service.store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m AND t.dia_id = 'C1:4' RETURN size(t.text) AS n", {"m": "long-350k"}
    )
    assert stored[0]["n"] == len(messages[3].text)
    result = hm_service.query("long-350k", TAIL_QUESTION)
    assert "C1:4" in [t.dia_id for t in result.turns]
    assert any("certbot" in f.content for f in result.facts)
    assert len(result.context) < 12_000
