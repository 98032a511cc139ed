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
