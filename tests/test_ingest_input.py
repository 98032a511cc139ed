"""Bad input never corrupts a memory (issue 3, Correctness): a clear error naming the field, counts unchanged.

Live messages go through ``MemoryService.ingest_messages`` (``IngestInputError``); LoCoMo
files through ``load_locomo`` (``LocomoFormatError``). The memory ``badin`` holds the test
conversation; every rejected batch also carries a valid message, which must not be written.
"""

from __future__ import annotations

import json
import re
from datetime import datetime

import pytest
from conftest import make_testconv_record

from hypermem.ingest.locomo import LocomoFormatError, conversation_from_record, load_locomo
from hypermem.ingest.turns import IngestInputError
from hypermem.model import Conversation, Message

WHEN = datetime(2023, 9, 1, 12, 0)
MEMORY = "badin"


def ok(message_id: str = "N1") -> Message:
    return Message(message_id, "Nadia", "A perfectly fine message about pottery.", WHEN, "new")


@pytest.fixture(scope="module")
def badin(hm_service):
    hm_service.ingest_conversation(conversation_from_record(make_testconv_record(MEMORY)))
    return hm_service


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        (Message("N2", "", "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", "   ", "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", None, "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", "Omar", "", WHEN, "new"), "messages[1].text"),
        (Message("N2", "Omar", "  \n ", WHEN, "new"), "messages[1].text"),
        (Message("N2", "Omar", "broken \ud800 surrogate", WHEN, "new"), "messages[1].text"),
        (Message("N2", "Omar", "a NUL \x00 byte", WHEN, "new"), "messages[1].text"),
        (Message("N2", "Omar", "x" * 2_000_001, WHEN, "new"), "messages[1].text"),  # over max_message_chars
        (Message("N2", "Omar", "Some words here.", "yesterday", "new"), "messages[1].timestamp"),
        # the years the API and the LoCoMo reader take: 1900-2199
        (Message("N2", "Omar", "Some words here.", datetime(2500, 5, 2, 9, 30), "new"), "messages[1].timestamp"),
        (Message("N2", "Omar", "Some words here.", datetime(1, 1, 1), "new"), "messages[1].timestamp"),
        (Message("", "Omar", "Some words here.", WHEN, "new"), "messages[1].message_id"),
        (Message("a/b", "Omar", "Some words here.", WHEN, "new"), "messages[1].message_id"),
        (Message("N1", "Omar", "Some words here.", WHEN, "new"), "messages[1].message_id"),  # duplicate in batch
        (Message("N2", "Omar", "Some words here.", WHEN, ""), "messages[1].session_id"),
        (Message("N2\x1b[31m", "Omar", "Some words here.", WHEN, "new"), "messages[1].message_id"),
        (Message("N2", "Omar\x1b]0;pwned\x07", "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", "Omar", "Some words here.", WHEN, "s\x01"), "messages[1].session_id"),
        (Message("N2", "O" * 201, "Some words here.", WHEN, "new"), "messages[1].speaker"),  # the API's limit too
        (Message("N" * 201, "Omar", "Some words here.", WHEN, "new"), "messages[1].message_id"),
        (Message("N2", "Omar", "Some words here.", WHEN, "s" * 201), "messages[1].session_id"),
        # blank to the eye: a Hangul filler, a braille blank, a lone combining accent, a lone variation selector
        (Message("N2", "\u3164", "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", "\u2800", "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", "\u0301", "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", "\ufe0f", "Some words here.", WHEN, "new"), "messages[1].speaker"),
        (Message("N2", "Omar", "\u0301\u3164 \u2800", WHEN, "new"), "messages[1].text"),
        (Message("1\U000e0041", "Omar", "Some words here.", WHEN, "new"), "messages[1].message_id"),  # a tag character
        (Message("N2", "Om\u3164ar", "Some words here.", WHEN, "new"), "messages[1].speaker"),  # a filler inside
    ],
)
def test_bad_message_names_the_field_and_writes_nothing(badin, bad, field):
    before = badin.store.counts(MEMORY)
    with pytest.raises(IngestInputError) as info:
        badin.ingest_messages(MEMORY, [ok(), bad])
    assert info.value.field == field
    assert str(info.value).startswith(field + ":")
    assert badin.store.counts(MEMORY) == before
    assert not badin.store.run_cypher("MATCH (t:Turn {dia_id: 'N1'}) WHERE t.memory_id = $m RETURN t.id", {"m": MEMORY})


@pytest.mark.parametrize(
    ("first", "second"), [("A b", "\uff21 b"), ("caf\u00e9 1", "cafe\u0301 1"), ("id5", "\uff49\uff44\uff15")]
)
def test_message_ids_equal_after_normalisation_are_one_id_twice(badin, first, second):
    """Ids are keyed by their NFKC form (``ids.key``): two that differ only there would be one turn, so a batch
    naming both is refused, naming the field, and nothing is written."""
    before = badin.store.counts(MEMORY)
    pair = [Message(first, "Omar", "I adopted a grey cat.", WHEN, "new"),
            Message(second, "Omar", "I signed up for pottery.", WHEN, "new")]  # fmt: skip
    with pytest.raises(IngestInputError) as info:
        badin.ingest_messages(MEMORY, pair)
    assert info.value.field == "messages[1].message_id"
    assert str(info.value) == (
        f"messages[1].message_id: duplicate {second!r} in one batch ({second!a} is the same id as {first!a} after "
        "Unicode NFKC normalisation)"
    )
    assert badin.store.counts(MEMORY) == before


@pytest.mark.parametrize(
    ("first", "second"), [("X1", "\uff38\uff11"), ("fi7", "\ufb017"), ("caf\u00e9 9", "cafe\u0301 9")]
)
def test_message_ids_equal_after_normalisation_are_one_turn_across_batches(badin, first, second):
    """What a batch refuses as one id twice is one turn across batches too: the second message edits the first,
    which keeps its spelling of the id (a resend in another spelling changes nothing)."""
    memory = "nfkc-twins"
    badin.ingest_messages(memory, [Message(first, "Omar", "I adopted a grey cat.", WHEN, "s")])
    report = badin.ingest_messages(memory, [Message(second, "Omar", "I signed up for pottery.", WHEN, "s")])
    turns = badin.store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m RETURN t.dia_id AS d, t.text AS x", {"m": memory}
    )
    assert report.updated == 1 and [(t["d"], t["x"]) for t in turns] == [(first, "I signed up for pottery.")]
    badin.delete_memory(memory)


def test_a_message_over_the_limit_names_the_limit(badin):
    with pytest.raises(IngestInputError, match=r"2000001 characters; the limit is 2000000"):
        badin.ingest_messages(MEMORY, [Message("N9", "Omar", "y" * 2_000_001, WHEN, "new")])


@pytest.mark.parametrize("memory_id", ["", "a/b", "x" * 129, "-starts-with-dash", "space inside", None])
def test_bad_memory_id(badin, memory_id):
    before = badin.store.counts(MEMORY)
    with pytest.raises(IngestInputError) as info:
        badin.ingest_messages(memory_id, [ok()])
    assert info.value.field == "memory_id"
    assert badin.store.counts(MEMORY) == before


def test_photo_without_words_is_stored_safely(badin):
    photo = Message("P1", "Omar", "", WHEN, "photo", image_caption="a bowl with a blue glaze")
    badin.ingest_messages(MEMORY, [photo])
    rows = badin.store.run_cypher(
        "MATCH (t:Turn {dia_id: 'P1'}) WHERE t.memory_id = $m RETURN t.text AS text", {"m": MEMORY}
    )
    assert rows == [{"text": "[shares a photo: a bowl with a blue glaze]"}]


def test_unicode_text_round_trips(badin):
    text = "Café crème in Kraków 🎉 — naïve “quotes” and 中文"
    badin.ingest_messages(MEMORY, [Message("U1", "Nadia", text, WHEN, "unicode")])
    rows = badin.store.run_cypher(
        "MATCH (t:Turn {dia_id: 'U1'}) WHERE t.memory_id = $m RETURN t.text AS text", {"m": MEMORY}
    )
    assert rows == [{"text": text}]


# --- LoCoMo files ----------------------------------------------------------------------------------------------
def _write(tmp_path, records, name="bad.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(records), encoding="utf-8")
    return str(path)


def test_locomo_unparseable_session_date_names_the_key(tmp_path):
    record = make_testconv_record("bad-date")
    record["conversation"]["session_2_date_time"] = "sometime after the flood"
    with pytest.raises(LocomoFormatError, match=r"bad-date\.session_2_date_time: cannot parse date"):
        load_locomo(_write(tmp_path, [record]))


@pytest.mark.parametrize(("value", "ok"), [("7:10 pm on 3 March, 2200", False), ("7:10 pm on 3 March, 2199", True)])
def test_locomo_session_dates_take_the_years_every_entry_point_takes(tmp_path, value, ok):
    record = make_testconv_record("far-date")
    record["conversation"]["session_2_date_time"] = value
    if ok:
        assert load_locomo(_write(tmp_path, [record]))[0].messages
        return
    with pytest.raises(
        LocomoFormatError, match=r"far-date\.session_2_date_time: date .* is outside the years 1900-2199"
    ):
        load_locomo(_write(tmp_path, [record]))


def test_locomo_missing_session_date_names_the_key(tmp_path):
    record = make_testconv_record("no-date")
    del record["conversation"]["session_3_date_time"]
    with pytest.raises(LocomoFormatError, match=r"no-date\.session_3_date_time: missing"):
        load_locomo(_write(tmp_path, [record]))


@pytest.mark.parametrize("field", ["speaker", "text", "dia_id"])
def test_locomo_missing_turn_field_names_it(tmp_path, field):
    record = make_testconv_record("no-field")
    del record["conversation"]["session_2"][4][field]
    with pytest.raises(LocomoFormatError, match=rf"no-field\.session_2\[4\]\.{field}: missing"):
        load_locomo(_write(tmp_path, [record]))


def test_locomo_duplicate_dia_id_names_both_places(tmp_path):
    record = make_testconv_record("dup")
    first = record["conversation"]["session_1"][0]["dia_id"]
    record["conversation"]["session_2"][3]["dia_id"] = first
    with pytest.raises(
        LocomoFormatError, match=rf"dup\.session_2\[3\]\.dia_id: '{first}' is also dup\.session_1\[0\]\.dia_id"
    ):
        load_locomo(_write(tmp_path, [record]))


def test_locomo_dia_ids_equal_after_normalisation_are_one_id_twice(tmp_path):
    record = make_testconv_record("nfd")
    record["conversation"]["session_1"][0]["dia_id"] = "caf\u00e9 1"
    record["conversation"]["session_2"][3]["dia_id"] = "cafe\u0301 1"
    with pytest.raises(LocomoFormatError, match=r"nfd\.session_2\[3\]\.dia_id: .* is also nfd\.session_1\[0\]\.dia_id "
                       r"\('cafe\\u0301 1' is the same id as 'caf\\xe9 1' after Unicode NFKC normalisation\)"):  # fmt: skip
        load_locomo(_write(tmp_path, [record]))


def test_locomo_empty_sample_id_is_named_empty(tmp_path):
    path = _write(tmp_path, [make_testconv_record("ok"), make_testconv_record("")])
    with pytest.raises(LocomoFormatError, match=rf"^{re.escape(path)}\[1\]\.sample_id: empty$"):
        load_locomo(path)


@pytest.mark.parametrize("value", [20230508, None, ["8 May, 2023"]])
def test_locomo_session_date_that_is_no_string_is_named_by_type(tmp_path, value):
    record = make_testconv_record("typed")
    record["conversation"]["session_1_date_time"] = value
    with pytest.raises(
        LocomoFormatError, match=rf"^typed\.session_1_date_time: expected a string .* got {type(value).__name__}$"
    ):
        load_locomo(_write(tmp_path, [record]))


def test_locomo_field_names_an_ingest_field_as_the_file_does():
    """check_input's names (messages[i].message_id, memory_id) as LoCoMo's (session_N[j].dia_id, sample_id)."""
    from hypermem.ingest.locomo import locomo_field

    def message(dia_id, session):
        return Message(dia_id, "A", "hi", WHEN, session)

    conv = Conversation(
        "conv 1", ["A"], [message("D1:1", "1"), message("D1:2", "1"), message("D2:1", "2"), message("D2:2", "2")]
    )
    assert locomo_field(conv, "messages[3].message_id") == "conv 1.session_2[1].dia_id"
    assert locomo_field(conv, "messages[1].image_caption") == "conv 1.session_1[1].blip_caption"
    assert locomo_field(conv, "messages[2].text") == "conv 1.session_2[0].text"
    assert locomo_field(conv, "memory_id") == "sample_id 'conv 1'"


def test_locomo_loader_ignores_annotations_and_extra_date_keys(tmp_path):
    record = make_testconv_record("annotated")
    record["conversation"]["session_9_date_time"] = "1:00 pm on 1 January, 2024"  # a date key with no session
    record["event_summary"] = {"events_session_1": ["SECRET-EVENT"]}
    record["session_summary"] = {"session_1_summary": "SECRET-SUMMARY"}
    record["observation"] = {"session_1_observation": ["SECRET-OBSERVATION"]}
    conv = load_locomo(_write(tmp_path, [record]))[0]
    assert conv.sessions == ["1", "2", "3"] and len(conv.messages) == 22
    assert not any("SECRET" in m.text for m in conv.messages)
    assert conv.messages[1].image_caption == "a photo of a golden retriever puppy sitting on a sandy beach"
    assert conv.messages[0].timestamp == datetime(2023, 6, 12, 14, 15)


def test_locomo_unknown_conversation_and_missing_file(tmp_path):
    path = _write(tmp_path, [make_testconv_record("only-one")])
    with pytest.raises(LocomoFormatError, match=r"--conversation: unknown sample_id \['conv-99'\]"):
        load_locomo(path, ["conv-99"])
    with pytest.raises(LocomoFormatError, match=r"PATH '.*absent\.json': no such file"):
        load_locomo(tmp_path / "absent.json")
    with pytest.raises(LocomoFormatError, match=r"PATH '.*': a directory"):
        load_locomo(tmp_path)


@pytest.mark.parametrize(
    "value",
    ["5", "12", "in 3 days", "3000", "May 2023", "1:56 pm on 8 May, 2300", "1:00 pm on 8 May, 0001", "8 May, 23"],
)
def test_locomo_session_date_needs_a_day_a_month_and_a_year(tmp_path, value):
    """A partial date would take its missing parts from today: refused, naming the key."""
    record = make_testconv_record("partial-date")
    record["conversation"]["session_1_date_time"] = value
    with pytest.raises(LocomoFormatError, match=r"partial-date\.session_1_date_time: "):
        load_locomo(_write(tmp_path, [record]))


def test_locomo_entries_that_are_not_objects_are_named(tmp_path):
    record = make_testconv_record("odd")
    record["conversation"]["session_2"][3] = "oops"
    with pytest.raises(LocomoFormatError, match=r"odd\.session_2\[3\]: expected an object \(a turn\), got str"):
        load_locomo(_write(tmp_path, [record]))
    with pytest.raises(LocomoFormatError, match=r"bad\.json\[1\]: expected an object \(a conversation\), got int"):
        load_locomo(_write(tmp_path, [make_testconv_record("fine"), 5]))


def test_locomo_entries_that_are_no_conversation_are_named(tmp_path):
    with pytest.raises(
        LocomoFormatError, match=r"^.*bad\.json\[1\]: not a LoCoMo conversation \(no 'conversation' field\)$"
    ):
        load_locomo(_write(tmp_path, [make_testconv_record("fine"), {"x": 1}]))
    with pytest.raises(LocomoFormatError, match=r"bad\.json: not a LoCoMo conversation"):
        load_locomo(_write(tmp_path, {"x": 1}))  # one object at the top level is the file's one conversation: no [0]
    nameless = make_testconv_record("nameless")
    del nameless["sample_id"]
    with pytest.raises(LocomoFormatError, match=r"bad\.json\[1\]\.sample_id: missing or not a string$"):
        load_locomo(_write(tmp_path, [make_testconv_record("fine"), nameless, nameless]))


def test_locomo_file_with_a_byte_order_mark_loads(tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps([make_testconv_record("bom")]).encode())
    assert load_locomo(path)[0].sample_id == "bom"


def test_locomo_bad_json(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('[{"sample_id": "x", ', encoding="utf-8")
    with pytest.raises(LocomoFormatError, match="not valid JSON"):
        load_locomo(path)


def test_locomo_non_utf8_byte_is_a_format_error(tmp_path):
    path = tmp_path / "latin1.json"
    path.write_bytes(json.dumps([make_testconv_record("latin")]).replace("Lovely", "Lov\\u00e9ly").encode().replace(
        b"Lov\\u00e9ly", b"Lov\xe9ly"))  # fmt: skip
    with pytest.raises(LocomoFormatError, match=r"(?i)latin1.json: not valid JSON .*utf-8.*byte 0xe9"):
        load_locomo(path)


def test_locomo_lone_surrogate_is_rejected_at_ingest_naming_the_turn(tmp_path, badin):
    record = make_testconv_record("surrogate")
    record["conversation"]["session_1"][2]["text"] = "bad \ud800 text"
    conv = load_locomo(_write(tmp_path, [record]))[0]
    with pytest.raises(IngestInputError) as info:
        badin.ingest_conversation(conv)
    assert info.value.field == "messages[2].text"
    assert badin.store.counts("surrogate").get("Turn", 0) == 0


def test_locomo_session_date_reads_its_four_digit_year():
    from hypermem.ingest.locomo import parse_session_date

    assert parse_session_date("1:56 pm on 8 May, 2023", "d") == datetime(2023, 5, 8, 13, 56)
    assert parse_session_date("8 May 1999", "d").year == 1999


def test_locomo_json_nested_past_the_recursion_limit_is_a_format_error(tmp_path):
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    with pytest.raises(LocomoFormatError, match="nested too deeply"):
        load_locomo(str(path))


def test_locomo_names_every_bad_turn_and_session_of_every_conversation(tmp_path):
    """Not only the first: each problem names its field path, the message the first and how many more."""
    first, second = make_testconv_record("first"), make_testconv_record("second")
    first["conversation"]["session_1"][1]["speaker"] = 5
    del first["conversation"]["session_2"][0]["text"]
    first["conversation"]["session_3_date_time"] = "someday"
    first["conversation"]["session_3"][2] = "not a turn"
    second["conversation"]["session_2"][3]["dia_id"] = "D1:1"
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([first, second]))
    with pytest.raises(LocomoFormatError) as caught:
        load_locomo(path)
    assert caught.value.problems == [
        "first.session_1[1].speaker: missing or not a string",
        "first.session_2[0].text: missing or not a string",
        "first.session_3_date_time: cannot parse date 'someday'",
        "first.session_3[2]: expected an object (a turn), got str",
        "second.session_2[3].dia_id: 'D1:1' is also second.session_1[0].dia_id",
    ]
    assert str(caught.value) == "first.session_1[1].speaker: missing or not a string (and 4 more)"
