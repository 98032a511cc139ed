"""The ingest pipeline: messages -> turns -> episodes + elements -> facts -> topics -> propagation -> store.

Incremental and idempotent by construction:
- a session is the unit of work; its content hash is stored in an ``IngestState`` node
  only after everything derived from it is written, so a killed run is completed by the
  next one, and an unchanged session is skipped;
- a changed session (new live messages, edited text) is rebuilt alone: its episodes,
  facts and hyperedges are replaced, then topics are updated incrementally, never rebuilt;
- a message id sent again with other text, speaker, session or timestamp replaces the stored
  turn (an edit, counted in ``IngestReport.updated``); the sessions it left and joined are both rebuilt;
- every write MERGEs by id, so writing the same batch twice leaves the same graph.
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from hypermem.config import Settings
from hypermem.embed import Embedder
from hypermem.ingest.annotate import Annotation, Annotator
from hypermem.ingest.elements import TurnElements
from hypermem.ingest.episodes import centroid, describe, episode_search_text
from hypermem.ingest.facts import TURN_KEYWORDS, FactDraft, FactExtractor, LLMFactExtractor, TurnFactExtractor
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.ingest.names import clean_name
from hypermem.ingest.passages import PassageSplitter
from hypermem.ingest.priority import lower_thread_priority
from hypermem.ingest.propagation import propagate
from hypermem.ingest.segment import DriftSegmenter, LLMSegmenter, Segmenter
from hypermem.ingest.segments import Segment, SegmentMerger
from hypermem.ingest.supersession import statement_family
from hypermem.ingest.topics import LLMTopicAssigner, TopicAssigner, TopicState
from hypermem.ingest.turns import IngestInputError, TurnDraft, session_hash, to_drafts, validate
from hypermem.model import MEMORY_ID_PATTERN, Element, ElementKind, Episode, Fact, Message, Turn, as_row, node_id
from hypermem.store import GraphStore
from hypermem.store.ids import key, name_key

log = logging.getLogger(__name__)

# The topic centre is the mean of the earlier episodes shrunk towards 0 by this many pseudo-episodes,
# so that a young memory (2-3 episodes) is compared almost uncentred.
TOPIC_CENTER_PRIOR = 5
# Turns embedded per call, so the embedding can switch to every core when the Python stages end.
EMBED_CHUNK = 256
MEMORY_ID = re.compile(MEMORY_ID_PATTERN)
Progress = Callable[[int], None]


@dataclass
class IngestReport:
    """Counts after an ingest (whole memory), and what this call did."""

    memory_id: str
    turns: int = 0
    episodes: int = 0
    topics: int = 0
    facts: int = 0
    persons: int = 0
    times: int = 0
    locations: int = 0
    hyperedges: int = 0
    sessions_ingested: int = 0
    sessions_skipped: int = 0
    updated: int = 0
    updated_ids: list[str] = field(default_factory=list)
    llm: bool = False
    elapsed_s: float = 0.0

    def after(self, earlier: IngestReport) -> IngestReport:
        """This report with the per-call counters (sessions, ``updated``, ``elapsed_s`` in seconds) of
        ``earlier`` added: one report for an ingest made of several calls; memory-wide totals stay this call's."""
        self.sessions_ingested += earlier.sessions_ingested
        self.sessions_skipped += earlier.sessions_skipped
        self.updated += earlier.updated
        self.updated_ids = earlier.updated_ids + self.updated_ids
        self.elapsed_s = round(self.elapsed_s + earlier.elapsed_s, 3)
        return self


@dataclass
class _Session:
    """One session being rebuilt: its turns, vectors, elements and derived objects."""

    session: str
    turns: list[Turn]
    elements: list[TurnElements] = field(default_factory=list)
    element_nodes: dict[str, Element] = field(default_factory=dict)
    episodes: list[Episode] = field(default_factory=list)
    facts: list[Fact] = field(default_factory=list)
    fact_drafts: list[FactDraft] = field(default_factory=list)
    mentions: dict[str, Counter] = field(default_factory=dict)


def check_memory_id(memory_id: str) -> str:
    """Raise ``IngestInputError`` unless ``memory_id`` is 1-128 of ``[A-Za-z0-9_.:-]``."""
    if not isinstance(memory_id, str) or not MEMORY_ID.fullmatch(memory_id):
        raise IngestInputError("memory_id", "must be 1-128 characters of letters, digits, '_', '.', ':' or '-'")
    return memory_id


class Ingestor:
    """Runs the stages for one memory at a time. ``llm`` None selects the no-LLM implementations."""

    def __init__(self, settings: Settings, store: GraphStore, embedder: Embedder, llm=None):
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.llm = llm
        self.keywords = KeywordExtractor()
        self.annotator = Annotator(settings.spacy_model, settings.ingest_nice)
        # The turn embedding's threads, at the ingest's nice value; one per core (data-parallel, each
        # on the one-thread model: no intra-op threads that would keep the caller's priority).
        self.embed_threads = os.cpu_count() or 1
        self._embed_pool = ThreadPoolExecutor(
            self.embed_threads, "hypermem-embed", initializer=lower_thread_priority, initargs=(settings.ingest_nice,)
        )
        turn_facts = TurnFactExtractor(self.keywords, PassageSplitter(embedder.count_tokens))
        self.segmenter: Segmenter
        self.fact_extractor: FactExtractor
        if llm is None:
            log.info("no LLM configured: ingest runs the no-LLM path (embeddings, NER, dateparser, YAKE)")
            self.segmenter = DriftSegmenter()
            self.fact_extractor = turn_facts
            self.topic_assigner = TopicAssigner(settings.topic_join_similarity)
        else:
            self.segmenter = LLMSegmenter(llm)
            self.fact_extractor = LLMFactExtractor(llm, turn_facts)
            self.topic_assigner = LLMTopicAssigner(llm, settings.topic_join_similarity)

    # --- entry point -------------------------------------------------------------------
    def ingest(self, memory_id: str, messages: list[Message], *, progress: Progress | None = None) -> IngestReport:
        """Ingest ``messages`` into ``memory_id``. Raises ``IngestInputError`` before writing anything."""
        started = time.perf_counter()
        check_memory_id(memory_id)
        validate(messages, self.settings.max_message_chars)
        report = IngestReport(memory_id, llm=self.llm is not None)
        sessions = self._changed_sessions(memory_id, messages, report)
        if sessions:
            # Both cores: NER, dates and keywords run in the worker process while this one embeds.
            annotation = self._annotate(sessions)
            self._embed_turns(sessions, annotation.done)
            self._take_annotation(sessions, annotation)
            for session in sessions:
                if session.turns:  # a session every turn moved out of is only cleared
                    self._build_episodes(memory_id, session)
                    self._build_facts(memory_id, session)
            self._embed_facts(sessions)
            self._write(memory_id, sessions, progress)
        report.elapsed_s = round(time.perf_counter() - started, 3)
        return self._count(report)

    # --- stage 1: turns ----------------------------------------------------------------
    def _changed_sessions(self, memory_id: str, messages: list[Message], report: IngestReport) -> list[_Session]:
        """The sessions to rebuild: those of ``messages`` and the old sessions of moved messages, each with
        the turns it holds after this call; counts skipped sessions and edited messages into ``report``."""
        session_ids = list(dict.fromkeys(m.session_id for m in messages))
        max_seq = self.store.query("ingest/max_seq", memory_id=memory_id)[0]["max_seq"]
        drafts: list[TurnDraft] = to_drafts(memory_id, messages, first_seq=(max_seq if max_seq is not None else -1) + 1)
        stored = {
            row["id"]: row
            for row in self.store.query(
                "ingest/session_turns", memory_id=memory_id, sessions=session_ids, ids=[d.turn.id for d in drafts]
            )
        }
        by_session: dict[str, dict[str, Turn]] = {s: {} for s in session_ids}
        for row in stored.values():
            turn = Turn(**{k: row[k] for k in ("id", "dia_id", "speaker", "text", "timestamp", "session", "seq")},
                        memory_id=memory_id, embedding=row["embedding"])  # fmt: skip
            by_session.setdefault(row["session"], {})[turn.id] = turn
        for draft in drafts:
            old = stored.get(draft.turn.id)
            if old is not None:
                draft.turn.seq = old["seq"]
                if old["text"] == draft.turn.text:
                    draft.turn.embedding = old["embedding"]
                if any(old[k] != getattr(draft.turn, k) for k in ("speaker", "text", "timestamp", "session")):
                    report.updated += 1
                    report.updated_ids.append(draft.turn.dia_id)
                del by_session[old["session"]][draft.turn.id]
            by_session[draft.turn.session][draft.turn.id] = draft.turn
        done = {row["session"]: row["hash"] for row in self.store.query("ingest/session_states", memory_id=memory_id)}
        changed = []
        for session_id, turns in by_session.items():
            ordered = sorted(turns.values(), key=lambda t: t.seq)
            if done.get(session_id) == session_hash(ordered):
                report.sessions_skipped += 1
                continue
            changed.append(_Session(session_id, ordered))
        report.sessions_ingested = len(changed)
        return changed

    def _embed_turns(self, sessions: list[_Session], others_done: Callable[[], bool] = lambda: True) -> None:
        """Turn vectors, ``EMBED_CHUNK`` texts at a time on the ingest's embedding threads: one thread
        while the annotation worker still runs (more would fight it for the cores), every core's
        thread once ``others_done()``, each on an interleaved share of the chunk."""
        # Shortest first across all chunks, so each batch inside a chunk pads little.
        pending = sorted((t for s in sessions for t in s.turns if t.embedding is None), key=lambda t: len(t.text))
        for start in range(0, len(pending), EMBED_CHUNK):
            chunk = pending[start : start + EMBED_CHUNK]
            parts = self.embed_threads if others_done() else 1
            shares = [chunk[i::parts] for i in range(parts)]
            encoded = [
                self._embed_pool.submit(
                    self.embedder.encode, [f"{t.speaker}: {t.text}" for t in share], single_thread=True
                )
                for share in shares
            ]
            for share, vectors in zip(shares, encoded):
                for turn, vector in zip(share, vectors.result()):
                    turn.embedding = vector.tolist()

    # --- stage 3: elements (and the keywords of stage 4, computed ahead) ------------------
    def _annotate(self, sessions: list[_Session]) -> Future[Annotation]:
        """Start NER + dates over every turn and, on the no-LLM path, the per-turn keywords the fact
        extractor will ask for (``hypermem.ingest.annotate``: in the worker process when large)."""
        turns = [t for s in sessions for t in s.turns]
        keyword_texts = (
            self.fact_extractor.keyword_texts(turns) if isinstance(self.fact_extractor, TurnFactExtractor) else []
        )
        return self.annotator.submit(
            [t.text for t in turns],
            [datetime.fromisoformat(t.timestamp) for t in turns],
            frozenset(t.speaker for t in turns),
            keyword_texts,
            TURN_KEYWORDS,
        )

    def _take_annotation(self, sessions: list[_Session], pending: Future[Annotation]) -> None:
        """Wait for the annotation; hand each session its turns' elements, and the keywords to the keyword cache."""
        annotation = pending.result()
        self.keywords.remember(annotation.keywords, TURN_KEYWORDS)
        offset = 0
        for session in sessions:
            session.elements = annotation.elements[offset : offset + len(session.turns)]
            offset += len(session.turns)

    def _element_ids(self, memory_id: str, turn: Turn, found: TurnElements) -> dict[str, Element]:
        """Elements of one turn keyed by node id: the speaker, named persons, locations and times."""
        out: dict[str, Element] = {}
        named: list[tuple[ElementKind, str]] = [("Person", raw) for raw in [turn.speaker, *found.persons]] + [
            ("Location", raw) for raw in found.locations
        ]
        for kind, raw in named:
            name = clean_name(raw)
            if name is not None:
                element = Element(memory_id, node_id(memory_id, kind.lower(), name_key(name)), kind, name, name)
                out[element.id] = element
        said = turn.timestamp[:10]
        times = [(said, said)] + [(t.value, t.display) for t in found.times]
        for value, display in times:
            element = Element(memory_id, node_id(memory_id, "time", key(value)), "Time", display, value)
            out[element.id] = element
        return out

    # --- stage 2: episodes ---------------------------------------------------------------
    def _build_episodes(self, memory_id: str, session: _Session) -> None:
        vectors = np.asarray([t.embedding for t in session.turns], dtype=np.float32)
        texts = [{"speaker": t.speaker, "text": t.text, "timestamp": t.timestamp} for t in session.turns]
        for start, end in self.segmenter.segment(texts, vectors, session.elements):
            turns = session.turns[start:end]
            title, summary = describe(turns, vectors[start:end], self.keywords)
            episode = Episode(
                memory_id=memory_id,
                id=node_id(memory_id, "episode", key(turns[0].dia_id)),
                session=session.session,
                title=title,
                summary=summary,
                start=turns[0].timestamp,
                end=turns[-1].timestamp,
                participants=sorted({t.speaker for t in turns}),
                turn_ids=[t.id for t in turns],
            )
            raw = centroid(vectors[start:end])
            episode.embedding_raw = raw.tolist()
            mentions: Counter = Counter()
            for turn, found in zip(turns, session.elements[start:end]):
                elements = self._element_ids(memory_id, turn, found)
                session.element_nodes.update(elements)
                mentions.update(elements.keys())
            session.mentions[episode.id] = mentions
            session.episodes.append(episode)

    # --- stage 4: facts ------------------------------------------------------------------
    def _build_facts(self, memory_id: str, session: _Session) -> None:
        position = {t.id: i for i, t in enumerate(session.turns)}
        by_id = {t.id: t for t in session.turns}
        for episode in session.episodes:
            idx = [position[tid] for tid in episode.turn_ids]
            turns = [session.turns[i] for i in idx]
            previous = [session.turns[i - 1] if i > 0 else None for i in idx]
            drafts: list[FactDraft] = self.fact_extractor.extract(turns, [session.elements[i] for i in idx], previous)
            for n, draft in enumerate(drafts):
                dia = draft.turn_ids[0].rsplit("/", 1)[-1]
                source = by_id.get(draft.turn_ids[0])
                statement = source.text if draft.embed_text is None and source else draft.content
                fact = Fact(
                    memory_id=memory_id,
                    id=node_id(memory_id, "fact", f"{dia}#{n}"),
                    episode_id=episode.id,
                    content=draft.content,
                    potential=draft.potential,
                    keywords=draft.keywords,
                    date=draft.date,
                    turn_ids=draft.turn_ids,
                    kind=draft.kind,
                    speaker=source.speaker if source else None,
                    family=statement_family(statement) if draft.kind == "fact" else None,
                )
                session.facts.append(fact)
                session.fact_drafts.append(draft)

    def _embed_facts(self, sessions: list[_Session]) -> None:
        """Raw fact vectors: encoded from ``embed_text``, or the unit sum of the source turns' vectors
        plus half the vector of the question the fact answers (no model call)."""
        turn_vectors = {t.id: np.asarray(t.embedding, dtype=np.float32) for s in sessions for t in s.turns}
        pairs = [(f, d) for s in sessions for f, d in zip(s.facts, s.fact_drafts)]
        to_encode = [(f, d.embed_text) for f, d in pairs if d.embed_text]
        for (fact, _), vector in zip(to_encode, self.embedder.encode([text for _, text in to_encode])):
            fact.embedding_raw = vector.tolist()
        for fact, draft in pairs:
            if draft.embed_text:
                continue
            vector = np.sum([turn_vectors[tid] for tid in draft.turn_ids], axis=0)
            if draft.context_turn_id in turn_vectors:
                vector = vector + 0.5 * turn_vectors[draft.context_turn_id]
            fact.embedding_raw = (vector / (np.linalg.norm(vector) or 1.0)).tolist()

    # --- writing, topics, segments, propagation ------------------------------------------
    def _write(self, memory_id: str, sessions: list[_Session], progress: Progress | None) -> None:
        store = self.store
        for session in sessions:
            store.query("ingest/clear_session", memory_id=memory_id, session=session.session)
        self._prune(memory_id)
        turn_rows = []
        for session in sessions:
            for i, turn in enumerate(session.turns):
                row = as_row(turn)
                row["prev_id"] = session.turns[i - 1].id if i else None
                turn_rows.append(row)
        store.write("write/turns", turn_rows)
        elements = {k: e for s in sessions for k, e in s.element_nodes.items()}
        store.write("write/elements", [as_row(e) for e in elements.values()])

        episodes = [e for s in sessions for e in s.episodes]
        facts = [f for s in sessions for f in s.facts]
        episode_edges = self._episode_hyperedges(memory_id, sessions)
        fact_vectors = propagate(
            {f.id: np.asarray(f.embedding_raw, dtype=np.float32) for f in facts},
            [edge["weights"] for edge in episode_edges],
            self.settings.propagation_lambda,
        )
        for fact in facts:
            fact.embedding = fact_vectors[fact.id].tolist()
        topics, topic_edges, episode_vectors = self._assign_topics(memory_id, episodes)
        for episode in episodes:
            episode.embedding = episode_vectors.pop(episode.id).tolist()

        store.write("write/episodes", [self._episode_row(e, s) for s in sessions for e in s.episodes])
        store.write("write/facts", [self._fact_row(f) for f in facts])
        store.query("maintain/clear_supersession", memory_id=memory_id)
        store.query("maintain/supersession", memory_id=memory_id)
        segment_edges = self._segment_hyperedges(memory_id, sessions)
        store.write("write/hyperedges", [edge["row"] for edge in episode_edges] + segment_edges)
        store.write("write/topics", topics)
        store.write("write/hyperedges", topic_edges)
        store.write(
            "write/episode_embeddings", [{"id": k, "embedding": v.tolist()} for k, v in episode_vectors.items()]
        )
        self._prune(memory_id)
        store.query("maintain/salience", memory_id=memory_id)
        store.write(
            "ingest/mark_sessions",
            [
                {
                    "id": node_id(memory_id, "ingest", key(s.session)),
                    "memory_id": memory_id,
                    "session": s.session,
                    "hash": session_hash(s.turns),
                }  # fmt: skip
                for s in sessions
            ],
        )
        if progress is not None:
            progress(sum(len(s.turns) for s in sessions))

    def _prune(self, memory_id: str) -> None:
        for name in ("maintain/prune_hyperedges", "maintain/prune_topics", "maintain/prune_elements"):
            self.store.query(name, memory_id=memory_id)

    @staticmethod
    def _episode_row(episode: Episode, session: _Session) -> dict:
        row = as_row(episode)
        turns = [t for t in session.turns if t.id in set(episode.turn_ids)]
        row["text"] = episode_search_text(episode.title, turns)
        return row

    @staticmethod
    def _fact_row(fact: Fact) -> dict:
        row = as_row(fact)
        row["text"] = " ".join([fact.content, *fact.keywords])  # potential questions stay out of the fact's words
        return row

    def _episode_hyperedges(self, memory_id: str, sessions: list[_Session]) -> list[dict]:
        """One ``episode`` hyperedge per episode over its facts; w = (1 + cos(fact, episode)) / 2."""
        edges = []
        for session in sessions:
            by_episode: dict[str, list[Fact]] = {}
            for fact in session.facts:
                by_episode.setdefault(fact.episode_id, []).append(fact)
            for episode in session.episodes:
                members = by_episode.get(episode.id, [])
                center = np.asarray(episode.embedding_raw)
                weights = {f.id: round(float((1 + np.asarray(f.embedding_raw) @ center) / 2), 6) for f in members}
                local = episode.id.rsplit("/", 1)[-1]
                edges.append({
                    "weights": weights,
                    "row": {"memory_id": memory_id, "id": node_id(memory_id, "hyperedge", f"episode:{local}"),
                            "kind": "episode", "owner_ids": [episode.id],
                            "members": [{"id": k, "weight": w} for k, w in weights.items()]},
                })  # fmt: skip
        return edges

    def _segment_hyperedges(self, memory_id: str, sessions: list[_Session]) -> list[dict]:
        """Segment hyperedges (HingeMem), merged with the memory's existing ones at Jaccard > threshold."""
        existing = [
            Segment(row["id"], Counter({m["element"]: m["weight"] for m in row["members"]}), list(row["episode_ids"]))
            for row in self.store.query("ingest/segments", memory_id=memory_id)
        ]
        merger = SegmentMerger(existing, self.settings.segment_merge_jaccard)
        for session in sessions:
            for episode in session.episodes:
                local = episode.id.rsplit("/", 1)[-1]
                merger.add(
                    node_id(memory_id, "hyperedge", f"segment:{local}"), episode.id, session.mentions[episode.id]
                )
        return [
            {
                "memory_id": memory_id,
                "id": s.id,
                "kind": "segment",
                "owner_ids": s.episode_ids,
                "members": [{"id": k, "weight": w} for k, w in s.weights().items()],
            }  # fmt: skip
            for s in merger.segments
            if s.changed
        ]

    def _assign_topics(self, memory_id: str, episodes: list[Episode]):
        """Incremental topic update (HyperMem §3.2). Returns topic rows, topic hyperedge rows and
        propagated episode vectors (new episodes + existing members of changed topics)."""
        topics: dict[str, TopicState] = {}
        for row in self.store.query("ingest/topic_members", memory_id=memory_id):
            state = topics.setdefault(row["topic_id"], TopicState(row["topic_id"]))
            state.members[row["episode_id"]] = np.asarray(row["embedding_raw"], dtype=np.float32)
            state.titles[row["episode_id"]] = row["title"]
        known = [v for t in topics.values() for v in t.members.values()]
        total, count = (np.sum(known, axis=0), len(known)) if known else (np.zeros(self.embedder.dimension), 0)
        for episode in sorted(episodes, key=lambda e: e.start):
            vector = np.asarray(episode.embedding_raw, dtype=np.float32)
            center = total / (count + TOPIC_CENTER_PRIOR)
            chosen = self.topic_assigner.choose(vector, episode.title, episode.summary, list(topics.values()), center)
            total, count = total + vector, count + 1
            if chosen is None:
                chosen = TopicState(node_id(memory_id, "topic", episode.id.rsplit("/", 1)[-1]))
                topics[chosen.id] = chosen
            chosen.members[episode.id] = vector
            chosen.titles[episode.id] = episode.title
            chosen.changed = True
        changed = [t for t in topics.values() if t.changed]
        topic_rows, edge_rows, weights = [], [], []
        for topic in changed:
            title = ", ".join(self.keywords.top(" ".join(topic.titles.values()), 3)) or next(
                iter(topic.titles.values())
            )
            summary = "; ".join(list(topic.titles.values())[:8])
            topic_rows.append({"memory_id": memory_id, "id": topic.id, "title": title, "summary": summary,
                               "text": f"{title}. {' '.join(topic.titles.values())}",
                               "embedding": topic.centroid.tolist()})  # fmt: skip
            w = topic.weights()
            weights.append(w)
            local = topic.id.rsplit("/", 1)[-1]
            edge_rows.append({"memory_id": memory_id, "id": node_id(memory_id, "hyperedge", f"topic:{local}"),
                              "kind": "topic", "owner_ids": [topic.id],
                              "members": [{"id": k, "weight": v} for k, v in w.items()]})  # fmt: skip
        raw = {eid: vec for t in changed for eid, vec in t.members.items()}
        return topic_rows, edge_rows, propagate(raw, weights, self.settings.propagation_lambda)

    # --- report ----------------------------------------------------------------------------
    def _count(self, report: IngestReport) -> IngestReport:
        counts = self.store.counts(report.memory_id)
        report.turns = counts.get("Turn", 0)
        report.episodes = counts.get("Episode", 0)
        report.topics = counts.get("Topic", 0)
        report.facts = counts.get("Fact", 0)
        report.persons = counts.get("Person", 0)
        report.times = counts.get("Time", 0)
        report.locations = counts.get("Location", 0)
        report.hyperedges = counts.get("Hyperedge", 0)
        return report
