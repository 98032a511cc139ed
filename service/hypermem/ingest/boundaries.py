"""Stage 3: split each session into episodes (HingeMem §3.1 boundaries; TextTiling, Hearst 1997).

A new segment starts where the person, time, location or topic changes, and always at a
session break. The no-LLM ``DriftSegmenter`` scores every gap between neighbouring turns
by TextTiling depth over sentence embeddings (topic drift) plus a bonus when the next turn
brings a new Person, Time or Location element, then cuts greedily at the deepest gaps.
The ``LLMSegmenter`` asks the LLM for boundaries (``hypermem.llm.prompts.segment_episodes``).
Both return, per session, a list of ``(start, end)`` turn index ranges, end exclusive.
(The segment *hyperedges* over each episode's elements are ``hypermem.ingest.segment_hyperedges``.)
"""

from __future__ import annotations

import logging
from typing import Protocol

import numpy as np

from hypermem.ingest.elements import TurnElements

log = logging.getLogger(__name__)


class Segmenter(Protocol):
    def segment(self, texts: list[dict], vectors: np.ndarray, elements: list[TurnElements]) -> list[tuple[int, int]]:
        """Episode ranges of one session: contiguous, in order, covering every turn."""


def _unit(v: np.ndarray) -> np.ndarray:
    norm = np.linalg.norm(v)
    return v / norm if norm else v


class DriftSegmenter:
    """Embedding drift + element change. ``min_len``/``max_len`` bound episode sizes in turns."""

    def __init__(
        self, window: int = 3, min_len: int = 3, max_len: int = 10, element_bonus: float = 0.08, cutoff: float = 0.5
    ):
        self.window = window
        self.min_len = min_len
        self.max_len = max_len
        self.element_bonus = element_bonus
        self.cutoff = cutoff

    def gap_scores(self, vectors: np.ndarray, elements: list[TurnElements]) -> np.ndarray:
        """Depth score of the gap before each turn i (index 0 unused, = 0)."""
        n = len(vectors)
        sims = np.ones(n)
        for i in range(1, n):
            left = _unit(vectors[max(0, i - self.window) : i].mean(axis=0))
            right = _unit(vectors[i : i + self.window].mean(axis=0))
            sims[i] = float(left @ right)
        depth = np.zeros(n)
        for i in range(1, n):
            left_peak = sims[1 : i + 1].max()
            right_peak = sims[i:].max()
            depth[i] = (left_peak - sims[i]) + (right_peak - sims[i])
        seen: set[str] = set()
        for i, found in enumerate(elements):
            new = {f"L:{x.lower()}" for x in found.locations} | {f"T:{t.value}" for t in found.times}
            new |= {f"P:{x.lower()}" for x in found.persons}
            if i > 0 and new - seen:
                depth[i] += self.element_bonus
            seen |= new
        return depth

    def segment(self, texts: list[dict], vectors: np.ndarray, elements: list[TurnElements]) -> list[tuple[int, int]]:
        n = len(vectors)
        if n <= self.min_len * 2 - 1:
            return [(0, n)]
        depth = self.gap_scores(vectors, elements)
        candidates = depth[1:]
        threshold = candidates.mean() + self.cutoff * candidates.std()
        cuts: list[int] = []
        for i in sorted(range(1, n), key=lambda j: -depth[j]):
            if depth[i] < threshold and self._longest(cuts, n) <= self.max_len:
                break
            if all(abs(i - c) >= self.min_len for c in cuts) and i >= self.min_len and n - i >= self.min_len:
                cuts.append(i)
        bounds = [0, *sorted(cuts), n]
        return list(zip(bounds[:-1], bounds[1:]))

    @staticmethod
    def _longest(cuts: list[int], n: int) -> int:
        bounds = [0, *sorted(cuts), n]
        return max(b - a for a, b in zip(bounds[:-1], bounds[1:]))


class LLMSegmenter:
    """Boundaries from the LLM (HingeMem prompt); falls back to ``DriftSegmenter`` on an empty answer."""

    def __init__(self, client, fallback: DriftSegmenter | None = None):
        self.client = client
        self.fallback = fallback or DriftSegmenter()

    def segment(self, texts: list[dict], vectors: np.ndarray, elements: list[TurnElements]) -> list[tuple[int, int]]:
        from hypermem.llm.client import LLMError
        from hypermem.llm.prompts import segment_episodes

        try:
            spans = segment_episodes(self.client, [{"idx": i, **t} for i, t in enumerate(texts)])
        except LLMError as exc:
            log.warning("LLM segmentation failed (%s); using embedding drift for this session", exc)
            spans = []
        if not spans:
            return self.fallback.segment(texts, vectors, elements)
        return [(s["start_idx"], s["end_idx"] + 1) for s in spans]
