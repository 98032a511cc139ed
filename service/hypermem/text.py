"""What makes a string unusable as stored or searched text, for every entry point (ingest, query).

A graph engine takes no NUL inside a parameter; a lone surrogate (JSON allows ``"\\ud83d"``)
breaks UTF-8 encoding, hashing and the tokenizer. Identifiers (message, session and speaker
names) also refuse every C0/C1 control character, tab, newline, carriage return and U+2028/U+2029 included (they are
printed as labels, where an ESC would drive the reader's terminal, and a speaker opens each line of the answer
model's context, where a newline in it would start a line that reads as evidence) and leading or trailing whitespace
(``"3 "`` would be another turn than ``"3"``), and invisible format characters (``"3\\u200b"`` likewise).
A value of whitespace and invisible characters only is blank. Text and queries keep them
(ANSI colours in a pasted log); ``visible`` escapes them for printing. Callers name the field in
their own error.
"""

from __future__ import annotations

import re
import unicodedata

MAX_IDENTIFIER_CHARS = 200  # a message id, session id or speaker (the API's limit; the CLI's and Python's the same)
CONTROLS = "\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f-\\x9f"
"""A regex character class body of the C0/C1 control characters except tab, newline and carriage return."""
IDENTIFIER_CONTROLS = f"{CONTROLS}\\t\\n\\r\\u2028\\u2029"
"""A regex character class body of every C0/C1 control character and the Unicode line and paragraph separators
(every line break ``str.splitlines`` knows): what an identifier refuses."""
_CONTROL = re.compile(f"[{CONTROLS}]")
_ANY_CONTROL = re.compile(f"[{IDENTIFIER_CONTROLS}]")
# Invisible format characters: bidi marks, embeddings, overrides and isolates (they reorder what a terminal
# shows), zero-width space and word joiner, soft hyphen, byte-order mark, combining grapheme joiner, Mongolian vowel
# separator, the deprecated format characters (U+206A-U+206F), the interlinear annotation marks (U+FFF9-U+FFFB),
# and the Hangul fillers (they print as blank space). Not the zero-width (non-)joiner and the variation
# selectors, which scripts and emoji sequences need ("❤️" is U+2764 U+FE0F). In the BMP, so that the API's patterns
# built from them are ECMA-262 too (OpenAPI); the tag characters (U+E0000-U+E007F, invisible) are refused beside them
# (``text_problem``).
BIDI = "\\u061c\\u200e\\u200f\\u202a-\\u202e\\u2066-\\u2069"
INVISIBLE = f"\\u00ad\\u034f\\u115f\\u1160\\u180e\\u200b\\u2060-\\u2064\\u206a-\\u206f\\u3164\\ufeff\\uffa0\\ufff9-\\ufffb{BIDI}"
# What a blank value may hold besides whitespace: the invisible characters, the joiners and variation selectors,
# and the braille blank, which alone show nothing (nor do combining marks and format characters alone: ``is_blank``).
UNSEEN = f"{INVISIBLE}\\u200c\\u200d\\u2800\\ufe00-\\ufe0f"
_INVISIBLE = re.compile(f"[{INVISIBLE}\\U000e0000-\\U000e007f]")
EDGE_BLANK = "\u2800"
"""What an identifier may hold inside but neither starts nor ends with, beside whitespace: the braille blank, which
prints as a space ("Alice\\u2800" would be another speaker than "Alice")."""
_UNSEEN = re.compile(f"[{UNSEEN}]")
_NOTHING_ALONE = ("Mn", "Me", "Cf")  # combining marks and format characters: nothing to see without a base
_BIDI = re.compile(f"[{BIDI}]")


def encodable(value: str) -> bool:
    """Whether ``value`` encodes as UTF-8 (no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def visible(value: str, *, one_line: bool = False) -> str:
    """``value`` with every control character (``CONTROLS``) written as a ``\\xNN`` escape and every bidi control
    as ``\\uNNNN`` (a right-to-left override would rearrange the line), for a terminal or pipe; ``one_line`` (an
    error message) escapes tab, newline and carriage return too."""
    pattern = _ANY_CONTROL if one_line else _CONTROL
    escaped = pattern.sub(
        lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}", value
    )
    return _BIDI.sub(lambda m: f"\\u{ord(m.group()):04x}", escaped)


CONTINUATION = "    "  # what opens every line of an entry after its first (``one_entry``)


def one_entry(value: str) -> str:
    """``value`` as one entry of a line-per-entry listing (an answer model's context, a prompt's turns): each line
    after its first (any line break ``str.splitlines`` knows: CR, LF, VT, FF, NEL, U+2028 and U+2029) opens with
    ``CONTINUATION``, so a turn's text cannot start a line that reads as another entry ("[D9:9] Ana said …")."""
    lines = value.splitlines()
    return ("\n" + CONTINUATION).join(lines) if len(lines) > 1 else value


def abbreviated(value: str, limit: int = 64) -> str:
    """``value``, or its first ``limit`` characters and how many it has, for an error message that names it."""
    return value if len(value) <= limit else f"{value[:limit]}… ({len(value)} characters)"


def is_blank(value: str) -> bool:
    """Whether ``value`` shows nothing: only whitespace, the characters of ``UNSEEN``, combining marks and format
    characters (a lone U+0301, a tag character)."""
    return all(c.isspace() or unicodedata.category(c) in _NOTHING_ALONE for c in _UNSEEN.sub("", value))


def pattern_gap(value: str, *, identifier: bool) -> bool:
    """Whether ``value`` holds what the API's patterns (``hypermem.api.schemas``, ECMA-262 for OpenAPI, so BMP
    only) let through but a non-blank text refuses: it is blank (``is_blank``: a lone combining mark); or, in an
    ``identifier``, a tag character."""
    return is_blank(value) or (identifier and _INVISIBLE.search(value) is not None)


def text_problem(value: object, *, blank_ok: bool = False, key: bool = False, identifier: bool = False) -> str | None:
    """What makes ``value`` unusable as stored text, or None. ``identifier``: also no control character (tab,
    newline and carriage return included), and at most ``MAX_IDENTIFIER_CHARS`` (a speaker); ``key``: an identifier without
    '/' (a message or session id)."""
    if not isinstance(value, str):
        return "missing or not a string"
    if not blank_ok and is_blank(value):
        return "missing or empty"
    if not encodable(value):
        return "is not valid UTF-8 (unpaired surrogate)"
    if "\x00" in value:
        return "contains a NUL character"
    if (key or identifier) and _ANY_CONTROL.search(value):
        return "must not contain control characters (tabs and line breaks included)"
    if (key or identifier) and _INVISIBLE.search(value):
        return "must not contain invisible format characters (zero-width, bidi marks, fillers, tags)"
    if (key or identifier) and value.strip().strip(EDGE_BLANK) != value:
        return "must not start or end with whitespace (or a braille blank)"
    if (key or identifier) and len(value) > MAX_IDENTIFIER_CHARS:
        return f"{len(value)} characters; the limit is {MAX_IDENTIFIER_CHARS}"
    if key and "/" in value:
        return "must not contain '/'"
    return None
