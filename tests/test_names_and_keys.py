"""The name gate and unique keys (issue 9 §1): what reaches a unique ``id`` or an element ``name``."""

from __future__ import annotations

from datetime import datetime

import pytest

from hypermem.ingest.names import clean_name
from hypermem.ingest.turns import IngestInputError
from hypermem.model import Message
from hypermem.retrieve.pipeline import QueryError
from hypermem.store.ids import SAFE_KEY, key, name_key


@pytest.mark.parametrize(
    ("raw", "clean"),
    [
        ("Dark Mode</button>\n", "Dark Mode"),  # the real case: spaCy's "Person" in a coding chat
        ("  Caroline \t", "Caroline"),
        ("Jean-Luc  Picard", "Jean-Luc Picard"),
        ("McDonald", "McDonald"),
        ("O'Brien", "O'Brien"),
        ("São Paulo", "São Paulo"),
        ("Tom &amp; Jerry", "Tom & Jerry"),
        ("<b>Lisbon</b>", "Lisbon"),
        ("Ana\x1b", "Ana"),
        ("Ana\u200b", "Ana"),
        ("toggleDarkMode", None),
        ("dark_mode", None),
        ("document.getElementById(", None),
        ("x => x + 1", None),
        ("{name}", None),
        ("$HOME", None),
        ("</div>", None),
        ("1234", None),
        ("...", None),
        ("", None),
        ("word " * 7, None),
        ("A" * 81, None),
    ],
)
def test_clean_name(raw, clean):
    assert clean_name(raw) == clean


def test_keys_are_safe_tokens_or_digests_and_stable():
    assert key("D1:3") == "D1:3" and key("2023-05-07") == "2023-05-07"
    for value in ("x ", "x\t", " x", "a b", "<b>", "a/b", "é", "x" * 65, "~abc"):
        assert key(value).startswith("~") and len(key(value)) == 21 and not SAFE_KEY.fullmatch(key(value))
        assert key(value) == key(value)
    assert key("x ") != key("x") and key("x ") != key("x\t")  # distinct message ids stay distinct
    assert name_key("Dark  Mode") == name_key("dark mode") == name_key("DARK MODE")
    assert name_key("Nadia") == "nadia"
    assert key("\ud83d").startswith("~")  # even a lone surrogate hashes


@pytest.mark.parametrize("field", ["message_id", "speaker", "text", "session_id", "image_caption"])
def test_service_refuses_a_lone_surrogate_in_every_field(hm_service, field):
    values = {
        "message_id": "s1",
        "speaker": "Ana",
        "text": "Hello there, friend.",
        "session_id": "s",
        "image_caption": None,
    }
    values[field] = "bad \ud83d"
    with pytest.raises(IngestInputError) as info:
        hm_service.ingest_messages("surrogates", [Message(timestamp=datetime(2024, 1, 1), **values)])
    assert info.value.field == f"messages[0].{field}" and "surrogate" in info.value.problem
    assert hm_service.store.counts("surrogates") == {"memberships": 0}


def test_every_bad_message_is_reported(hm_service):
    ok = dict(speaker="Ana", text="Hello there.", timestamp=datetime(2024, 1, 1), session_id="s")
    batch = [Message("a", **{**ok, "text": "\x00"}), Message("b", **ok), Message("c", **{**ok, "speaker": "\ud83d"})]
    with pytest.raises(IngestInputError) as info:
        hm_service.ingest_messages("every-bad", batch)
    assert [f for f, _ in info.value.problems] == ["messages[0].text", "messages[2].speaker"]


def test_query_with_a_lone_surrogate_is_a_query_error(hm_service, hm_ingested):
    with pytest.raises(QueryError, match="query: is not valid UTF-8"):
        hm_service.query("testconv", "where \ud83d")


@pytest.mark.parametrize(
    ("speaker", "name", "found_in_text"),
    [
        ("user_1", "user_1", None),
        ("bot[1]", "bot[1]", None),
        ("  Dr.  Ana\tLima ", "Dr. Ana Lima", "Dr. Ana Lima"),
        ("Dark Mode</button>", "Dark Mode", "Dark Mode"),  # markup is cleaned off a speaker as off a name
        ("A" * 150, "A" * 80, None),  # cut to MAX_NAME_CHARS, not refused
        ("Bob (work)", "Bob (work)", "Bob (work"),  # a speaker keeps its punctuation: "user_1!" is not "user_1"
        ("user_1!", "user_1!", None),
    ],
)
def test_a_speaker_is_a_person_whatever_the_names_shape(speaker, name, found_in_text):
    """Agent chats name speakers "user_1" or "bot[1]": each is a Person (listed under /people), though a name of that
    shape found in the text is refused (``clean_name``)."""
    from hypermem.ingest.elements import TurnElements, element_nodes
    from hypermem.model import Turn

    turn = Turn("m", "m/turn/1", "1", speaker, "Hello there.", "2024-01-01T10:00:00", "s", 0)
    persons = [e for e in element_nodes("m", turn, TurnElements()).values() if e.kind == "Person"]
    assert [(p.name, p.id) for p in persons] == [(name, f"m/person/{name_key(name)}")]
    assert clean_name(speaker) == found_in_text


def _turns(service, memory_id: str) -> list[tuple[str, str]]:
    rows = service.store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m RETURN t.dia_id AS dia_id, t.session AS session ORDER BY t.seq",
        {"m": memory_id},
    )
    return [(r["dia_id"], r["session"]) for r in rows]


def test_keys_drop_what_shows_nothing():
    """A joiner or variation selector shows nothing: "A1\\u200d" is the id "A1", "❤️ Mom" the person "❤ Mom"."""
    assert key("A1\u200d") == key("A1\u200c") == key("A1\ufe0f") == key("A1\U000e0100") == "A1"
    assert name_key("\u2764\ufe0f Mom") == name_key("\u2764 Mom") and name_key("Alice\u200d") == name_key("alice")
    assert key("A\u2800B") != key("AB")  # a braille blank inside shows as a space: another id


@pytest.mark.parametrize("value", ["A1\u2800", "\u2800A1", "A1\ufff9", "A1\u206a"])
@pytest.mark.parametrize("field", ["message_id", "speaker", "session_id"])
def test_an_identifier_edged_with_a_braille_blank_or_holding_an_annotation_mark_is_refused(hm_service, field, value):
    values = {"message_id": "m1", "speaker": "Ana", "text": "Hello.", "session_id": "s"} | {field: value}
    with pytest.raises(IngestInputError) as info:
        hm_service.ingest_messages("edges", [Message(timestamp=datetime(2024, 1, 1), **values)])
    assert info.value.field == f"messages[0].{field}"
    assert info.value.problem.startswith("must not start or end" if "\u2800" in value else "must not contain invisible")


def test_ids_alike_to_the_eye_are_one_turn_one_session_and_a_resend_is_skipped(hm_service):
    """Message "A1", then "Ａ１" and "A1\\u200d" resent: one turn, still "A1" (the first spelling), nothing rebuilt; sessions
    "s1" and "ｓ１" in one batch or two are one session, with one finished marker, so a resend skips it."""
    memory, when = "alike-ids", datetime(2024, 1, 1, 9)
    first = [Message("A1", "Ana", "I adopted a grey cat.", when, "s1"),
             Message("B2", "Ana", "Her name is Pixel.", when, "\uff53\uff11")]  # fmt: skip
    report = hm_service.ingest_messages(memory, first)
    assert report.sessions_ingested == 1 and _turns(hm_service, memory) == [("A1", "s1"), ("B2", "s1")]
    for spelling in ("\uff21\uff11", "A1\u200d"):
        again = hm_service.ingest_messages(memory, [Message(spelling, "Ana", "I adopted a grey cat.", when, "s1")])
        assert (again.sessions_ingested, again.sessions_skipped, again.updated) == (0, 1, 0)
    later = hm_service.ingest_messages(memory, [Message("C3", "Ana", "Pixel likes boxes.", when, "\uff53\uff11")])
    assert later.sessions_ingested == 1 and _turns(hm_service, memory)[-1] == ("C3", "s1")
    assert hm_service.ingest_messages(memory, first).sessions_skipped == 1


def test_a_session_interrupted_under_one_spelling_is_joined_by_a_lookalike_resend(hm_service):
    """A session whose ingest stopped before its finished marker (its turns stored, no ``IngestState``) is still the
    session a lookalike id names: "ｓ１" resent after "s1" was interrupted rebuilds "s1", not a second session."""
    memory, when = "alike-unfinished", datetime(2024, 1, 1, 9)
    hm_service.ingest_messages(memory, [Message("A1", "Ana", "I adopted a grey cat.", when, "s1")])
    hm_service.store.run_cypher("MATCH (s:IngestState) WHERE s.memory_id = $m DETACH DELETE s", {"m": memory})
    report = hm_service.ingest_messages(memory, [Message("B2", "Ana", "Her name is Pixel.", when, "\uff53\uff11")])
    assert report.sessions_ingested == 1 and _turns(hm_service, memory) == [("A1", "s1"), ("B2", "s1")]
    states = hm_service.store.run_cypher("MATCH (s:IngestState) WHERE s.memory_id = $m RETURN s.session AS session",
                                         {"m": memory})  # fmt: skip
    assert states == [{"session": "s1"}]
    assert (
        hm_service.ingest_messages(memory, [Message("A1", "Ana", "I adopted a grey cat.", when, "s1")]).sessions_skipped
        == 1
    )


def test_a_decomposed_query_or_turn_is_searched_as_its_composed_form(hm_service):
    """NFD splits "cre\\u0302perie" into two words for BM25; turns are stored and queries searched in NFC, so the
    decomposed query finds what the composed one does, with the same scores, and a decomposed turn is stored NFC."""
    memory, when = "nfd-search", datetime(2024, 3, 1, 9)
    hm_service.ingest_messages(memory, [
        Message("1", "Zoe", "I love the cre\u0302perie near the cafe\u0301 in Montre\u0301al.", when, "s"),
        Message("2", "Sam", "We walked the dog in the park on Sunday.", when, "s"),
        Message("3", "Zoe", "My sister bought a new bicycle last week.", when, "s"),
    ])  # fmt: skip
    stored = hm_service.store.run_cypher("MATCH (t:Turn {dia_id: '1'}) WHERE t.memory_id = $m RETURN t.text AS text",
                                         {"m": memory})  # fmt: skip
    assert stored == [{"text": "I love the cr\u00eaperie near the caf\u00e9 in Montr\u00e9al."}]
    composed = hm_service.query(memory, "cr\u00eaperie Montr\u00e9al")
    decomposed = hm_service.query(memory, "cre\u0302perie Montre\u0301al")
    assert decomposed.turns[0].dia_id == "1"
    assert [(t.dia_id, round(t.score, 6)) for t in decomposed.turns] == [
        (t.dia_id, round(t.score, 6)) for t in composed.turns
    ]
