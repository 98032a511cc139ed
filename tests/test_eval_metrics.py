"""Benchmark arithmetic on hand-made cases: evidence parsing, recall/precision, aggregates, F1, BLEU-1."""

from __future__ import annotations

import json
import math
from datetime import datetime

import pytest

from hypermem.eval.dataset import DatasetReport, load_questions, parse_evidence, questions_from_record
from hypermem.eval.metrics import Outcome, bleu1, normalize_answer, percentile, stats, summarise, token_f1
from hypermem.eval.report import markdown, write_report
from hypermem.eval.systems import ConversationTurns, FullContext, returned_turns
from hypermem.ingest.locomo import LocomoFormatError
from hypermem.model import Conversation, Message
from hypermem.retrieve.analysis import QueryAnalysis
from hypermem.retrieve.config import SearchConfig
from hypermem.retrieve.result import EpisodeHit, FactHit, QueryResult, TurnHit
from hypermem.retrieve.stopping import StopDecision

TURNS = {"D1:1", "D1:2", "D1:3", "D2:1", "D8:6", "D9:17", "D11:26"}


def record(qa: list[dict]) -> dict:
    return {"sample_id": "conv-x", "qa": qa}


# --- evidence parsing ---------------------------------------------------------------------------
def test_parse_evidence_splits_repairs_and_drops():
    ids, repaired, malformed = parse_evidence(["D8:6; D9:17", "D", "D:11:26", "D8:6", "D1:1,D1:2"])
    assert ids == ["D8:6", "D9:17", "D11:26", "D1:1", "D1:2"]
    assert repaired == ["D:11:26"]
    assert malformed == ["D"]


def test_questions_from_record_handles_quirks():
    report = DatasetReport()
    qa = [
        {"question": "Which year?", "answer": 2022, "evidence": ["D1:1"], "category": 2},
        {"question": "Trick?", "adversarial_answer": "self-care", "evidence": ["D8:6; D9:17"], "category": 5},
        {"question": "Opinion?", "answer": "yes", "evidence": [], "category": 3},
        {"question": "Ghost?", "answer": "no", "evidence": ["D10:19", "D", "D2:1"], "category": 4},
        {"question": "All ghost?", "answer": "no", "evidence": ["D10:19"], "category": 1},
    ]
    questions = questions_from_record(record(qa), TURNS, report)
    assert [q.answer for q in questions] == ["2022", "self-care", "yes", "no", "no"]
    assert questions[1].evidence == frozenset({"D8:6", "D9:17"})
    assert questions[2].evidence == frozenset()
    assert questions[3].evidence == frozenset({"D2:1"})
    assert questions[4].evidence == frozenset()
    assert report.integer_answers == 1
    assert report.empty_evidence == 2
    assert [u["id"] for u in report.unmatched] == ["D10:19", "D10:19"]
    assert report.unmatched[0] == {"sample_id": "conv-x", "question": 3, "id": "D10:19"}
    assert [u["id"] for u in report.malformed] == ["D"]
    assert report.evidence_ids == 1 + 2 + 0 + 3 + 1
    assert report.as_dict()["unmatched_evidence"]["count"] == 2


@pytest.mark.parametrize(
    "item, field",
    [
        ({"question": "q", "answer": "a", "evidence": [], "category": 7}, "category"),
        ({"question": "q", "evidence": [], "category": 1}, "answer"),
        ({"answer": "a", "evidence": [], "category": 1}, "question"),
        ({"question": "q", "answer": "a", "evidence": "D1:1", "category": 1}, "evidence"),
    ],
)
def test_questions_from_record_rejects_bad_items(item, field):
    with pytest.raises(LocomoFormatError, match=field):
        questions_from_record(record([item]), TURNS, DatasetReport())


def test_load_questions_reads_file(tmp_path):
    path = tmp_path / "mini.json"
    qa = [{"question": "When?", "answer": "May", "evidence": ["D1:1", "D3:3"], "category": 2}]
    path.write_text(json.dumps([{"sample_id": "conv-x", "conversation": {}, "qa": qa}]))
    conversation = Conversation("conv-x", ["A", "B"], [Message("D1:1", "A", "hi", datetime(2023, 5, 8), "1")])
    questions, report = load_questions(path, [conversation])
    assert len(questions) == 1 and questions[0].evidence == frozenset({"D1:1"})
    assert report.unmatched == [{"sample_id": "conv-x", "question": 0, "id": "D3:3"}]


# --- recall / precision ---------------------------------------------------------------------------
def outcome(gold, returned, category=1, tokens=0, latency=0.0):
    return Outcome(category, frozenset(gold), frozenset(returned), tokens, latency)


def test_outcome_recall_and_precision():
    o = outcome({"a", "b", "c"}, {"a", "d"})
    assert o.hits == 1
    assert o.recall == pytest.approx(1 / 3)
    assert o.precision == pytest.approx(1 / 2)
    assert outcome({"a"}, set()).precision == 0.0
    assert outcome(set(), {"a"}).recall is None
    assert outcome(set(), {"a"}).precision is None


def test_stats_means_and_exclusions():
    outcomes = [
        outcome({"a", "b"}, {"a", "x", "y", "z"}, 1, 100, 10.0),  # recall .5, precision .25
        outcome({"c"}, {"c"}, 2, 50, 20.0),  # recall 1, precision 1
        outcome(set(), {"q", "r", "s"}, 2, 30, 30.0),  # no gold: out of recall/precision only
        outcome({"d"}, set(), 4, 20, 40.0),  # recall 0, precision 0
    ]
    s = stats(outcomes)
    assert s["evidence_recall"] == pytest.approx((0.5 + 1 + 0) / 3)
    assert s["precision"] == pytest.approx((0.25 + 1 + 0) / 3)
    assert s["turns_per_question"] == pytest.approx((4 + 1 + 3 + 0) / 4)
    assert s["context_tokens"] == pytest.approx(50.0)
    assert s["p50_ms"] == pytest.approx(25.0)
    assert s["p95_ms"] == pytest.approx(38.5)
    assert s["questions"] == 4
    summary = summarise(outcomes)
    assert set(summary["by_category"]) == {"1", "2", "4"}
    assert summary["by_category"]["2"]["evidence_recall"] == 1.0
    assert summary["by_category"]["2"]["turns_per_question"] == 2.0
    assert summary["overall"] == s


def test_percentile_empty_and_single():
    assert percentile([], 95) == 0.0
    assert percentile([7.0], 95) == 7.0


def test_returned_turns_unions_turns_and_fact_sources():
    def turn(dia_id: str) -> TurnHit:
        return TurnHit(dia_id, "Ann", "2023-05-08T13:56:00", "text", 0.1, [])

    def fact(dia_ids: list[str]) -> FactHit:
        return FactHit("f", "fact", "content", None, "e1", 0.1, 0.5, dia_ids, [])

    result = QueryResult(
        "q", "m", "?", QueryAnalysis("precision"), SearchConfig(), topics=[],
        episodes=[EpisodeHit("e1", 1, "t", "earns nothing", None, None, 0.1, [])],
        facts=[fact(["D2:1", "D5:5"]), fact([])], turns=[turn("D1:3"), turn("D2:1")],
        stop=StopDecision("precision", "80%-of-best", 2, 2), rerank={}, selection={}, context="", context_tokens=0,
        answer=None,
    )  # fmt: skip
    assert returned_turns(result) == ["D1:3", "D2:1", "D5:5"]


def test_conversation_turns_and_full_context():
    messages = [
        Message("D1:1", "Ann", "I adopted a dog", datetime(2023, 5, 8, 13, 56), "1"),
        Message("D1:2", "Bob", "Nice", datetime(2023, 5, 8, 13, 56), "1", image_caption="a puppy"),
    ]
    turns = ConversationTurns(Conversation("conv-x", ["Ann", "Bob"], messages), lambda s: len(s.split()))
    assert turns.lines["D1:1"] == "[08 May 2023] Ann: I adopted a dog"
    assert "a puppy" in turns.lines["D1:2"]
    assert turns.dia_id("conv-x/turn/D1:2") == "D1:2"
    got = FullContext().retrieve(None, turns, "anything")
    assert got.returned == ["D1:1", "D1:2"]
    assert got.context_tokens == sum(len(line.split()) for line in turns.lines.values())
    assert got.context == "\n".join(turns.lines.values())
    full = outcome({"D1:2"}, got.returned)
    assert full.recall == 1.0 and full.precision == 0.5


# --- answer scores ---------------------------------------------------------------------------
def test_normalize_answer():
    assert normalize_answer("The Cat, and a Dog!") == "cat dog"
    assert normalize_answer(2022) == "2022"


def test_token_f1():
    assert token_f1("The cat sat", "a cat sat down") == pytest.approx(0.8)
    assert token_f1(2022, "2022") == 1.0
    assert token_f1("dog", "cat") == 0.0
    assert token_f1("", "cat") == 0.0
    assert token_f1("cat cat", "cat") == pytest.approx(2 * 0.5 * 1 / 1.5)


def test_bleu1():
    assert bleu1("cat sat", "cat sat down") == pytest.approx(math.exp(1 - 3 / 2))
    assert bleu1("cat sat on mat", "cat mat") == pytest.approx(0.5)
    assert bleu1("cat cat cat", "cat dog") == pytest.approx(1 / 3)
    assert bleu1("", "cat") == 0.0
    assert bleu1("7 May 2023", "7 May, 2023") == 1.0


# --- report ---------------------------------------------------------------------------------
def test_report_files(tmp_path):
    summary = summarise([outcome({"a"}, {"a", "b"}, 1, 12, 3.0), outcome({"c"}, {"d"}, 5, 8, 5.0)])
    results = {"systems": {"hypermem": summary, "bm25@8": summary}, "dataset": DatasetReport().as_dict()}
    text = markdown(results)
    assert "| hypermem | 0.500 | 0.250 | 1.5 | 10 |" in text
    assert "| bm25@8 | 1.000 (2.0) | - | - | - | 0.000 (1.0) |" in text
    paths = write_report(results, tmp_path / "out")
    assert json.loads(paths["json"].read_text())["systems"]["hypermem"]["overall"]["questions"] == 2
    assert paths["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_plot_labels_of_points_close_together_move_apart():
    """The ablations sit near one another on the recall-vs-turns plot: their labels must not overlap."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hypermem.eval.report import _label_offsets

    fig, ax = plt.subplots()
    ax.set_xscale("log")
    ax.set_xlim(1, 100)
    ax.set_ylim(0, 1)
    offsets = _label_offsets(ax, [(8.0, 0.81), (8.1, 0.81), (7.9, 0.812), (60.0, 0.2)])
    plt.close(fig)
    assert offsets[0] == (5.0, 4.0) and offsets[3] == (5.0, 4.0)  # a point alone keeps its label beside it
    dys = [dy for _, dy in offsets[:3]]
    assert len(set(dys)) == 3 and min(abs(a - b) for i, a in enumerate(dys) for b in dys[i + 1 :]) >= 10.0
