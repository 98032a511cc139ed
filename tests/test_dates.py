"""Dates said in conversation (issue 9 part 3): plans lean to the future, a day and month take the nearest
year, a time of day and an offset are kept. Table-driven through the real ingest path (spaCy NER +
``hypermem.dates``) and through the pattern path used for queries."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from hypermem.dates import DateResolver, TimeMention, find_dates, is_future

CEST = timezone(timedelta(hours=2))

# (sentence, said at, the first resolved time). 2 June 2024 is a Sunday; 1 July 2024 a Monday.
SENTENCES = [
    ("See you at the garden on Saturday!", "2024-06-02T10:00", "2024-06-08"),
    ("We went to the garden on Saturday.", "2024-06-02T10:00", "2024-06-01"),
    ("I'm flying to Rome for 14 July.", "2024-07-01T10:00", "2024-07-14"),
    ("The parcel arrived on the 14th.", "2024-07-20T10:00", "2024-07-14"),
    ("I'll call you tomorrow at 3pm.", "2024-06-02T10:00", "2024-06-03T15:00"),
    ("The meeting is at 15:30 next Tuesday.", "2024-06-02T10:00", "2024-06-04T15:30"),
    ("We are going to visit grandma in two weeks.", "2024-06-02T10:00", "2024-06-16"),
    ("This coming Friday is our anniversary dinner.", "2024-06-02T10:00", "2024-06-07"),
    ("Next month we will start the new project.", "2024-06-02T10:00", "2024-07"),
    ("I adopted a kitten last Saturday.", "2024-06-05T10:00", "2024-06-01"),
    ("Two days ago I ran my first marathon.", "2024-06-02T10:00", "2024-05-31"),
    ("Can't wait for the concert on Friday.", "2024-06-02T10:00", "2024-06-07"),
    ("The flight leaves at 9am on 20 December.", "2024-12-01T10:00", "2024-12-20T09:00"),
    ("I got back from Tokyo on 28 December.", "2025-01-03T10:00", "2024-12-28"),
    ("My birthday party will be on 3 January.", "2024-12-20T10:00", "2025-01-03"),
    ("Let's have lunch at noon on Thursday.", "2024-06-02T10:00", "2024-06-06T12:00"),
    ("See you on Monday at 10am.", "2024-06-02T10:00+02:00", "2024-06-03T10:00+02:00"),
    ("Last night I finished the book.", "2024-06-02T10:00", "2024-06-01"),
    ("I will see the dentist in May.", "2024-06-02T10:00", "2025-05"),
    ("I started painting in May.", "2024-06-02T10:00", "2024-05"),
    ("We're moving house this weekend.", "2024-06-05T10:00", "2024-06-08"),
    ("Yesterday at 7pm we watched the match.", "2024-06-02T10:00", "2024-06-01T19:00"),
    ("My exam is on the 14th and I will be ready.", "2024-07-01T10:00", "2024-07-14"),
]


@pytest.mark.parametrize(("sentence", "said", "expected"), SENTENCES)
def test_sentence_dates(hm_extractor, sentence, said, expected):
    times = hm_extractor.extract([sentence], [datetime.fromisoformat(said)])[0].times
    assert [t.value for t in times][:1] == [expected], times


@pytest.mark.parametrize(
    ("phrase", "said", "future", "expected"),
    [
        ("Saturday", "2024-06-02T10:00", True, "2024-06-08"),
        ("Saturday", "2024-06-02T10:00", False, "2024-06-01"),
        ("14 July", "2024-07-01T10:00", False, "2024-07-14"),
        ("July 14th", "2024-07-01T10:00", True, "2024-07-14"),
        ("on the 14th", "2024-07-20T10:00", True, "2024-08-14"),
        ("next Saturday", "2024-06-02T10:00", False, "2024-06-08"),
        ("in 3 days", "2024-06-02T10:00", False, "2024-06-05"),
        ("the day after tomorrow", "2024-06-02T10:00", False, "2024-06-04"),
        ("15:30 UTC", "2024-06-02T10:00", False, "2024-06-02T15:30+00:00"),
        ("at 9am +05:30", "2024-06-02T10:00", True, "2024-06-02T09:00+05:30"),
        ("midnight", "2024-06-02T10:00+02:00", False, "2024-06-02T00:00+02:00"),
        ("last Saturday", "2024-06-02T10:00", True, "2024-06-01"),
    ],
)
def test_phrases(phrase, said, future, expected):
    mention = DateResolver().resolve(phrase, datetime.fromisoformat(said), future=future)
    assert mention is not None and mention.value == expected


def test_display_of_a_time_of_day():
    assert TimeMention("x", "2024-06-08T15:00", "minute").display == "8 June 2024, 15:00"
    assert TimeMention("x", "2024-06-08T15:00+02:00", "minute").display == "8 June 2024, 15:00 +02:00"


@pytest.mark.parametrize(
    ("sentence", "future"),
    [("See you then!", True), ("I'll bring the cake.", True), ("We are going to paint it.", True),
     ("We painted it on Saturday.", False), ("It was a long week.", False)],
)  # fmt: skip
def test_future_sentences(sentence, future):
    assert is_future(sentence) is future


def test_pattern_path_leans_to_the_future_in_a_plan():
    base = datetime(2024, 6, 2, 10)
    assert [m.value for m in find_dates("What will we do this weekend?", base, DateResolver())] == ["2024-06-08"]
    assert [m.value for m in find_dates("What did we do last weekend?", base, DateResolver())] == ["2024-06-01"]


def test_the_bundled_sample_plans_the_garden_for_the_coming_saturday(hm_extractor):
    from importlib import resources

    from hypermem.ingest.locomo import load_locomo

    (sample,) = load_locomo(str(resources.files("hypermem.samples").joinpath("sample-conversation.json")))
    turn = next(m for m in sample.messages if m.message_id == "D3:8")
    assert turn.timestamp.date().isoformat() == "2024-06-02"  # a Sunday
    assert [t.value for t in hm_extractor.extract([turn.text], [turn.timestamp])[0].times] == ["2024-06-08"]
