"""Stage 5: the write plan of one ingest call, computed before anything is written (HyperMem §3.2-3.3).

From the rebuilt sessions (turns, elements, episodes and facts with raw vectors) and what the
store holds beside them (``StoredHypergraph``: topics and segment hyperedges without the
episodes of those sessions), ``plan_write`` computes every row the call writes:

- one ``episode`` hyperedge per episode over its facts, w = (1 + cos(fact, episode)) / 2;
- propagated fact vectors over the episode hyperedges (``hypermem.ingest.propagation``);
- segment hyperedges, merged with the stored ones at Jaccard > threshold (``hypermem.ingest.segment_hyperedges``);
- the incremental topic update and the propagated vectors of the changed topics' episodes
  (``hypermem.ingest.topics``), stored members included.

It reads nothing and writes nothing (the topic assigner may ask an LLM), so what it returns
does not depend on the order of the writes. ``turn_rows`` gives the turns, which ``Ingestor`` writes as soon as they
are embedded; ``first_writes`` gives the rows that need neither the episodes nor the stored hypergraph (the elements
and facts, with the episode hyperedges that propagate the facts' vectors): ``Ingestor`` writes them while it reads the
stored hypergraph and plans, then runs the plan.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from hypermem.ingest.elements import TurnElements
from hypermem.ingest.episodes import episode_search_text, episode_turns
from hypermem.ingest.facts import FactDraft
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.propagation import propagate
from hypermem.ingest.segment_hyperedges import Segment, segment_hyperedge_rows
from hypermem.ingest.topics import TopicAssigner, TopicState, assign_topics, topic_rows
from hypermem.ingest.turns import session_hash
from hypermem.model import Element, Episode, Fact, Turn, as_row, node_id
from hypermem.store import bm25
from hypermem.store.ids import key


@dataclass
class SessionBuild:
    """One session being rebuilt: its turns (in dialogue order, with vectors), their elements, and the
    element nodes, episodes (with ``embedding_raw``), facts (with ``embedding_raw``) and per-episode
    element mentions derived from them."""

    session: str
    turns: list[Turn]
    elements: list[TurnElements] = field(default_factory=list)
    element_nodes: dict[str, Element] = field(default_factory=dict)
    episodes: list[Episode] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    fact_drafts: list[FactDraft] = field(default_factory=list)
    mentions: dict[str, Counter] = field(default_factory=dict)


@dataclass(frozen=True)
class StoredHypergraph:
    """What the store holds beside the sessions being rebuilt (queries ``ingest/topic_members`` and
    ``ingest/segments``): topics with their other member episodes, in stored order, and segment
    hyperedges with the other episodes they anchor."""

    topics: list[TopicState] = field(default_factory=list)
    segments: list[Segment] = field(default_factory=list)


@dataclass(frozen=True)
class FirstWrites:
    """What one ingest call writes before its plan, after its turns (``first_writes``): the rebuilt ``sessions`` are
    cleared and the memory pruned, then its ``elements`` and ``facts`` are written. None of it depends on the stored
    hypergraph, so ``Ingestor`` runs it while the plan is still being made.
    ``episode_hyperedges`` (one per episode, over its facts) are written after the episodes that own them
    (``Ingestor._write``); a fact outside every one is pruned (``maintain/prune_facts``: an ingest that stopped
    between the two)."""

    sessions: list[str]
    elements: list[dict]
    facts: list[dict]
    episode_hyperedges: list[dict]


@dataclass(frozen=True)
class WritePlan:
    """Every row one ingest call writes after its ``FirstWrites``, named by the Cypher file that writes it.
    ``Ingestor._write`` runs it: episodes, recompute supersession, write the ``FirstWrites.episode_hyperedges`` and
    the ``segment_hyperedges``, topics, ``topic_hyperedges``, ``episode_embeddings`` (propagated vectors of stored
    episodes whose topic changed), prune, recompute salience and the BM25 statistics, then ``session_marks`` (a
    session counts as done only then)."""

    episodes: list[dict]
    segment_hyperedges: list[dict]
    topics: list[dict]
    topic_hyperedges: list[dict]
    episode_embeddings: list[dict]
    session_marks: list[dict]


def first_writes(memory_id: str, sessions: list[SessionBuild], propagation_lambda: float) -> FirstWrites:
    """The ``FirstWrites`` of ``sessions`` into ``memory_id``: their turns' element nodes, and their facts with
    vectors propagated over their episode hyperedges (``propagation_lambda``: λ of HyperMem eq. 4). Leaves its
    arguments unchanged."""
    facts = [f for s in sessions for f in s.facts]
    episode_edges = [edge for s in sessions for edge in _episode_hyperedges(memory_id, s)]
    fact_vectors = propagate(
        {f.id: np.asarray(f.embedding_raw, dtype=np.float32) for f in facts},
        [weights for weights, _ in episode_edges],
        propagation_lambda,
    )
    return FirstWrites(
        sessions=[s.session for s in sessions],
        elements=[as_row(e) for e in {k: e for s in sessions for k, e in s.element_nodes.items()}.values()],
        facts=_searchable([fact_row(f, fact_vectors[f.id]) for f in facts]),
        episode_hyperedges=[row for _, row in episode_edges],
    )


def plan_write(memory_id: str, sessions: list[SessionBuild], stored: StoredHypergraph, *,
               topic_assigner: TopicAssigner, keywords: KeywordExtractor,
               propagation_lambda: float, segment_merge_jaccard: float) -> WritePlan:  # fmt: skip
    """The ``WritePlan`` of ``sessions`` into ``memory_id`` given the ``stored`` hypergraph beside them.

    ``propagation_lambda``: λ of HyperMem eq. 4; ``segment_merge_jaccard``: HingeMem's merge threshold.
    ``keywords`` titles the changed topics. Leaves its arguments unchanged.
    """
    episodes = [e for s in sessions for e in s.episodes]
    changed = assign_topics(memory_id, episodes, stored.topics, topic_assigner)
    episode_vectors = propagate(
        {eid: vector for t in changed for eid, vector in t.members.items()},
        [t.weights() for t in changed],
        propagation_lambda,
    )
    new_vectors = {e.id: episode_vectors.pop(e.id) for e in episodes}
    topics, topic_edges = topic_rows(memory_id, changed, keywords)
    segments = segment_hyperedge_rows(
        memory_id,
        stored.segments,
        [(e.id, s.mentions[e.id]) for s in sessions for e in s.episodes],
        segment_merge_jaccard,
    )
    return WritePlan(
        episodes=_searchable([episode_row(e, s.turns, new_vectors[e.id]) for s in sessions for e in s.episodes]),
        segment_hyperedges=segments,
        topics=_searchable(topics),
        topic_hyperedges=topic_edges,
        episode_embeddings=[{"id": k, "embedding": v.tolist()} for k, v in episode_vectors.items()],
        session_marks=[
            {
                "id": node_id(memory_id, "ingest", key(s.session)),
                "memory_id": memory_id,
                "session": s.session,
                "hash": session_hash(s.turns),
            }  # fmt: skip
            for s in sessions
        ],
    )


def turn_rows(sessions: list[SessionBuild]) -> list[dict]:
    """The ``write/turns`` rows of ``sessions``' turns (with vectors), chained in dialogue order, with their text's BM25
    analysis. A prune never removes a turn and no read of the ingest is changed by one, so they are written first."""
    return _searchable(
        [_turn_row(turn, s.turns[i - 1] if i else None) for s in sessions for i, turn in enumerate(s.turns)]
    )


def _searchable(rows: list[dict]) -> list[dict]:
    """``rows`` of full-text searched nodes, each given the ``terms`` and ``words`` of its ``text``
    (``bm25.stored_analysis``): a search scores the node from them, not from its text."""
    for row in rows:
        row.update(bm25.stored_analysis(row["text"]))
    return rows


def _turn_row(turn: Turn, previous: Turn | None) -> dict:
    row = as_row(turn)
    row["prev_id"] = previous.id if previous is not None else None
    return row


def episode_row(episode: Episode, turns: list[Turn], vector: np.ndarray) -> dict:
    """The ``write/episodes`` row of ``episode`` with its propagated ``vector``; ``text`` (full-text index) is
    the title and the words of its turns among ``turns``."""
    row = as_row(episode)
    row["text"] = episode_search_text(episode.title, episode_turns(episode, turns))
    row["embedding"] = vector.tolist()
    return row


def fact_row(fact: Fact, vector: np.ndarray) -> dict:
    """The ``write/facts`` row of ``fact`` with its propagated ``vector``; ``text`` (full-text index) is the
    content and keywords: the potential questions stay out of the fact's words. A ``raw_is_turn`` fact's
    ``embedding_raw`` is None (the store reads its turn's vector)."""
    row = as_row(fact)
    row["text"] = " ".join([fact.content, *fact.keywords])
    row["embedding"] = vector.tolist()
    if fact.raw_is_turn:
        row["embedding_raw"] = None
    return row


def _episode_hyperedges(memory_id: str, session: SessionBuild) -> list[tuple[dict[str, float], dict]]:
    """One ``episode`` hyperedge per episode of ``session`` over its facts: ``(member weights, row)``,
    w = (1 + cos(fact, episode)) / 2 on the raw vectors."""
    by_episode: dict[str, list[Fact]] = {}
    for fact in session.facts:
        by_episode.setdefault(fact.episode_id, []).append(fact)
    edges = []
    for episode in session.episodes:
        center = np.asarray(episode.embedding_raw)
        weights = {
            f.id: round(float((1 + np.asarray(f.embedding_raw) @ center) / 2), 6)
            for f in by_episode.get(episode.id, [])
        }
        local = episode.id.rsplit("/", 1)[-1]
        row = {"memory_id": memory_id, "id": node_id(memory_id, "hyperedge", f"episode:{local}"), "kind": "episode",
               "owner_ids": [episode.id], "members": [{"id": k, "weight": w} for k, w in weights.items()]}  # fmt: skip
        edges.append((weights, row))
    return edges
