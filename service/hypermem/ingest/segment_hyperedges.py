"""Stage 5c: segment hyperedges joining the elements of each episode (HingeMem §3.2).

Every episode's Person/Time/Location element set becomes a segment hyperedge; a new
segment whose element set has Jaccard > ``merge_jaccard`` with an existing one merges
into it (union of members), so recurring constellations ("Caroline + Melanie + the
support group + May 2023") become one hyperedge anchoring several episodes.
Member weight w = mentions of the element in the segment / mentions of its most
mentioned element, in [0, 1]. (Where an episode starts and ends is ``hypermem.ingest.boundaries``.)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from hypermem.model import node_id, unused_id


def jaccard(a: set[str], b: set[str]) -> float:
    """|a ∩ b| / |a ∪ b| (0 for two empty sets)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


@dataclass
class Segment:
    """A segment hyperedge: element mention counts and the episodes it anchors."""

    id: str
    mentions: Counter = field(default_factory=Counter)
    episode_ids: list[str] = field(default_factory=list)
    changed: bool = False

    @property
    def elements(self) -> set[str]:
        return set(self.mentions)

    def weights(self) -> dict[str, float]:
        top = max(self.mentions.values(), default=1)
        return {element: round(count / top, 6) for element, count in self.mentions.items()}


class SegmentMerger:
    """Assign episodes to segment hyperedges, merging at Jaccard > ``merge_jaccard``."""

    def __init__(self, segments: list[Segment], merge_jaccard: float = 0.8):
        self.segments = segments
        self.merge_jaccard = merge_jaccard

    def add(self, segment_id: str, episode_id: str, mentions: Counter) -> Segment:
        """Attach ``episode_id`` with its element ``mentions``; returns the (new or merged) segment."""
        elements = set(mentions)
        best = max(self.segments, key=lambda s: jaccard(s.elements, elements), default=None)
        if best is not None and jaccard(best.elements, elements) > self.merge_jaccard:
            target = best
        else:
            target = Segment(segment_id)
            self.segments.append(target)
        target.mentions.update(mentions)
        if episode_id not in target.episode_ids:
            target.episode_ids.append(episode_id)
        target.changed = True
        return target


def segment_hyperedge_rows(
    memory_id: str, existing: list[Segment], episodes: Iterable[tuple[str, Counter]], merge_jaccard: float
) -> list[dict]:
    """``write/hyperedges`` rows of the segment hyperedges this ingest creates or changes.

    ``existing``: the memory's stored segments, without the episodes being rebuilt (left unchanged: the
    merge works on copies); ``episodes``: ``(episode id, element mentions)`` of each new episode, in
    dialogue order. A new segment's id is ``{memory_id}/hyperedge/segment:{episode key}`` (``#2``, ``#3``...
    appended while a stored segment holds that id).
    """
    merger = SegmentMerger([Segment(s.id, Counter(s.mentions), list(s.episode_ids)) for s in existing], merge_jaccard)
    for episode_id, mentions in episodes:
        local = episode_id.rsplit("/", 1)[-1]
        segment_id = unused_id(node_id(memory_id, "hyperedge", f"segment:{local}"), {s.id for s in merger.segments})
        merger.add(segment_id, episode_id, mentions)
    return [
        {
            "memory_id": memory_id,
            "id": s.id,
            "kind": "segment",
            "owner_ids": s.episode_ids,
            "members": [{"id": k, "weight": w} for k, w in s.weights().items()],
        }  # fmt: skip
        for s in merger.segments
        if s.changed
    ]
