"""What makes a string unusable as stored or searched text, for every entry point (ingest, query).

A graph engine takes no NUL inside a parameter; a lone surrogate (JSON allows ``"\\ud83d"``)
breaks UTF-8 encoding, hashing and the tokenizer. Callers name the field in their own error.
"""

from __future__ import annotations


def encodable(value: str) -> bool:
    """Whether ``value`` encodes as UTF-8 (no lone surrogate)."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def text_problem(value: object, *, blank_ok: bool = False, key: bool = False) -> str | None:
    """What makes ``value`` unusable as stored text, or None. ``key``: also no '/' (a message or session id)."""
    if not isinstance(value, str):
        return "missing or not a string"
    if not blank_ok and not value.strip():
        return "missing or empty"
    if not encodable(value):
        return "is not valid UTF-8 (unpaired surrogate)"
    if "\x00" in value:
        return "contains a NUL character"
    if key and "/" in value:
        return "must not contain '/'"
    return None
