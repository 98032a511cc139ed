"""Benchmark arithmetic: evidence recall/precision (HiGMem), latency percentiles, token F1 and BLEU-1.

Evidence recall of one question = |gold ∩ returned| / |gold| over dia_ids, precision =
|gold ∩ returned| / |returned| (0.0 when nothing was returned). Questions with an empty
gold set are left out of both; they still count for turns, tokens and latency.
Aggregates are means over questions (macro), latencies are percentiles in milliseconds.

Answer scores follow the LoCoMo evaluation (Maharana et al., 2024): lowercase, drop commas
and punctuation, drop the words a/an/the/and, split on whitespace. (LoCoMo also Porter-stems
tokens; no stemmer is installed here, so scores can sit slightly below published ones.)
"""

from __future__ import annotations

import math
import re
import string
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from hypermem.eval.dataset import CATEGORIES

_ARTICLES = re.compile(r"\b(a|an|the|and)\b")
_PUNCTUATION = str.maketrans("", "", string.punctuation)


@dataclass(frozen=True)
class Outcome:
    """One system's answer to one question: what came back and what it cost.

    ``returned``: dia_ids whose own words reach the context; ``context_tokens``: tokens of the
    whole context (episode summaries included); ``latency_ms``: retrieval wall time.
    """

    category: int
    gold: frozenset[str]
    returned: frozenset[str]
    context_tokens: int
    latency_ms: float

    @property
    def hits(self) -> int:
        return len(self.gold & self.returned)

    @property
    def recall(self) -> float | None:
        """|gold ∩ returned| / |gold|, or None when the question has no gold evidence."""
        return self.hits / len(self.gold) if self.gold else None

    @property
    def precision(self) -> float | None:
        """|gold ∩ returned| / |returned| (0.0 when nothing returned), or None without gold evidence."""
        if not self.gold:
            return None
        return self.hits / len(self.returned) if self.returned else 0.0


def percentile(values: Iterable[float], q: float) -> float:
    """The ``q``-th percentile (0-100, linear interpolation); 0.0 for no values."""
    values = list(values)
    return float(np.percentile(values, q)) if values else 0.0


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def stats(outcomes: list[Outcome]) -> dict:
    """``{"evidence_recall", "precision", "turns_per_question", "context_tokens", "p50_ms", "p95_ms", "questions"}``."""
    return {
        "evidence_recall": _mean([o.recall for o in outcomes if o.recall is not None]),
        "precision": _mean([o.precision for o in outcomes if o.precision is not None]),
        "turns_per_question": _mean([len(o.returned) for o in outcomes]),
        "context_tokens": _mean([o.context_tokens for o in outcomes]),
        "p50_ms": percentile((o.latency_ms for o in outcomes), 50),
        "p95_ms": percentile((o.latency_ms for o in outcomes), 95),
        "questions": len(outcomes),
    }


def summarise(outcomes: list[Outcome]) -> dict:
    """``{"overall": stats, "by_category": {"1": stats, ..., "5": stats}}`` (categories with no question omitted)."""
    by_category = {str(c): stats(group) for c in CATEGORIES if (group := [o for o in outcomes if o.category == c])}
    return {"overall": stats(outcomes), "by_category": by_category}


def normalize_answer(text: object) -> str:
    """LoCoMo answer normalisation: lowercase, no punctuation, no a/an/the/and, single spaces."""
    text = str(text).lower().replace(",", "")
    text = text.translate(_PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def token_f1(prediction: object, gold: object) -> float:
    """Harmonic mean of token precision and recall after ``normalize_answer`` (0.0 when either is empty)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    p, r = common / len(pred), common / len(ref)
    return 2 * p * r / (p + r)


def bleu1(prediction: object, gold: object) -> float:
    """Sentence BLEU-1: brevity penalty × clipped unigram precision, on normalised tokens (0.0 if empty)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not pred or not ref:
        return 0.0
    clipped = sum((Counter(pred) & Counter(ref)).values())
    brevity = 1.0 if len(pred) > len(ref) else math.exp(1 - len(ref) / len(pred))
    return brevity * clipped / len(pred)
