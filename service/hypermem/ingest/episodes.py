"""Episode descriptions: title, extractive summary, time span, participants (HyperMem §3.1).

The title is the episode's top keyphrases, pooled from its turns' own YAKE keyphrases (those their facts carry,
computed once); the summary is the turns closest to the episode centroid (a centroid-based extractive summary,
Radev et al. 2004), each prefixed with its speaker.
"""

from __future__ import annotations

import re

import numpy as np

from hypermem.ingest.passages import prose_of
from hypermem.model import Episode, Turn

SUMMARY_TURNS = 2
TITLE_KEYPHRASES = 3
SUMMARY_TURN_CHARS = 240
TITLE_TURN_CHARS = 2_000  # keyword extraction reads at most this much prose of each turn (long turns: code, logs)
TITLE_PHRASE_CHARS = 40  # a longer keyphrase (a pasted blob, a sequence, a URL) is no title phrase
_WORDS = re.compile(r"[\w']+")  # the words of a keyphrase or a speaker's name, any script


def centroid(vectors: np.ndarray) -> np.ndarray:
    """Unit-norm mean of row vectors (shape ``(d,)``)."""
    mean = vectors.mean(axis=0)
    norm = np.linalg.norm(mean)
    return mean / norm if norm else mean


def title_exclusions(turns: list[Turn]) -> frozenset[str]:
    """The words no title phrase of an episode of ``turns`` may hold: its speakers and their nicknames ("mel")."""
    names = {t.speaker.casefold() for t in turns}
    return frozenset({word for name in names for word in _WORDS.findall(name)} | {name[:3] for name in names})


def title_keyphrases(turn_keyphrases: list[list[str]], exclude: frozenset[str]) -> list[str]:
    """An episode's top ``TITLE_KEYPHRASES`` keyphrases from its turns' own (``turn_keyphrases``: each turn's YAKE
    keyphrases, best first, as its fact carries them): a phrase scores 1 / (1 + its rank) in each turn that has it,
    summed, so a phrase the episode keeps coming back to wins; ties go to the earlier phrase. Phrases holding a word of
    ``exclude`` (``title_exclusions``), and phrases over ``TITLE_PHRASE_CHARS``, are left out."""
    scores: dict[str, float] = {}
    for found in turn_keyphrases:
        for rank, phrase in enumerate(found):
            if len(phrase) <= TITLE_PHRASE_CHARS and not exclude.intersection(_WORDS.findall(phrase.casefold())):
                scores[phrase] = scores.get(phrase, 0.0) + 1.0 / (1 + rank)
    return sorted(scores, key=lambda phrase: -scores[phrase])[:TITLE_KEYPHRASES]


def title_text(turn: Turn) -> str:
    """The text a turn's title keyphrases come from (``KeywordExtractor.top`` of it): its prose, at most
    ``TITLE_TURN_CHARS`` (the turn fact's keyword text when the turn is not long: the same keyphrases, computed once)."""
    return prose_of(turn.text)[:TITLE_TURN_CHARS]


def title(keyphrases: list[str], turns: list[Turn]) -> str:
    """An episode's title: its ``title_keyphrases``, else its first turn's start (its prose, else its text, on one
    line, at most 60 characters)."""
    first = turns[0].text
    return ", ".join(keyphrases) or " ".join((prose_of(first) or first).split())[:60]


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
