"""Keyword extraction with YAKE (Campos et al., 2020), unsupervised and offline."""

from __future__ import annotations

import re

import yake

from hypermem.ingest.yake_core import extract_keywords

# Greetings and reactions that dominate chat but name no topic.
PHATIC = frozenset(
    [
        "hey",
        "hi",
        "hello",
        "thanks",
        "thank",
        "bye",
        "wow",
        "awesome",
        "cool",
        "great",
        "glad",
        "haha",
        "lol",
        "yeah",
        "yes",
        "sure",
        "okay",
        "ok",
        "nice",
        "amazing",
        "congrats",
        "congratulations",
        "sounds",
        "really",
        "totally",
    ]
)
_WORDS = re.compile(r"[a-z0-9']+")


class KeywordExtractor:
    """``top(text, n) -> list[str]``: the ``n`` best YAKE keyphrases (1-2 words), lowercase, deduplicated, without
    phrases containing a greeting (an episode title leaves speakers' names out itself: ``episodes.title_keyphrases``).

    Results are remembered (up to ``cache_size`` calls); ``remember`` takes results computed ahead in
    another process (``hypermem.ingest.annotate``).
    """

    def __init__(self, max_ngram: int = 2, cache_size: int = 50_000):
        self._yake = yake.KeywordExtractor(lan="en", n=max_ngram, dedupLim=0.7, top=20)
        self._cache: dict[tuple[str, int], list[str]] = {}
        self.cache_size = cache_size

    def remember(self, keywords: dict[str, list[str]], n: int) -> None:
        """Take ``keywords[text]`` as ``top(text, n)``, computed elsewhere (the annotation worker)."""
        for text, found in keywords.items():
            if len(self._cache) >= self.cache_size:
                self._cache.clear()
            self._cache[(text, n)] = list(found)

    def top(self, text: str, n: int = 5) -> list[str]:
        key = (text, n)
        cached = self._cache.get(key)
        if cached is None:
            if len(self._cache) >= self.cache_size:
                self._cache.clear()
            cached = self._cache[key] = self._top(text, n)
        return list(cached)

    def _top(self, text: str, n: int) -> list[str]:
        if not text.strip():
            return []
        seen: dict[str, None] = {}
        for phrase, _score in extract_keywords(self._yake, text):
            if PHATIC.intersection(_WORDS.findall(phrase.lower())):
                continue
            seen.setdefault(phrase.lower(), None)
            if len(seen) == n:
                break
        return list(seen)
