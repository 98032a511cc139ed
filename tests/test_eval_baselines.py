"""The standalone baselines (issue 11): BM25 checked against a ranking computed by hand, dense and RRF
on a real embedding model, and the report's curves and margin."""

from __future__ import annotations

import math
from datetime import datetime

import pytest

from hypermem.embed import Embedder
from hypermem.eval.baselines import BM25Ranker, TurnIndex, bm25_tokens
from hypermem.eval.report import curves, margin
from hypermem.ingest.locomo import Conversation, Message

DOCS = [
    "Alice: I went running in the park",
    "Bob: the park was closed for the running races, running late",
    "Alice: I love painting sunsets",
]


def test_analyzer_drops_stop_words_and_stems():
    assert bm25_tokens(DOCS) == [
        ["alic", "went", "run", "park"],
        ["bob", "park", "close", "run", "race", "run", "late"],
        ["alic", "love", "paint", "sunset"],
    ]


def test_bm25_scores_match_a_hand_computation():
    # Lucene BM25, k1 = 1.5, b = 0.75: idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
    # term score = idf * tf / (tf + k1 * (1 - b + b * dl / avgdl)). N = 3, avgdl = (4 + 7 + 4) / 3 = 5.
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))  # "run" and "park" are both in 2 documents
    norm0 = 1.5 * (0.25 + 0.75 * 4 / 5)
    norm1 = 1.5 * (0.25 + 0.75 * 7 / 5)
    doc0 = idf * (1 / (1 + norm0)) * 2  # run tf 1, park tf 1
    doc1 = idf * (2 / (2 + norm1) + 1 / (1 + norm1))  # run tf 2, park tf 1
    ranker = BM25Ranker(DOCS)
    scores = ranker.scores("Running in a park?")
    assert scores[0] == pytest.approx(doc0, rel=1e-5)
    assert scores[1] == pytest.approx(doc1, rel=1e-5)
    assert scores[2] == 0.0
    assert ranker.rank("Running in a park?") == [0, 1]  # the shorter turn wins despite tf 2 in the longer
    assert ranker.rank("paintings") == [2]
    assert ranker.rank("the and of") == []


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


def test_turn_index_ranks_dense_and_rrf(embedder):
    when = datetime(2023, 5, 8, 13, 56)
    messages = [
        Message("D1:1", "Alice", "I adopted a puppy named Biscuit last week.", when, "S1"),
        Message("D1:2", "Bob", "The quarterly tax forms are due on Friday.", when, "S1"),
        Message("D1:3", "Alice", "My sister bakes sourdough bread every weekend.", when, "S1"),
    ]
    index = TurnIndex(Conversation("tiny", ["Alice", "Bob"], messages), embedder)
    rankings = index.rankings("Which dog did Alice get?")
    assert rankings["dense"][0] == "D1:1"
    assert sorted(rankings["dense"]) == ["D1:1", "D1:2", "D1:3"]
    assert rankings["bm25"] == ["D1:1", "D1:3"]  # "alice" is a speaker term; no turn says "dog"
    assert rankings["rrf"][0] == "D1:1"
    assert index.rankings("Which dog did Alice get?") is rankings  # cached per question
    # Each ranking reports what computing it took, whichever baseline asks first (a cache hit is not a latency):
    # dense embeds the question itself, and RRF needs both rankings.
    ms = index.latency_ms("Which dog did Alice get?")
    assert ms["bm25"] > 0 and ms["dense"] > ms["bm25"]
    assert ms["rrf"] >= ms["bm25"] + ms["dense"]


def test_curves_and_margin_interpolate_baselines():
    def system(turns, recall):
        return {"overall": {"turns_per_question": turns, "evidence_recall": recall}}

    results = {"systems": {
        "hypermem": system(9.0, 0.70), "hypermem@5": system(5.0, 0.60), "hypermem-flat": system(9.0, 0.5),
        "bm25@8": system(8.0, 0.50), "bm25@10": system(10.0, 0.60), "dense@8": system(8.0, 0.40),
        "dense@10": system(10.0, 0.44), "full-context": system(600.0, 1.0),
    }}  # fmt: skip
    lines = curves(results)
    assert [p[2] for p in lines["hypermem"]] == ["hypermem@5", "hypermem"]
    assert set(lines) == {"hypermem", "bm25", "dense"}
    gap = margin(results)
    assert gap["best_baseline"] == "bm25"
    assert gap["baseline_recall"] == pytest.approx(0.55)
    assert gap["margin"] == pytest.approx(0.15)


def test_cv_folds():
    from hypermem.eval.cv import folds_of

    ids = ["c1", "c2", "c3", "c4", "c5"]
    assert folds_of(ids, 5) == [["c1"], ["c2"], ["c3"], ["c4"], ["c5"]]
    assert folds_of(ids, 2) == [["c1", "c3", "c5"], ["c2", "c4"]]
    with pytest.raises(ValueError, match="folds"):
        folds_of(ids, 6)


def test_a_fold_ranker_is_fitted_on_its_training_conversations_only():
    import numpy as np

    from hypermem.eval.ranker_fit import QuestionRows, fit_rows
    from hypermem.retrieve.turn_ranker import FEATURES

    def rows(sample: str, evidence_asks: bool) -> QuestionRows:
        x = np.zeros((40, len(FEATURES)))
        labels = np.array([1, 0] * 20)
        x[:, FEATURES.index("asks")] = labels if evidence_asks else 1 - labels
        return QuestionRows(sample, [f"D1:{i}" for i in range(40)], x, labels)

    data = [rows("train", evidence_asks=True), rows("test", evidence_asks=False)]
    assert fit_rows(data, {"train"}).weights["asks"] > 0  # the test conversation says the opposite
    assert fit_rows(data, {"test"}).weights["asks"] < 0
    with pytest.raises(ValueError, match="no question with evidence"):
        fit_rows(data, {"nowhere"})
