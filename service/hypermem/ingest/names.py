"""The gate in front of the store for element names (Person, Location) and speakers.

NER on technical chats tags markup and code as names (spaCy read ``Dark Mode</button>\\n`` as a
Person, issue 9 §1). ``clean_name`` strips tags and entities, collapses whitespace, drops control
characters, and refuses what still looks like code or is not a name at all. Which spans are
persons is the NER's business (``hypermem.ingest.elements``); this gate only keeps the store clean. A speaker is a
person whatever the name's shape (``speaker_name``: markup and control characters removed, never refused for its
shape).
"""

from __future__ import annotations

import html
import re
import unicodedata

MAX_NAME_CHARS = 80
MAX_NAME_WORDS = 6

_TAG = re.compile(r"</?[A-Za-z][^<>]{0,200}>|</?>|<[!?][^<>]{0,200}>")
# Characters and shapes no person or place name carries: brackets, operators, call or path syntax.
_CODE = re.compile(
    r"[<>{}\[\]|\\=;`$^~*]|\(\)|::|->|=>|//|&&|^[./]|\w\.\w+\(|\b(?:def|class|return|import|function|const|var|let)\b"
    r"|\b[a-z]+[A-Z]|_\w"
)


def _printable(text: str) -> str:
    """``text`` without control/format/surrogate/unassigned characters (whitespace becomes a space)."""
    out = []
    for char in text:
        category = unicodedata.category(char)
        if char.isspace():
            out.append(" ")
        elif category[0] != "C":
            out.append(char)
    return "".join(out)


def speaker_name(raw: str) -> str | None:
    """The display name of a turn's speaker: ``raw`` with HTML entities decoded, tags removed, control characters
    dropped and whitespace collapsed, cut to ``MAX_NAME_CHARS``; None when no letter or digit is left. A speaker is a
    participant whatever the name looks like ("user_1", "bot[1]", "Bob (work)"), so neither ``clean_name``'s
    refusals of code-like or long names nor its trimming of punctuation ("user_1!" is not "user_1") applies: those
    are for names found in text."""
    text = _unmarked(raw)
    if not any(char.isalnum() for char in text):
        return None
    return text[:MAX_NAME_CHARS].rstrip()


def _unmarked(raw: str) -> str:
    """``raw`` with HTML entities decoded, tags removed, control characters dropped and whitespace collapsed ("" for
    a non-string)."""
    if not isinstance(raw, str):
        return ""
    return " ".join(_TAG.sub(" ", html.unescape(_printable(raw))).split())


def clean_name(raw: str) -> str | None:
    """A storable display name, or None when ``raw`` is not one.

    Steps: HTML entities decoded, tags removed, control characters dropped, whitespace collapsed,
    surrounding punctuation trimmed. None when nothing with a letter is left, when what is left looks
    like code (brackets, operators, ``camelCase``, ``snake_case``, call syntax), or when it exceeds
    ``MAX_NAME_CHARS`` characters or ``MAX_NAME_WORDS`` words.
    """
    text = _unmarked(raw).strip(" \"'.,:;!?-–—()")
    if not text or not any(char.isalpha() for char in text):
        return None
    if _CODE.search(text) or len(text) > MAX_NAME_CHARS or len(text.split()) > MAX_NAME_WORDS:
        return None
    return text
