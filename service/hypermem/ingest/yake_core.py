"""YAKE's keyword scoring (Campos et al., 2020) without its per-document object graph: same output, ~4x cheaper.

``yake.KeywordExtractor.extract_keywords`` (yake 0.7) builds a networkx co-occurrence graph, one
``SingleWord`` object per term and one ``ComposedWord`` object per n-gram occurrence, and takes a
numpy median per term; on LoCoMo turns that bookkeeping, not the scoring, is most of its time (the
ingest runs it on every turn, episode and topic). ``extract_keywords`` here computes the same
features with plain dicts and lists in the same floating-point order, and reuses yake's own
tokenizer, tagger, stop words and deduplication, so it returns the same ``(keyword, score)`` list,
bit for bit (``tests/test_yake_core.py`` compares the two on LoCoMo-like text).
"""

from __future__ import annotations

import logging
import math
import string
from collections.abc import Iterator

import numpy as np
import yake
from yake.data.utils import get_tag, pre_filter, tokenize_sentences

log = logging.getLogger(__name__)

_DISCARD = frozenset("ud")  # yake's tags_to_discard: digits and unusual tokens
_EXCLUDE = frozenset(string.punctuation)  # yake's punctuation: a token of these only ends a block
_WITHOUT_PUNCTUATION = str.maketrans("", "", string.punctuation)  # ``str.translate`` drops ``_EXCLUDE``


class _Term:
    """One normalised term of the document (yake's ``SingleWord``): counts, sentence ids, score ``h``."""

    __slots__ = ("id", "stopword", "tf", "tf_a", "tf_n", "sentences", "h")

    def __init__(self, ident: int, stopword: bool):
        self.id = ident
        self.stopword = stopword
        self.tf = 0.0
        self.tf_a = 0.0
        self.tf_n = 0.0
        self.sentences: dict[int, None] = {}  # ids of the sentences it occurs in, ascending
        self.h = 0.0


class _Candidate:
    """One candidate n-gram (yake's ``ComposedWord``): first surface form, tag patterns, terms, count."""

    __slots__ = ("kw", "tags", "terms", "tf", "h")

    def __init__(self, kw: str, tags: str, terms: list[_Term]):
        self.kw = kw
        self.tags = {tags}
        self.terms = terms
        self.tf = 0.0
        self.h = 1.0

    def is_valid(self) -> bool:
        """A tag pattern without digits or unusual tokens (no stop word at either end: ``_Document`` counts no
        other candidates)."""
        return any("u" not in tag and "d" not in tag for tag in self.tags)


class _Document:
    """Terms, co-occurrence counts and candidates of one text, built as ``yake.data.DataCore`` does."""

    def __init__(self, text: str, stopwords: set[str], window: int, n: int):
        self.stopwords = stopwords
        self.terms: dict[str, _Term] = {}
        self.after: list[dict[int, float]] = []  # term id -> {next term id: co-occurrences}
        self.before: list[dict[int, float]] = []  # term id -> {previous term id: co-occurrences}
        self.candidates: dict[str, _Candidate] = {}
        self.sentences = tokenize_sentences(pre_filter(text))
        for sentence_id, sentence in enumerate(self.sentences):
            block: list[tuple[str, str, _Term]] = []  # words since the last punctuation token
            for position, word in enumerate(sentence):
                if not word.translate(_WITHOUT_PUNCTUATION):  # punctuation only
                    block = []
                    continue
                tag = get_tag(word, position, _EXCLUDE)
                term = self._term(word)
                term.sentences[sentence_id] = None
                term.tf += 1.0
                if tag == "a":
                    term.tf_a += 1.0
                if tag == "n":
                    term.tf_n += 1.0
                if tag not in _DISCARD:
                    for left in block[max(0, len(block) - window) :]:
                        if left[0] not in _DISCARD:
                            self._cooccur(left[2], term)
                self._add_candidates(block, (tag, word, term), n)
                block.append((tag, word, term))

    def _term(self, word: str) -> _Term:
        """The term of ``word`` (lowercase, a plural ``s`` dropped past 3 letters), created on first sight."""
        unique = word.lower()
        plain_stopword = unique in self.stopwords
        if unique.endswith("s") and len(unique) > 3:
            unique = unique[:-1]
        term = self.terms.get(unique)
        if term is None:
            letters = len(unique.translate(_WITHOUT_PUNCTUATION))
            term = _Term(len(self.terms), plain_stopword or unique in self.stopwords or letters < 3)
            self.terms[unique] = term
            self.after.append({})
            self.before.append({})
        return term

    def _cooccur(self, left: _Term, right: _Term) -> None:
        self.after[left.id][right.id] = self.after[left.id].get(right.id, 0.0) + 1.0
        self.before[right.id][left.id] = self.before[right.id].get(left.id, 0.0) + 1.0

    def _add_candidates(self, block: list[tuple[str, str, _Term]], word: tuple[str, str, _Term], n: int) -> None:
        """Count the n-grams (1 to ``n`` words) ending at ``word`` that neither start nor end with a stop word: yake
        counts the others too, then drops them (``ComposedWord.is_valid``), and nothing else reads their counts.
        Half the words of chat are stop words, so this skips most n-grams: a quarter less keyword CPU on LoCoMo dev
        (``bench/bench_annotation.py``)."""
        tags, kw, term = word
        if term.stopword:
            return
        self._count(kw, tags, [term])
        terms = [term]
        for previous in reversed(block[max(0, len(block) - (n - 1)) :]):
            tags, kw = previous[0] + tags, previous[1] + " " + kw
            terms.insert(0, previous[2])
            if not previous[2].stopword:
                self._count(kw, tags, terms)

    def _count(self, kw: str, tags: str, terms: list[_Term]) -> None:
        unique = kw.lower()
        candidate = self.candidates.get(unique)
        if candidate is None:
            candidate = self.candidates[unique] = _Candidate(kw, tags, list(terms))
        else:
            candidate.tags.add(tags)
        candidate.tf += 1.0

    def score_terms(self) -> None:
        """Each term's ``h`` (lower is better), as ``SingleWord.update_h`` computes it."""
        valid = np.array([t.tf for t in self.terms.values() if not t.stopword])
        if not valid.size:
            return
        avg_tf, std_tf = valid.mean(), valid.std()
        max_tf = max(t.tf for t in self.terms.values())
        sentences = len(self.sentences)
        for term in self.terms.values():
            if term.stopword:
                continue  # a candidate weighs its inner stop words by their bigram probabilities, not by ``h``
            after, before = self.after[term.id], self.before[term.id]
            wir, wil = sum(after.values()), sum(before.values())
            pwr = 0 if wir == 0 else len(after) / wir
            pwl = 0 if wil == 0 else len(before) / wil
            wrel = (0.5 + (pwl * (term.tf / max_tf))) + (0.5 + (pwr * (term.tf / max_tf)))
            wfreq = term.tf / (avg_tf + std_tf)
            wspread = len(term.sentences) / sentences
            wcase = max(term.tf_a, term.tf_n) / (1.0 + math.log(term.tf))
            wpos = math.log(math.log(3.0 + _median(list(term.sentences))))
            term.h = (wpos * wrel) / (wcase + (wfreq / wrel) + (wspread / wrel))

    def score_candidate(self, candidate: _Candidate) -> None:
        """The candidate's ``h``, as ``ComposedWord.update_h`` computes it (stop words inside weighed by
        their bigram probabilities)."""
        sum_h, prod_h = 0.0, 1.0
        terms = candidate.terms
        for t, term in enumerate(terms):
            if not term.stopword:
                sum_h += term.h
                prod_h *= term.h
                continue
            prob_t1 = prob_t2 = 0.0
            if t > 0 and term.id in self.after[terms[t - 1].id]:
                prob_t1 = self.after[terms[t - 1].id][term.id] / terms[t - 1].tf
            if t < len(terms) - 1 and terms[t + 1].id in self.after[term.id]:
                prob_t2 = self.after[term.id][terms[t + 1].id] / terms[t + 1].tf
            prob = prob_t1 * prob_t2
            prod_h *= 1 + (1 - prob)
            sum_h -= 1 - prob
        candidate.h = prod_h / ((sum_h + 1) * candidate.tf)


def _median(values: list[int]) -> float:
    """``np.median`` of ascending integers, exactly: the middle one, or the mean of the middle two."""
    middle = len(values) // 2
    return float(values[middle]) if len(values) % 2 else (values[middle - 1] + values[middle]) / 2


def extract_keywords(extractor: yake.KeywordExtractor, text: str) -> Iterator[tuple[str, float]]:
    """What ``extractor.extract_keywords(text)`` returns (yake's default features, no lemmatisation),
    lazily: the best-scored keyphrases (lowest score first), each unlike those kept before it, at most
    ``top``. Like yake, a text it cannot read (an exception) yields nothing and logs a warning."""
    config = extractor.config
    if config["features"] is not None or extractor.lemmatize:
        raise ValueError("extract_keywords supports yake's default features without lemmatisation only")
    if not text:
        return
    try:
        document = _Document(text.replace("\n", " "), extractor.stopword_set, config["window_size"], config["n"])
        document.score_terms()
        candidates = [c for c in document.candidates.values() if c.is_valid()]
        for candidate in candidates:
            document.score_candidate(candidate)
    except Exception as exc:  # yake's own contract: a warning and no keywords
        log.warning("keyword extraction failed (%s) on %r", exc, text[:100])
        return
    candidates.sort(key=lambda c: c.h)
    if config["dedup_lim"] >= 1.0:
        yield from ((c.kw.lower(), c.h) for c in candidates[: config["top"]])
        return
    kept: list[str] = []
    for candidate in candidates:
        unique = candidate.kw.lower()
        if any(extractor.dedup_function(unique, other) > config["dedup_lim"] for other in kept):
            continue
        kept.append(unique)
        yield candidate.kw, candidate.h
        if len(kept) == config["top"]:
            return
