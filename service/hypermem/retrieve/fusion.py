"""Reciprocal Rank Fusion (Cormack et al., SIGIR 2009), used at every level (HyperMem §3.4).

RRF(d) = Σ_r 1 / (k + rank_r(d)), ranks starting at 1, k = 60 by default.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from hypermem.store.base import Hit


@dataclass
class Fused:
    """One fused item: ``score`` is the RRF sum; ``rankers`` maps ranker -> {"rank", "score"}."""

    id: str
    score: float
    rankers: dict[str, dict[str, float]] = field(default_factory=dict)


def rrf(rankings: Mapping[str, Sequence[Hit]], k: int = 60, weights: Mapping[str, float] | None = None) -> list[Fused]:
    """Fuse ranked hit lists (``{"bm25": [...], "dense": [...]}``) into one list, best first.

    Each input list must be sorted best first. ``weights`` scales a ranker's 1 / (k + rank)
    (weighted RRF; 1.0 for a ranker not named). Ties keep first-seen order. Raises
    ``ValueError`` for ``k < 1``.
    """
    if k < 1:
        raise ValueError("RRF k must be >= 1")
    fused: dict[str, Fused] = {}
    for ranker, hits in rankings.items():
        weight = 1.0 if weights is None else weights.get(ranker, 1.0)
        for rank, hit in enumerate(hits, start=1):
            item = fused.setdefault(hit.id, Fused(hit.id, 0.0))
            item.score += weight / (k + rank)
            item.rankers[ranker] = {"rank": rank, "score": round(hit.score, 6)}
    return sorted(fused.values(), key=lambda f: f.score, reverse=True)
