"""Query analysis (HingeMem §3.3): the query type and the elements the query names.

Query types decide how retrieval stops:
- *recall* — enumerations ("how many", "list", "what are all", "which ... has X done");
- *judgment* — yes/no questions ("did", "is", "would");
- *precision* — everything else ("when", "what", "where", "who").
No-LLM ``RuleQueryAnalyzer``: regular expressions for the type, the memory's own Person
and Location names matched as words (a query can only usefully name elements the memory
has), date patterns resolved by dateparser for times; no NER, which would cost more than
the rest of the analysis for nothing the name match misses.
``LLMQueryAnalyzer`` asks the LLM (``hypermem.llm.prompts.analyze_query``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from hypermem.dates import DateResolver, find_dates

QueryType = Literal["recall", "precision", "judgment"]

_RECALL = re.compile(
    r"\b(how many|how often|list|all (the|of)|what are (all|some)|what were (all|some)|what (kinds?|types?|sorts?) of"
    r"|which \w+s\b|what \w+s (has|have|did|does|do)\b|what (activities|things|events|books|hobbies|places))",
    re.I,
)
# "Where has Melanie camped?", "What events has Caroline attended?": perfect aspect over a person asks for every occasion.
_RECALL_PERFECT = re.compile(r"\b(has|have) [A-Z][a-z]+\b(?! been\b)")
_JUDGMENT = re.compile(r"^\s*(did|does|do|is|are|was|were|would|could|can|has|have|had|will|should|might)\b", re.I)


@dataclass
class QueryAnalysis:
    """``query_type`` plus matched element node ids and names; ``source`` is "rules" or "llm"."""

    query_type: QueryType
    persons: list[str] = field(default_factory=list)
    locations: list[str] = field(default_factory=list)
    times: list[str] = field(default_factory=list)
    element_ids: list[str] = field(default_factory=list)
    source: str = "rules"
    #: The learned ranker's expanded BM25 leg (``hypermem.retrieve.expansion``): the query's words (1.0) and the
    #: memory's vocabulary words it added, with their weights (cos²); empty under the RRF ranker.
    expansion: dict[str, float] = field(default_factory=dict)


def classify(query: str) -> QueryType:
    """The HingeMem query type of ``query`` by rules."""
    if _RECALL.search(query) or (_RECALL_PERFECT.search(query) and not _JUDGMENT.match(query)):
        return "recall"
    if _JUDGMENT.match(query):
        return "judgment"
    return "precision"


class QueryAnalyzer(Protocol):
    def analyze(self, query: str, known: list[dict], now: datetime) -> QueryAnalysis:
        """The type of ``query`` and the elements it names among ``known`` (the memory's Person/Location
        elements ``{id, name, kind}``); relative dates resolve against ``now``."""


class RuleQueryAnalyzer:
    """No-LLM analysis. ``analyze(query, known_elements, now) -> QueryAnalysis``."""

    def __init__(self, dates: DateResolver):
        self.dates = dates

    def analyze(self, query: str, known: list[dict], now: datetime) -> QueryAnalysis:
        """``known``: the memory's Person/Location elements ``{id, name, kind}``."""
        analysis = QueryAnalysis(classify(query))
        lowered = query.lower()
        for element in known:
            name = element["name"].lower()
            if re.search(rf"\b{re.escape(name)}\b", lowered):
                (analysis.persons if element["kind"] == "Person" else analysis.locations).append(element["name"])
                analysis.element_ids.append(element["id"])
        analysis.times = sorted({t.value for t in find_dates(query, now, self.dates)})
        return analysis


class LLMQueryAnalyzer(RuleQueryAnalyzer):
    """The LLM classifies the query and names its elements; matching to nodes stays rule-based."""

    def __init__(self, dates: DateResolver, client):
        super().__init__(dates)
        self.client = client

    def analyze(self, query: str, known: list[dict], now: datetime) -> QueryAnalysis:
        from hypermem.llm.client import LLMError
        from hypermem.llm.prompts import analyze_query

        analysis = super().analyze(query, known, now)
        try:
            answer = analyze_query(self.client, query, now.date().isoformat())
        except LLMError:
            return analysis
        analysis.query_type = answer["query_type"]
        named = {n.lower() for n in answer["persons"] + answer["locations"]}
        for element in known:
            if element["name"].lower() in named and element["id"] not in analysis.element_ids:
                (analysis.persons if element["kind"] == "Person" else analysis.locations).append(element["name"])
                analysis.element_ids.append(element["id"])
        analysis.times = sorted(set(analysis.times) | set(answer["times"]))
        analysis.source = "llm"
        return analysis
