"""Episode descriptions: title, extractive summary, time span, participants (HyperMem §3.1).

No-LLM: the title is the episode's top YAKE keyphrases; the summary is the turns closest
to the episode centroid (a centroid-based extractive summary, Radev et al. 2004), each
prefixed with its speaker. The LLM path takes title and summary from the segmentation call.
"""

from __future__ import annotations

import numpy as np

from hypermem.ingest.passages import prose_of
from hypermem.model import Episode, Turn

SUMMARY_TURNS = 2
TITLE_KEYPHRASES = 3
SUMMARY_TURN_CHARS = 240
TITLE_TURN_CHARS = 2_000  # keyword extraction reads at most this much prose of each turn (long turns: code, logs)


def centroid(vectors: np.ndarray) -> np.ndarray:
    """Unit-norm mean of row vectors (shape ``(d,)``)."""
    mean = vectors.mean(axis=0)
    norm = np.linalg.norm(mean)
    return mean / norm if norm else mean


def title_input(turns: list[Turn]) -> tuple[str, frozenset[str]]:
    """What an episode's title is made from: ``(text, exclude)`` for ``KeywordExtractor.top``: its turns' prose (at
    most ``TITLE_TURN_CHARS`` of each) and the words no title phrase may hold (speakers and their nicknames, "mel")."""
    names = {t.speaker.lower() for t in turns}
    exclude = frozenset(names | {name[:3] for name in names})
    return " ".join(prose_of(t.text)[:TITLE_TURN_CHARS] for t in turns), exclude


def title(keyphrases: list[str], turns: list[Turn]) -> str:
    """An episode's title: its top ``TITLE_KEYPHRASES`` keyphrases of ``title_input``, else its first turn's start."""
    return ", ".join(keyphrases) or turns[0].text[:60]


def summary(turns: list[Turn], vectors: np.ndarray) -> str:
    """An episode's extractive summary from its turns and their unit vectors ``(n, d)``: the ``SUMMARY_TURNS`` turns
    closest to their centroid, in dialogue order, each with its speaker."""
    closeness = vectors @ centroid(vectors)
    picked = sorted(np.argsort(-closeness)[:SUMMARY_TURNS])
    return " ".join(f"{turns[i].speaker}: {turns[i].text[:SUMMARY_TURN_CHARS]}" for i in picked)


def episode_turns(episode: Episode, turns: list[Turn]) -> list[Turn]:
    """The turns of ``episode`` among ``turns``, in their order."""
    members = set(episode.turn_ids)
    return [t for t in turns if t.id in members]


def episode_search_text(title: str, turns: list[Turn]) -> str:
    """What the episode's full-text index sees: its title and every turn's words with speakers."""
    return title + ". " + " ".join(f"{t.speaker}: {t.text}" for t in turns)
