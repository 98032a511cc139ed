"""NER noise on the no-LLM path (issue 9 part 7): greetings fused to names, speakers tagged as places,
pets as persons, places after "moved to", and potential questions kept out of a fact's words.
Table-driven through the real spaCy model; sentences are our own."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from hypermem.ingest.elements import (
    ElementExtractor,
    TurnElements,
    is_pet_name,
    may_name_entity,
    moved_to_places,
    ner_pieces,
    person_name,
    sentence_spans,
)
from hypermem.ingest.plan import fact_row
from hypermem.model import Fact

SPEAKERS = frozenset({"Caroline", "Gina", "Jon", "Ana", "Mel"})

# (sentence, persons that must be found, names that must not be persons, locations that must be found)
CASES = [
    ("Hey Mel, how was the trip?", {"Mel"}, {"Hey Mel"}, set()),
    ("Yep John, we went there together.", {"John"}, {"Yep John"}, set()),  # an interjection fused to a name
    ("Hi Caroline, thanks for the photos!", set(), {"Hi Caroline"}, set()),
    ("Wow Caroline, that painting looks amazing!", {"Caroline"}, set(), set()),
    ("That's awesome, Gina! I went to the networking event.", {"Gina"}, set(), set()),
    ("My dog Max loves the beach.", set(), {"Max"}, set()),
    ("We got a puppy named Oscar last week.", set(), {"Oscar"}, set()),
    ("Our cat's name is Luna and she sleeps all day.", set(), {"Luna"}, set()),
    ("I walked the dog with Anna yesterday.", set(), set(), set()),
    ("I moved to Lisbon last month.", set(), {"Lisbon"}, {"Lisbon"}),
    ("Ana finally moved to New York in March.", set(), {"New York"}, {"New York"}),
    ("Gina is bringing her friend Jon.", {"Jon"}, set(), set()),
]


@pytest.mark.parametrize(("sentence", "persons", "not_persons", "locations"), CASES)
def test_ner_rules(hm_extractor, sentence, persons, not_persons, locations):
    found = hm_extractor.extract([sentence], [datetime(2024, 6, 2, 10)], SPEAKERS)[0]
    assert persons <= set(found.persons)
    assert not not_persons & set(found.persons)
    assert locations <= set(found.locations)
    assert not SPEAKERS & set(found.locations)


# NER tags weekday words as persons ("Last Tues", "Fri") and places ("Fri", "Sat", "Thurs"): they are times.
# 1 March 2024 is a Friday.
WEEKDAY_ENTITIES = [
    ("Last Tues was my birthday.", "2024-02-27"),  # PERSON "Last Tues"
    ("It was Last Tues, I think.", "2024-02-27"),  # PERSON "Last Tues"
    ("I met Jon last Tues.", "2024-02-27"),  # PERSON "Tues"
    ("See you Fri!", "2024-03-08"),  # PERSON "Fri"
    ("She flew in Fri.", "2024-02-23"),  # GPE "Fri"
    ("We left Sat.", "2024-02-24"),  # LOC "Sat"
    ("We left on Thurs.", "2024-02-29"),  # GPE "Thurs"
]


@pytest.mark.parametrize(("sentence", "day"), WEEKDAY_ENTITIES)
def test_weekdays_are_times_never_persons_or_places(hm_extractor, sentence, day):
    found = hm_extractor.extract([sentence], [datetime(2024, 3, 1, 10)], SPEAKERS)[0]
    assert [*found.persons, *found.locations] == (["Jon"] if "Jon" in sentence else [])
    assert [t.value for t in found.times] == [day]


@pytest.mark.parametrize(
    ("span", "name"),
    [("Hey Mel", "Mel"), ("Thanks Gina", "Gina"), ("Good morning Ana", "Ana"), ("Ana's", "Ana"), ("Hey", "")],
)
def test_person_name_drops_greetings(span, name):
    assert person_name(span) == name


@pytest.mark.parametrize(
    ("text", "name", "pet"),
    [("my dog Max barked", "Max", True), ("a kitten, named Bo, arrived", "Bo", True),
     ("the horse's name is Star", "Star", True), ("my friend Max barked", "Max", False),
     ("his name is Tom and he teaches", "Tom", False)],
)  # fmt: skip
def test_pet_names(text, name, pet):
    start = text.index(name)
    assert is_pet_name(text, start, start + len(name)) is pet


@pytest.mark.parametrize(
    ("text", "read"),
    [
        ("It was great. That was so much fun!", False),  # closed-class sentence starters only
        ("I think so, I'm glad.\nThe cat is nice", False),  # "I" forms anywhere, a line's first word
        ('Yes. "The thing', False),  # a chat opener, then a starter after a quote
        ('Yesterday. "The thing', True),  # "Yesterday" is a date cue
        ("Glad you came! Hope is here.", True),  # an opener is no cue, but a name can follow it
        ("Glad you came! Wanna go? Btw, nice.", True),  # "Btw" is no opener: read (NER finds nothing to keep)
        ("Will is coming over.", True),  # a starter that can be a name is read
        ("Thanks! you and 'Scout' are the best", True),  # a name after a quote
        ("wow, you and Mel", True),
        ("see you tomorrow", True),  # a date cue
        ("we met in may", True),
        ("it is what it is", False),
    ],
)
def test_ner_reads_only_text_that_may_name_an_entity(hm_extractor, text, read):
    """The NER gate skips a text only when no kept element could come from it: what NER finds in a skipped
    text, read by the same rules, is nothing."""
    assert may_name_entity(text) is read
    if not read:
        found = TurnElements()
        hm_extractor._read(hm_extractor._nlp(text), 0, text, datetime(2024, 6, 2, 10), {}, found)
        assert found == TurnElements()
        assert hm_extractor.extract([text], [datetime(2024, 6, 2, 10)], SPEAKERS)[0] == TurnElements()


def test_sentence_spans_cut_after_end_punctuation_but_not_inside_a_name():
    text = "We went to St. Louis. It was fun!\nSee Dr. Ana Lee? U.S. trip"
    spans = sentence_spans(text)
    assert [text[a:b] for a, b in spans] == [
        "We went to St. Louis. ",
        "It was fun!\n",
        "See Dr. Ana Lee? ",
        "U.S. trip",
    ]
    assert spans[0][0] == 0 and spans[-1][1] == len(text)


def test_ner_reads_only_the_sentences_that_may_name_an_entity():
    text = (
        "It was great, really. That was so much fun for all of us, and we stayed late! "
        "Then Michael drove us home. It is what it is, and it was so good!"
    )
    pieces = ner_pieces(text)
    # the first two sentences hold no name and no date cue; the third is short, so it takes the next as context,
    # of which NER reads the 7 words after the name
    assert pieces == [(text.index("Then"), "Then Michael drove us home. It is what it")]
    found = ElementExtractor().extract([text], [datetime(2024, 6, 2, 10)], SPEAKERS)[0]
    assert found.persons == ["Michael"]


def test_spans_of_a_later_piece_are_read_in_the_turn_s_coordinates():
    text = "It was great, really, we all loved it so much. That was so much fun for all of us! We fly to Lisbon in two weeks."
    assert ner_pieces(text)[0][0] == text.index("We fly")
    found = ElementExtractor().extract([text], [datetime(2024, 6, 2, 10)], SPEAKERS)[0]
    assert found.locations == ["Lisbon"]
    assert [(m.surface, m.display) for m in found.times] == [("in two weeks", "16 June 2024")]


def test_ner_reads_the_words_around_each_cue_of_a_long_sentence(hm_extractor):
    """NER sees about four tokens either side of a word, so it reads ``NER_WINDOW_BEFORE`` words before each cue
    and ``NER_WINDOW_AFTER`` after it; windows that overlap are one piece, and each keeps its turn's offset."""
    text = (
        "so after all that waiting around at the station for what felt like hours we finally got on the train "
        "to Porto with my cousin and then spent the whole long afternoon walking along the river until it got "
        "dark and cold, and next Friday we will go back with Ana and Rui."
    )
    pieces = ner_pieces(text)
    assert [piece for _, piece in pieces] == [
        "got on the train to Porto with my cousin and then spent the",  # 5 words, the cue, 7 words
        "got dark and cold, and next Friday we will go back with Ana and Rui.",  # three cues' windows merged
    ]
    assert all(text[offset : offset + len(piece)] == piece for offset, piece in pieces)
    at = datetime(2024, 6, 2, 10)
    found = hm_extractor.extract([text], [at], SPEAKERS)[0]
    whole = TurnElements()  # the same rules over NER of the whole text
    hm_extractor._read(hm_extractor._nlp(text), 0, text, at, {}, whole)
    hm_extractor._read_patterns(text, at, {}, whole)
    assert found == whole and [m.display for m in found.times] == ["7 June 2024"] and "Rui" in found.persons


def test_moved_to_places():
    assert moved_to_places("We moved to the Netherlands, then relocated to San Diego.") == ["Netherlands", "San Diego"]
    assert moved_to_places("I moved to tears by the film.") == []
    assert moved_to_places("Moved to Berlin! The call moved to Monday.") == ["Berlin"]
    assert moved_to_places("The call moved to Thurs, the party to Next Fri.") == []


def test_potential_questions_stay_out_of_the_fact_words():
    fact = Fact("m", "m/fact/D1:1#0", "m/episode/D1:1", "Ana said on 1 May 2024: I march on Sunday.",
                ["When did Ana mention march?"], ["march", "sunday"], "2024-05-05", ["m/turn/D1:1"])  # fmt: skip
    row = fact_row(fact, np.zeros(3, dtype=np.float32))
    assert "When did" not in row["text"] and row["potential"] == ["When did Ana mention march?"]
    assert row["text"] == "Ana said on 1 May 2024: I march on Sunday. march sunday"
