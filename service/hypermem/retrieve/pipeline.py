"""Coarse-to-fine, query-adaptive, explained retrieval (HyperMem §3.4, HingeMem §3.3, HiGMem §3).

query -> analysis -> topic level -> episode level -> fact level -> [rerank] -> stop -> turns
                                                                         -> [LLM turn selection] -> context [-> answer]

At every level BM25 (full-text index) and dense (vector index) rankings are fused with
RRF. Expansion from a level to the next runs through the chosen hyperedges in Cypher
(``cypher/retrieve/*``); element matching uses the Cypher-computed salience. Every
returned item carries its explanation ``path``: query -> topic (score) -> hyperedge
(weight) -> episode (score) -> hyperedge (weight) -> fact (score) -> turn.

The stages rank plain dict candidates; ``Retriever.query`` returns them as a typed
``hypermem.retrieve.result.QueryResult`` (its ``to_dict()`` is the JSON shape of the API).
"""

from __future__ import annotations

import logging
import math
import time
import unicodedata
import uuid
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from hypermem.config import Settings
from hypermem.embed import Embedder
from hypermem.errors import HypermemError
from hypermem.retrieve.analysis import QueryAnalysis
from hypermem.retrieve.config import SearchConfig, query_problem
from hypermem.retrieve.context import build_context
from hypermem.retrieve.expansion import QueryExpander
from hypermem.retrieve.fusion import Fused, rrf
from hypermem.retrieve.recency import apply_recency, successors_first
from hypermem.retrieve.rerank import Reranker
from hypermem.retrieve.result import QueryResult
from hypermem.retrieve.stopping import StopDecision, cut, evidence_share_cut
from hypermem.retrieve.turn_ranker import (
    NEIGHBOR_SOURCES,
    TurnFacts,
    TurnLists,
    exact_match,
    feature_matrix,
    load_model,
)
from hypermem.store import GraphStore
from hypermem.store.base import Hit
from hypermem.store.vocabulary_matrix import Vocabulary

if TYPE_CHECKING:
    from hypermem.stages import RetrievalStages

log = logging.getLogger(__name__)

# The parent level acts as one more RRF ranker: an item gains weight × w_member / (rrf_k + parent rank).
EPISODE_TOPIC_WEIGHT = 1.0
FACT_EPISODE_WEIGHT = 1.0
EPISODE_ELEMENT_WEIGHT = 0.005  # per unit of matched element salience × member weight
CONFIDENT_COSINE = 0.6  # a judgment query's "confident hit"
CANDIDATES_PER_LEG = 40  # turns (or facts) each memory-wide leg proposes to the turn ranker
LEG_THREADS = 8  # searches of one process's queries that run at once beside their hierarchies


class QueryError(HypermemError, ValueError):
    """The query or a search setting is unusable; the message names the field."""


def _step(level: str, item_id: str, score: float | None = None, **extra) -> dict:
    step: dict[str, Any] = {"level": level, "id": item_id}
    if score is not None:
        step["score"] = round(float(score), 6)
    step.update({k: v for k, v in extra.items() if v is not None})
    return step


@dataclass(frozen=True)
class _FactLegs:
    """BM25 and dense hits over a memory's facts, and each hit fact's turn ids (``Retriever._fact_legs``)."""

    bm25: list[Hit]
    dense: list[Hit]
    turns: dict[str, list[str]]

    def turns_of(self, hits: list[Hit]) -> list[str]:
        """The turns of ``hits``, best fact first, once each."""
        return list(dict.fromkeys(t for h in hits for t in sorted(self.turns.get(h.id, []))))


#: ``_PendingLegs.result``: (TurnLists, expanded query, turn_details rows, the memory's vocabulary).
WideLegs = tuple[TurnLists, dict[str, float], dict[str, dict], Vocabulary]


@dataclass(frozen=True)
class _PendingLegs:
    """One query's memory-wide legs, running on the leg threads (``Retriever._start_memory_wide_legs``)."""

    turn_bm25: Future[list[Hit]]
    turn_dense: Future[list[Hit]]
    facts: Future[_FactLegs]
    expanded: Future[tuple[dict[str, float], list[Hit], Vocabulary]]
    details: Future[dict[str, dict]]  # ``turn_details`` rows of the four legs' turns, fetched as soon as they end

    def legs(self) -> list[Future[Any]]:
        return [self.turn_bm25, self.turn_dense, self.facts, self.expanded]

    def turn_ids(self) -> list[str]:
        """Every turn the four legs returned (they must have ended without error)."""
        facts = self.facts.result()
        hits = [*self.turn_bm25.result(), *self.turn_dense.result(), *self.expanded.result()[1]]
        return list(dict.fromkeys([*(h.id for h in hits), *facts.turns_of(facts.bm25), *facts.turns_of(facts.dense)]))

    def wait(self) -> None:
        """Block until every leg, and the fetch of their turns' details, has ended, failed or not."""
        wait([*self.legs(), self.details])

    def result(self) -> WideLegs:
        """``(TurnLists without the hierarchy's turns, the expanded query, turn_details rows of the legs' turns, the
        memory's vocabulary)``; re-raises a failed leg's error once every leg has ended."""
        self.wait()
        turn_bm25, facts = self.turn_bm25.result(), self.facts.result()
        expanded, turn_bm25_expanded, vocabulary = self.expanded.result()
        fact_bm25_scores: dict[str, float] = {}
        for hit in facts.bm25:  # best first: a turn keeps its best fact's score
            for turn_id in facts.turns.get(hit.id, []):
                fact_bm25_scores.setdefault(turn_id, hit.score)
        lists = TurnLists(
            hierarchy=(),
            turn_bm25=[h.id for h in turn_bm25],
            turn_dense=[h.id for h in self.turn_dense.result()],
            fact_bm25=facts.turns_of(facts.bm25),
            fact_dense=facts.turns_of(facts.dense),
            turn_bm25_scores={h.id: h.score for h in turn_bm25},
            fact_bm25_scores=fact_bm25_scores,
            turn_bm25_expanded=[h.id for h in turn_bm25_expanded],
        )
        return lists, expanded, self.details.result(), vocabulary


class Retriever:
    """Answers ``query(memory_id, text, **overrides)``; overrides are ``SearchConfig`` fields. The query
    analyzer, turn selector and answerer come in ready-made (``hypermem.stages.retrieval_stages``)."""

    def __init__(self, settings: Settings, store: GraphStore, embedder: Embedder, stages: RetrievalStages):
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.analyzer = stages.analyzer
        self.turn_selector = stages.turn_selector
        self.answerer = stages.answerer
        self.reranker = Reranker(settings.reranker_model)
        self.turn_ranker = load_model(settings.turn_ranker_model)
        self.expander = QueryExpander(store, embedder)
        # a query's memory-wide legs and each level's dense search run here while its hierarchy runs on the calling
        # thread (a task here never waits on another task here)
        self._legs = ThreadPoolExecutor(max_workers=LEG_THREADS, thread_name_prefix="hypermem-legs")
        # a query's tasks that wait for its legs, then make the next round trip (a task here waits only on the legs)
        self._joins = ThreadPoolExecutor(max_workers=LEG_THREADS, thread_name_prefix="hypermem-joins")

    # --- one level: BM25 + dense, fused with RRF ---------------------------------------------
    def _rank(self, label: str, memory_id: str, text: str, vector: np.ndarray, k: int, cfg: SearchConfig,
              candidates: list[str] | None = None) -> list[Fused]:  # fmt: skip
        prop = "embedding" if label in ("Topic", "Turn") else cfg.vector_property
        # the dense search runs on a leg thread while this one waits for the BM25 matches: two round trips at once
        dense = self._legs.submit(self.store.vector_search, label, memory_id, vector, k, prop=prop,
                                  candidates=candidates)  # fmt: skip
        try:
            bm25 = self.store.fulltext_search(label, memory_id, text, k, candidates=candidates)
        finally:
            wait([dense])  # no search outlives its level, even a failed one
        return rrf({"bm25": bm25, "dense": dense.result()}, k=cfg.rrf_k)

    # --- entry point --------------------------------------------------------------------------
    def query(self, memory_id: str, text: str, **overrides) -> QueryResult:
        """Evidence for ``text`` in ``memory_id``. Raises ``QueryError`` for an empty/oversized query or bad override.
        ``text`` is searched in Unicode NFC, as turns are stored (``ingest.turns.turn_text``): "cre\u0302perie" finds
        "crêperie" by its words too, not only by its vector."""
        cfg = self._config(text, overrides)  # refuses what is no query (None, blank, too long) naming the field
        text = unicodedata.normalize("NFC", text)
        timings: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(name: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            timings[name] = round((now - clock) * 1000, 2)
            clock = now

        started = clock
        learned = cfg.turn_ranker == "learned"
        # the query analysis (a round trip for the memory's elements) and BM25 over turns need no vector: they run on
        # leg threads while this one embeds the query ("analysis" is then the wait for it after the embedding)
        analyzed = self._legs.submit(self._analyze, memory_id, text)
        turn_bm25 = (self._legs.submit(self.store.fulltext_search, "Turn", memory_id, text, CANDIDATES_PER_LEG)
                     if learned else None)  # fmt: skip
        try:
            vector = self.embedder.encode_one(text)
            lap("embed")
            analysis = analyzed.result()
        except BaseException:
            started_early: list[Future[Any]] = [analyzed] if turn_bm25 is None else [analyzed, turn_bm25]
            wait(started_early)  # no search outlives its query, even a failed one
            raise
        lap("analysis")
        legs = (self._start_memory_wide_legs(memory_id, text, vector, analysis.persons, turn_bm25=turn_bm25)
                if learned else None)  # fmt: skip
        try:
            topics, episodes, facts, rerank_info = self._hierarchy(memory_id, text, vector, cfg, analysis, lap)
        finally:
            if legs is not None:
                legs.wait()  # no leg outlives its query, even a failed one
        wide = legs.result() if legs is not None else None
        ranked, evidence = self._ranked_turns(memory_id, text, vector, facts, cfg, analysis, wide)
        if evidence is not None and cfg.stopping == "adaptive":
            budget = self.turn_ranker.budget_for(analysis.query_type, cfg.turn_budget)  # the query type's
            stop = evidence_share_cut(evidence, analysis.query_type, budget=budget,
                                      scale=self.turn_ranker.share_scale)  # fmt: skip
            size = stop.cut_at
        elif evidence is not None:  # fixed: the top turn_budget of the ranker's candidate turns
            stop = replace(cut(sorted(evidence, reverse=True), analysis.query_type, mode="fixed", k=cfg.turn_budget),
                           counts="candidate turns")  # fmt: skip
            size = cfg.turn_budget
        else:
            stop = self._stop(facts, analysis, cfg)
            size = self._evidence_size(facts, stop, cfg)
        turns = self._turns(ranked, size, cfg.replies)
        selection = self.turn_selector.select(text, turns)
        kept = {t["dia_id"] for t in turns}
        facts = [f for f in facts if kept & set(f["source_dia_ids"])]
        lap("stop")
        context = build_context(text, facts, turns)
        answer = self.answerer.answer(text, context) if cfg.answer else None
        lap("answer")
        timings["total"] = round((time.perf_counter() - started) * 1000, 2)
        return QueryResult.build(
            query_id=uuid.uuid4().hex, memory_id=memory_id, query=text, analysis=analysis, config=cfg,
            topics=topics, episodes=episodes, facts=facts, turns=turns, stop=stop, rerank=rerank_info,
            selection=selection, context=context, context_tokens=self.embedder.count_tokens(context), answer=answer,
            timings_ms=timings,
        )  # fmt: skip

    def turn_features(self, memory_id: str, text: str, **overrides) -> tuple[list[str], np.ndarray]:
        """The learned turn ranker's input for one query: ``(candidate dia_ids, rows × FEATURES)``, as
        ``query`` computes it (its training rows, ``hypermem.eval.ranker_fit``). Raises ``QueryError``."""
        dia_ids, rows, _ = self.turn_rows(memory_id, text, **overrides)
        return dia_ids, rows

    def turn_rows(self, memory_id: str, text: str, **overrides) -> tuple[list[str], np.ndarray, str]:
        """``turn_features`` and the query's type (``QueryAnalysis.query_type``: a recall-type query is scored
        with its own weights and budget). Raises ``QueryError``."""
        cfg = self._config(text, overrides)
        vector = self.embedder.encode_one(text)
        analysis = self._analyze(memory_id, text)
        facts = self._hierarchy(memory_id, text, vector, cfg, analysis, lambda _: None)[2]
        sources = [source for source, _ in self._hierarchy_turns(facts).values()]
        legs = self._start_memory_wide_legs(memory_id, text, vector, analysis.persons).result()
        candidates, rows, details = self._turn_candidates(memory_id, text, sources, analysis, legs)
        return [details[c]["dia_id"] for c in candidates], rows, analysis.query_type

    def _config(self, text: str, overrides: dict) -> SearchConfig:
        if problem := query_problem(text):
            raise QueryError(f"query: {problem}")
        try:
            return SearchConfig.from_settings(self.settings, **overrides)
        except ValueError as exc:
            raise QueryError(str(exc)) from exc

    def _hierarchy(self, memory_id: str, text: str, vector: np.ndarray, cfg: SearchConfig, analysis: QueryAnalysis,
                   lap: Callable[[str], None]) -> tuple[list[dict], list[dict], list[dict], dict]:  # fmt: skip
        """Topic -> episode -> fact levels, then rerank and recency: ``(topics, episodes, facts, rerank info)``."""
        topics, episode_paths = self._topic_level(memory_id, text, vector, cfg)
        lap("topics")
        episodes = self._episode_level(memory_id, text, vector, cfg, analysis, topics, episode_paths)
        lap("episodes")
        facts = self._fact_level(memory_id, text, vector, cfg, episodes)
        lap("facts")
        facts, rerank_info = self.reranker.rerank(text, facts)
        facts = apply_recency(self.store, memory_id, text, facts)
        lap("rerank")
        return topics, episodes, facts, rerank_info

    def _analyze(self, memory_id: str, text: str) -> QueryAnalysis:
        known = self.store.query("retrieve/memory_elements", memory_id=memory_id)
        analysis = self.analyzer.analyze(text, known, datetime.now())
        if analysis.times:
            rows = self.store.query("retrieve/time_elements", memory_id=memory_id, prefixes=analysis.times)
            analysis.element_ids += [r["id"] for r in rows]
        return analysis

    # --- topic level ----------------------------------------------------------------------------
    def _topic_level(self, memory_id: str, text: str, vector: np.ndarray, cfg: SearchConfig):
        """Top topics, and for each episode they expand to: the path steps that reached it."""
        if cfg.flat or not cfg.use_topics:
            return [], None
        fused = self._rank("Topic", memory_id, text, vector, cfg.k_topic, cfg)[: cfg.k_topic]
        titles = {
            r["id"]: r["title"]
            for r in self.store.query("retrieve/topic_details", memory_id=memory_id, ids=[f.id for f in fused])
        }
        topics: list[dict[str, Any]] = [
            {"id": f.id, "title": titles.get(f.id), "rank": rank, "score": round(f.score, 6), "rankers": f.rankers}
            for rank, f in enumerate(fused, start=1)
        ]
        by_id = {t["id"]: t for t in topics}
        episode_paths: dict[str, list[dict]] = {}
        for row in self.store.query("retrieve/expand_topic_episodes", memory_id=memory_id, topic_ids=list(by_id)):
            topic = by_id[row["topic_id"]]
            steps = [
                _step(
                    "topic",
                    topic["id"],
                    topic["score"],
                    rank=topic["rank"],
                    title=topic["title"],
                    rankers=topic["rankers"],
                ),
                _step("hyperedge", row["hyperedge_id"], kind="topic", weight=round(row["weight"], 6)),
            ]
            best = episode_paths.get(row["id"])
            if best is None or row["weight"] / topic["rank"] > best[1]["weight"] / best[0]["rank"]:
                episode_paths[row["id"]] = steps
        return topics, episode_paths

    # --- episode level ----------------------------------------------------------------------------
    def _episode_level(self, memory_id, text, vector, cfg, analysis, topics, episode_paths) -> list[dict]:
        if cfg.flat:
            return []
        candidates = list(episode_paths) if episode_paths is not None else None
        pool = len(candidates) if candidates is not None else cfg.k_episode * 3
        if candidates is not None and not candidates:
            return []
        fused = self._rank("Episode", memory_id, text, vector, max(pool, cfg.k_episode), cfg, candidates)
        element_rows = {}
        if cfg.salience and analysis.element_ids and fused:
            element_rows = {
                r["id"]: r
                for r in self.store.query(
                    "retrieve/episode_element_scores",
                    memory_id=memory_id,
                    episode_ids=[f.id for f in fused],
                    element_ids=analysis.element_ids,
                )  # fmt: skip
            }
        scored = []
        for item in fused:
            upstream = (episode_paths or {}).get(item.id, [])
            inherited = (
                EPISODE_TOPIC_WEIGHT * upstream[1]["weight"] / (cfg.rrf_k + upstream[0]["rank"]) if upstream else 0.0
            )
            element = element_rows.get(item.id)
            element_score = element["element_score"] * EPISODE_ELEMENT_WEIGHT if element else 0.0
            score = item.score + inherited + element_score
            step = _step("episode", item.id, score, rankers=item.rankers,
                         elements=element["matched"] if element else None,
                         segment=element["hyperedge_id"] if element else None)  # fmt: skip
            scored.append((score, item.id, [_step("query", "query"), *upstream, step]))
        scored.sort(key=lambda s: s[0], reverse=True)
        scored = scored[: cfg.k_episode]
        details = {
            r["id"]: r
            for r in self.store.query("retrieve/episode_details", memory_id=memory_id, ids=[s[1] for s in scored])
        }
        return [
            {
                "id": eid,
                "rank": rank,
                "title": details[eid]["title"],
                "summary": details[eid]["summary"],
                "start": details[eid]["start"],
                "end": details[eid]["end"],
                "score": round(score, 6),
                "path": path,
            }  # fmt: skip
            for rank, (score, eid, path) in enumerate(scored, start=1)
            if eid in details
        ]

    # --- fact level ---------------------------------------------------------------------------------
    def _fact_level(self, memory_id, text, vector, cfg, episodes) -> list[dict]:
        by_episode = {e["id"]: e for e in episodes}
        parents: dict[str, dict] = {}
        if episodes:
            for row in self.store.query(
                "retrieve/expand_episode_facts", memory_id=memory_id, episode_ids=list(by_episode)
            ):
                parents[row["id"]] = row
        candidates: list[str] | None = list(parents)
        if cfg.flat or cfg.global_facts or not candidates:
            wide = self._rank("Fact", memory_id, text, vector, cfg.k_fact, cfg)
            candidates = None if cfg.flat else list(dict.fromkeys([*parents, *(f.id for f in wide)]))
        pool = len(candidates) if candidates is not None else cfg.k_fact
        fused = self._rank("Fact", memory_id, text, vector, max(pool, 1), cfg, candidates)
        cosines = {f.id: f.rankers.get("dense", {}).get("score", 0.0) for f in fused}
        scored = []
        for item in fused:
            parent = parents.get(item.id)
            episode = by_episode.get(parent["episode_id"]) if parent else None
            inherited = (
                FACT_EPISODE_WEIGHT * parent["weight"] / (cfg.rrf_k + episode["rank"]) if parent and episode else 0.0
            )
            score = item.score + inherited
            if parent and episode:
                path = [
                    *episode["path"],
                    _step("hyperedge", parent["hyperedge_id"], kind="episode", weight=round(parent["weight"], 6)),
                ]
            else:
                path = [_step("query", "query", via="memory-wide fact search")]
            path.append(_step("fact", item.id, score, rankers=item.rankers))
            scored.append((score, item.id, path))
        scored.sort(key=lambda s: s[0], reverse=True)
        scored = scored[: cfg.k_fact]
        details = {
            r["id"]: r
            for r in self.store.query("retrieve/fact_details", memory_id=memory_id, ids=[s[1] for s in scored])
        }
        facts = []
        for score, fid, path in scored:
            if fid not in details:
                continue
            row = details[fid]
            sources = sorted(row["turns"], key=lambda t: t["seq"])
            facts.append({
                "id": fid, "kind": row["kind"] or "fact", "content": row["content"], "date": row["date"], "episode_id": row["episode_id"],
                "score": round(score, 6), "cosine": round(cosines.get(fid, 0.0), 6),
                "source_dia_ids": [t["dia_id"] for t in sources], "sources": sources, "path": path,
                "superseded_by": row["superseded_by"],  # recency.apply_recency follows it to the chain's latest fact
            })  # fmt: skip
        return facts

    # --- stopping, turns, selection, answer ------------------------------------------------------------
    def _stop(self, facts: list[dict], analysis: QueryAnalysis, cfg: SearchConfig) -> StopDecision:
        return cut(
            [f["score"] for f in facts],
            analysis.query_type,
            mode=cfg.stopping,
            k=cfg.turn_budget,
            confidence=[f["cosine"] for f in facts],
            confident=CONFIDENT_COSINE,
            min_keep=cfg.min_facts,
        )

    def _evidence_size(self, facts: list[dict], stop: StopDecision, cfg: SearchConfig) -> int:
        """How many turns to return: ``turn_budget`` (fixed stopping), or the source turns of the facts the
        adaptive rule kept, never fewer than ``min(min_facts, turn_budget)``: a memory with few facts (a short
        statement such as "I moved to Paris." makes none) still gets its turns from the turn-level legs. When
        the budget, not the rule, cut the kept facts' turns, ``stop.rule`` says so."""
        if cfg.stopping == "fixed":
            return cfg.turn_budget
        kept = len(self._turns(facts[: stop.cut_at], cfg.turn_budget + 1, cfg.replies))  # one more: did it bind?
        if kept > cfg.turn_budget:
            stop.rule += f" (turn budget {cfg.turn_budget})"
        floor = min(cfg.min_facts, cfg.turn_budget)
        if kept < floor:  # the kept facts' turns are fewer than the floor: the turn-level legs bring the rest
            stop.rule += f" (floor {floor}: the turns the kept facts lack come from the turn-level legs)"
        return max(min(kept, cfg.turn_budget), floor)

    def _ranked_turns(
        self,
        memory_id: str,
        text: str,
        vector: np.ndarray,
        facts: list[dict],
        cfg: SearchConfig,
        analysis: QueryAnalysis,
        legs: WideLegs | None,
    ) -> tuple[list[dict], np.ndarray | None]:
        """The turns to read, best first, as one-source "facts" for ``_turns``, and (learned ranker only) every
        candidate's P(evidence), for adaptive stopping. ``cfg.turn_ranker`` "learned": the learned turn ranker
        over every leg's candidates (``hypermem.retrieve.turn_ranker``); "rrf": the hierarchy's turn order fused
        by weighted RRF with BM25 and dense over turns (``cfg.flat_weight``). ``legs``: ``_PendingLegs.result``
        (the learned ranker's)."""
        hierarchy = self._hierarchy_turns(facts)
        probability: np.ndarray | None = None
        if cfg.turn_ranker == "learned":
            assert legs is not None, "query starts the memory-wide legs whenever the learned ranker runs"
            vocabulary = legs[3]  # checked once per query, by the expansion leg: word match, exact match
            candidates, rows, details = self._turn_candidates(
                memory_id, text, [source for source, _ in hierarchy.values()], analysis, legs
            )
            logits = self.turn_ranker.score(rows, analysis.query_type)
            probability = self.turn_ranker.probability(logits)
            order = sorted(range(len(candidates)), key=lambda i: -logits[i])
            first = self._exact_match(text, candidates, details, legs[0], vocabulary)
            if first is not None:
                order = [first] + [i for i in order if i != first]
            # 2 x the query type's budget: more than adaptive stopping's cap (1.75 x), so every turn it may keep is
            # ranked; score: P(evidence); the step shows the logit's parts
            ranked_count = math.ceil(2 * self.turn_ranker.budget_for(analysis.query_type, cfg.turn_budget))
            scored = [(candidates[i], float(probability[i]),
                       {"logit": round(float(logits[i]), 4),
                        "ranker": self.turn_ranker.contributions(rows[i], analysis.query_type, float(logits[i])),
                        **({"via": "exact_match"} if i == first else {})})
                      for i in order[:ranked_count]]  # fmt: skip
        else:
            scored, details = self._rrf_turns(
                memory_id, text, vector, {t: f["score"] for t, (_, f) in hierarchy.items()}, cfg
            )
        ranked = []
        for turn_id, score, explanation in scored:
            if turn_id in hierarchy:
                source, fact = hierarchy[turn_id]
                path, kind, content = fact["path"], fact["kind"], fact["content"]
                fact_id, superseded_by = fact["id"], fact.get("superseded_by")
            elif turn_id in details:
                source, path = details[turn_id], [_step("query", "query", via="turn ranker")]
                kind, content, fact_id, superseded_by = "turn", source["text"], None, None
            else:
                continue
            ranked.append({"id": fact_id, "superseded_by": superseded_by, "score": round(score, 6),
                           "sources": [source], "kind": kind, "content": content,
                           "path": [*path, _step("fused", turn_id, score, **explanation)]})  # fmt: skip
        return successors_first(ranked), probability

    @staticmethod
    def _exact_match(text: str, candidates: list[str], details: dict[str, dict], lists: TurnLists,
                     vocabulary: Vocabulary) -> int | None:  # fmt: skip
        """The index in ``candidates`` of the turn-level BM25 leg's best turn when it is an exact match of the query
        (``hypermem.retrieve.turn_ranker.exact_match``, over the memory's ``vocabulary``), which then comes first;
        else None."""
        best = next((c for c in lists.turn_bm25[:1] if c in candidates), None)
        if best is None or not exact_match(text, details[best]["text"], vocabulary.stems):
            return None
        return candidates.index(best)

    @staticmethod
    def _hierarchy_turns(facts: list[dict]) -> dict[str, tuple[dict, dict]]:
        """The hierarchy's turn order: turn id -> (source turn, its best fact), best first."""
        hierarchy: dict[str, tuple[dict, dict]] = {}
        for fact in facts:
            for source in fact["sources"]:
                hierarchy.setdefault(source["id"], (source, fact))
        return hierarchy

    def _start_memory_wide_legs(self, memory_id: str, text: str, vector: np.ndarray, persons: list[str], *,
                                turn_bm25: Future[list[Hit]] | None = None) -> _PendingLegs:  # fmt: skip
        """Start the turn ranker's legs over the whole memory on the leg threads, each leg's round trips on a
        thread of its own: BM25 and dense over turns (``turn_bm25``: that leg, already started), BM25 and dense over
        facts (with their turns), and BM25 over the query expanded through the vocabulary; and, on a join thread, the
        fetch of their turns' details as soon as all four have ended. They need no level of the hierarchy, so
        ``query`` starts them before it and collects them after (``_PendingLegs.result``)."""
        pool = CANDIDATES_PER_LEG
        submit = self._legs.submit
        legs = _PendingLegs(
            turn_bm25=turn_bm25 or submit(self.store.fulltext_search, "Turn", memory_id, text, pool),
            turn_dense=submit(self.store.vector_search, "Turn", memory_id, vector, pool),
            facts=submit(self._fact_legs, memory_id, text, vector, pool),
            expanded=submit(self._expanded_leg, memory_id, text, persons, pool),
            details=Future(),  # replaced below: the join task reads only the four legs
        )
        return replace(legs, details=self._joins.submit(self._legs_turn_details, memory_id, legs))

    def _legs_turn_details(self, memory_id: str, legs: _PendingLegs) -> dict[str, dict]:
        """``turn_details`` of every turn the memory-wide legs returned, once they have all ended; ``{}`` when one of
        them failed (``_PendingLegs.result`` raises its error)."""
        wait(legs.legs())
        if any(leg.exception() is not None for leg in legs.legs()):
            return {}
        return self._turn_details(memory_id, legs.turn_ids())

    def _fact_legs(self, memory_id: str, text: str, vector: np.ndarray, pool: int) -> _FactLegs:
        """BM25 and dense (raw vectors) over the memory's facts, with each hit fact's turn ids."""
        bm25 = self.store.fulltext_search("Fact", memory_id, text, pool)
        dense = self.store.vector_search("Fact", memory_id, vector, pool, prop="embedding_raw")
        rows = self.store.query("retrieve/fact_turn_ids", memory_id=memory_id, ids=list({h.id for h in bm25 + dense}))
        return _FactLegs(bm25, dense, {r["id"]: r["turns"] for r in rows})

    def _expanded_leg(self, memory_id: str, text: str, persons: list[str],
                      pool: int) -> tuple[dict[str, float], list[Hit], Vocabulary]:  # fmt: skip
        """The query expanded through the memory's vocabulary (word -> weight), its weighted BM25 over turns, and the
        vocabulary (the turn ranker's word features read it too: one stamp check per query)."""
        vocabulary = self.store.vocabulary(memory_id)
        expanded = self.expander.expand(memory_id, text, persons, vocabulary)
        return expanded, self.store.weighted_fulltext_search("Turn", memory_id, expanded, pool), vocabulary

    def _turn_candidates(self, memory_id: str, text: str, sources: list[dict], analysis: QueryAnalysis,
                         legs: WideLegs) -> tuple[list[str], np.ndarray, dict[str, dict]]:  # fmt: skip
        """Every leg's candidate turns, their ``FEATURES`` rows and their ``turn_details`` rows. ``sources``: the
        hierarchy's turns, best first (``fact_details`` source turns); the neighbours of the first
        ``NEIGHBOR_SOURCES`` join the candidates. ``legs``: ``_PendingLegs.result`` (with the details it fetched;
        the other candidates' are fetched here, and the memory's vocabulary)."""
        wide, expanded, fetched, vocabulary = legs
        analysis.expansion = {word: round(weight, 4) for word, weight in expanded.items()}  # shown with the result
        lists = replace(wide, hierarchy=[source["id"] for source in sources])
        candidates = lists.candidates()
        for source in sources[:NEIGHBOR_SOURCES]:
            candidates += [n for n in (source.get("prev_id"), source.get("next_id")) if n and n not in candidates]
        details = {**fetched, **self._turn_details(memory_id, [c for c in candidates if c not in fetched])}
        candidates = [c for c in candidates if c in details]
        facts = {c: TurnFacts(details[c]["speaker"], details[c]["text"], details[c]["prev_id"], details[c]["next_id"],
                              details[c]["prev_text"] or "", details[c]["next_text"] or "") for c in candidates}  # fmt: skip
        match = self.expander.word_match(vocabulary, text, analysis.persons, {c: facts[c].text for c in candidates})
        return candidates, feature_matrix(text, candidates, lists, facts, analysis.persons, match), details

    def _turn_details(self, memory_id: str, ids: list[str]) -> dict[str, dict]:
        if not ids:
            return {}
        return {r["id"]: r for r in self.store.query("retrieve/turn_details", memory_id=memory_id, ids=ids)}

    def _rrf_turns(self, memory_id: str, text: str, vector: np.ndarray, hierarchy: dict[str, float], cfg: SearchConfig):
        """The hierarchy's turn order fused by weighted RRF with the turn-level leg (BM25 and dense over every
        turn, ``cfg.flat_weight``; the hierarchy's weight is 1): ``([(turn id, score, explanation)], details)``."""
        flat = {}
        if cfg.flat_weight > 0:
            pool = max(cfg.k_fact, cfg.turn_budget)
            flat = {
                "turn-bm25": self.store.fulltext_search("Turn", memory_id, text, pool),
                "turn-dense": self.store.vector_search("Turn", memory_id, vector, pool),
            }
        ranked = [Hit(turn_id, score) for turn_id, score in hierarchy.items()]
        weights = {"turn-bm25": cfg.flat_weight, "turn-dense": cfg.flat_weight}
        fused = rrf({"hierarchy": ranked, **flat}, k=cfg.rrf_k, weights=weights)[: 2 * cfg.turn_budget]
        details = self._turn_details(memory_id, [f.id for f in fused if f.id not in hierarchy])
        return [(f.id, f.score, {"rankers": f.rankers}) for f in fused], details

    @staticmethod
    def _turns(facts: list[dict], budget: int, replies: bool) -> list[dict]:
        """Source turns of the kept facts, best fact first, at most ``budget`` (HiGMem: a small evidence set).

        With ``replies``, a source turn that asks a question is followed by its reply turn.
        """
        turns: dict[str, dict] = {}
        for fact in facts:
            for source in fact["sources"]:
                candidates = [(source, None)]
                if replies and source["reply"] is not None:
                    candidates.append((source["reply"], source["dia_id"]))
                for turn, replying_to in candidates:
                    passage = fact["kind"] == "passage" and replying_to is None
                    if turn["dia_id"] in turns:
                        if passage:  # the best passage of a long turn already brought as a reply
                            turns[turn["dia_id"]].setdefault("snippet", fact["content"])
                        continue
                    if len(turns) == budget:
                        return list(turns.values())
                    turns[turn["dia_id"]] = {
                        "dia_id": turn["dia_id"], "speaker": turn["speaker"], "timestamp": turn["timestamp"],
                        "seq": turn.get("seq"), "text": turn["text"], "score": fact["score"],  # seq: the context's order
                        "path": [*fact["path"], _step("turn", turn["id"], dia_id=turn["dia_id"], reply_to=replying_to)],
                    }  # fmt: skip
                    if passage:
                        turns[turn["dia_id"]]["snippet"] = fact["content"]  # the matching passage of a long turn
        return list(turns.values())
