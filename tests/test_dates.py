"""Dates said in conversation (issue 9 part 3): plans lean to the future, a day and month take the nearest
year, a time of day and an offset are kept. Table-driven through the real ingest path (spaCy NER +
``hypermem.dates``) and through the pattern path used for queries."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from conftest import LOCOMO

from hypermem.dates import DateResolver, TimeMention, date_lean, find_dates, is_future

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


# A bare weekday takes the tense of its own clause. 1 March 2024 is a Friday: the coming Sunday is 3 March,
# the past one 25 February; the coming Monday 4 March, the past one 26 February.
FRIDAY = "2024-03-01T10:00"
WEEKDAY_SENTENCES = [
    ("We're going hiking on Sunday", "2024-03-03"),
    ("We went hiking on Sunday", "2024-02-25"),
    ("My exam is on Monday, wish me luck", "2024-03-04"),
    ("My exam was on Monday and it went well.", "2024-02-26"),
    ("The red kite festival is on Sunday", "2024-03-03"),
    ("The red kite festival was on Sunday", "2024-02-25"),
    ("I'm gonna paint the shed on Sunday.", "2024-03-03"),
    ("We hiked on Sunday.", "2024-02-25"),
    ("Does Saturday sound good?", "2024-03-02"),
    ("On Saturday, I got great news.", "2024-02-24"),
    ("We went hiking and camping on Sunday, and I will tell you all about it.", "2024-02-25"),
    ("I was sick all week, but the exam is on Monday.", "2024-03-04"),
    ("I'm so excited for Sunday!", "2024-03-03"),
    ("We're getting married on Saturday.", "2024-03-02"),  # "-ed" after "getting": no past tense
    ("We're headed to the beach on Sunday.", "2024-03-03"),
    # the message's own weekday: a week away in the direction of the tense ("today" names the day itself)
    ("See you on Friday!", "2024-03-08"),
    ("The market is on Friday.", "2024-03-08"),
    ("We went to the market on Friday.", "2024-02-23"),
    # abbreviations after last / next / this, which spaCy leaves out of its DATE spans
    ("I just joined a new activist group last Tues.", "2024-02-27"),
    ("I went to a poetry reading last Fri - it was powerful!", "2024-02-23"),
    ("We met last Thurs.", "2024-02-29"),
    ("Wanna see my moves next Fri? Can't wait!", "2024-03-08"),
    ("Is the party this Sat?", "2024-03-02"),
    ("Let's meet next Tues at 5pm.", "2024-03-05T17:00"),
    # an abbreviation after "on", its period kept; a weekday with a part of the day is that day
    ("We went to the zoo on Wed.", "2024-02-28"),
    ("See you on Tue.", "2024-03-05"),
    ("On Tues we hiked the ridge.", "2024-02-27"),
    ("I have an appointment on Wednesday afternoon.", "2024-03-06"),
    ("We met on Wednesday afternoon.", "2024-02-28"),
]


@pytest.mark.parametrize(("sentence", "expected"), WEEKDAY_SENTENCES)
def test_a_weekday_takes_the_tense_of_its_clause(hm_extractor, sentence, expected):
    times = hm_extractor.extract([sentence], [datetime.fromisoformat(FRIDAY)])[0].times
    assert [t.value for t in times] == [expected], times


def test_a_weekday_and_a_part_of_the_day_name_that_day(hm_extractor):
    base = datetime.fromisoformat(FRIDAY)
    (afternoon,) = hm_extractor.extract(["See you on Wednesday afternoon!"], [base])[0].times
    assert (afternoon.value, afternoon.granularity, afternoon.display) == ("2024-03-06", "day", "6 March 2024")
    (wednesday,) = hm_extractor.extract(["We went to the zoo on Wed."], [base])[0].times
    assert (wednesday.value, wednesday.display) == ("2024-02-28", "28 February 2024")
    july = DateResolver().resolve("14 July afternoon", base, future=True)  # dateparser's "part_of_day" period
    assert july is not None and (july.value, july.display) == ("2024-07-14", "14 July 2024")


def test_the_annotation_of_a_planned_weekday(hm_extractor):
    from hypermem.dates import annotate_dates

    text = "We're going hiking on Sunday"
    times = hm_extractor.extract([text], [datetime.fromisoformat(FRIDAY)])[0].times
    assert annotate_dates(text, times) == "We're going hiking on Sunday (3 March 2024)"


def test_each_occurrence_of_a_date_phrase_is_annotated_once():
    """The n-th mention annotates the phrase's n-th occurrence (a fresh user saw three annotations piled on the first
    "yesterday"); a passage of a message gets only its own occurrences' annotations."""
    from hypermem.dates import TimeMention, annotate_dates

    yesterday = TimeMention("yesterday", "2024-05-01", "day")
    text = "I ran yesterday, swam yesterday and cycled yesterday too"
    assert annotate_dates(text, [yesterday] * 3) == (
        "I ran yesterday (1 May 2024), swam yesterday (1 May 2024) and cycled yesterday (1 May 2024) too"
    )
    assert annotate_dates("Swam yesterday.", [yesterday] * 3) == "Swam yesterday (1 May 2024)."  # a passage
    monday = [TimeMention("last Monday", "2024-05-06", "day"), TimeMention("Monday", "2024-05-13", "day")]
    assert annotate_dates("last Monday, then Monday", monday) == "last Monday (6 May 2024), then Monday (13 May 2024)"
    assert annotate_dates("in 2023", [TimeMention("2023", "2023", "year")]) == "in 2023"  # already spelled out


@pytest.mark.parametrize(
    ("phrase", "future", "expected"),
    [
        ("Sunday", None, "2024-03-03"), ("Sunday", True, "2024-03-03"), ("Sunday", False, "2024-02-25"),
        ("Friday", None, "2024-03-08"), ("Friday", True, "2024-03-08"), ("Friday", False, "2024-02-23"),
        ("this Friday", None, "2024-03-01"), ("this Friday", False, "2024-03-01"),
        ("this Sunday", None, "2024-03-03"), ("this Sunday", False, "2024-02-25"),
        ("last Tues", True, "2024-02-27"), ("last Tue.", None, "2024-02-27"), ("next Thurs", False, "2024-03-07"),
        ("this coming Wed", False, "2024-03-06"), ("last Sat", None, "2024-02-24"), ("Tues", None, "2024-03-05"),
        ("on the 14th", None, "2024-02-14"),  # no cue: any phrase other than a weekday leans to the past
    ],
)  # fmt: skip
def test_weekday_phrases(phrase, future, expected):
    mention = DateResolver().resolve(phrase, datetime.fromisoformat(FRIDAY), future=future)
    assert mention is not None and mention.value == expected


@pytest.mark.parametrize(
    ("sentence", "phrase", "lean"),
    [
        ("We're going hiking on Sunday", "Sunday", True),
        ("We went hiking on Sunday", "Sunday", False),
        ("The festival is on Sunday", "Sunday", None),
        ("Sunday?", "Sunday", None),
        ("I went hiking last week and will go again on Sunday.", "Sunday", True),
        ("I will tell you how we hiked on Sunday, it was great.", "Sunday", False),
        ("I will call on the 14th, we went there before.", "the 14th", True),  # not a weekday: the sentence's plan
    ],
)
def test_date_lean(sentence, phrase, lean):
    start = sentence.index(phrase)
    assert date_lean(sentence, start, start + len(phrase)) is lean


def test_pattern_path_resolves_an_abbreviated_weekday():
    base = datetime.fromisoformat(FRIDAY)
    assert [m.value for m in find_dates("What did we do last Tues?", base, DateResolver())] == ["2024-02-27"]
    assert [m.value for m in find_dates("What did we do last Sat?", base, DateResolver())] == ["2024-02-24"]


def test_lowercase_sun_and_wed_are_words(hm_extractor):
    base = datetime.fromisoformat(FRIDAY)
    assert hm_extractor.extract(["This sun is too much, I need shade."], [base])[0].times == []
    assert hm_extractor.extract(["I live on Sun Street now."], [base])[0].times == []
    assert find_dates("That was the last wed couple to leave.", base, DateResolver()) == []


# LoCoMo dev turns with a weekday whose meaning the text (and the gold answer, where one exists) settles.
LOCOMO_WEEKDAYS = [
    # plans: the coming weekday (the message's own weekday a week away)
    ("conv-44", "D26:20", "Saturday", "2023-11-04"),  # said Sat 28 Oct; gold "the Saturday after October 28"
    ("conv-44", "D26:20", "Sunday", "2023-10-29"),  # "on Sunday I am going on a picnic"
    ("conv-44", "D26:21", "Saturday", "2023-11-04"),  # "Saturday works for me!"
    ("conv-48", "D26:12", "Wednesday", "2023-09-13"),  # said Fri 8 Sep: "How about Wednesday at 4?"
    ("conv-48", "D26:18", "Friday", "2023-09-15"),  # "How about Friday at 5?" then "our coffee date next week"
    ("conv-30", "D1:12", "next Fri", "2023-01-27"),
    # stories: the past weekday
    ("conv-26", "D8:2", "Last Fri", "2023-07-14"),  # gold "The Friday before 15 July 2023"
    ("conv-26", "D10:3", "last Tues", "2023-07-18"),  # gold "The Tuesday before 20 July 2023"
    ("conv-26", "D17:17", "last Fri", "2023-10-06"),
    ("conv-41", "D11:1", "last Fri", "2023-04-07"),
    ("conv-44", "D26:1", "last Wed", "2023-10-25"),
    ("conv-42", "D17:1", "Friday", "2022-07-08"),  # said Sun 10 Jul 2022: "I won ... on Friday!"
    ("conv-43", "D28:1", "Friday", "2024-01-05"),  # said Sun 7 Jan 2024: "On Friday, I got great news"
    ("conv-44", "D13:1", "Monday", "2023-07-24"),  # said Thu 27 Jul: "volunteering ... on Monday"
    ("conv-44", "D23:3", "Friday night", "2023-10-06"),  # said Fri 13 Oct, 16:22: "Friday night's ... was"
    ("conv-48", "D9:5", "Friday", "2023-03-10"),  # said Mon 13 Mar: "I hosted a class for them on Friday"
    ("conv-48", "D11:1", "Friday", "2023-03-24"),  # said Tue 28 Mar: "On Friday I had a breakthrough"
]


@pytest.mark.skipif(not LOCOMO.is_file(), reason=f"LoCoMo dev data not found at {LOCOMO}")
def test_locomo_weekdays(hm_extractor):
    from hypermem.ingest.locomo import load_locomo

    wanted = {(conv, dia) for conv, dia, _, _ in LOCOMO_WEEKDAYS}
    turns = {
        (conversation.sample_id, m.message_id): m
        for conversation in load_locomo(LOCOMO, sorted({conv for conv, _ in wanted}))
        for m in conversation.messages
        if (conversation.sample_id, m.message_id) in wanted
    }
    found = {}
    for (conv, dia), turn in turns.items():
        for t in hm_extractor.extract([turn.text], [turn.timestamp])[0].times:
            found[conv, dia, t.surface] = t.value
    assert {(c, d, s): found.get((c, d, s)) for c, d, s, _ in LOCOMO_WEEKDAYS} == {
        (c, d, s): v for c, d, s, v in LOCOMO_WEEKDAYS
    }


def test_a_sentence_reaches_a_bounded_window_around_its_phrase():
    """A text without sentence breaks (a pasted blob) is read SENTENCE_WINDOW characters each side of a date phrase,
    not whole for every phrase (quadratic: a 1 MB run of words with weekdays held an ingest for hours); a sentence
    inside the window is unchanged, and the phrase's tense still comes from its own clause."""
    from hypermem.dates import SENTENCE_WINDOW, date_lean, sentence_around

    blob = ("the garden harvest tomato basil " * 400) + "we went hiking on monday " + ("pottery class storm " * 400)
    start = blob.index("monday")
    around = sentence_around(blob, start, start + 6)
    assert len(around) == 2 * SENTENCE_WINDOW + 6 and "we went hiking on monday" in around
    assert date_lean(blob, start, start + 6) is False  # "went": a story
    text = "Hi! We are going hiking on Monday. It rained."
    at = text.index("Monday")
    assert sentence_around(text, at, at + 6) == " We are going hiking on Monday"
    assert date_lean(text, at, at + 6) is True
