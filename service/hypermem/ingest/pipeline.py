"""The ingest pipeline: messages -> turns -> elements -> episodes -> facts -> write plan -> store.

Stages 1-4 (``hypermem.ingest.turns``, ``elements``, ``boundaries``, ``facts``) build the changed
sessions in memory; stage 5 (``hypermem.ingest.plan``) reads what the store holds beside them and
computes every row to write (hyperedges, propagation, topics, segments); then the plan is written.
The stages come in ready-made (``hypermem.stages``).

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
from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import numpy as np

from hypermem.config import Settings
from hypermem.embed import Embedder
from hypermem.ingest.annotate import Annotation
from hypermem.ingest.elements import element_nodes
from hypermem.ingest.embed_schedule import QueuedVectors
from hypermem.ingest.episodes import centroid, summary, title, title_exclusions, title_keyphrases, title_text
from hypermem.ingest.facts import TURN_KEYWORDS, FactDraft, TurnFactExtractor
from hypermem.ingest.plan import (
    FirstWrites,
    SessionBuild,
    StoredHypergraph,
    WritePlan,
    first_writes,
    plan_write,
    turn_rows,
)
from hypermem.ingest.priority import lower_thread_priority
from hypermem.ingest.segment_hyperedges import Segment
from hypermem.ingest.supersession import statement_family
from hypermem.ingest.topics import TopicState
from hypermem.ingest.turns import IngestInputError, embedded_text, session_hash, spelt_as_known, to_turns, validate
from hypermem.model import MEMORY_ID_PATTERN, Episode, Fact, Message, Turn, node_id
from hypermem.store import GraphStore
from hypermem.store.ids import key
from hypermem.store.ordered_writes import OrderedWrites
from hypermem.vocabulary import NewWords, find_new_words, prune_words, write_new_words

if TYPE_CHECKING:
    from hypermem.stages import IngestStages

log = logging.getLogger(__name__)

MEMORY_ID = re.compile(MEMORY_ID_PATTERN)
# An ingest of at least PIPELINE_MIN_TURNS turns goes in two chunks of sessions (``session_chunks``): the last holds
# about LAST_CHUNK_SHARE of the turns, so what follows its embedding (its episodes and facts, the plan, the writes) is
# short, while its embedding is still long enough to cover the first chunk's building and writes (about a tenth of
# their embedding's time).
PIPELINE_MIN_TURNS = 128
LAST_CHUNK_SHARE = 0.2
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


def check_memory_id(memory_id: str) -> str:
    """Raise ``IngestInputError`` unless ``memory_id`` is 1-128 of ``[A-Za-z0-9_.:-]``."""
    if not isinstance(memory_id, str) or not MEMORY_ID.fullmatch(memory_id):
        raise IngestInputError(
            "memory_id",
            "must be 1-128 characters of ASCII letters, digits, '_', '.', ':' or '-', starting with a letter or digit",
        )
    return memory_id


def session_chunks(sessions: list[SessionBuild]) -> list[list[SessionBuild]]:
    """``sessions`` in order, as one chunk, or two when they hold at least ``PIPELINE_MIN_TURNS`` turns and more than
    one session has turns: the last chunk is the fewest trailing sessions holding ``LAST_CHUNK_SHARE`` of the turns
    (never all of them). ``Ingestor.ingest`` builds a chunk while the next one is embedded."""
    total = sum(len(s.turns) for s in sessions)
    if total < PIPELINE_MIN_TURNS:
        return [sessions]
    held = 0
    for cut in range(len(sessions) - 1, 0, -1):
        held += len(sessions[cut].turns)
        if held >= LAST_CHUNK_SHARE * total:
            return [sessions[:cut], sessions[cut:]] if held < total else [sessions]
    return [sessions]


def check_input(memory_id: str, messages: list[Message], max_chars: int) -> None:
    """Raise ``IngestInputError`` for an unusable ``memory_id`` or any unusable field of ``messages``
    (``validate``): the only input errors an ingest raises, all before it writes anything."""
    check_memory_id(memory_id)
    validate(messages, max_chars)


class Ingestor:
    """Runs the ingest ``stages`` (``hypermem.stages.ingest_stages``) for one memory at a time."""

    def __init__(self, settings: Settings, store: GraphStore, embedder: Embedder, stages: IngestStages):
        self.settings = settings
        self.store = store
        self.embedder = embedder
        self.stages = stages
        # The turn embedding's threads, at the ingest's nice value; one per core (data-parallel, each
        # on the one-thread model: no intra-op threads that would keep the caller's priority).
        self.embed_threads = os.cpu_count() or 1
        self._embed_pool = ThreadPoolExecutor(
            self.embed_threads, "hypermem-embed", initializer=lower_thread_priority, initargs=(settings.ingest_nice,)
        )
        # The vocabulary's writes (``write_new_words``), beside the last chunk's embedding and the writer thread.
        self._vocabulary_pool = ThreadPoolExecutor(
            1, "hypermem-vocabulary", initializer=lower_thread_priority, initargs=(settings.ingest_nice,)
        )

    # --- entry point -------------------------------------------------------------------
    def ingest(self, memory_id: str, messages: list[Message], *, progress: Progress | None = None) -> IngestReport:
        """Ingest ``messages`` into ``memory_id``. Raises ``IngestInputError`` before writing anything.

        The changed sessions go through in ``session_chunks``: while the threads embed a chunk's turns, this thread
        builds the chunk before it (episodes, facts) and the writer thread writes it, so the cores stay busy; the
        plan (topics, segments) and its writes follow the last chunk, while the vocabulary's new words embed (last)
        and a thread of their own writes them (``_write_words``)."""
        started = time.perf_counter()
        check_input(memory_id, messages, self.settings.max_message_chars)
        report = IngestReport(memory_id, llm=self.stages.llm)
        sessions = self._changed_sessions(memory_id, messages, report)
        if sessions:
            # Both cores: NER, dates and keywords run in the worker process while this one embeds.
            annotation = self._annotate(sessions)
            new_words = find_new_words(
                self.store, self.embedder, memory_id, [t.text for s in sessions for t in s.turns]
            )
            chunks = session_chunks(sessions)
            queued = self._embed_turns(memory_id, chunks, new_words.unembedded(), annotation)
            words: Future[int] | None = None
            try:
                with OrderedWrites(self.store) as writes:
                    # Embedded last, the words are written beside the rest, done before any session is marked.
                    words = self._vocabulary_pool.submit(self._write_words, queued, new_words)
                    episode_hyperedges: list[dict] = []
                    for n, chunk in enumerate(chunks):
                        queued.take(n)
                        if n == 0:
                            self._take_annotation(sessions, annotation)
                        episode_hyperedges += self._build_chunk(writes, memory_id, chunk, first=n == 0)
                    self._write(writes, memory_id, episode_hyperedges, self._plan(memory_id, sessions), words)
                if progress is not None:
                    progress(sum(len(s.turns) for s in sessions))
            finally:
                queued.cancel()  # a failed ingest leaves no embedding queued
                if words is not None:
                    wait([words])  # nor a vocabulary write running after it returns
            if report.updated:
                prune_words(self.store, memory_id)  # an edit may have taken the only use of a word away
        report.elapsed_s = round(time.perf_counter() - started, 3)
        return self._count(report)

    def _write_words(self, queued: QueuedVectors, new_words: NewWords) -> int:
        """On the vocabulary's thread: wait for the new words' vectors (``QueuedVectors.take_words``: embedded after
        every chunk's turns), then write them (``write_new_words``); returns what that returns."""
        queued.take_words()
        return write_new_words(self.store, self.embedder, new_words, single_thread=True)

    def _build_chunk(
        self, writes: OrderedWrites, memory_id: str, chunk: list[SessionBuild], *, first: bool
    ) -> list[dict]:
        """Write ``chunk``'s turns, build its episodes and facts, then clear its sessions' old derivations and write
        its elements and facts (``_write_first``; ``first``: the ingest's first chunk, which also prunes). Returns its
        episode hyperedges, written after the episodes that own them (``_write``)."""
        built = [s for s in chunk if s.turns]  # a session every turn moved out of is only cleared
        writes.write("write/turns", turn_rows(chunk))
        for session in built:
            self._build_episodes(memory_id, session)
        for session in built:
            self._build_facts(memory_id, session)
        self._embed_facts(memory_id, chunk)
        first_rows = first_writes(memory_id, chunk, self.settings.propagation_lambda)
        self._write_first(writes, memory_id, first_rows, prune=first)
        return first_rows.episode_hyperedges

    # --- stage 1: turns ----------------------------------------------------------------
    def _changed_sessions(self, memory_id: str, messages: list[Message], report: IngestReport) -> list[SessionBuild]:
        """The sessions to rebuild: those of ``messages`` and the old sessions of moved messages, each with
        the turns it holds after this call; counts skipped sessions and edited messages into ``report``. A resent
        message keeps its stored spelling of its id ("Ａ１" resent as "A1" is the same turn, unchanged), and a session
        id with the key of a stored session's (a finished one first, then any a stored turn carries) is spelt as that
        one (``spelt_as_known``)."""
        done = {row["session"]: row["hash"] for row in self.store.query("ingest/session_states", memory_id=memory_id)}
        before = self.store.query("ingest/stored_turns", memory_id=memory_id)[0]
        messages = spelt_as_known(messages, [*done, *before["sessions"]])
        session_ids = list(dict.fromkeys(m.session_id for m in messages))
        max_seq = before["max_seq"]
        incoming = to_turns(memory_id, messages, first_seq=(max_seq if max_seq is not None else -1) + 1)
        stored = {
            row["id"]: row
            for row in self.store.query(
                "ingest/session_turns", memory_id=memory_id, sessions=session_ids, ids=[t.id for t in incoming]
            )
        }
        by_session: dict[str, dict[str, Turn]] = {s: {} for s in session_ids}
        for row in stored.values():
            turn = Turn(**{k: row[k] for k in ("id", "dia_id", "speaker", "text", "timestamp", "session", "seq")},
                        memory_id=memory_id, embedding=row["embedding"])  # fmt: skip
            by_session.setdefault(row["session"], {})[turn.id] = turn
        for new in incoming:
            old = stored.get(new.id)
            if old is not None:
                new.seq, new.dia_id = old["seq"], old["dia_id"]
                if any(old[k] != getattr(new, k) for k in ("speaker", "text", "timestamp", "session")):
                    report.updated += 1
                    report.updated_ids.append(new.dia_id)
                del by_session[old["session"]][new.id]
            by_session[new.session][new.id] = new
        changed = []
        for session_id, turns in by_session.items():
            ordered = sorted(turns.values(), key=lambda t: t.seq)
            if done.get(session_id) == session_hash(ordered):
                report.sessions_skipped += 1
                continue
            changed.append(SessionBuild(session_id, ordered))
        report.sessions_ingested = len(changed)
        return changed

    def _embed_turns(
        self, memory_id: str, chunks: list[list[SessionBuild]], words: dict[str, str], annotation: Future[Annotation]
    ) -> QueuedVectors:
        """Set every turn's ``embed_key``; a stored turn keeps its vector, and one whose text the memory already holds
        a vector of (``_stored_vectors``) takes it now. Queue the rest (``QueuedVectors``): each chunk's other distinct
        texts, embedded once, in the first chunk holding them, and the vocabulary's new ``words``
        (``NewWords.unembedded``: word -> key) after every chunk's; one thread until ``annotation`` is done."""
        turns = [t for chunk in chunks for s in chunk for t in s.turns]
        keys = {t.id: self.embedder.text_key(embedded_text(t)) for t in turns}
        for turn in turns:
            turn.embed_key = keys[turn.id]
        missing = [t for t in turns if t.embedding is None]
        stored = self._stored_vectors(memory_id, [keys[t.id] for t in missing])
        for turn in missing:
            turn.embedding = stored.get(keys[turn.id])
        seen: set[str] = set()
        chunk_texts: list[dict[str, str]] = []  # per chunk: key -> text, of the texts it embeds
        for chunk in chunks:
            texts = {}
            for turn in (t for s in chunk for t in s.turns if t.embedding is None and keys[t.id] not in seen):
                seen.add(keys[turn.id])
                texts[keys[turn.id]] = embedded_text(turn)
            chunk_texts.append(texts)
        return QueuedVectors(
            self.embedder, self._embed_pool, self.embed_threads, chunks, chunk_texts, words, annotation
        )

    def _stored_vectors(self, memory_id: str, keys: list[str]) -> dict[str, list[float]]:
        """The raw vectors ``memory_id``'s turns and facts hold for ``keys`` (``Embedder.text_key``): key -> vector.
        Read before the rebuilt sessions are cleared, so an unchanged text of a rebuilt session is found."""
        if not keys:
            return {}
        unique = list(dict.fromkeys(keys))
        return {
            r["key"]: r["embedding"]
            for r in self.store.query("ingest/stored_vectors", memory_id=memory_id, keys=unique)
        }

    # --- stage 2: elements (and the keywords of stage 4, computed ahead) ------------------
    def _annotate(self, sessions: list[SessionBuild]) -> Future[Annotation]:
        """Start NER + dates over every turn and, on the no-LLM path, the per-turn keywords the fact
        extractor will ask for (``hypermem.ingest.annotate``: in the worker process when large)."""
        turns = [t for s in sessions for t in s.turns]
        keyword_texts = (
            self.stages.fact_extractor.keyword_texts(turns)
            if isinstance(self.stages.fact_extractor, TurnFactExtractor)
            else []
        )
        return self.stages.annotator.submit(
            [t.text for t in turns],
            [datetime.fromisoformat(t.timestamp) for t in turns],
            frozenset(t.speaker for t in turns),
            keyword_texts,
            TURN_KEYWORDS,
        )

    def _take_annotation(self, sessions: list[SessionBuild], pending: Future[Annotation]) -> None:
        """Wait for the annotation; hand each session its turns' elements, and the keywords to the keyword cache."""
        annotation = pending.result()
        self.stages.keywords.remember(annotation.keywords, TURN_KEYWORDS)
        offset = 0
        for session in sessions:
            session.elements = annotation.elements[offset : offset + len(session.turns)]
            offset += len(session.turns)

    # --- stage 3: episodes ---------------------------------------------------------------
    def _build_episodes(self, memory_id: str, session: SessionBuild) -> None:
        vectors = np.asarray([t.embedding for t in session.turns], dtype=np.float32)
        texts = [{"speaker": t.speaker, "text": t.text, "timestamp": t.timestamp} for t in session.turns]
        for start, end in self.stages.segmenter.segment(texts, vectors, session.elements):
            turns = session.turns[start:end]
            episode = Episode(
                memory_id=memory_id,
                id=node_id(memory_id, "episode", key(turns[0].dia_id)),
                session=session.session,
                title=self._title(turns),
                summary=summary(turns, vectors[start:end]),
                start=min(t.timestamp for t in turns),  # dialogue order need not be time order
                end=max(t.timestamp for t in turns),
                participants=sorted({t.speaker for t in turns}),
                turn_ids=[t.id for t in turns],
            )
            raw = centroid(vectors[start:end])
            episode.embedding_raw = raw.tolist()
            mentions: Counter = Counter()
            for turn, found in zip(turns, session.elements[start:end]):
                elements = element_nodes(memory_id, turn, found)
                session.element_nodes.update(elements)
                mentions.update(elements.keys())
            session.mentions[episode.id] = mentions
            session.episodes.append(episode)

    def _title(self, turns: list[Turn]) -> str:
        """An episode's title from its ``turns``' own keyphrases (``episodes.title_keyphrases``): each turn's are those
        its fact carries, made by the annotation on the no-LLM path (``_take_annotation``), so there a title costs no
        keyword extraction but a long turn's (its first ``TITLE_TURN_CHARS`` of prose)."""
        found = [self.stages.keywords.top(title_text(turn), TURN_KEYWORDS) for turn in turns]
        return title(title_keyphrases(found, title_exclusions(turns)), turns)

    # --- stage 4: facts ------------------------------------------------------------------
    def _build_facts(self, memory_id: str, session: SessionBuild) -> None:
        position = {t.id: i for i, t in enumerate(session.turns)}
        by_id = {t.id: t for t in session.turns}
        for episode in session.episodes:
            idx = [position[tid] for tid in episode.turn_ids]
            turns = [session.turns[i] for i in idx]
            previous = [session.turns[i - 1] if i > 0 else None for i in idx]
            drafts: list[FactDraft] = self.stages.fact_extractor.extract(
                turns, [session.elements[i] for i in idx], previous
            )
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

    def _embed_facts(self, memory_id: str, sessions: list[SessionBuild]) -> None:
        """Raw fact vectors: of ``embed_text`` (the memory's stored vector of that text when it holds one,
        ``_stored_vectors``; else encoded, each distinct text once), or the unit sum of the source turns'
        vectors plus half the vector of the question the fact answers (no model call, no ``embed_key``).
        A fact of one turn whose raw vector is that turn's, bit for bit in float32, is marked ``raw_is_turn``
        (stored once, on the turn)."""
        turn_vectors = {t.id: np.asarray(t.embedding, dtype=np.float32) for s in sessions for t in s.turns}
        pairs = [(f, d) for s in sessions for f, d in zip(s.facts, s.fact_drafts)]
        texts = {d.embed_text: self.embedder.text_key(d.embed_text) for _, d in pairs if d.embed_text}
        vectors = self._stored_vectors(memory_id, list(texts.values()))
        misses = [text for text, text_key in texts.items() if text_key not in vectors]
        for text, vector in zip(misses, self.embedder.encode(misses)):
            vectors[texts[text]] = vector.tolist()
        for fact, draft in pairs:
            if draft.embed_text:
                fact.embed_key = texts[draft.embed_text]
                fact.embedding_raw = vectors[fact.embed_key]
                continue
            vector = np.sum([turn_vectors[tid] for tid in draft.turn_ids], axis=0)
            if draft.context_turn_id in turn_vectors:
                vector = vector + 0.5 * turn_vectors[draft.context_turn_id]
            fact.embedding_raw = (vector / (np.linalg.norm(vector) or 1.0)).tolist()
        for fact, _ in pairs:
            turn_vector = turn_vectors.get(fact.turn_ids[0]) if len(fact.turn_ids) == 1 else None
            fact.raw_is_turn = turn_vector is not None and np.array_equal(
                np.asarray(fact.embedding_raw, dtype=np.float32), turn_vector
            )

    # --- stage 5: the write plan, then writing ----------------------------------------------
    def _plan(self, memory_id: str, sessions: list[SessionBuild]) -> WritePlan:
        """Read the stored hypergraph beside ``sessions``, then compute the plan (``hypermem.ingest.plan``)."""
        return plan_write(
            memory_id,
            sessions,
            self._stored_hypergraph(memory_id, [s.session for s in sessions]),
            topic_assigner=self.stages.topic_assigner,
            keywords=self.stages.keywords,
            propagation_lambda=self.settings.propagation_lambda,
            segment_merge_jaccard=self.settings.segment_merge_jaccard,
        )

    def _stored_hypergraph(self, memory_id: str, sessions: list[str]) -> StoredHypergraph:
        """The memory's topics and segment hyperedges as they stand once ``sessions`` are cleared."""
        topics: dict[str, TopicState] = {}
        for row in self.store.query("ingest/topic_members", memory_id=memory_id, sessions=sessions):
            state = topics.setdefault(row["topic_id"], TopicState(row["topic_id"]))
            state.members[row["episode_id"]] = np.asarray(row["embedding_raw"], dtype=np.float32)
            state.titles[row["episode_id"]] = row["title"]
        segments = [
            Segment(row["id"], Counter({m["element"]: m["weight"] for m in row["members"]}), list(row["episode_ids"]))
            for row in self.store.query("ingest/segments", memory_id=memory_id, sessions=sessions)
        ]
        return StoredHypergraph(list(topics.values()), segments)

    def _write_first(self, writes: OrderedWrites, memory_id: str, first: FirstWrites, *, prune: bool) -> None:
        """Clear a chunk's sessions (and with ``prune``, the ingest's first chunk, prune), then write its elements and
        facts (``FirstWrites``), after every read of what the sessions held (their stored turn and fact vectors) and
        while the next chunk is built or the plan made (its reads of the stored hypergraph leave every rebuilt
        session out, so they find the same before and after). Pruning only before the first chunk's rows: an
        element or fact written for it is in no hyperedge until ``_write``."""
        writes.query("ingest/clear_sessions", memory_id=memory_id, sessions=first.sessions)
        if prune:
            writes.query("maintain/prune_facts", memory_id=memory_id)  # those of an ingest stopped before its episodes
            self._prune(writes, memory_id)
        writes.write("write/elements", first.elements)
        writes.write("write/facts", first.facts)

    def _write(
        self,
        writes: OrderedWrites,
        memory_id: str,
        episode_hyperedges: list[dict],
        plan: WritePlan,
        words: Future[int] | None,
    ) -> None:
        """Run ``plan`` (and the chunks' ``episode_hyperedges``) in the order ``WritePlan`` gives; computes nothing.
        ``words`` (``write_new_words`` of the sessions' turns, running beside) is waited for before the sessions are
        marked done, and its error raised."""
        writes.write("write/episodes", plan.episodes)
        writes.query("maintain/clear_supersession", memory_id=memory_id)
        writes.query("maintain/supersession", memory_id=memory_id)
        writes.write("write/hyperedges", episode_hyperedges + plan.segment_hyperedges)
        writes.write("write/topics", plan.topics)
        writes.write("write/hyperedges", plan.topic_hyperedges)
        writes.write("write/episode_embeddings", plan.episode_embeddings)
        self._prune(writes, memory_id)
        writes.query("maintain/salience", memory_id=memory_id)
        writes.statements(self.store.corpus_stats_statements(memory_id))  # BM25's N and avgdl, before the marks
        if words is not None:
            words.result()
        writes.write("ingest/mark_sessions", plan.session_marks)

    @staticmethod
    def _prune(store: OrderedWrites, memory_id: str) -> None:
        for name in ("maintain/prune_hyperedges", "maintain/prune_topics", "maintain/prune_elements"):
            store.query(name, memory_id=memory_id)

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
