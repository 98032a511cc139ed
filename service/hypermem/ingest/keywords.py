"""Keyword extraction with YAKE (Campos et al., 2020), unsupervised and offline."""

from __future__ import annotations

import re

import yake

# Greetings and reactions that dominate chat but name no topic.
PHATIC = frozenset(
    "hey hi hello thanks thank bye wow awesome cool great glad haha lol yeah yes sure okay ok nice amazing "
    "congrats congratulations sounds really totally".split()
)
_WORDS = re.compile(r"[a-z0-9']+")


class KeywordExtractor:
    """``top(text, n, exclude) -> list[str]``: the ``n`` best YAKE keyphrases (1-2 words), lowercase,
    deduplicated, without phrases containing a greeting or a word of ``exclude`` (e.g. speaker names)."""

    def __init__(self, max_ngram: int = 2):
        self._yake = yake.KeywordExtractor(lan="en", n=max_ngram, dedupLim=0.7, top=20)

    def top(self, text: str, n: int = 5, exclude: frozenset[str] = frozenset()) -> list[str]:
        if not text.strip():
            return []
        seen: dict[str, None] = {}
        for phrase, _score in self._yake.extract_keywords(text):
            words = set(_WORDS.findall(phrase.lower()))
            if words & PHATIC or words & exclude:
                continue
            seen.setdefault(phrase.lower(), None)
            if len(seen) == n:
                break
        return list(seen)
