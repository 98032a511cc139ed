"""Stage 4: atomic facts of an episode (HyperMem §3.1): content, potential, keywords, source turns, date.

No-LLM ``TurnFactExtractor``: every content-bearing turn becomes one self-contained
statement that names the speaker and the date it was said, with relative dates spelled
out ("yesterday (7 May 2023)"), YAKE keywords, and template ``potential`` questions built
from the keywords and elements. A short answer to the other speaker's question carries
that question with it, so "Yes, last week!" stays findable.
``LLMFactExtractor`` asks the LLM (``hypermem.llm.prompts.extract_facts``).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from typing import Protocol

from hypermem.dates import annotate_dates, said_on
from hypermem.ingest.elements import TurnElements
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.passages import PassageSplitter, prose_of
from hypermem.model import FactKind, Turn

log = logging.getLogger(__name__)
TURN_KEYWORDS = 5  # YAKE keywords per turn fact (the ingest pipeline computes them ahead)
_WORD = re.compile(r"[^\W\d_]{3,}")  # 3+ letters of any script
# Scripts written without spaces (Han, kana, Thai): a run of them is a phrase, not a word; each 2 characters count.
_UNSPACED = re.compile("[\u0e00-\u0e7f\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
_PHATIC = {"thanks", "thank", "bye", "hey", "hello", "haha", "cool", "wow", "great", "awesome", "nice", "sure",
           "yeah", "yes", "okay", "take", "care", "see", "talk", "later", "soon", "you", "too", "glad", "good"}  # fmt: skip


@dataclass
class FactDraft:
    """A fact before ids and embeddings.

    ``embed_text`` is what the dense index sees; when None the vector is derived from the
    source turns' vectors (plus ``context_turn_id``'s, the question it answers), which costs
    no model call.
    """

    content: str
    potential: list[str]
    keywords: list[str]
    date: str
    turn_ids: list[str]
    embed_text: str | None = None
    context_turn_id: str | None = None
    kind: FactKind = "fact"


class FactExtractor(Protocol):
    def extract(self, turns: list[Turn], elements: list[TurnElements], previous: list[Turn | None]) -> list[FactDraft]:
        """Facts of one episode's turns (``previous[i]`` is the turn before ``turns[i]``, or None)."""


def is_content_bearing(text: str) -> bool:
    """True when a turn says something beyond greetings and thanks: 3+ non-phatic words of 3+ letters (any script;
    in a script written without spaces, each 2 characters count as a word)."""
    unspaced = sum(len(run) // 2 for run in _UNSPACED.findall(text))
    words = [w.lower() for w in _WORD.findall(_UNSPACED.sub(" ", text))]
    return unspaced + sum(1 for w in words if w not in _PHATIC) >= 3


class TurnFactExtractor:
    """One fact per content-bearing turn (no LLM); a turn too long for the embedding model becomes
    passages instead (``splitter``), each a fact of kind "passage" with its own vector."""

    def __init__(self, keywords: KeywordExtractor | None = None, splitter: PassageSplitter | None = None):
        self.keywords = keywords or KeywordExtractor()
        self.splitter = splitter

    def keyword_texts(self, turns: list[Turn]) -> list[str]:
        """The texts ``extract`` will ask ``TURN_KEYWORDS`` keywords of (the pipeline computes them ahead,
        in the annotation worker, and hands them to ``self.keywords.remember``)."""
        return [prose_of(t.text) for t in turns if self.splitter is None or not self.splitter.is_long(t.text)]

    def extract(self, turns: list[Turn], elements: list[TurnElements], previous: list[Turn | None]) -> list[FactDraft]:
        facts = []
        for turn, found, before in zip(turns, elements, previous):
            if self.splitter is not None and self.splitter.is_long(turn.text):
                facts += self._passages(turn, found)
                continue
            if not is_content_bearing(turn.text) and not found.times:
                continue
            text = annotate_dates(turn.text, found.times)
            content = f"{turn.speaker} said on {said_on(turn.timestamp)}: {text}"
            keywords = self.keywords.top(prose_of(turn.text), TURN_KEYWORDS)
            replies = before is not None and before.speaker != turn.speaker and before.text.rstrip().endswith("?")
            facts.append(
                FactDraft(
                    content=content,
                    potential=self._potential(turn.speaker, keywords, found),
                    keywords=keywords,
                    date=found.times[0].value if found.times else turn.timestamp[:10],
                    turn_ids=[turn.id],
                    context_turn_id=before.id if before is not None and replies else None,
                )
            )
        return facts

    def _passages(self, turn: Turn, found: TurnElements) -> list[FactDraft]:
        """The passages of a long turn as facts: prose with dates spelled out and keywords; code as it is
        (identifiers stay searchable by full text), with its language tag."""
        assert self.splitter is not None  # extract() sends only long turns, which exist only with a splitter
        passages = self.splitter.split(turn.text)
        drafts = []
        for passage in passages:
            label = f"passage {passage.index + 1}/{len(passages)}"
            if passage.kind == "code":
                label += f", {passage.language or 'code'}"
                text, keywords = passage.text, []
            else:
                text, keywords = annotate_dates(passage.text, found.times), self.keywords.top(passage.text, 5)
            drafts.append(
                FactDraft(
                    content=f"{turn.speaker} said on {said_on(turn.timestamp)} ({label}): {text}",
                    potential=[],
                    keywords=keywords,
                    date=turn.timestamp[:10],
                    turn_ids=[turn.id],
                    embed_text=f"{turn.speaker}: {passage.text}",
                    kind="passage",
                )
            )
        return drafts

    @staticmethod
    def _potential(speaker: str, keywords: list[str], found: TurnElements) -> list[str]:
        """Template questions the fact can answer (HyperMem's ``potential``), from keywords and elements."""
        if not keywords:
            return []
        topic = ", ".join(keywords[:3])
        questions = [f"What did {speaker} say about {topic}?"]
        if found.times:
            questions.append(f"When did {speaker} mention {keywords[0]}?")
        if found.locations:
            questions.append(f"Where did {speaker} mention {keywords[0]}?")
        for person in found.persons[:2]:
            questions.append(f"What did {speaker} say about {person}?")
        return questions


class LLMFactExtractor:
    """Facts from the LLM; a turn the LLM leaves without a fact keeps its no-LLM fact (nothing is lost)."""

    def __init__(self, client, fallback: TurnFactExtractor | None = None):
        self.client = client
        self.fallback = fallback or TurnFactExtractor()

    def extract(self, turns: list[Turn], elements: list[TurnElements], previous: list[Turn | None]) -> list[FactDraft]:
        from hypermem.llm.client import LLMError
        from hypermem.llm.prompts import extract_facts

        splitter = self.fallback.splitter
        by_dia = {t.dia_id: t for t in turns if splitter is None or not splitter.is_long(t.text)}  # long: passages
        try:
            raw = (
                extract_facts(
                    self.client,
                    "",
                    [
                        {"dia_id": t.dia_id, "speaker": t.speaker, "text": t.text, "timestamp": t.timestamp}
                        for t in by_dia.values()
                    ],
                )
                if by_dia
                else []
            )
        except LLMError as exc:
            log.warning("LLM fact extraction failed (%s); no-LLM facts for this episode", exc)
            raw = []
        facts = []
        covered: set[str] = set()
        for item in raw:
            sources = [by_dia[d] for d in item["source_dia_ids"] if d in by_dia]
            if not sources:
                continue
            covered.update(t.id for t in sources)
            facts.append(
                FactDraft(
                    content=item["content"],
                    potential=item["potential"],
                    keywords=item["keywords"],
                    date=item.get("date") or sources[0].timestamp[:10],
                    turn_ids=[t.id for t in sources],
                    embed_text=item["content"],
                )
            )
        missing = [i for i, t in enumerate(turns) if t.id not in covered]
        facts += self.fallback.extract(
            [turns[i] for i in missing], [elements[i] for i in missing], [previous[i] for i in missing]
        )
        return facts
