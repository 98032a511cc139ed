"""Date and time-of-day resolution, shared by ingest (Time elements, HingeMem §3.2) and retrieval (query dates).

``DateResolver.resolve(surface, base, future=...)`` turns a date phrase said at ``base`` into a
``TimeMention`` with an ISO value:

- past-leaning by default ("last Saturday", "on the 14th" said after the 14th, "two days ago");
- future-leaning when the sentence is about a plan (``is_future(sentence)``: "will", "going to",
  "see you", "can't wait", "tomorrow", ...), and always for "next …", "this coming …", "in two weeks":
  "See you on Saturday" said on Sunday 2 June 2024 is Saturday 8 June 2024;
- a bare weekday ("on Sunday", "Sunday") follows the tense of its own clause (``date_lean``): the cue
  nearest to it decides, future ("we're going hiking", "wish me luck", "how about") for the coming
  weekday, past ("went", "had", "-ed", "ago") for the past one; a present-tense clause ("the festival is
  on Sunday", "Saturday works for me") or one without any cue means the coming weekday (in LoCoMo every
  story-told bare weekday has a past cue: ``tests/test_dates.py``). The message's own weekday is a week
  away in the direction of the tense ("see you on Friday" said on a Friday is next Friday, "we went on
  Friday" the Friday before), since that day itself is "today"; "this Friday" said on a Friday is today;
- abbreviated weekdays ("last Tues", "next Fri", "this Sat", "on Wed.") are resolved (``abbreviated_weekdays``:
  spaCy leaves them out of its DATE spans); a part of the day after a weekday ("Wednesday afternoon") names
  that day;
- a day and month without a year ("14 July") take the year that puts the date nearest to ``base``
  (the next one for a plan);
- a time of day ("at 3pm", "15:30") is kept: ``2024-06-08T15:00``, with the offset of ``base``
  (or the one the phrase names: "15:30 UTC", "9am +02:00") when known.

Phrases none of the rules covers go to dateparser (``PREFER_DATES_FROM`` past or future).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from functools import lru_cache

from dateparser.date import DateDataParser

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
          "november", "december")  # fmt: skip
WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTH = "|".join(MONTHS) + "|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
_WEEKDAY = "|".join(WEEKDAYS)
_ABBREVIATIONS = {"mon": 0, "tue": 1, "tues": 1, "wed": 2, "thu": 3, "thur": 3, "thurs": 3, "fri": 4, "sat": 5,
                  "sun": 6}  # fmt: skip
_ABBREVIATION = "|".join(sorted(_ABBREVIATIONS, key=len, reverse=True))
_ABBREVIATION_IN_TEXT = r"tues?|thurs?|thur|thu|fri|(?-i:Mon|Wed|Sat|Sun)"  # "this sun", "last wed…" are words
_WEEKDAY_MOD = r"next|this coming|coming|this past|this|last|past"
_NUMBER = r"a few|a couple of|an?|\d+|one|two|three|four|five|six|seven|eight|nine|ten"
_WORD_NUMBERS = {"a few": 3, "a couple of": 2, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4,
                 "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": 30, "year": 365}
_UNIT_GRANULARITY = {"day": "day", "week": "day", "fortnight": "day", "month": "month", "year": "year"}

# A phrase worth resolving names a point in time, not a duration ("two years", "a while").
_POINT_IN_TIME = re.compile(
    rf"\b(ago|last|yesterday|today|tonight|tomorrow|next|this|coming|weekend|noon|midnight|{_MONTH}|{_WEEKDAY}|{_ABBREVIATION_IN_TEXT}"
    rf"|(19|20)\d\d|\d{{1,2}}(st|nd|rd|th)|\d{{1,2}}(:\d\d)?\s*(am|pm|a\.m\.|p\.m\.)|\d{{1,2}}:\d\d"
    rf"|in ({_NUMBER}) (days?|weeks?|fortnights?|months?|years?))\b",
    re.I,
)
# Plans and future tense: a bare weekday or date in such a sentence lies ahead of the moment it was said.
_FUTURE = re.compile(
    r"\b(will|won't|shall|going to|gonna|plan(s|ned|ning)? (to|on)|see you|can't wait|cannot wait|looking forward"
    r"|tomorrow|next|this coming|upcoming|about to|scheduled|booked|hoping to|hope to|intend to|let's|let us"
    r"|are you free|\w+'ll)\b",
    re.I,
)
# The tense of a weekday's clause (``date_lean``): the cue nearest to the weekday decides.
_TENSE_CUES = re.compile(
    r"\b(?P<future>will|won't|shall|going|gonna|plan(s|ning)? (to|on)|see you|can't wait|cannot wait|looking forward"
    r"|tomorrow|next|this coming|upcoming|about to|hoping to|hope to|intend to|let's|let us|are you free"
    r"|wish me luck|how about|what about|sounds? good|works for|would you like|wanna|want to|\w+'ll)\b"
    r"|\b(?P<past>was|wasn't|were|weren't|went|did|didn't|had|got|came|saw|made|took|won|met|ran|bought|found|told"
    r"|felt|gave|left|brought|thought|spent|taught|caught|held|kept|wrote|began|sang|ate|drove|flew|fell|lost|paid"
    r"|said|sent|built|heard|knew|slept|wore|ago|yesterday|last|used to|\w{3,}ed)\b"
    r"|\b(?P<present>am|is|isn't|are|aren't|\w+'m|\w+'re|(it|that|there|here|he|she|what|who|which|this)'s(?! been))\b",
    re.I,
)
# -ed words that are no past tense: feelings said now ("so excited for Sunday"), plans, and words ending in -eed
_NOT_PAST = frozenset(("excited", "interested", "thrilled", "pleased", "stressed", "worried", "scared", "tired",
                       "bored", "amazed", "overwhelmed", "supposed", "booked", "headed", "scheduled", "planned", "need",
                       "indeed", "speed", "proceed", "exceed", "succeed", "feed", "seed", "breed", "bleed",
                       "hundred"))  # fmt: skip
# "-ed" after these is a state now ("we're getting married on Saturday", "I'm invited on Sunday")
_STATE_BEFORE = re.compile(r"\b(am|is|are|'m|'re|be|being|get|getting|so|really|very|too|feel|feeling)\s+$", re.I)
_CLAUSE_BREAK = re.compile(
    r"[,;:]|\s[-\u2013\u2014]\s|\b(and|but|because|so|while|though|although|when|after|before|then)\b", re.I
)
_NAMES_WEEKDAY = re.compile(rf"\b({_WEEKDAY}|{_ABBREVIATION})\b", re.I)
_FALLBACK_DATES = re.compile(
    rf"\b((a few|\d+|one|two|three|four|five|six|seven|eight|nine|ten) (days?|weeks?|months?|years?) ago"
    rf"|last (night|weekend|week|month|year|{_WEEKDAY}|{_ABBREVIATION_IN_TEXT})|yesterday|today|tonight|this (morning|weekend|week|month|year)"
    rf"|(in )?({'|'.join(MONTHS)})( \d{{4}})?|(19|20)\d\d)\b",
    re.I,
)
_TIME_OF_DAY = re.compile(
    r"(?:\b(?:at|by|around|from)\s+)?\b(?:(?P<h12>\d{1,2})(?::(?P<m12>\d{2}))?\s*(?P<ampm>am|pm|a\.m\.|p\.m\.)"
    r"|(?P<h24>\d{1,2}):(?P<m24>\d{2})|(?P<word>noon|midday|midnight))"
    r"(?:\s*(?P<offset>Z\b|UTC\b|GMT\b|[+-]\d{2}:?\d{2}\b))?",
    re.I,
)
_LEADING = re.compile(  # "in" stays before an amount: "in two weeks" is a point, "two weeks" a duration
    rf"^(on|in(?! ({_NUMBER}) (day|week|fortnight|month|year)s?\b)|at|since|by|around|during|for|from|until|till|the)\s+",
    re.I,
)
_ORDINAL_DAY = r"(?P<day>\d{1,2})(st|nd|rd|th)?"
_DAY_MONTH = re.compile(
    rf"^(?:{_ORDINAL_DAY}(?: of)? (?P<month>{_MONTH})\.?|(?P<month2>{_MONTH})\.? (?P<day2>\d{{1,2}})(st|nd|rd|th)?)$",
    re.I,
)
_DAY_ONLY = re.compile(r"^(the )?(?P<day>\d{1,2})(st|nd|rd|th)$", re.I)
_WEEKDAY_PHRASE = re.compile(  # "Wednesday afternoon" is that Wednesday
    rf"^(?P<mod>{_WEEKDAY_MOD})?\s*(?P<weekday>{_WEEKDAY}|{_ABBREVIATION})\.?(\s+(morning|afternoon|evening|night))?$",
    re.I,
)
# "last Tues", "next Fri at 5pm", "on Wed.": abbreviations only after a modifier or "on" ("Sat", "Sun", "Wed" alone
# are words); after "on" not before a capitalised word ("on Sun Street" is a place) and without the "on".
_ABBREVIATED_WEEKDAY = re.compile(
    rf"(\b({_WEEKDAY_MOD})\s+({_ABBREVIATION_IN_TEXT})\b|(?<=\bon\s)({_ABBREVIATION_IN_TEXT})\b(?!\s+(?-i:[A-Z])))\.?(\s*(at|,|around|by|from)?\s*(\d{{1,2}}(:\d\d)?\s*(am|pm|a\.m\.|p\.m\.)"
    rf"|\d{{1,2}}:\d\d|noon|midday|midnight)\b)?",
    re.I,
)
_MONTH_ONLY = re.compile(rf"^(?P<mod>next|this coming|this|last)?\s*(?P<month>{'|'.join(MONTHS)})$", re.I)
_IN_AMOUNT = re.compile(rf"^(in|within) (?P<n>{_NUMBER}) (?P<unit>day|week|fortnight|month|year)s?( time)?$", re.I)
_AGO = re.compile(rf"\b(?P<n>{_NUMBER}) (?P<unit>day|week|month|year)s? ago\b", re.I)


@dataclass(frozen=True)
class TimeMention:
    """A resolved time. ``value`` is ISO 8601 at its ``granularity``: year ``2023``, month ``2023-05``,
    day ``2023-05-07`` or minute ``2023-05-07T15:30`` (``+02:00`` appended when the offset is known)."""

    surface: str
    value: str
    granularity: str

    @property
    def display(self) -> str:
        """Human form: ``7 May 2023``, ``May 2023``, ``2023`` or ``7 May 2023, 15:30``."""
        if self.granularity == "minute":
            moment = datetime.fromisoformat(self.value)
            offset = self.value[16:]
            return moment.strftime("%-d %B %Y, %H:%M") + (f" {offset}" if offset else "")
        parts = [int(p) for p in self.value.split("-")]
        if self.granularity == "day":
            return datetime(parts[0], parts[1], parts[2]).strftime("%-d %B %Y")
        if self.granularity == "month":
            return datetime(parts[0], parts[1], 1).strftime("%B %Y")
        return str(parts[0])


def said_on(timestamp: str) -> str:
    """``"8 May 2023"`` from an ISO timestamp: the date label of fact lines and context lines alike."""
    return datetime.fromisoformat(timestamp).strftime("%-d %B %Y")


@lru_cache(maxsize=50_000)
def mentions_time(text: str) -> bool:
    """True when ``text`` names a point in time ("yesterday", "last week", "in May", "2022", "3 days ago").

    Cached (texts): the turn ranker asks it of the same stored turns query after query."""
    return bool(_FALLBACK_DATES.search(text))


def is_future(sentence: str) -> bool:
    """True when ``sentence`` speaks of a plan or the future ("will", "going to", "see you", "next", ...)."""
    return bool(_FUTURE.search(sentence))


# A sentence reaches at most this many characters each side of a date phrase: a text without sentence breaks (a
# pasted log, a 1 MB run of words) would otherwise be scanned whole for every phrase in it (quadratic: hours).
SENTENCE_WINDOW = 1_000


def sentence_around(text: str, start: int, end: int) -> str:
    """The sentence of ``text`` holding the span ``start``..``end`` (bounded by . ! ? or a line break, and by
    ``SENTENCE_WINDOW`` characters each side of the span)."""
    left, right = _sentence_bounds(text, start, end)
    return text[left:right]


def _sentence_bounds(text: str, start: int, end: int) -> tuple[int, int]:
    """Where the sentence around ``text[start:end]`` begins and ends (``sentence_around``)."""
    floor, ceiling = max(0, start - SENTENCE_WINDOW), min(len(text), end + SENTENCE_WINDOW)
    left = max(text.rfind(mark, floor, start) for mark in ".!?\n")
    rights = [i for mark in ".!?\n" if (i := text.find(mark, end, ceiling)) != -1]
    return (left + 1 if left != -1 else floor), (min(rights) if rights else ceiling)


def date_lean(text: str, start: int, end: int) -> bool | None:
    """The ``future`` argument of ``DateResolver.resolve`` for the date phrase ``text[start:end]``.

    A phrase naming a weekday takes the tense of its own clause: the cue nearest to it there (or, when
    the clause has none, in its sentence) decides: True for a plan ("we're going hiking on Sunday", "wish
    me luck", "how about Friday"), False for a story ("we went hiking on Sunday", "it was great", "-ed"),
    None for the present tense ("the festival is on Sunday") or no cue. Any other phrase: ``is_future``
    of its sentence."""
    left, right = _sentence_bounds(text, start, end)  # where the sentence begins and ends in ``text``
    sentence = text[left:right]
    if not _NAMES_WEEKDAY.search(text, start, end):
        return is_future(sentence)
    sentence = sentence.replace("\u2019", "'")
    at, until = start - left, end - left
    cuts = [0, *sorted({c for m in _CLAUSE_BREAK.finditer(sentence) for c in (m.start(), m.end())}), len(sentence)]
    clauses = [(lo, hi) for lo, hi in zip(cuts, cuts[1:]) if _TENSE_CUES.search(sentence, lo, hi) or lo <= at < hi]
    own = next(k for k, (lo, hi) in enumerate(clauses) if lo <= at < hi or hi == len(sentence))
    # The phrase's own clause, then its neighbours outwards, the one before first ("we went hiking and
    # camping on Sunday"; "on Friday, I got great news").
    for k in sorted(range(len(clauses)), key=lambda k: (abs(k - own), k > own)):
        lo, hi = clauses[k]
        cues = []
        for m in _TENSE_CUES.finditer(sentence, lo, hi):
            if m.end() > at and m.start() < until:
                continue  # the phrase's own "last" or "next"
            if m["past"] and (m["past"].lower() in _NOT_PAST or _STATE_BEFORE.search(sentence, 0, m.start())):
                continue
            distance = at - m.end() if m.end() <= at else m.start() - until
            cues.append((distance, True if m["future"] else False if m["past"] else None))
        if cues:
            return min(cues, key=lambda cue: cue[0])[1]
    return None


def _iso(moment: date, granularity: str) -> str:
    if granularity == "year":
        return f"{moment.year:04d}"
    if granularity == "month":
        return f"{moment.year:04d}-{moment.month:02d}"
    return moment.isoformat()


def _amount(word: str) -> int:
    word = word.lower()
    return _WORD_NUMBERS[word] if word in _WORD_NUMBERS else int(word)


def _month_number(name: str) -> int:
    name = name.lower()
    return next(i for i, month in enumerate(MONTHS, start=1) if month.startswith(name[:3]))


def _nearest_year(month: int, day: int, base: date, future: bool) -> date | None:
    """The date ``day``/``month`` nearest to ``base``, or the next one on or after ``base`` when ``future``."""
    options = []
    for year in (base.year - 1, base.year, base.year + 1):
        try:
            options.append(date(year, month, day))
        except ValueError:
            continue
    if future:
        options = [d for d in options if d >= base]
    return min(options, key=lambda d: abs((d - base).days), default=None)


def _weekday(match: re.Match, base: date, lean: bool | None) -> date:
    """The day a weekday phrase names: "last"/"past" the one before ``base``, "next"/"coming" the one after;
    a bare weekday the one after unless its clause is in the past (``lean`` False). The weekday of ``base``
    itself is a week away ("today" would name that day); only "this Friday" said on a Friday is ``base``."""
    name = match["weekday"].lower()
    target = WEEKDAYS.index(name) if name in WEEKDAYS else _ABBREVIATIONS[name]
    mod = (match["mod"] or "").lower()
    after = (target - base.weekday()) % 7
    before = (base.weekday() - target) % 7
    if mod in ("last", "past", "this past"):
        return base - timedelta(days=before or 7)
    if mod in ("next", "coming", "this coming"):
        return base + timedelta(days=after or 7)
    if mod == "this":
        return base - timedelta(days=before) if lean is False else base + timedelta(days=after)
    return base - timedelta(days=before or 7) if lean is False else base + timedelta(days=after or 7)


def _rules(phrase: str, base: date, lean: bool | None) -> tuple[date, str] | None:
    """Phrases resolved by hand: those dateparser leaves unresolved or resolves the wrong way round.
    ``lean`` is True for a plan, False for a story, None when the clause says neither (weekdays only)."""
    text = phrase.lower().strip()
    future = bool(lean)
    if m := _AGO.search(text):
        unit = m["unit"]
        return base - timedelta(days=_UNIT_DAYS[unit] * _amount(m["n"])), _UNIT_GRANULARITY[unit]
    if m := _IN_AMOUNT.match(text):
        unit = m["unit"]
        return base + timedelta(days=_UNIT_DAYS[unit] * _amount(m["n"])), _UNIT_GRANULARITY[unit]
    if "last weekend" in text or text in ("this past weekend", "past weekend") or (text == "weekend" and not future):
        return base - timedelta(days=(base.weekday() - 5) % 7 or 7), "day"  # the Saturday before base
    if text in ("this weekend", "this coming weekend", "weekend"):
        return base + timedelta(days=(5 - base.weekday()) % 7), "day"  # the coming Saturday (today on a Saturday)
    if text == "next weekend":
        return base + timedelta(days=(5 - base.weekday()) % 7 or 7), "day"
    if text in ("last night", "yesterday evening", "yesterday morning", "yesterday"):
        return base - timedelta(days=1), "day"
    if text in ("tonight", "this morning", "this evening", "this afternoon", "today"):
        return base, "day"
    if text in ("tomorrow", "tomorrow morning", "tomorrow evening", "tomorrow afternoon", "tomorrow night"):
        return base + timedelta(days=1), "day"
    if text == "the day after tomorrow":
        return base + timedelta(days=2), "day"
    if m := _WEEKDAY_PHRASE.match(text):
        return _weekday(m, base, lean), "day"
    if m := _DAY_MONTH.match(text):
        day, month = int(m["day"] or m["day2"]), _month_number(m["month"] or m["month2"])
        found = _nearest_year(month, day, base, future)
        return (found, "day") if found else None
    if m := _DAY_ONLY.match(text):
        day = int(m["day"])
        for shift in (0, 1, 2) if future else (0, -1, -2):
            year, month = divmod(base.month - 1 + shift, 12)
            try:
                candidate = date(base.year + year, month + 1, day)
            except ValueError:
                continue
            if (candidate >= base) if future else (candidate <= base):
                return candidate, "day"
        return None
    if (m := _MONTH_ONLY.match(text)) and (future or (m["mod"] or "").lower() in ("next", "this coming")):
        month = _month_number(m["month"])
        year = base.year + (1 if month < base.month or (month == base.month and m["mod"]) else 0)
        return date(year, month, 1), "month"
    return None


class DateResolver:
    """Resolve date phrases against the moment they were said. Cached; ``resolve`` returns None when it cannot."""

    def __init__(self) -> None:
        self._parsers = {
            lean: DateDataParser(languages=["en"], settings={"PREFER_DATES_FROM": lean, "RETURN_TIME_AS_PERIOD": True})
            for lean in ("past", "future")
        }

    def resolve(self, surface: str, base: datetime, *, future: bool | None = False) -> TimeMention | None:
        """``surface`` ("next Saturday at 3pm") said at ``base``; ``future`` True when its sentence is about a
        plan, False for a story, None when its clause has no cue either way (``date_lean``): a bare weekday
        is then the coming one, any other phrase leans to the past as for False."""
        offset = base.strftime("%z") if base.tzinfo is not None else ""
        return self._resolve(surface.strip(), base.date(), future, offset)

    @lru_cache(maxsize=20_000)  # noqa: B019 - one resolver lives as long as the process
    def _resolve(self, surface: str, base: date, future: bool | None, offset: str) -> TimeMention | None:
        if not surface or not _POINT_IN_TIME.search(surface):
            return None
        clock = _TIME_OF_DAY.search(surface)
        phrase = surface
        if clock:
            phrase = (surface[: clock.start()] + " " + surface[clock.end() :]).strip(" ,")
        phrase = _LEADING.sub("", _LEADING.sub("", phrase)).strip(" ,")
        if not phrase:
            if clock is None:
                return None
            day: tuple[date, str] | None = (base, "day")
        else:
            day = _rules(phrase, base, future) or self._dateparser(phrase, base, bool(future))
        if day is None:
            return None
        moment, granularity = day
        if moment.year < 1900 or moment > base + timedelta(days=3 * 365):
            return None
        value = _iso(moment, granularity)
        if clock is not None and granularity == "day":
            value, granularity = f"{value}T{_clock(clock)}{_offset(clock['offset']) or _colon(offset)}", "minute"
        return TimeMention(surface, value, granularity)

    def _dateparser(self, phrase: str, base: date, future: bool) -> tuple[date, str] | None:
        parser = self._parsers["future" if future else "past"]
        parser._settings.RELATIVE_BASE = datetime(base.year, base.month, base.day, 12)  # read per call
        data = parser.get_date_data(phrase)
        if data is None or data.date_obj is None:
            return None
        # a year ("Q3 2024" too), a month, else a day ("time", "week", "part_of_day": "14 July afternoon")
        granularity = {"year": "year", "quarter": "year", "month": "month"}.get(data.period, "day")
        return data.date_obj.replace(tzinfo=None).date(), granularity


def _clock(match: re.Match) -> str:
    """``HH:MM`` from a time-of-day match."""
    if word := match["word"]:
        return "00:00" if word.lower() == "midnight" else "12:00"
    if match["h24"] is not None:
        return f"{int(match['h24']) % 24:02d}:{match['m24']}"
    hour = int(match["h12"]) % 12 + (12 if match["ampm"].lower().startswith("p") else 0)
    return f"{hour:02d}:{match['m12'] or '00'}"


def _colon(offset: str) -> str:
    """``+0200`` -> ``+02:00``; empty stays empty."""
    return f"{offset[:3]}:{offset[3:]}" if offset else ""


def _offset(named: str | None) -> str:
    if not named:
        return ""
    if named.upper() in ("Z", "UTC", "GMT"):
        return "+00:00"
    return _colon(named.replace(":", ""))


def find_dates(text: str, base: datetime, resolver: DateResolver) -> list[TimeMention]:
    """Dates found by pattern alone (no NER): the degraded ingest path, and queries."""
    found = []
    for match in _FALLBACK_DATES.finditer(text):
        future = date_lean(text, match.start(), match.end())
        if mention := resolver.resolve(match.group(0), base, future=future):
            found.append(mention)
    return found


def is_weekday_phrase(text: str) -> bool:
    """True when ``text`` is a weekday phrase alone: "Friday", "Fri.", "Last Tues", "this coming Wed"."""
    return _WEEKDAY_PHRASE.match(text.strip()) is not None


def abbreviated_weekdays(text: str) -> list[tuple[int, int]]:
    """Spans of abbreviated weekday phrases ("last Tues", "next Fri at 5pm", "Wed." after "on"), which spaCy's NER
    leaves out."""
    return [(m.start(), m.end()) for m in _ABBREVIATED_WEEKDAY.finditer(text)]


def annotate_dates(text: str, times: list[TimeMention]) -> str:
    """``text`` with each resolved relative date spelled out: "yesterday" -> "yesterday (7 May 2023)".

    The n-th mention of a phrase annotates the phrase's n-th occurrence in ``text``, so a phrase said three times is
    annotated three times, once each; a mention beyond the phrase's occurrences (``times`` of a whole message, ``text``
    one passage of it) annotates nothing. An occurrence inside a phrase annotated already ("Monday" in "last Monday")
    is passed over for the next one."""
    spans: list[tuple[int, int, str]] = []
    seen: dict[str, int] = {}  # phrase -> where its next occurrence is searched from
    for mention in times:
        if mention.display.lower() in mention.surface.lower() or not mention.surface:
            continue
        at = text.find(mention.surface, seen.get(mention.surface, 0))
        while at >= 0 and any(start < at + len(mention.surface) and at < stop for start, stop, _ in spans):
            at = text.find(mention.surface, at + 1)  # inside a phrase annotated already: the next occurrence
        if at < 0:
            continue
        seen[mention.surface] = at + len(mention.surface)
        spans.append((at, at + len(mention.surface), mention.display))
    out, end = [], 0
    for _, stop, display in sorted(spans):
        out += [text[end:stop], f" ({display})"]
        end = stop
    return "".join(out) + text[end:]
