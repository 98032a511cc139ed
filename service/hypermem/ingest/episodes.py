"""Episode descriptions: title, extractive summary, time span, participants (HyperMem §3.1).

The title is the episode's top YAKE keyphrases; the summary is the turns closest to the
episode centroid (a centroid-based extractive summary, Radev et al. 2004), each prefixed with
its speaker. Both paths describe episodes so (the LLM segmenter gives spans only). The titles of
a large ingest are computed by the annotation worker and the ingest's own thread together
(``hypermem.ingest.annotate.SharedKeywords``).
"""

from __future__ import annotations

import numpy as np

from hypermem.ingest.passages import prose_of
from hypermem.model import Turn

TITLE_KEYWORDS = 3
SUMMARY_TURNS = 2
SUMMARY_TURN_CHARS = 240
TITLE_TURN_CHARS = 2_000  # keyword extraction reads at most this much prose of each turn (long turns: code, logs)


def centroid(vectors: np.ndarray) -> np.ndarray:
    """Unit-norm mean of row vectors (shape ``(d,)``)."""
    mean = vectors.mean(axis=0)
    norm = np.linalg.norm(mean)
    return mean / norm if norm else mean


def title_request(turns: list[Turn]) -> tuple[str, frozenset[str]]:
    """What the no-LLM title of an episode of ``turns`` is computed from: ``(prose, exclude)``, for
    ``KeywordExtractor.top(prose, TITLE_KEYWORDS, exclude)``. ``exclude`` holds the speakers' names and
    nicknames ("mel"); ``prose`` is at most ``TITLE_TURN_CHARS`` of each turn's prose."""
    names = {t.speaker.lower() for t in turns}
    exclude = frozenset(names | {name[:3] for name in names})
    return " ".join(prose_of(t.text)[:TITLE_TURN_CHARS] for t in turns), exclude


def title(keywords: list[str], turns: list[Turn]) -> str:
    """The episode's title: its top keyphrases (``title_request``), or the start of its first turn without any."""
    return ", ".join(keywords) or turns[0].text[:60]


def summary(turns: list[Turn], vectors: np.ndarray) -> str:
    """The extractive summary of an episode from its turns and their unit vectors ``(n, d)``: the
    ``SUMMARY_TURNS`` turns closest to the centroid, in dialogue order, each prefixed with its speaker."""
    closeness = vectors @ centroid(vectors)
    picked = sorted(np.argsort(-closeness)[:SUMMARY_TURNS])
    return " ".join(f"{turns[i].speaker}: {turns[i].text[:SUMMARY_TURN_CHARS]}" for i in picked)


def episode_search_text(title: str, turns: list[Turn]) -> str:
    """What the episode's full-text index sees: its title and every turn's words with speakers."""
    return title + ". " + " ".join(f"{t.speaker}: {t.text}" for t in turns)
