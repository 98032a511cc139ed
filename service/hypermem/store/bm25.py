"""Okapi BM25 over the engine's full-text matches, from term statistics read out of the graph (issue 11).

The engine's full-text index finds the nodes that share a word with the query (an OR of the
query's words); this module scores them with Lucene's BM25 (Robertson & Zaragoza 2009; the
variant of Lucene 8+ and ``bm25s``, k1 = 1.5, b = 0.75):

    score(d) = Σ_t idf(t) · tf(t, d) / (tf(t, d) + k1 · (1 - b + b · |d| / avgdl)),
    idf(t)   = ln(1 + (N - df(t) + 0.5) / (df(t) + 0.5))

Documents are a node's ``speaker`` (Turn nodes; empty elsewhere) and ``text``. The analyzer is
``bm25s``'s: lowercase, words of two or more word characters, its English stop words, Snowball
English stems (PyStemmer); |d| counts a document's analyzed terms. N, the mean words per document
and the speaker counts are the memory's ``CorpusStats`` nodes' (one per searched label, counted over the memory by
every ingest after its writes: ``GraphStore.refresh_corpus_stats``; avgdl is that mean times the matched documents'
analyzed terms per word); df counts the matched documents, which is exact because every document holding a query
term matches the OR query. So scores follow the graph under incremental ingest and with other processes writing.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache

import Stemmer
from bm25s.stopwords import STOPWORDS_EN

K1 = 1.5
B = 0.75
MAX_QUERY_WORDS = 32
MAX_EXPANDED_WORDS = 160  # an expanded query's words (hypermem.retrieve.expansion): its own and their neighbours
ANALYZED_CACHE = 50_000  # texts
STOP_WORDS = frozenset(STOPWORDS_EN)
_WORD = re.compile(r"(?u)\b\w\w+\b")
_SAFE = re.compile(r"[^\W_]{2,}|\d+", re.UNICODE)
_local = threading.local()


def _stem(words: list[str]) -> list[str]:
    stemmer = getattr(_local, "stemmer", None)  # a PyStemmer object is not thread-safe
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english")
    return stemmer.stemWords(words)


def _analyze(text: str) -> tuple[str, ...]:
    return tuple(_stem([w for w in _WORD.findall(text.lower()) if w not in STOP_WORDS]))


@lru_cache(maxsize=ANALYZED_CACHE)
def analyze(text: str) -> tuple[str, ...]:
    """BM25 terms of ``text``: lowercase words (2+ word characters) minus English stop words, stemmed.

    Cached: the same texts are analyzed again by every query that holds them.
    """
    return _analyze(text)


def stored_analysis(text: str) -> dict[str, str | int]:
    """What an ingest stores beside a searched node's ``text`` so that a search scores it without analyzing it
    (the node's ``terms`` and ``words`` properties): ``{"terms": its BM25 terms joined by spaces, "words": its
    whitespace-separated words}``. Not cached: every ingested text is new."""
    return {"terms": " ".join(_analyze(text)), "words": len(text.split(" "))}


def query_words(text: str, limit: int = MAX_QUERY_WORDS) -> list[str]:
    """Words of a user query the engine can OR safely: letters/digits only, no stop words, deduplicated.

    No engine operator (``- | * % : " ( )`` for RediSearch; ``+ - && || ! ( ) { } [ ] ^ " ~ * ? : \\ /``
    and upper-case AND/OR/NOT for Lucene) survives. At most ``limit`` (the first ones); ``[]`` when none.
    """
    seen: dict[str, None] = {}
    for word in _WORD.findall(text.lower()):
        if word in STOP_WORDS:
            continue
        for part in _SAFE.findall(word):
            seen.setdefault(part, None)
    return list(seen)[:limit]


@dataclass(frozen=True)
class CorpusStats:
    """One label's documents in one memory: ``documents`` (N), ``words`` (Σ|d|) and documents per speaker."""

    documents: int
    words: int
    speakers: dict[str, int]

    @property
    def avgdl(self) -> float:
        return self.words / self.documents if self.documents else 0.0


def doc_length(speaker: str, text: str) -> int:
    """|d| in whitespace-separated words, as the statistics aggregate counts it (speaker included)."""
    return len(text.split(" ")) + (len(speaker.split(" ")) if speaker else 0)


@lru_cache(maxsize=ANALYZED_CACHE)
def _document(speaker: str, text: str) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """A matched document as ``score`` reads it: its text's terms, its speaker's terms and ``doc_length``.
    Cached: one lookup per match instead of two, and no splitting of a text already seen."""
    return analyze(text), analyze(speaker), doc_length(speaker, text)


def _matched(match: dict) -> tuple[tuple[str, ...], tuple[str, ...], int]:
    """``_document`` of a match: from the ``terms`` and ``words`` its node stores (``stored_analysis``), else
    (a node an ingest wrote before them) from its ``text``."""
    speaker = match.get("speaker") or ""
    terms = match.get("terms")
    if terms is None:
        return _document(speaker, match.get("text") or "")
    names = analyze(speaker)
    return tuple(terms.split()), names, int(match["words"]) + (len(speaker.split(" ")) if speaker else 0)


def score(query: str, matches: Iterable[dict], stats: CorpusStats) -> list[tuple[str, float]]:
    """BM25 of each matched ``{"id", "speaker", "terms", "words"}`` (or ``"text"`` instead of the last two: a node
    stored without them) for ``query``: ``[(id, score)]``, best first, score > 0.

    Ties are ordered by id, so a ranking never depends on the order the engine returned its matches in
    (it differs between a process that just wrote the index and one that opened it). df(t) = matched documents whose text holds t and whose
    speaker does not, plus every document of a speaker whose name holds t (``stats.speakers``).
    """
    return weighted_score(dict.fromkeys(analyze(query), 1.0), matches, stats)


def weighted_score(
    weights: Mapping[str, float], matches: Iterable[dict], stats: CorpusStats
) -> list[tuple[str, float]]:
    """``score`` for a query given as analyzed terms with weights (term -> w > 0): each term's BM25 part is
    multiplied by its weight (an expanded query, ``hypermem.retrieve.expansion``). ``matches`` must hold every
    document with any of the terms, as the engine's OR query returns them."""
    terms = {t for t, w in weights.items() if w > 0}
    if not terms:
        return []
    speaker_terms = {s: set(analyze(s)) for s in stats.speakers if s}
    docs = []
    df: dict[str, int] = {}
    words = tokens = 0
    for match in matches:  # plain dicts, not Counters: this loop runs for every match of every search
        text_terms, name_terms, n_words = _matched(match)
        tf: dict[str, int] = {}
        for t in text_terms:
            if t in terms:
                tf[t] = tf.get(t, 0) + 1
        for t in tf:
            if t not in name_terms:
                df[t] = df.get(t, 0) + 1
        for t in name_terms:
            if t in terms:
                tf[t] = tf.get(t, 0) + 1
        length = len(text_terms) + len(name_terms)
        docs.append((match["id"], tf, length))
        words += n_words
        tokens += length
    for speaker, names in speaker_terms.items():
        for t in names & terms:
            df[t] = df.get(t, 0) + stats.speakers[speaker]
    if not docs:
        return []
    # Statistics behind the graph (an ingest killed between its writes and its ``CorpusStats``) never give a term a
    # negative idf or drop the matches: N is at least the matches and every df; avgdl the matches' own when N is 0.
    n = max(stats.documents, len(docs), *df.values())
    mean_words = stats.avgdl if stats.documents else words / len(docs)
    # |d| counts analyzed terms; the aggregate counts words: scale avgdl by the matches' terms per word.
    avgdl = (mean_words * tokens / words if words else 0.0) or 1.0
    idf = {t: math.log(1 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in terms if df.get(t)}
    scored = []
    for doc_id, tf, length in docs:
        norm = K1 * (1 - B + B * length / avgdl)
        value = sum(weights[t] * idf[t] * f / (f + norm) for t, f in tf.items() if t in idf)
        if value > 0:
            scored.append((doc_id, value))
    scored.sort(key=lambda s: (-s[1], s[0]))
    return scored
