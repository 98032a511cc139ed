"""``hypermem.ingest.yake_core`` returns exactly what yake's own ``extract_keywords`` returns."""

from __future__ import annotations

from pathlib import Path

import pytest
import yake
from conftest import LOCOMO

from hypermem.ingest.locomo import load_locomo
from hypermem.ingest.passages import prose_of
from hypermem.ingest.yake_core import extract_keywords

SAMPLE = Path(__file__).resolve().parents[1] / "samples" / "sample-conversation.json"
ODD_TEXTS = [
    "",
    " ",
    "...",
    "123 456",
    "U.S.A. is big, the U.S.A. is bigger",
    "I'm 3D-printing X-rays!! X-rays, again",
    "a\tb\nC d\n\nE f",
    "The the the and and",
    "Hello.\n\nWorld of Warcraft, WoW. World of Warcraft is a game; games are fun.",
    "Dogs, dogs and more dogs: my dog Max loves other dogs.",
]


def _texts(path: Path, conversations: int) -> list[str]:
    """Each turn's prose, and runs of 2-12 and 60 consecutive turns (episode- and topic-sized documents),
    of the first ``conversations`` conversations of ``path``."""
    texts = list(ODD_TEXTS)
    for conversation in load_locomo(path)[:conversations]:
        turns = [prose_of(m.text) for m in conversation.messages]
        texts += turns
        texts += [" ".join(turns[i : i + 2 + i % 11]) for i in range(0, len(turns), 3)]
        texts += ["\n".join(turns[i : i + 60]) for i in range(0, len(turns), 200)]
    return texts


def _same_as_yake(texts: list[str], n: int) -> None:
    extractor = yake.KeywordExtractor(lan="en", n=n, top=20)
    for text in texts:
        expected = [(kw, float(h)) for kw, h in extractor.extract_keywords(text)]
        assert [(kw, float(h)) for kw, h in extract_keywords(extractor, text)] == expected, text[:200]


@pytest.mark.parametrize("n", [1, 2, 3])
def test_same_keywords_and_scores_as_yake_on_the_sample(n: int) -> None:
    _same_as_yake(_texts(SAMPLE, 1), n)


def test_same_keywords_and_scores_as_yake_on_locomo() -> None:
    if not LOCOMO.exists():
        pytest.skip(f"LoCoMo is absent ({LOCOMO})")
    _same_as_yake(_texts(LOCOMO, 2), 2)


def test_refuses_settings_it_does_not_implement() -> None:
    with pytest.raises(ValueError):
        list(extract_keywords(yake.KeywordExtractor(features=["wfreq"]), "some text about keywords"))
