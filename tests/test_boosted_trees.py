"""The turn ranker's boosted trees: evaluation by hand on a tiny ensemble, the weights-file layout, and trees exported
from scikit-learn's fit scoring exactly as scikit-learn does."""

from __future__ import annotations

import json

import numpy as np
import pytest

from hypermem.retrieve.boosted_trees import BoostedTrees
from hypermem.retrieve.turn_ranker import BOOST_INPUTS, DEFAULT_MODEL, FEATURES, RECALL, TurnRankerModel, load_model

# two trees over inputs ("a", "b"): a <= 0.5 ? 1.0 : (b <= 2 ? -1.0 : 3.0), and a stump b <= 0 ? 0.5 : -0.5
TINY = {
    "inputs": ["a", "b"],
    "baseline": 0.25,
    "trees": [
        {"feature": [0, 0, 1, 0, 0], "threshold": [0.5, 0.0, 2.0, 0.0, 0.0], "left": [1, 1, 3, 3, 4],
         "right": [2, 1, 4, 3, 4], "value": [0.0, 1.0, 0.0, -1.0, 3.0]},
        {"feature": [1, 0, 0], "threshold": [0.0, 0.0, 0.0], "left": [1, 1, 2], "right": [2, 1, 2],
         "value": [0.0, 0.5, -0.5]},
    ],
}  # fmt: skip


def test_trees_are_evaluated_as_written():
    trees = BoostedTrees.from_dict(TINY, ("a", "b"))
    rows = np.array([[0.5, 0.0], [0.6, 2.0], [0.6, 2.5], [-3.0, 9.0]])
    # 0.25 + tree 1 + tree 2, each row by hand (a value equal to the threshold goes left)
    assert trees.predict(rows).tolist() == pytest.approx([0.25 + 1.0 + 0.5, 0.25 - 1.0 - 0.5, 0.25 + 3.0 - 0.5,
                                                          0.25 + 1.0 - 0.5])  # fmt: skip
    assert BoostedTrees.from_dict(json.loads(json.dumps(trees.as_dict())), ("a", "b")) == trees
    assert trees.as_dict() == TINY


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d["trees"][0].update(left=[0, 1, 3, 3, 4]), "a node has either two children or none"),
        (lambda d: d["trees"][0].update(right=[2, 1, 1, 3, 4]), "must come after it in its own tree"),
        (lambda d: d["trees"][1].update(right=[5, 1, 2]), "must come after it in its own tree"),
        (lambda d: d["trees"][0].update(feature=[2, 0, 1, 0, 0]), "must index the 2 inputs"),
        (lambda d: d["trees"][0].update(value=[0.0, float("nan"), 0.0, -1.0, 3.0]), "must be finite"),
        (lambda d: d["trees"][0].update(left=[1.5, 1, 3, 3, 4]), "left must hold one whole number per node"),
        (lambda d: d["trees"][0].pop("value"), "every tree must be an object"),
        (lambda d: d.update(trees=[]), "non-empty list"),
        (lambda d: d.update(inputs=["b", "a"]), r"boost\.inputs: expected"),
        (lambda d: d.update(baseline="0"), "baseline: must be a number"),
    ],
)
def test_malformed_trees_are_refused(change, message):
    data = json.loads(json.dumps(TINY))
    change(data)
    with pytest.raises(ValueError, match=message):
        BoostedTrees.from_dict(data, ("a", "b"))


def test_fitted_trees_score_as_scikit_learn_does_and_correct_the_linear_logit():
    from sklearn.ensemble import HistGradientBoostingClassifier

    from hypermem.eval.ranker_fit import BOOST_PARAMS, fit, fit_boost
    from hypermem.retrieve.turn_ranker import boost_inputs

    rng = np.random.default_rng(7)
    x = rng.uniform(0, 1, (3000, len(FEATURES)))
    recall = rng.random(3000) < 0.3
    # evidence where the hierarchy rank is high AND (for recall-type rows) the speaker is named: an interaction
    hierarchy, named = x[:, FEATURES.index("hierarchy")], x[:, FEATURES.index("speaker_named")]
    labels = ((hierarchy > 0.7) & (~recall | (named > 0.5)) & (rng.random(3000) < 0.9)).astype(int)
    linear = fit(x, labels, FEATURES, recall=recall)
    trees = fit_boost(linear, x, labels, recall)
    logits = np.where(recall, linear.linear_score(x, RECALL), linear.linear_score(x))
    inputs = boost_inputs(x, recall, logits)
    reference = HistGradientBoostingClassifier(**BOOST_PARAMS, early_stopping=False, random_state=0).fit(inputs, labels)
    assert np.abs(trees.predict(inputs) - reference.decision_function(inputs)).max() < 1e-9
    assert trees == fit_boost(linear, x, labels, recall)  # the same rows give the same trees
    model = TurnRankerModel(linear.weights, linear.bias, recall_weights=linear.recall_weights,
                            recall_bias=linear.recall_bias, boost=trees)  # fmt: skip
    for flags, query_type in ((recall, RECALL), (~recall, None)):
        rows = x[flags]
        assert model.score(rows, query_type) == pytest.approx(trees.predict(inputs[flags]))
        parts = model.contributions(rows[0], query_type)
        assert sum(parts.values()) == pytest.approx(float(model.score(rows[:1], query_type)[0]), abs=2e-3)
        correction = float((trees.predict(inputs[flags][:1]) - logits[flags][:1])[0])
        assert parts["boost"] == pytest.approx(correction, abs=1e-4)

    def log_loss(scores: np.ndarray) -> float:
        return float(np.mean(np.logaddexp(0, scores) - labels * scores))

    assert log_loss(trees.predict(inputs)) < log_loss(logits) - 0.01  # the trees learn the interaction the line misses


def test_the_shipped_model_has_trees_and_a_weights_file_keeps_them(tmp_path):
    assert DEFAULT_MODEL.boost is not None and DEFAULT_MODEL.boost.inputs == BOOST_INPUTS
    assert len(DEFAULT_MODEL.boost.roots) == 200
    path = tmp_path / "ranker.json"
    path.write_text(json.dumps(DEFAULT_MODEL.as_dict()))
    assert load_model(path) == DEFAULT_MODEL
    linear = DEFAULT_MODEL.as_dict()
    del linear["boost"]  # a file from before the trees: the linear model alone
    path.write_text(json.dumps(linear))
    row = np.full((1, len(FEATURES)), 0.05)
    assert load_model(path).score(row) == pytest.approx(DEFAULT_MODEL.linear_score(row))
    wrong = DEFAULT_MODEL.as_dict()
    wrong["boost"]["inputs"] = wrong["boost"]["inputs"][:-1]
    path.write_text(json.dumps(wrong))
    with pytest.raises(ValueError, match=r"boost\.inputs: expected"):
        load_model(path)
