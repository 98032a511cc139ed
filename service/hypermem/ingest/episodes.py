"""Episode descriptions: title, extractive summary, time span, participants (HyperMem §3.1).

No-LLM: the title is the episode's top YAKE keyphrases; the summary is the turns closest
to the episode centroid (a centroid-based extractive summary, Radev et al. 2004), each
prefixed with its speaker. The LLM path takes title and summary from the segmentation call.
"""

from __future__ import annotations

import numpy as np

from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.passages import prose_of
from hypermem.model import Turn

SUMMARY_TURNS = 2
SUMMARY_TURN_CHARS = 240
TITLE_TURN_CHARS = 2_000  # keyword extraction reads at most this much prose of each turn (long turns: code, logs)


def centroid(vectors: np.ndarray) -> np.ndarray:
    """Unit-norm mean of row vectors (shape ``(d,)``)."""
    mean = vectors.mean(axis=0)
    norm = np.linalg.norm(mean)
    return mean / norm if norm else mean


def describe(turns: list[Turn], vectors: np.ndarray, keywords: KeywordExtractor) -> tuple[str, str]:
    """``(title, summary)`` of an episode from its turns and their unit vectors ``(n, d)``."""
    names = {t.speaker.lower() for t in turns}
    exclude = frozenset(names | {name[:3] for name in names})  # speakers and nicknames ("mel")
    words = " ".join(prose_of(t.text)[:TITLE_TURN_CHARS] for t in turns)
    title = ", ".join(keywords.top(words, 3, exclude)) or turns[0].text[:60]
    closeness = vectors @ centroid(vectors)
    picked = sorted(np.argsort(-closeness)[:SUMMARY_TURNS])
    summary = " ".join(f"{turns[i].speaker}: {turns[i].text[:SUMMARY_TURN_CHARS]}" for i in picked)
    return title, summary


def episode_search_text(title: str, turns: list[Turn]) -> str:
    """What the episode's full-text index sees: its title and every turn's words with speakers."""
    return title + ". " + " ".join(f"{t.speaker}: {t.text}" for t in turns)
