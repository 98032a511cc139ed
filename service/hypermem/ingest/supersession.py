"""Which predicate family a first-person statement belongs to, for supersession (issue 9).

A later statement of the same speaker in the same family replaces an earlier one: "I moved to
Lisbon" (June) supersedes "I live in Porto" (March). Detection needs no LLM: a statement
names its family by its verb phrase (live/move, work/job, partner, pet); the facts of one speaker
and family are chained in dialogue order by ``cypher/maintain/supersession.cypher``, which sets
``superseded_by`` on every fact but the latest and links ``(newer)-[:SUPERSEDES]->(older)``.
Only change-bearing phrasings count ("my dog loves walks" does not replace "we adopted a dog").
"""

from __future__ import annotations

import re

_I = r"\b(?:I|we)(?:'ve| have)?(?:\s+(?:just|recently|finally|now|officially))*\s+"
FAMILIES: dict[str, re.Pattern] = {
    "residence": re.compile(
        rf"{_I}(?:live|lived|moved|relocated|settled|moving|relocating)\s+(?:back\s+)?(?:in|to)\b"
        r"|\b(?:I'm|I am|we're|we are)\s+(?:now\s+)?living\s+in\b|\bmy\s+new\s+(?:home|place|apartment|flat|house)\s+in\b",
        re.I,
    ),
    "work": re.compile(
        rf"{_I}(?:work|started working|got a job|got a new job|landed a job|accepted a job|got hired)\b"
        r"|\b(?:I'm|I am)\s+(?:now\s+)?working\s+(?:at|for|as)\b|\bmy\s+new\s+job\b|\bI\s+(?:quit|left)\s+my\s+job\b",
        re.I,
    ),
    "partner": re.compile(
        r"\bmy\s+(?:new\s+)?(?:boyfriend|girlfriend|partner|husband|wife|fianc[eé]e?)(?:'s name)?\s+(?:is|named)\b"
        rf"|\b(?:I'm|I am)\s+(?:now\s+)?(?:dating|engaged to|married to|single)\b|{_I}(?:started dating|got married|got engaged|broke up)\b",
        re.I,
    ),
    "pet": re.compile(
        rf"{_I}(?:got|adopted|bought|rescued)\s+(?:a|an|another)\s+(?:new\s+)?(?:dog|cat|puppy|kitten|pet|hamster|parrot|rabbit|bunny)\b",
        re.I,
    ),
}


def statement_family(text: str) -> str | None:
    """The predicate family of a first-person statement (``residence``, ``work``, ``partner``, ``pet``), or None."""
    return next((family for family, pattern in FAMILIES.items() if pattern.search(text)), None)
