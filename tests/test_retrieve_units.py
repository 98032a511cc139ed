"""Retrieval building blocks by hand: RRF fusion, adaptive stopping, query classification, search config."""

from __future__ import annotations

from datetime import datetime

import pytest

from hypermem.config import Settings
from hypermem.retrieve.analysis import classify
from hypermem.retrieve.config import SearchConfig
from hypermem.retrieve.fusion import rrf
from hypermem.retrieve.stopping import cut, elbow, evidence_share_cut, share_bounds
from hypermem.store import Hit


# --- RRF ----------------------------------------------------------------------------------------------------
def test_rrf_by_hand():
    bm25 = [Hit("a", 3.0), Hit("b", 2.0), Hit("c", 1.0)]
    dense = [Hit("c", 0.9), Hit("a", 0.8), Hit("d", 0.7)]
    fused = rrf({"bm25": bm25, "dense": dense}, k=60)
    # a: 1/61 + 1/62 = 0.0325224 ; c: 1/63 + 1/61 = 0.0322662 ; b: 1/62 = 0.0161290 ; d: 1/63 = 0.0158730
    assert [f.id for f in fused] == ["a", "c", "b", "d"]
    assert [f.score for f in fused] == pytest.approx([1 / 61 + 1 / 62, 1 / 63 + 1 / 61, 1 / 62, 1 / 63])
    assert fused[0].rankers == {"bm25": {"rank": 1, "score": 3.0}, "dense": {"rank": 2, "score": 0.8}}
    assert fused[3].rankers == {"dense": {"rank": 3, "score": 0.7}}


def test_rrf_k_changes_the_order():
    # x: ranks 1 and 10 ; y: ranks 4 and 4. k=1: x = 1/2 + 1/11 = .591 > y = 2/5 = .4 ; k=60: x = 1/61 + 1/70 = .03068 < y = 2/64 = .03125
    one = [Hit("x", 1)] + [Hit(f"p{i}", 1) for i in range(2)] + [Hit("y", 1)]
    two = [Hit(f"q{i}", 1) for i in range(3)] + [Hit("y", 1)] + [Hit(f"r{i}", 1) for i in range(5)] + [Hit("x", 1)]
    order = lambda fused: [f.id for f in fused if f.id in ("x", "y")]  # noqa: E731
    assert order(rrf({"a": one, "b": two}, k=1)) == ["x", "y"]
    assert order(rrf({"a": one, "b": two}, k=60)) == ["y", "x"]


def test_rrf_ties_keep_first_seen_order_and_bad_k():
    fused = rrf({"bm25": [Hit("a", 1.0)], "dense": [Hit("b", 1.0)]})
    assert [f.id for f in fused] == ["a", "b"] and fused[0].score == fused[1].score
    assert rrf({}) == [] and rrf({"bm25": []}) == []
    with pytest.raises(ValueError, match="k must be >= 1"):
        rrf({"bm25": [Hit("a", 1.0)]}, k=0)


# --- adaptive stopping -------------------------------------------------------------------------------------
def test_precision_keeps_scores_within_80_percent_of_best():
    decision = cut([1.0, 0.9, 0.8, 0.79, 0.5], "precision")
    assert (decision.rule, decision.cut_at, decision.considered) == ("80%-of-best", 3, 5)
    assert decision.threshold == pytest.approx(0.8)
    assert cut([0.05, 0.041, 0.039], "precision").cut_at == 2  # threshold 0.04


def test_recall_cuts_at_the_elbow():
    # chord from 1.0 to 0.2 over 5 steps: distances below it at i=1..4 are -.11, -.22, +.22, +.11 -> knee at i=3
    decision = cut([1.0, 0.95, 0.9, 0.3, 0.25, 0.2], "recall")
    assert (decision.rule, decision.cut_at) == ("elbow", 3)
    assert elbow([0.9, 0.2, 0.19, 0.18, 0.17]) == 1  # one clear winner
    assert elbow([0.5, 0.5, 0.5]) == 3  # flat: keep all
    assert elbow([1.0, 0.1]) == 2  # too short for a knee


def test_judgment_stops_at_the_first_confident_hit():
    decision = cut([0.05, 0.04, 0.03, 0.02], "judgment", confidence=[0.3, 0.65, 0.9, 0.1], confident=0.6)
    assert (decision.rule, decision.cut_at, decision.threshold) == ("first-confident-hit", 2, 0.6)
    # no confident hit: the precision rule
    fallback = cut([0.05, 0.045, 0.03], "judgment", confidence=[0.1, 0.2, 0.3], confident=0.6)
    assert (fallback.rule, fallback.cut_at) == ("80%-of-best", 2)


def test_evidence_share_keeps_the_turns_holding_their_share_of_the_evidence():
    # shares of the total 2.0: 0.4, 0.25, 0.15, 0.1, 0.05, 0.05; threshold 1 / (2.5 * 4) = 0.1 keeps four
    probability = [0.8, 0.5, 0.3, 0.2, 0.1, 0.1]
    stop = evidence_share_cut(probability, "precision", budget=4, scale=2.5)
    assert (stop.rule, stop.cut_at, stop.considered, stop.threshold) == ("evidence-share", 4, 6, 0.1)
    # one clear answer: the floor of half the budget decides, and says so
    clear = evidence_share_cut([0.99, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01, 0.01], "precision", budget=4, scale=2.5)
    assert (clear.rule, clear.cut_at) == ("evidence-share (floor 2)", 2)
    # evidence spread thin over many turns: the cap of 1.75 x the budget decides
    spread = evidence_share_cut([0.1] * 40, "recall", budget=8, scale=6.0)
    assert (spread.rule, spread.cut_at) == ("evidence-share (cap 14)", 14)
    assert evidence_share_cut([0.5, 0.5], "recall", budget=8, scale=6.0).cut_at == 2  # never more than there are
    assert evidence_share_cut([], "recall", budget=8, scale=6.0).rule == "empty"
    # fewer candidates than the floor: all of them, and the rule says so (not a floor above what exists)
    few = evidence_share_cut([0.98, 0.01, 0.01], "precision", budget=500, scale=0.01)  # threshold 0.2 keeps one
    assert (few.rule, few.cut_at, few.counts) == ("evidence-share (floor 250: all 3 candidates)", 3, "candidate turns")
    assert evidence_share_cut([0.9, 0.05, 0.05], "precision", budget=500, scale=6.0).rule == "evidence-share"
    assert share_bounds(8) == (4, 14) and share_bounds(1) == (1, 1) and share_bounds(5) == (3, 8)


def test_fixed_and_empty():
    assert cut([0.9, 0.8, 0.7, 0.6], "recall", mode="fixed", k=2).as_dict() == {
        "query_type": "recall", "rule": "fixed-k", "cut_at": 2, "considered": 4, "threshold": None, "counts": "facts",
    }  # fmt: skip
    assert cut([0.9], "precision", mode="fixed", k=10).cut_at == 1
    assert cut([], "precision").as_dict()["rule"] == "empty" and cut([], "precision").cut_at == 0


# --- query types -------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("query", "kind"),
    [
        ("How many times did Nadia go to the pottery studio?", "recall"),
        ("List the places Omar went camping", "recall"),
        ("What are all the hobbies Nadia picked up?", "recall"),
        ("Which cities has Nadia lived in?", "recall"),
        ("What activities does Omar do with his puppy?", "recall"),
        ("When did Nadia run the half marathon?", "precision"),
        ("Where did Omar go camping?", "precision"),
        ("Who helped Omar pick the puppy?", "precision"),
        ("What is the name of Omar's puppy?", "precision"),
        ("Did Nadia move to Berlin?", "judgment"),
        ("Is Omar a dog owner?", "judgment"),
        ("Would Nadia enjoy a camping trip?", "judgment"),
        ("  does Omar like rain?", "judgment"),
    ],
)
def test_classify(query, kind):
    assert classify(query) == kind


def test_query_elements_named_and_dates_resolved(hm_service, hm_ingested):
    known = hm_service.store.query("retrieve/memory_elements", memory_id=hm_ingested.memory_id)
    analysis = hm_service.retriever.analyzer.analyze(
        "Did Nadia see Omar in Berlin last weekend?", known, datetime(2023, 7, 15, 10, 0)
    )
    assert analysis.query_type == "judgment"
    assert sorted(analysis.persons) == ["Nadia", "Omar"] and analysis.locations == ["Berlin"]
    assert analysis.times == ["2023-07-08"]
    assert set(analysis.element_ids) == {"testconv/person/nadia", "testconv/person/omar", "testconv/location/berlin"}


# --- search config -----------------------------------------------------------------------------------------
def test_search_config_from_settings_and_overrides():
    cfg = SearchConfig.from_settings(Settings(k_topic=7, rrf_k=30, llm_base_url=None), k_fact=12, propagation=False)
    assert (cfg.k_topic, cfg.rrf_k, cfg.k_fact, cfg.vector_property) == (7, 30, 12, "embedding_raw")
    for bad, field in [({"k_topic": 0}, "k_topic"), ({"turn_budget": True}, "turn_budget"), ({"nope": 1}, "nope"),
                       ({"stopping": "sometimes"}, "stopping"), ({"flat": "yes"}, "flat"),
                       ({"turn_ranker": "magic"}, "turn_ranker")]:  # fmt: skip
        with pytest.raises(ValueError, match=rf"^{field}: "):
            SearchConfig.from_settings(Settings(llm_base_url=None), **bad)


def test_floor_keeps_min_keep_items_and_says_so():
    floored = cut([1.0, 0.5, 0.4, 0.3], "precision", min_keep=3)
    assert (floored.rule, floored.cut_at) == ("80%-of-best (floor 3)", 3)
    assert cut([1.0, 0.5], "precision", min_keep=3).cut_at == 2  # never more than there are
    assert cut([1.0, 0.95, 0.9, 0.3], "precision", min_keep=2).rule == "80%-of-best"  # the rule already kept 3
