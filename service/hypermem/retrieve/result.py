"""The typed result of one query (``Retriever.query``), serialized once by ``QueryResult.to_dict``.

The retrieval stages rank plain dict candidates; ``QueryResult.build`` turns the final ones into
typed evidence items at the end of ``Retriever.query`` (as neo4j-graphrag's ``RetrieverResult``).
``to_dict()`` is the JSON shape the API, the MCP server, ``hypermem query --json`` and the stored
``QueryRecord`` share::

    {query_id, memory_id, query, analysis, config,
     topics:   [{id, title, rank, score, rankers}],
     episodes: [{id, rank, title, summary, start, end, score, path}],
     facts:    [{id, kind, content, date, episode_id, score, cosine, source_dia_ids, path,
                 [superseded_by], [rerank_score]}],                    kind: "fact" | "passage"
     turns:    [{dia_id, speaker, timestamp, text, score, path, [snippet]}],
     stop: {query_type, rule, cut_at, considered, threshold},
     rerank: {enabled, reason | model}, selection: {enabled, reason | kept},
     context, context_tokens, answer, timings_ms: {embed, analysis, ..., total}}

Scores are RRF sums (HyperMem §3.4) rounded to 6 places; ``rankers`` maps a ranker ("bm25",
"dense", ...) to ``{rank, score}``; ``path`` is the explanation, query -> topic -> hyperedge ->
episode -> hyperedge -> fact -> fused -> turn (HiGMem: every turn traces back to the query);
timings are milliseconds. Bracketed keys appear only when set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from hypermem.retrieve.analysis import QueryAnalysis
    from hypermem.retrieve.config import SearchConfig
    from hypermem.retrieve.stopping import StopDecision

Rankers = dict[str, dict[str, float]]  # ranker -> {"rank": 1-based rank, "score": its own score}


class _Item:
    """``to_dict()``: the fields in order, a ``path`` as step dicts, an ``OPTIONAL`` field only when set."""

    OPTIONAL: ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for spec in fields(self):  # type: ignore[arg-type]
            value = getattr(self, spec.name)
            if value is None and spec.name in self.OPTIONAL:
                continue
            out[spec.name] = [step.to_dict() for step in value] if spec.name == "path" else value
        return out


@dataclass(frozen=True)
class PathStep(_Item):
    """One step of an explanation path. ``level``: query | topic | hyperedge | episode | fact | recency |
    superseded | supersedes | fused | turn; the other fields are set only where that level has them:
    ``score`` (RRF, or the recency bonus), ``rank``, ``rankers``, ``title`` (topic), ``kind`` and ``weight``
    (hyperedge: its kind and the member weight), ``via`` (the search that started a path; on a fused step,
    ``exact_match`` when ``turn_ranker.exact_match`` put that turn first), ``elements`` and
    ``segment`` (episode: matched HingeMem elements and their segment hyperedge), ``rerank_score``,
    ``by``/``latest`` (superseded: the successor and the chain's latest fact), ``replaces`` (supersedes),
    ``dia_id`` and ``reply_to`` (turn); ``logit`` and ``ranker`` (fused by the learned turn ranker: its
    logit and the features' parts of it, ``hypermem.retrieve.turn_ranker``; ``score`` is then P(evidence))."""

    level: str
    id: str
    score: float | None = None
    rank: int | None = None
    rankers: Rankers | None = None
    title: str | None = None
    kind: str | None = None
    weight: float | None = None
    via: str | None = None
    elements: list[Any] | None = None
    segment: str | None = None
    rerank_score: float | None = None
    by: str | None = None
    latest: str | None = None
    replaces: str | None = None
    dia_id: str | None = None
    reply_to: str | None = None
    logit: float | None = None
    ranker: dict[str, float] | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = (
        "score", "rank", "rankers", "title", "kind", "weight", "via", "elements", "segment", "rerank_score", "by",
        "latest", "replaces", "dia_id", "reply_to", "logit", "ranker",
    )  # fmt: skip


def _path(steps: list[dict]) -> list[PathStep]:
    return [PathStep(**step) for step in steps]


@dataclass(frozen=True)
class TopicHit(_Item):
    """A topic of the topic level (HyperMem k^T), best first."""

    id: str
    title: str | None
    rank: int
    score: float
    rankers: Rankers


@dataclass(frozen=True)
class EpisodeHit(_Item):
    """An episode of the episode level (HyperMem k^E): its span (ISO 8601 ``start``/``end``) and path."""

    id: str
    rank: int
    title: str | None
    summary: str | None
    start: str | None
    end: str | None
    score: float
    path: list[PathStep]


@dataclass(frozen=True)
class FactHit(_Item):
    """A kept fact (or ``kind`` "passage": a slice of a long turn) with the dia_ids of its source turns.

    ``cosine`` is its dense similarity to the query; ``superseded_by`` the later fact that replaced it."""

    id: str
    kind: str
    content: str
    date: str | None
    episode_id: str | None
    score: float
    cosine: float
    source_dia_ids: list[str]
    path: list[PathStep]
    superseded_by: str | None = None
    rerank_score: float | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = ("superseded_by", "rerank_score")


@dataclass(frozen=True)
class TurnHit(_Item):
    """An evidence turn (HiGMem): ``snippet`` is the matching passage when the turn is long."""

    dia_id: str
    speaker: str
    timestamp: str
    text: str
    score: float
    path: list[PathStep]
    snippet: str | None = None

    OPTIONAL: ClassVar[tuple[str, ...]] = ("snippet",)


@dataclass(frozen=True)
class QueryResult:
    """Evidence for one query, with its analysis, settings, stop decision, context and timings (ms)."""

    query_id: str
    memory_id: str
    query: str
    analysis: QueryAnalysis
    config: SearchConfig
    topics: list[TopicHit]
    episodes: list[EpisodeHit]
    facts: list[FactHit]
    turns: list[TurnHit]
    stop: StopDecision
    rerank: dict[str, Any]
    selection: dict[str, Any]
    context: str
    context_tokens: int
    answer: str | None
    timings_ms: dict[str, float] = field(default_factory=dict)

    @classmethod
    def build(cls, *, topics: list[dict], episodes: list[dict], facts: list[dict], turns: list[dict],
              **rest: Any) -> QueryResult:  # fmt: skip
        """A result from the pipeline's candidate dicts (a fact's internal ``sources`` are dropped) and the
        other fields by name. Raises ``TypeError`` for a candidate key no evidence type declares."""
        return cls(
            topics=[TopicHit(**topic) for topic in topics],
            episodes=[EpisodeHit(**{**e, "path": _path(e["path"])}) for e in episodes],
            facts=[FactHit(**{**_without(f, "sources"), "path": _path(f["path"])}) for f in facts],
            turns=[TurnHit(**{**{k: v for k, v in t.items() if k != "seq"}, "path": _path(t["path"])}) for t in turns],
            **rest,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready result (the shape in this module's docstring)."""
        return {
            "query_id": self.query_id,
            "memory_id": self.memory_id,
            "query": self.query,
            "analysis": asdict(self.analysis),
            "config": asdict(self.config),
            "topics": [topic.to_dict() for topic in self.topics],
            "episodes": [episode.to_dict() for episode in self.episodes],
            "facts": [fact.to_dict() for fact in self.facts],
            "turns": [turn.to_dict() for turn in self.turns],
            "stop": self.stop.as_dict(),
            "rerank": dict(self.rerank),
            "selection": dict(self.selection),
            "context": self.context,
            "context_tokens": self.context_tokens,
            "answer": self.answer,
            "timings_ms": dict(self.timings_ms),
        }


def _without(candidate: Mapping[str, Any], *keys: str) -> dict[str, Any]:
    return {k: v for k, v in candidate.items() if k not in keys}
