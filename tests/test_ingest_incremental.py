"""Idempotence and incrementality of ingest (issue 3, Correctness).

Each test builds its own memory (the test conversation under another memory_id) in the
shared store. A session that is rebuilt loses its episodes (``ingest/clear_sessions`` deletes them),
so a marker property set on every episode before an ingest tells which sessions were
rebuilt and which were left alone.
"""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest
from conftest import TESTCONV_SESSIONS, make_testconv_record, topic_similarity
from support.counting import CountingEmbedder

from hypermem.ingest import pipeline
from hypermem.ingest.locomo import conversation_from_record
from hypermem.ingest.topics import TOPIC_CENTER_PRIOR
from hypermem.model import SEARCH_LABELS, Message
from hypermem.vocabulary import vocabulary


def _ingest_copy(svc, memory_id: str):
    return svc.ingest_conversation(conversation_from_record(make_testconv_record(memory_id)))


def _mark_episodes(svc, memory_id: str) -> None:
    svc.store.run_cypher("MATCH (e:Episode) WHERE e.memory_id = $m SET e.test_marker = 1", {"m": memory_id})


def _episodes(svc, memory_id: str) -> dict[str, dict]:
    rows = svc.store.run_cypher(
        "MATCH (e:Episode) WHERE e.memory_id = $m RETURN e.id AS id, e.session AS session, e.test_marker AS marker",
        {"m": memory_id},
    )
    return {r["id"]: r for r in rows}


def _topic_partition(svc, memory_id: str) -> dict[str, set[str]]:
    rows = svc.store.run_cypher(
        "MATCH (t:Topic)-[:HAS_HYPEREDGE]->(:Hyperedge {kind: 'topic'})-[:MEMBER]->(e:Episode) "
        "WHERE t.memory_id = $m RETURN t.id AS t, collect(e.id) AS eps",
        {"m": memory_id},
    )
    return {r["t"]: set(r["eps"]) for r in rows}


def _ids(svc, memory_id: str) -> set[str]:
    return {
        r["id"] for r in svc.store.run_cypher("MATCH (n) WHERE n.memory_id = $m RETURN n.id AS id", {"m": memory_id})
    }


def test_reingesting_the_same_conversation_changes_nothing(hm_service):
    first = _ingest_copy(hm_service, "idem")
    counts, ids = hm_service.store.counts("idem"), _ids(hm_service, "idem")
    again = _ingest_copy(hm_service, "idem")
    assert again.sessions_skipped == 3 and again.sessions_ingested == 0
    assert hm_service.store.counts("idem") == counts
    assert _ids(hm_service, "idem") == ids
    for field in ("turns", "episodes", "topics", "facts", "persons", "times", "locations", "hyperedges"):
        assert getattr(again, field) == getattr(first, field), field


def test_resending_one_message_id_creates_no_duplicate(hm_service):
    _ingest_copy(hm_service, "resend")
    counts = hm_service.store.counts("resend")
    _mark_episodes(hm_service, "resend")
    same = Message("D1:3", "Nadia", "He is adorable! What did you name him?", datetime(2023, 6, 12, 14, 15), "1")
    report = hm_service.ingest_messages("resend", [same])
    assert report.sessions_skipped == 1 and report.sessions_ingested == 0
    assert hm_service.store.counts("resend") == counts
    assert all(e["marker"] == 1 for e in _episodes(hm_service, "resend").values())
    rows = hm_service.store.run_cypher(
        "MATCH (t:Turn {dia_id: 'D1:3'}) WHERE t.memory_id = 'resend' RETURN count(t) AS n, collect(t.seq) AS seq"
    )
    assert rows[0]["n"] == 1 and rows[0]["seq"] == [2]  # keeps its place in the dialogue


def test_live_messages_in_a_new_session_add_episodes_and_update_topics_only(hm_service):
    memory = "live"
    _ingest_copy(hm_service, memory)
    before_counts = hm_service.store.counts(memory)
    before_topics = _topic_partition(hm_service, memory)
    raw = {
        r["id"]: np.asarray(r["raw"], dtype=np.float64)
        for r in hm_service.store.run_cypher(
            "MATCH (e:Episode) WHERE e.memory_id = $m RETURN e.id AS id, e.embedding_raw AS raw", {"m": memory}
        )
    }
    _mark_episodes(hm_service, memory)
    when = datetime(2023, 8, 2, 18, 0)
    live = [
        Message(
            "L1", "Nadia", "My pottery teacher in Berlin let me glaze three bowls on the wheel today.", when, "live-1"
        ),
        Message("L2", "Omar", "Three bowls! Did the glaze come out blue like I suggested?", when, "live-1"),
        Message("L3", "Nadia", "Yes, a deep blue glaze on stoneware clay, exactly as you said.", when, "live-1"),
    ]
    report = hm_service.ingest_messages(memory, live)
    assert report.sessions_ingested == 1
    after = _episodes(hm_service, memory)
    old = {k: v for k, v in after.items() if v["session"] != "live-1"}
    new = {k: v for k, v in after.items() if v["session"] == "live-1"}
    assert set(old) == set(raw) and all(v["marker"] == 1 for v in old.values())  # sessions 1-3 untouched
    assert set(new) == {"live/episode/L1"} and new["live/episode/L1"]["marker"] is None
    counts = hm_service.store.counts(memory)
    assert counts["Turn"] == before_counts["Turn"] + 3
    assert counts["Episode"] == before_counts["Episode"] + 1
    assert counts["Fact"] == before_counts["Fact"] + 3

    # topics: every old membership survives; the new episode joined the topic the rule picks, or a new one
    after_topics = _topic_partition(hm_service, memory)
    for topic, members in before_topics.items():
        assert members <= after_topics[topic]
    home = [t for t, members in after_topics.items() if "live/episode/L1" in members]
    assert len(home) == 1
    new_vec = np.asarray(hm_service.store.run_cypher(
        "MATCH (e:Episode {id: 'live/episode/L1'}) RETURN e.embedding_raw AS raw")[0]["raw"], dtype=np.float64)  # fmt: skip
    center = np.sum(list(raw.values()), axis=0) / (len(raw) + TOPIC_CENTER_PRIOR)  # earlier episodes, shrunk
    sims = {
        topic: topic_similarity(new_vec, [raw[e] for e in members], center) for topic, members in before_topics.items()
    }
    best = max(sims, key=sims.get)
    if sims[best] >= hm_service.settings.topic_join_similarity:
        assert home == [best] and counts["Topic"] == before_counts["Topic"]
    else:
        assert home[0] not in before_topics and counts["Topic"] == before_counts["Topic"] + 1
    # the pottery session and the live pottery talk should land together
    assert home[0] == next(t for t, m in before_topics.items() if "live/episode/D2:1" in m)

    # the new session is searchable at once
    result = hm_service.query(memory, "What colour was the glaze on Nadia's bowls in Berlin?")
    assert {"L3", "L2", "L1"} & {t.dia_id for t in result.turns}


def test_a_message_added_to_an_existing_session_rebuilds_only_that_session(hm_service):
    memory = "grow"
    _ingest_copy(hm_service, memory)
    before = hm_service.store.counts(memory)
    _mark_episodes(hm_service, memory)
    late = Message("D3:6", "Omar", "Send me photos of the Kreuzberg apartment when you have furniture.",
                   datetime(2023, 7, 15, 10, 5), "3")  # fmt: skip
    report = hm_service.ingest_messages(memory, [late])
    assert report.sessions_ingested == 1 and report.sessions_skipped == 0
    episodes = _episodes(hm_service, memory)
    assert {k for k, v in episodes.items() if v["marker"] is None} == {
        k for k, v in episodes.items() if v["session"] == "3"
    }
    assert {k for k, v in episodes.items() if v["marker"] == 1} == {
        "grow/episode/D1:1", "grow/episode/D2:1", "grow/episode/D2:7"
    }  # fmt: skip
    rows = hm_service.store.run_cypher(
        "MATCH (a:Turn)-[:NEXT]->(b:Turn {dia_id: 'D3:6'}) WHERE b.memory_id = 'grow' RETURN a.dia_id AS a, b.seq AS seq"
    )
    assert rows == [{"a": "D3:5", "seq": 22}]
    counts = hm_service.store.counts(memory)
    assert counts["Turn"] == before["Turn"] + 1 and counts["Fact"] == before["Fact"] + 1
    prov = hm_service.store.run_cypher(
        "MATCH (e:Episode)-[:FROM_TURN]->(t:Turn) WHERE e.memory_id = 'grow' AND e.session = '3' RETURN collect(t.dia_id) AS d"
    )
    assert sorted(prov[0]["d"]) == [f"D3:{i}" for i in range(1, 7)]
    # ingesting the whole conversation again (without D3:6) leaves D3:6 in place and skips all sessions
    again = _ingest_copy(hm_service, memory)
    assert again.sessions_skipped == 3 and hm_service.store.counts(memory) == counts


def test_memories_are_independent(hm_service, hm_ingested):
    """Ingesting other memories never changes the test memory's counts."""
    before = hm_service.store.counts(hm_ingested.memory_id)
    _ingest_copy(hm_service, "other-a")
    assert hm_service.store.counts(hm_ingested.memory_id) == before


def _two_messages(first_session: str = "s1") -> list[Message]:
    return [
        Message("1", "Caroline", "I adopted a grey cat called Pixel from the shelter yesterday!",
                datetime(2023, 7, 2, 18, 0), first_session),
        Message("2", "Melanie", "Lovely! I am off to a pottery workshop in Lisbon next week.",
                datetime(2023, 7, 2, 18, 1), "s1"),
    ]  # fmt: skip


def test_moving_a_message_to_another_session_rebuilds_its_old_session_too(hm_service):
    memory = "moved"
    first = hm_service.ingest_messages(memory, _two_messages())
    assert (first.episodes, first.persons, first.locations, first.updated) == (1, 2, 1, 0)
    moved = hm_service.ingest_messages(memory, [_two_messages("s2")[0]])
    assert (moved.sessions_ingested, moved.sessions_skipped) == (2, 0)  # s2 (new) and s1 (left)
    assert (moved.updated, moved.updated_ids) == (1, ["1"])
    assert (moved.turns, moved.episodes, moved.persons, moved.locations) == (2, 2, 2, 1)
    sessions = {e["session"] for e in _episodes(hm_service, memory).values()}
    assert sessions == {"s1", "s2"}
    melanie = hm_service.store.run_cypher(
        "MATCH (e:Episode)-[:HAS_HYPEREDGE]->(:Hyperedge)-[:MEMBER]->(l:Location) "
        "WHERE e.memory_id = $m RETURN e.session AS session, l.name AS name",
        {"m": memory},
    )
    assert [(r["session"], r["name"]) for r in melanie] == [("s1", "Lisbon")]
    again = hm_service.ingest_messages(memory, [_two_messages("s2")[0]])
    assert (again.sessions_ingested, again.sessions_skipped, again.updated) == (0, 1, 0)


def test_moving_every_message_out_of_a_session_leaves_it_empty(hm_service):
    memory = "emptied"
    hm_service.ingest_messages(memory, _two_messages())
    moved = [Message(m.message_id, m.speaker, m.text, m.timestamp, "s3") for m in _two_messages()]
    report = hm_service.ingest_messages(memory, moved)
    assert (report.sessions_ingested, report.updated, report.turns, report.persons, report.locations) == (2, 2, 2, 2, 1)
    assert {e["session"] for e in _episodes(hm_service, memory).values()} == {"s3"}


def _vectors(svc, memory_id: str) -> dict[tuple[str, str], list[float]]:
    """Every vector of the memory's turns, facts and episodes, by (local id, property), and which facts borrow
    their turn's vector (``raw_is_turn``)."""
    rows = svc.store.run_cypher(
        "MATCH (n) WHERE n.memory_id = $m AND (n:Turn OR n:Fact OR n:Episode) "
        "RETURN n.id AS id, n.embedding AS embedding, n.embedding_raw AS raw, n.raw_is_turn AS borrowed",
        {"m": memory_id},
    )
    out = {}
    for row in rows:
        local = row["id"].split("/", 1)[1]
        out[(local, "embedding")] = row["embedding"]
        if row["raw"] is not None:
            out[(local, "embedding_raw")] = row["raw"]
        if row["borrowed"] is not None:
            out[(local, "raw_is_turn")] = row["borrowed"]
    return out


def _stored_and_counted_corpus_stats(svc, memory_id: str) -> tuple[dict, dict]:
    """A memory's ``CorpusStats`` as stored, and as counted over its nodes now: ``{label: {speaker: (docs, words)}}``."""
    stored = {r["label"]: dict(zip(r["speakers"], zip(r["documents"], r["words"])))
              for r in svc.store.query("retrieve/corpus_stats", memory_id=memory_id)}  # fmt: skip
    counted = {label: {r["speaker"]: (r["documents"], r["words"])
                       for r in svc.store.run_cypher(svc.store.dialect.fulltext_stats(label), {"memory_id": memory_id})}
               for label in SEARCH_LABELS}  # fmt: skip
    return stored, counted


def test_an_edited_message_re_embeds_only_its_changed_texts(hm_service):
    """Re-ingesting a conversation with one line of a long message edited sends the model only the texts the
    memory holds no vector of (that turn, the passages holding the line), and stores exactly the vectors of an
    ingest from scratch of the edited conversation."""
    from long_messages import coding_chat

    from hypermem.ingest.pipeline import Ingestor

    def ingest(memory_id: str, messages: list[Message]) -> list[str]:
        counting = CountingEmbedder(hm_service.embedder)
        ingestor = Ingestor(hm_service.settings, hm_service.store, counting, hm_service.ingestor.stages)
        ingestor.ingest(memory_id, messages)
        return counting.sent

    original = conversation_from_record(make_testconv_record("reuse")).messages + coding_chat(12_000)
    prose = [p for p in original[-4].text.split("\n") if p.startswith("For the ")]
    line = prose[len(prose) // 2]  # one prose line mid-answer
    edited = [Message(m.message_id, m.speaker, m.text.replace(line, line + " Edited."), m.timestamp, m.session_id)
              if m.message_id == "C1:4" else m for m in original]  # fmt: skip
    assert original[-4].message_id == "C1:4" and edited[-4].text != original[-4].text

    first = ingest("reuse", original)
    assert len(first) == len(set(first)) > 50  # 29 turns and the passages; each distinct text once
    again = ingest("reuse", edited)
    scratch = ingest("reuse-scratch", edited)
    # the memory's vocabulary adds the one word new to it, embedded unless this process or another memory has it
    words = vocabulary([edited[-4].text])
    expected = {t for t in set(scratch) - set(first) if t not in words}
    assert set(again) & words <= {"edited"}
    assert len(again) == len(set(again)) and set(again) - {"edited"} == expected
    assert f"assistant: {edited[-4].text}" in again and 2 <= len(set(again) - words) <= 4  # the turn, 1-3 passages
    assert _vectors(hm_service, "reuse") == _vectors(hm_service, "reuse-scratch")
    before, counted = _stored_and_counted_corpus_stats(hm_service, "reuse")
    assert (
        before == counted and before["Turn"]["assistant"][0] >= 1 and sum(d for d, _ in before["Fact"].values()) > 10
    )  # BM25's N, avgdl

    # the same words from another speaker are another text
    moved = Message("D1:3", "Omar", original[2].text, original[2].timestamp, original[2].session_id)
    assert ingest("reuse", [moved]) == [f"Omar: {original[2].text}"]
    stored, counted = _stored_and_counted_corpus_stats(hm_service, "reuse")
    assert stored == counted and stored["Turn"]["Omar"][0] == before["Turn"]["Omar"][0] + 1  # the edit reached them


def test_a_failed_vocabulary_marks_no_session_and_the_next_ingest_completes_it(hm_service, monkeypatch):
    """The vocabulary is written beside the episodes and writes (``Ingestor.ingest``): when it fails, the ingest
    raises and no session counts as done, so the next ingest rebuilds every session and adds the words."""

    def failing(*args, **kwargs):
        raise RuntimeError("vocabulary failed")

    monkeypatch.setattr(pipeline, "write_new_words", failing)
    with pytest.raises(RuntimeError, match="vocabulary failed"):
        _ingest_copy(hm_service, "vocab-fails")
    count = "MATCH (n) WHERE n.memory_id = $m AND $label IN labels(n) RETURN count(n) AS n"
    assert hm_service.store.run_cypher(count, {"m": "vocab-fails", "label": "IngestState"})[0]["n"] == 0
    monkeypatch.undo()
    assert _ingest_copy(hm_service, "vocab-fails").sessions_ingested == len(TESTCONV_SESSIONS)
    texts = [r["text"] for r in hm_service.store.query("maintain/memory_turns", memory_id="vocab-fails")]
    terms = hm_service.store.run_cypher(count, {"m": "vocab-fails", "label": "Term"})[0]["n"]
    assert terms == len(vocabulary(texts)) > 0


def test_facts_left_by_an_ingest_stopped_before_its_episodes_are_pruned_by_the_next(hm_service, monkeypatch):
    """Facts are written before their episodes and episode hyperedges (``plan.FirstWrites``). An ingest that stops in
    between leaves facts that no episode reaches, so a rebuild of their session cannot clear them: the next ingest
    prunes them (``maintain/prune_facts``) and the memory ends as a clean ingest of what it was given leaves it.
    Meanwhile a query answers from the turns and leaves those facts out (``retrieve/fact_details``)."""

    def stop(*_args):
        raise RuntimeError("stopped before the episodes")

    with monkeypatch.context() as patched:
        patched.setattr(pipeline.Ingestor, "_plan", stop)
        with pytest.raises(RuntimeError, match="stopped before the episodes"):
            _ingest_copy(hm_service, "stopped")
    left = {i.removeprefix("stopped/") for i in _ids(hm_service, "stopped")}
    assert any(i.startswith("fact/") for i in left)  # the facts were written ...
    assert not any(i.startswith("episode/") for i in left)  # ... and no episode
    meanwhile = hm_service.query("stopped", "What did Nadia make in her pottery class?")
    assert meanwhile.turns and not meanwhile.facts

    edits = {"D2:3": "Haha ok."}  # no fact of its own any more
    hm_service.ingest_conversation(conversation_from_record(make_testconv_record("stopped", edits=edits)))
    hm_service.ingest_conversation(conversation_from_record(make_testconv_record("stopped-clean", edits=edits)))
    resumed = {i.removeprefix("stopped/") for i in _ids(hm_service, "stopped")}
    clean = {i.removeprefix("stopped-clean/") for i in _ids(hm_service, "stopped-clean")}
    assert {i for i in left if i.startswith("fact/")} - clean  # a fact the edited conversation no longer makes
    assert resumed == clean


def _graph(svc, memory_id: str) -> tuple[list, list]:
    """Every node of ``memory_id`` (labels, properties) and relationship (ends' ids, type, properties), with the
    memory id taken out of ids, in a stable order; vectors rounded to 6 places."""

    def clean(value):
        if isinstance(value, str):
            return value.replace(memory_id, "M")
        if isinstance(value, list):
            return [round(v, 6) if isinstance(v, float) else clean(v) for v in value]
        return value

    nodes = sorted(
        (sorted(r["labels"]), sorted((k, clean(v)) for k, v in r["props"].items() if k != "generation"))
        for r in svc.store.run_cypher(
            "MATCH (n) WHERE n.memory_id = $m RETURN labels(n) AS labels, properties(n) AS props", {"m": memory_id}
        )
    )
    edges = sorted(
        (clean(r["a"]), r["type"], clean(r["b"]), sorted(r["props"].items()))
        for r in svc.store.run_cypher(
            "MATCH (a)-[r]->(b) WHERE a.memory_id = $m RETURN a.id AS a, type(r) AS type, b.id AS b, "
            "properties(r) AS props",
            {"m": memory_id},
        )
    )
    return nodes, edges


def test_an_ingest_in_two_chunks_builds_the_graph_one_chunk_builds(hm_service, monkeypatch):
    """The pipeline's chunks (``session_chunks``: the last session built while it is embedded) change when things
    are built and written, never what: the same nodes, properties, vectors and relationships as one chunk."""
    chunks: list[int] = []  # per ingest, how many
    split = pipeline.session_chunks

    def recorded(sessions):
        chunks.append(len(split(sessions)))
        return split(sessions)

    monkeypatch.setattr(pipeline, "session_chunks", recorded)
    monkeypatch.setattr(pipeline, "PIPELINE_MIN_TURNS", 1)
    chunked = _ingest_copy(hm_service, "chunked")
    monkeypatch.setattr(pipeline, "PIPELINE_MIN_TURNS", 10**9)
    whole = _ingest_copy(hm_service, "whole")
    assert (chunked.turns, chunked.episodes, chunked.facts, chunked.hyperedges) == (
        whole.turns, whole.episodes, whole.facts, whole.hyperedges
    )  # fmt: skip
    assert chunked.facts > 0 and chunks == [2, 1]
    nodes, edges = _graph(hm_service, "chunked")
    assert (nodes, edges) == _graph(hm_service, "whole")
    vectors = [v for _, props in nodes for k, v in props if k == "embedding" and v is not None]
    assert len(vectors) >= chunked.turns + chunked.facts and all(len(v) == 384 for v in vectors)
    assert {t for _, t, _, _ in edges} >= {"NEXT", "FROM_TURN", "MEMBER", "HAS_HYPEREDGE"}


def test_session_chunks_put_the_trailing_fifth_of_the_turns_last(monkeypatch):
    from hypermem.ingest.plan import SessionBuild

    def sessions(*sizes: int) -> list[SessionBuild]:
        return [SessionBuild(f"s{n}", [object()] * size) for n, size in enumerate(sizes)]  # type: ignore[list-item]

    def shape(chunks: list[list[SessionBuild]]) -> list[list[str]]:
        return [[s.session for s in chunk] for chunk in chunks]

    monkeypatch.setattr(pipeline, "PIPELINE_MIN_TURNS", 100)
    assert shape(pipeline.session_chunks(sessions(30, 30, 30))) == [["s0", "s1", "s2"]]  # under 100 turns
    assert shape(pipeline.session_chunks(sessions(40, 40, 10, 10))) == [["s0", "s1"], ["s2", "s3"]]  # 20 of 100
    assert shape(pipeline.session_chunks(sessions(50, 30, 25))) == [["s0", "s1"], ["s2"]]  # 25 >= 21
    assert shape(pipeline.session_chunks(sessions(150))) == [["s0"]]  # one session: nothing to build ahead
    assert shape(pipeline.session_chunks(sessions(0, 150))) == [["s0", "s1"]]  # never a first chunk without turns
