"""The learned turn ranker (issue 11): features computed by hand on a tiny case, the logistic fit, weights files."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from hypermem.eval.ranker_fit import SHARE_CALIBRATION, QuestionRows, calibrate_share_scale, fit, fit_rows
from hypermem.retrieve.turn_ranker import (
    DEFAULT_MODEL,
    FEATURES,
    RANK_FEATURES,
    RR_K,
    TurnFacts,
    TurnLists,
    TurnRankerModel,
    TurnRankerModelError,
    exact_match,
    feature_matrix,
    load_model,
    specific_names,
)


def _column(rows: np.ndarray, name: str) -> list[float]:
    return [round(float(v), 6) for v in rows[:, FEATURES.index(name)]]


def test_features_by_hand():
    lists = TurnLists(hierarchy=["t2"], turn_bm25=["t3", "t2"], turn_dense=["t1"], fact_bm25=["t1"], fact_dense=["t2"],
                      turn_bm25_scores={"t3": 4.0, "t2": 1.0}, fact_bm25_scores={"t1": 2.5})  # fmt: skip
    turns = {
        "t1": TurnFacts("Ana", "Are you coming to the lake?", None, "t2", "", "I went to the lake last week with Bo."),
        "t2": TurnFacts(
            "Bo", "I went to the lake last week with Bo.", "t1", "t3", "Are you coming to the lake?", "Nice"
        ),
        "t3": TurnFacts("Ana", "Nice", "t2", None, "I went to the lake last week with Bo.", ""),
    }
    candidates = lists.candidates()
    assert candidates == ["t2", "t3", "t1"]
    rows = feature_matrix("When did Bo go to the lake?", candidates, lists, turns, ["bo"])
    assert rows.shape == (3, len(FEATURES))
    assert _column(rows, "hierarchy") == [round(1 / (RR_K + 1), 6), 0.0, 0.0]
    assert _column(rows, "turn_bm25") == [round(1 / (RR_K + 2), 6), round(1 / (RR_K + 1), 6), 0.0]
    assert _column(rows, "fact_dense") == [round(1 / (RR_K + 1), 6), 0.0, 0.0]
    assert _column(rows, "fact_bm25") == [0.0, 0.0, round(1 / (RR_K + 1), 6)]
    # t1 and t3 sit next to t2, the hierarchy's first turn
    assert _column(rows, "neighbor_hierarchy") == [0.0, round(1 / (RR_K + 1), 6), round(1 / (RR_K + 1), 6)]
    assert _column(rows, "speaker_named") == [1.0, 0.0, 0.0]
    assert _column(rows, "asks") == [0.0, 0.0, 1.0]
    assert _column(rows, "length")[1] == round(math.log1p(4), 6)
    assert _column(rows, "bm25_matched") == [1.0, 1.0, 0.0]
    # query words after BM25's analyzer: when, did, bo, go, lake ("the" and "to" are stop words)
    assert _column(rows, "query_coverage") == [0.4, 0.0, 0.2]
    assert _column(rows, "window_coverage") == [0.4, 0.4, 0.4]
    assert _column(rows, "mentions_time") == [1.0, 0.0, 0.0]
    assert _column(rows, "when_mentions_time") == [1.0, 0.0, 0.0]
    # BM25 scores relative to the leg's best: t3 is the best turn match, t1 the only fact match
    assert _column(rows, "turn_bm25_relative") == [0.25, 1.0, 0.0]
    assert _column(rows, "fact_bm25_relative") == [0.0, 0.0, 1.0]
    not_when = feature_matrix("Who went to the lake?", candidates, lists, turns, [])
    assert _column(not_when, "when_mentions_time") == [0.0, 0.0, 0.0]
    assert _column(not_when, "speaker_named") == [0.0, 0.0, 0.0]
    # no named member, no vocabulary match given
    assert _column(rows, "specific_names") == [0.0, 0.0, 0.0]
    assert _column(rows, "word_match_max") == [0.0, 0.0, 0.0]


def test_specific_names_count_the_members_a_turn_names():
    speakers = {"john", "tim"}
    # "Dune", "Frank", "Herbert"; "I'm" and "It's"/"What" open sentences or are "I"
    assert specific_names("I'm reading \"Dune\" by Frank Herbert. It's great. What about you, Tim?", speakers) == (
        3,
        True,
    )
    assert specific_names("Thanks! I'm currently reading a book that I really enjoy.", speakers) == (0, False)
    # a speaker's name, its prefix ("Jo") and its possessive are no member; the caption is left out
    assert specific_names("Hey Jo, John's dog met Sushi. [shares a photo: a dog in Paris]", speakers) == (1, False)
    assert specific_names("", speakers) == (0, False)


def test_member_and_word_match_features():
    lists = TurnLists(["a", "b"], [], [], [], [])
    turns = {"a": TurnFacts("Ann", 'My favourite is "Chicken Pot Pie" and Sushi.', None, "b"),
             "b": TurnFacts("Bo", "I love food, Ann.", "a", None)}  # fmt: skip
    rows = feature_matrix("What foods does Ann like?", ["a", "b"], lists, turns, ["Ann"], {"a": (0.62, 0.41)})
    assert _column(rows, "specific_names") == [round(math.log1p(4), 6), 0.0]  # Chicken, Pot, Pie, Sushi
    assert _column(rows, "quoted_title") == [1.0, 0.0]
    assert _column(rows, "names_something") == [1.0, 0.0]
    assert _column(rows, "word_match_max") == [0.62, 0.0]
    assert _column(rows, "word_match_mean") == [0.41, 0.0]


def test_long_turn_length_is_capped():
    lists = TurnLists(["a", "b"], [], [], [], [])
    turns = {"a": TurnFacts("x", "w " * 5000, None, None), "b": TurnFacts("x", "w " * 500, None, None)}
    rows = feature_matrix("w", ["a", "b"], lists, turns, [])
    assert _column(rows, "length") == [round(math.log1p(1000), 6), round(math.log1p(1000), 6)]


def test_fit_learns_the_informative_feature_and_keeps_rank_weights_nonnegative():
    rng = np.random.default_rng(7)
    n = 4000
    x = np.zeros((n, len(FEATURES)))
    label = rng.random(n) < 0.2
    x[:, FEATURES.index("hierarchy")] = np.where(label, rng.uniform(0.05, 0.09, n), rng.uniform(0.0, 0.06, n))
    # a rank leg that points the wrong way: its weight must stay at 0, not go negative
    x[:, FEATURES.index("turn_dense")] = np.where(label, 0.0, rng.uniform(0.0, 0.09, n))
    x[:, FEATURES.index("asks")] = np.where(label, 0.0, (rng.random(n) < 0.5).astype(float))
    model = fit(x, label.astype(int), FEATURES, RANK_FEATURES)
    assert model.weights["hierarchy"] > 10
    assert model.weights["turn_dense"] == 0.0
    assert model.weights["asks"] < -1  # not a rank feature: free to be negative
    scores = model.score(x)
    assert scores[label].mean() > scores[~label].mean()
    unconstrained = fit(x, label.astype(int), FEATURES)
    assert unconstrained.weights["turn_dense"] < 0


def _questions(seed: int, n: int = 60) -> list[QuestionRows]:
    """``n`` questions of 30 candidates each: one to four evidence turns, ranked well by the hierarchy leg."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        labels = np.zeros(30, dtype=int)
        labels[: rng.integers(1, 5)] = 1
        x = np.zeros((30, len(FEATURES)))
        x[:, FEATURES.index("hierarchy")] = np.where(labels, rng.uniform(0.04, 0.09, 30), rng.uniform(0.0, 0.06, 30))
        out.append(QuestionRows(f"c{q % 3}", [f"D1:{i}" for i in range(30)], x, labels))
    return out


def test_the_share_scale_is_calibrated_to_the_budget_on_the_training_questions():
    from hypermem.eval.ranker_fit import choose_stopping
    from hypermem.retrieve.stopping import evidence_share_count

    rows = [r for r in _questions(3) if r.sample_id != "c2"]  # 2 conversations: calibrated on the rows themselves
    model = fit_rows(rows, budget=8)
    assert choose_stopping(rows, 8) is None
    assert model.share_scale == calibrate_share_scale(model, rows, 8)

    def mean_turns(scale: float) -> float:
        return float(np.mean([evidence_share_count(model.probability(model.score(r.features)), 8, scale)
                              for r in rows]))  # fmt: skip

    # the largest scale (3 significant digits) that keeps the mean within 98% of the budget
    assert mean_turns(model.share_scale) <= SHARE_CALIBRATION * 8
    assert mean_turns(model.share_scale * 1.02) > SHARE_CALIBRATION * 8
    assert fit_rows(rows, budget=4).share_scale != model.share_scale  # calibrated for the budget it is given
    with pytest.raises(ValueError, match="no question with evidence"):
        fit_rows(rows, sample_ids={"nobody"})


def test_with_three_conversations_the_share_scale_is_calibrated_out_of_fold():
    from hypermem.eval.ranker_fit import _fit, choose_stopping
    from hypermem.retrieve.stopping import evidence_share_count

    rows = _questions(3)  # conversations c0, c1, c2; no recall-type question: one budget
    choice = choose_stopping(rows, 8)
    assert choice is not None and choice.recall_budget_scale == 1.0 and choice.recalls == {}
    model = fit_rows(rows, budget=8)
    assert (model.share_scale, model.recall_budget_scale) == (choice.share_scale, 1.0)
    # each conversation scored by the ranker fitted on the other two: those probabilities average the budget
    held_out = []
    for conversation in ("c0", "c1", "c2"):
        other = _fit([r for r in rows if r.sample_id != conversation])
        held_out += [other.probability(other.score(r.features)) for r in rows if r.sample_id == conversation]
    turns = [evidence_share_count(p, 8, choice.share_scale) for p in held_out]
    assert np.mean(turns) <= SHARE_CALIBRATION * 8
    assert np.mean([evidence_share_count(p, 8, choice.share_scale * 1.02) for p in held_out]) > SHARE_CALIBRATION * 8


def test_fit_refuses_one_class_and_bad_shapes():
    with pytest.raises(ValueError, match="labels"):
        fit(np.zeros((5, len(FEATURES))), np.zeros(5, dtype=int), FEATURES)
    with pytest.raises(ValueError, match="features"):
        fit(np.zeros((5, 3)), np.array([0, 1, 0, 1, 0]), FEATURES)


def test_contributions_explain_the_score():
    row = np.arange(len(FEATURES), dtype=float) / 10
    parts = DEFAULT_MODEL.contributions(row)
    assert parts["bias"] == pytest.approx(DEFAULT_MODEL.bias, abs=1e-4)
    assert sum(parts.values()) == pytest.approx(float(DEFAULT_MODEL.score(row[None, :])[0]), abs=1e-3)
    assert "hierarchy" not in parts  # a zero feature contributes nothing and is not shown


def test_probability_is_the_logistic_function_and_never_overflows():
    logits = np.array([-1e6, -2.0, 0.0, 2.0, 1e6])
    with np.errstate(all="raise"):
        p = TurnRankerModel.probability(logits)
    assert p.tolist() == pytest.approx([0.0, 1 / (1 + math.exp(2)), 0.5, 1 / (1 + math.exp(-2)), 1.0])


def test_weights_files(tmp_path):
    good = tmp_path / "ranker.json"
    good.write_text(json.dumps(DEFAULT_MODEL.as_dict()))
    assert load_model(good) == DEFAULT_MODEL
    assert load_model(None) is DEFAULT_MODEL
    missing = DEFAULT_MODEL.as_dict()
    del missing["weights"]["asks"]
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(missing))
    with pytest.raises(TurnRankerModelError, match="bad.json.*weights"):
        load_model(bad)
    with pytest.raises(TurnRankerModelError, match="nope.json"):
        load_model(tmp_path / "nope.json")
    with pytest.raises(TurnRankerModelError, match="is a directory"):
        load_model(tmp_path)
    for weights, message in [
        ({**DEFAULT_MODEL.weights, "asks": float("nan")}, r"weights\.asks: must be a finite number"),
        ({**DEFAULT_MODEL.weights, "hierarchy": -50.0}, r"weights\.hierarchy: a rank weight must be >= 0"),
        ([1, 2], "weights: must be an object"),
        ({**DEFAULT_MODEL.weights, "length": 1e308}, r"weights\.length: must be within"),
    ]:
        bad.write_text(json.dumps({"bias": 0.0, "weights": weights, "share_scale": 6.0}))
        with pytest.raises(TurnRankerModelError, match=message):
            load_model(bad)
    for scale, message in [(0, "share_scale: must be > 0"), (-1.5, "share_scale: must be > 0"),
                           ("6", "share_scale: must be a finite number"), (1e9, "share_scale: must be within")]:  # fmt: skip
        bad.write_text(json.dumps({**DEFAULT_MODEL.as_dict(), "share_scale": scale}))
        with pytest.raises(TurnRankerModelError, match=message):
            load_model(bad)
    older = DEFAULT_MODEL.as_dict()
    del older["share_scale"]  # a file from before adaptive stopping was calibrated with the weights
    bad.write_text(json.dumps(older))
    with pytest.raises(TurnRankerModelError, match="share_scale: missing .*refit it with `hypermem eval fit-ranker`"):
        load_model(bad)
    bad.write_text(json.dumps({**DEFAULT_MODEL.as_dict(), "notes": "x"}))
    with pytest.raises(TurnRankerModelError, match="notes: unknown field"):
        load_model(bad)
    bad.write_text("null")
    with pytest.raises(TurnRankerModelError, match="expected a JSON object"):
        load_model(bad)
    with pytest.raises(ValueError, match="weights"):
        TurnRankerModel({"hierarchy": 1.0}, 0.0)


HELD = frozenset({"locker", "code", "pool", "fix", "work", "peak", "traffic", "tell"})  # a memory's terms


@pytest.mark.parametrize(
    ("query", "text", "held", "expected"),
    [
        ("What is my locker code?", "My locker code is 4512.", HELD, True),  # "what", "my": no memory terms
        ("What is my locker code at the gym?", "My locker code is 4512.", HELD, True),  # no "gym" in the memory
        ("What is my locker code at the gym?", "My locker code is 4512.", HELD | {"gym"}, True),  # 2 of 3
        ("tell me the locker code", "My locker code is 4512.", HELD, True),
        (
            "What was the pool fix that worked at peak traffic?",
            "Thanks, the pool fix worked at peak traffic.",
            HELD,
            True,
        ),
        ("What was the pool fix that worked at peak traffic?", "The pool fix is in.", HELD, False),  # 2 of 5
        ("locker combination", "My locker code is 4512.", HELD | {"combin"}, False),  # 1 of 2
        ("the of and", "the of and", HELD, False),  # no BM25 term at all
        ("gym", "the gym", frozenset(), False),  # the memory holds none of the query's terms
        ("Where is the garden?", "See you at the garden on Saturday!", HELD | {"garden"}, False),  # one term only
    ],
)
def test_exact_match_needs_two_thirds_of_the_query_terms_the_memory_holds(query, text, held, expected):
    assert exact_match(query, text, held) is expected


# --- recall-type questions: their own weights and budget (issue 11: multi-hop) -------------------------------
def test_recall_type_rows_get_their_own_adjustment_with_rank_adjustments_kept_nonnegative():
    rng = np.random.default_rng(11)
    n = 6000
    recall = rng.random(n) < 0.4
    label = rng.random(n) < 0.2
    x = np.zeros((n, len(FEATURES)))
    x[:, FEATURES.index("hierarchy")] = np.where(label, rng.uniform(0.05, 0.09, n), rng.uniform(0.0, 0.06, n))
    # speaker_named tells evidence only for recall-type rows; a rank leg points the wrong way only for them
    x[:, FEATURES.index("speaker_named")] = np.where(recall & label, 1.0, (rng.random(n) < 0.3).astype(float))
    x[:, FEATURES.index("turn_dense")] = np.where(recall & label, 0.0, rng.uniform(0.0, 0.09, n))
    model = fit(x, label.astype(int), FEATURES, RANK_FEATURES, recall=recall)
    assert model.recall_weights["speaker_named"] > 2 > abs(model.weights["speaker_named"])
    assert model.weights["turn_dense"] >= 0 and model.recall_weights["turn_dense"] >= 0
    assert all(model.recall_weights[name] >= 0 for name in RANK_FEATURES)
    # the recall-type score is the sum of both; the other types' is the base alone
    row = x[:1]
    base = model.bias + float((row @ model.vector)[0])
    assert float(model.score(row)[0]) == pytest.approx(base)
    assert float(model.score(row, "precision")[0]) == pytest.approx(base)
    adjusted = base + model.recall_bias + sum(model.recall_weights[f] * row[0, i] for i, f in enumerate(FEATURES))
    assert float(model.score(row, "recall")[0]) == pytest.approx(adjusted)
    parts = model.contributions(row[0], "recall")
    assert sum(parts.values()) == pytest.approx(adjusted, abs=1e-3)
    with pytest.raises(ValueError, match="recall: expected one flag per row"):
        fit(x, label.astype(int), FEATURES, RANK_FEATURES, recall=recall[:10])


def _spread_questions(seed: int, conversations: int = 4, n: int = 120) -> list[QuestionRows]:
    """Precision questions with one evidence turn the hierarchy ranks first, and recall-type ones with six evidence
    turns the legs rank no better than the rest of the top 20: more turns find more of theirs."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        recall = q % 3 == 0
        labels = np.zeros(40, dtype=int)
        x = np.zeros((40, len(FEATURES)))
        column = FEATURES.index("hierarchy")
        if recall:
            labels[rng.choice(20, 6, replace=False)] = 1
            x[:20, column] = rng.uniform(0.05, 0.09, 20)
            x[20:, column] = rng.uniform(0.0, 0.03, 20)
        else:
            labels[0] = 1
            x[:, column] = rng.uniform(0.0, 0.05, 40)
            x[0, column] = 0.09
        out.append(QuestionRows(f"c{q % conversations}", [f"D1:{i}" for i in range(40)], x, labels,
                                "recall" if recall else "precision", int(labels.sum())))  # fmt: skip
    return out


def test_the_recall_budget_scale_is_chosen_by_cross_validation_and_the_mean_stays_within_the_budget():
    from hypermem.eval.ranker_fit import RECALL_BUDGET_SCALES, choose_stopping
    from hypermem.retrieve.stopping import evidence_share_count

    rows = _spread_questions(5)
    choice = choose_stopping(rows, 8)
    assert choice is not None
    scale, recalls = choice.recall_budget_scale, choice.recalls
    assert set(recalls) == set(RECALL_BUDGET_SCALES)
    assert scale == max(RECALL_BUDGET_SCALES, key=lambda s: (round(recalls[s], 9), -s))
    assert scale > 1.0 and recalls[scale] > recalls[1.0]  # spread evidence: more turns for the recall-type ones
    model = fit_rows(rows, budget=8)
    assert (model.recall_budget_scale, model.share_scale) == (scale, choice.share_scale)
    assert model.budget_for("recall", 8) == 8 * scale and model.budget_for("precision", 8) == 8.0
    counts = {t: [evidence_share_count(model.probability(model.score(r.features, r.query_type)),
                                       model.budget_for(r.query_type, 8), model.share_scale)
                  for r in rows if r.query_type == t] for t in ("recall", "precision")}  # fmt: skip
    assert np.mean(counts["recall"] + counts["precision"]) <= 8
    assert np.mean(counts["recall"]) > 8 > np.mean(counts["precision"])
    # too few conversations to cross-validate on, or no recall-type question: one budget for every type
    assert choose_stopping([r for r in rows if r.sample_id in ("c0", "c1")], 8) is None
    assert fit_rows([r for r in rows if r.sample_id in ("c0", "c1")], budget=8).recall_budget_scale == 1.0
    assert fit_rows([r for r in rows if r.query_type != "recall"], budget=8).recall_budget_scale == 1.0


def test_weights_files_with_recall_adjustments(tmp_path):
    from dataclasses import replace

    adjusted = replace(DEFAULT_MODEL, recall_weights={**dict.fromkeys(FEATURES, 0.0), "speaker_named": 1.25},
                       recall_bias=-0.5, recall_budget_scale=1.5)  # fmt: skip
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(adjusted.as_dict()))
    assert load_model(path) == adjusted
    assert adjusted.as_dict()["recall"] == {"bias": -0.5, "budget_scale": 1.5,
                                            "weights": {**dict.fromkeys(FEATURES, 0.0), "speaker_named": 1.25}}  # fmt: skip
    older = adjusted.as_dict()
    del older["recall"]  # a file from before recall-type adjustments: none, and one budget for every type
    path.write_text(json.dumps(older))
    assert load_model(path).recall_budget_scale == 1.0 and load_model(path).score(np.ones((1, len(FEATURES))),
                                                                                  "recall") == pytest.approx(
        DEFAULT_MODEL.score(np.ones((1, len(FEATURES)))))  # fmt: skip
    for recall, message in [
        ({"bias": 0.0, "weights": {}}, "recall: must be an object"),
        ({"bias": 0.0, "weights": [], "budget_scale": 1.0}, "recall.weights: must be an object"),
        ({"bias": 0.0, "weights": {"asks": 1.0}, "budget_scale": 1.0}, r"recall\.weights: expected exactly"),
        ({**adjusted.as_dict()["recall"], "budget_scale": 3.0}, r"recall\.budget_scale: must be within \[1, 2\]"),
        ({**adjusted.as_dict()["recall"], "bias": float("inf")}, r"recall\.bias: must be a finite number"),
        ({**adjusted.as_dict()["recall"], "weights": {**dict.fromkeys(FEATURES, 0.0), "hierarchy": -1e3}},
         r"recall\.weights\.hierarchy: a rank weight with its recall adjustment must be >= 0"),
    ]:  # fmt: skip
        path.write_text(json.dumps({**adjusted.as_dict(), "recall": recall}))
        with pytest.raises(TurnRankerModelError, match=message):
            load_model(path)
