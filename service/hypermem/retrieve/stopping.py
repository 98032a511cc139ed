"""Adaptive stopping (HingeMem §3.3): where a ranked list is cut, by query type.

- recall    -> the elbow of the score curve (the point farthest below the chord from the
               first to the last score, Satopää et al. 2011 "Kneedle");
- precision -> keep items scoring at least ``ratio`` (80%) of the best score;
- judgment  -> stop at the first confident hit (the first item whose ``confidence``, e.g. its
               dense cosine, reaches ``confident``), else fall back to the precision rule;
- fixed     -> the first ``k`` items.
Scores must be sorted best first. ``cut_at`` is the number of items kept (>= 1 when any).

With the learned turn ranker the cut is made on the candidate turns' P(evidence) instead
(``evidence_share_cut``): a turn is kept while its share of the query's total evidence
probability reaches 1 / (scale × budget). A query whose evidence probability sits on a few
turns (one clear answer) gets fewer turns; one whose probability is spread over many (a
recall-type question whose answer is scattered over sessions) gets more. ``scale`` is
calibrated on the training questions so that the mean is ``budget`` (``hypermem eval
fit-ranker``), and the count stays within [⌈budget / 2⌉, ⌊1.75 × budget⌋]. The budget is the query type's
(``TurnRankerModel.budget_for``): a recall-type question's is a multiple of the turn budget (chosen by
cross-validation when the ranker is fitted), the others' the turn budget; the scale is calibrated over both, so the
mean stays at the turn budget and a recall-type question's extra turns come from the questions whose top is clearly
right.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import numpy.typing as npt

SHARE_MIN, SHARE_MAX = 0.5, 1.75  # the evidence-share cut keeps between these multiples of the budget


@dataclass
class StopDecision:
    """Why a list was cut where it was."""

    query_type: str
    rule: str
    cut_at: int
    considered: int
    threshold: float | None = None
    counts: str = "facts"  # what cut_at and considered count: "facts" (HingeMem rules) or "candidate turns"

    def as_dict(self) -> dict:
        return asdict(self)


def elbow(scores: list[float]) -> int:
    """Items to keep at the elbow of a descending curve: those before the point farthest below the chord."""
    n = len(scores)
    if n <= 2:
        return n
    first, last = scores[0], scores[-1]
    if first == last:
        return n
    best_i, best_d = n - 1, 0.0
    for i, score in enumerate(scores):
        chord = first + (last - first) * i / (n - 1)
        distance = chord - score
        if distance > best_d:
            best_i, best_d = i, distance
    return max(1, best_i)


def cut(scores: list[float], query_type: str, *, mode: str = "adaptive", k: int = 10, ratio: float = 0.8,
        confidence: list[float] | None = None, confident: float | None = None, min_keep: int = 1) -> StopDecision:  # fmt: skip
    """Decide how many of ``scores`` to keep (adaptive mode never keeps fewer than ``min_keep`` when there are that many).

    ``confidence`` is a per-item absolute signal parallel to ``scores`` and ``confident`` its
    threshold for a confident hit (judgment queries only).
    """
    decision = _cut(scores, query_type, mode, k, ratio, confidence, confident)
    if mode != "fixed" and decision.cut_at < min(min_keep, decision.considered):
        decision.cut_at = min(min_keep, decision.considered)
        decision.rule += f" (floor {min_keep})"
    return decision


def _cut(scores, query_type, mode, k, ratio, confidence, confident) -> StopDecision:
    n = len(scores)
    if n == 0:
        return StopDecision(query_type, "empty", 0, 0)
    if mode == "fixed":
        return StopDecision(query_type, "fixed-k", min(k, n), n)
    if query_type == "judgment" and confidence is not None and confident is not None:
        for i, value in enumerate(confidence):
            if value >= confident:
                return StopDecision(query_type, "first-confident-hit", i + 1, n, confident)
    if query_type == "recall":
        return StopDecision(query_type, "elbow", elbow(scores), n)
    threshold = ratio * scores[0]
    kept = sum(1 for s in scores if s >= threshold)
    return StopDecision(query_type, f"{int(ratio * 100)}%-of-best", kept, n, threshold)


def share_bounds(budget: float) -> tuple[int, int]:
    """The fewest and most turns ``evidence_share_cut`` keeps for ``budget``: ⌈0.5 b⌉ and ⌊1.75 b⌋ (at least 1)."""
    return max(1, math.ceil(SHARE_MIN * budget)), max(1, math.floor(SHARE_MAX * budget))


def evidence_share_count(probabilities: npt.NDArray[np.float64] | Sequence[float], budget: float, scale: float) -> int:
    """How many turns the evidence-share rule keeps (``evidence_share_cut``'s ``cut_at``)."""
    return evidence_share_cut(probabilities, "", budget=budget, scale=scale).cut_at


def evidence_share_cut(probabilities: npt.NDArray[np.float64] | Sequence[float], query_type: str, *, budget: float,
                       scale: float) -> StopDecision:  # fmt: skip
    """The evidence-share cut over the candidate turns' P(evidence) (any order): keep the turns whose
    P / ΣP is at least ``threshold`` = 1 / (``scale`` × ``budget``), within ``share_bounds(budget)`` and never
    more than there are. The rule names the floor or the cap when one of them decided."""
    p = np.asarray(probabilities, dtype=np.float64)
    threshold = 1.0 / (scale * budget)
    if len(p) == 0:
        return StopDecision(query_type, "empty", 0, 0, counts="candidate turns")
    total = float(p.sum())
    natural = int(np.count_nonzero(p >= threshold * total)) if total > 0 else 0
    low, high = share_bounds(budget)
    kept, rule = natural, "evidence-share"
    if natural < low <= len(p):
        kept, rule = low, f"evidence-share (floor {low})"
    elif natural < len(p) < low:
        kept, rule = len(p), f"evidence-share (floor {low}: all {len(p)} candidates)"
    elif natural > high:
        kept, rule = high, f"evidence-share (cap {high})"
    return StopDecision(query_type, rule, kept, len(p), round(threshold, 6), counts="candidate turns")
