"""Fitting the learned turn ranker (``hypermem.retrieve.turn_ranker``): L2-regularised logistic regression, then
gradient-boosted trees over its logit.

Rows are (question, candidate turn) pairs with the turn's features; the label is 1 when the turn is
one of the question's evidence turns (its gold ``dia_id``s). The fit is Newton's method (IRLS) on
standardised features; features named in ``nonnegative`` (every rank leg: a better rank in any
ranker must never lower a turn's score) are kept at a weight ≥ 0 by an active set: the most negative
one is pinned to 0 and the rest refitted, until none is negative. The weights are returned per raw
unit of each feature, so that a turn's score is ``bias + Σ weight × feature``.

Recall-type questions (``hypermem.retrieve.analysis``: enumerations, whose evidence is spread over sessions) get
an adjustment of their own (``TurnRankerModel.recall_weights``): once the weights are fitted on every question, a
second logistic regression over the recall-type questions' rows alone, with the first one's logit as each row's
offset, learns what they rank differently by (rank adjustments kept ≥ 0 too, so a better rank never lowers a turn
for either type). On the 7 LoCoMo dev conversations, leave one conversation out (same budget): multi-hop
0.511 → 0.530 [+0.004, +0.033], pooled 0.809 → 0.812.

Boosted trees (``fit_boost``, scikit-learn's HistGradientBoostingClassifier with fixed ``BOOST_PARAMS``) are then
fitted on every row over the features, the recall-type flag and the linear logit; their output is the final logit
(``TurnRankerModel.boost``). On the 7 LoCoMo dev conversations, leave one conversation out, each fold's whole fit on
its six training conversations (``fit_rows``): multi-hop 0.537 → 0.565, pooled 0.813 → 0.817 at 7.89 turns.

Adaptive stopping is calibrated on the training questions' out-of-fold probabilities (``choose_stopping``): each
conversation's questions are scored by the ranker fitted on the others; the recall-type budget multiple among
``RECALL_BUDGET_SCALES`` whose calibrated cut recalls the most evidence over them wins (a tie goes to the smaller),
and the evidence-share scale is the largest for which those questions get at most ``budget`` turns on average, a
recall-type question counted at its own budget, ``recall_budget_scale`` × ``budget`` (``_calibrated_scale``). With
fewer than 3 conversations the rows' own probabilities calibrate it (``calibrate_share_scale``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from hypermem.eval.dataset import Question
from hypermem.retrieve.boosted_trees import BoostedTrees
from hypermem.retrieve.pipeline import QueryError
from hypermem.retrieve.stopping import evidence_share_count
from hypermem.retrieve.turn_ranker import BOOST_INPUTS, FEATURES, RANK_FEATURES, RECALL, TurnRankerModel, boost_inputs

if TYPE_CHECKING:
    from hypermem.service import MemoryService

L2 = 1.0  # penalty on standardised weights (sklearn's C = 1)
FEW_TRAINING_QUESTIONS = 50  # `hypermem eval fit-ranker` warns below this many questions with evidence
# Adaptive stopping is calibrated so that the training questions average at most this share of the budget: new
# questions spread around the training mean (±0.5 turn per held-out LoCoMo conversation), so their mean stays within.
SHARE_CALIBRATION = 0.98
RECALL_BUDGET_SCALES = (1.0, 1.25, 1.5, 1.75, 2.0)  # the recall-type budget multiples cross-validation chooses among
# The boosted trees over the linear logit (``fit_boost``; scikit-learn's HistGradientBoostingClassifier), set once
# before they were measured, not tuned: 200 trees of up to 15 leaves, each leaf holding at least 200 training rows.
BOOST_PARAMS = {"max_iter": 200, "learning_rate": 0.05, "max_leaf_nodes": 15, "min_samples_leaf": 200,
                "l2_regularization": 1.0}  # fmt: skip


def _irls(
    x: npt.NDArray[np.float64],
    y: npt.NDArray[np.float64],
    l2: float,
    steps: int = 50,
    start: npt.NDArray[np.float64] | None = None,
    offset: npt.NDArray[np.float64] | float = 0.0,
) -> npt.NDArray[np.float64]:
    """Weights (last entry: bias) of L2 logistic regression on ``x`` (n × d, a bias column appended here), each row's
    logit plus its ``offset``, by Newton's method from ``start`` (d + 1 weights; zeros when None). A step that does
    not lower the penalised loss is halved until it does, so any start converges to the same (convex) optimum."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1) if start is None else np.array(start, dtype=np.float64)
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0  # the bias is not penalised

    def loss(weights: npt.NDArray[np.float64]) -> float:
        z = xb @ weights + offset
        return float(np.logaddexp(0.0, z).sum() - y @ z + 0.5 * (penalty * weights) @ weights)

    current = loss(w)
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w + offset, -30, 30)))
        gradient = xb.T @ (p - y) + penalty * w
        hessian = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        for _ in range(30):
            candidate = loss(w - step)
            if candidate <= current or np.max(np.abs(step)) < 1e-8:
                break
            step = step / 2
        w -= step
        current = min(current, candidate)
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def fit(features: npt.NDArray[np.float64], labels: npt.NDArray[np.int_], names: Sequence[str],
        nonnegative: Sequence[str] = (), l2: float = L2,
        recall: npt.NDArray[np.bool_] | None = None) -> TurnRankerModel:  # fmt: skip
    """A ``TurnRankerModel`` fitted on ``features`` (rows × len(names), ``names`` = ``FEATURES``) and 0/1 ``labels``.

    ``recall``: per row, whether its question is recall-type; the model then has recall adjustments: a second
    logistic regression over the recall-type rows alone, with the first one's logit as each row's offset (what the
    recall-type questions rank differently by), those of ``nonnegative`` kept ≥ 0 as well.
    Raises ``ValueError`` when shapes disagree or the labels are all one class.
    """
    x = np.asarray(features, dtype=np.float64)
    if recall is not None and len(recall) != len(x):
        raise ValueError("recall: expected one flag per row")
    weights, bias = fit_weights(x, labels, names, nonnegative, l2)
    model = TurnRankerModel(dict(zip(names, weights)), bias)
    if recall is None:
        return model
    flags, y = np.asarray(recall, dtype=bool), np.asarray(labels)
    if not flags.any() or y[flags].min() == y[flags].max():
        return model  # no recall-type row, or all of one class: nothing to adjust
    # the adjustment: a logistic regression over the recall-type rows alone, on top of the logit every query gets
    delta, delta_bias = fit_weights(x[flags], y[flags], names, nonnegative, l2, offset=model.score(x[flags]))
    return replace(model, recall_weights=dict(zip(names, delta)), recall_bias=delta_bias)


def fit_weights(features: npt.NDArray[np.float64], labels: npt.NDArray[np.int_], names: Sequence[str],
                nonnegative: Sequence[str] = (), l2: float = L2,
                offset: npt.NDArray[np.float64] | float = 0.0) -> tuple[list[float], float]:  # fmt: skip
    """``(per-unit weights in the order of names, bias)`` of the L2 logistic regression of ``fit`` (each row's logit
    plus its ``offset``)."""
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] != len(names) or len(y) != len(x):
        raise ValueError(f"features: expected rows × {len(names)} columns and one label per row")
    if y.min() == y.max():
        raise ValueError("labels: need both evidence (1) and non-evidence (0) rows")
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    active = list(range(len(names)))
    constrained = {names.index(n) for n in nonnegative}
    w = _irls(z, y, l2, offset=offset)
    while True:
        negative = [(w[i], col) for i, col in enumerate(active) if col in constrained and w[i] < 0]
        if not negative:
            break
        # pin the most negative to 0 and refit the rest from where they were: a few Newton steps, not a full fit
        drop = active.index(min(negative)[1])
        active.pop(drop)
        w = _irls(z[:, active], y, l2, start=np.delete(w, drop), offset=offset)
    weights = np.zeros(len(names))
    weights[active] = w[:-1]
    per_unit = weights / scale
    bias = float(w[-1] - per_unit @ mean)
    return [float(v) for v in per_unit], bias


@dataclass(frozen=True)
class QuestionRows:
    """One question's training rows: its candidates' ``dia_ids``, ``features`` (rows × FEATURES) and 0/1 ``labels``;
    its ``query_type`` and its number of ``evidence`` turns (0: the labelled ones, for rows made by hand)."""

    sample_id: str
    dia_ids: list[str]
    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int_]
    query_type: str = "precision"
    evidence: int = 0

    @property
    def recall_type(self) -> bool:
        return self.query_type == RECALL

    def recall_at(self, probabilities: npt.NDArray[np.float64], count: int) -> float:
        """The share of the question's evidence among its ``count`` most probable candidates."""
        top = np.argsort(-probabilities, kind="stable")[:count]
        return float(self.labels[top].sum()) / max(1, self.evidence or int(self.labels.sum()))


def question_rows(svc: MemoryService, questions: Sequence[Question], overrides: dict | None = None,
                  on_question: Callable[[], None] = lambda: None) -> list[QuestionRows]:  # fmt: skip
    """Training rows of every question with gold evidence, by ``Retriever.turn_features`` with ``overrides``."""
    out = []
    for q in questions:
        if q.evidence:
            try:
                dia_ids, rows, query_type = svc.retriever.turn_rows(q.sample_id, q.question, **(overrides or {}))
            except QueryError as exc:
                raise QueryError(f"{q.sample_id}.qa[{q.index}].question: {exc}") from exc
            labels = np.array([1 if d in q.evidence else 0 for d in dia_ids], dtype=np.int_)
            out.append(QuestionRows(q.sample_id, dia_ids, rows, labels, query_type, len(q.evidence)))
        on_question()
    return out


def calibrate_share_scale(model: TurnRankerModel, rows: Sequence[QuestionRows], budget: int) -> float:
    """The largest evidence-share scale (3 significant digits, within [0.1, 1000]) at which the questions of
    ``rows`` get at most ``SHARE_CALIBRATION`` × ``budget`` turns on average under ``model``
    (``hypermem.retrieve.stopping``; a recall-type question at its own budget, ``model.budget_for``)."""
    scored = [r for r in rows if len(r.features)]
    if not scored:
        raise ValueError("rows: no question with candidate turns")
    probabilities = [model.probability(model.score(r.features, r.query_type)) for r in scored]
    return _calibrated_scale(probabilities, [model.budget_for(r.query_type, budget) for r in scored], budget)


def _calibrated_scale(probabilities: Sequence[npt.NDArray[np.float64]], budgets: Sequence[float], budget: int) -> float:
    """``calibrate_share_scale`` over each question's candidates' ``probabilities`` at its own budget."""

    def mean_turns(scale: float) -> float:
        return float(np.mean([evidence_share_count(p, b, scale) for p, b in zip(probabilities, budgets)]))

    target = SHARE_CALIBRATION * budget
    low, high = 0.1, 1000.0  # mean_turns grows with the scale
    if mean_turns(high) <= target:
        return high
    for _ in range(40):
        middle = (low * high) ** 0.5
        low, high = (middle, high) if mean_turns(middle) <= target else (low, middle)
    places = 2 - math.floor(math.log10(low))  # 3 significant digits, rounded down so the mean stays within
    return math.floor(low * 10**places) / 10**places


def fit_boost(model: TurnRankerModel, features: npt.NDArray[np.float64], labels: npt.NDArray[np.int_],
              recall: npt.NDArray[np.bool_]) -> BoostedTrees:  # fmt: skip
    """Boosted trees (``TurnRankerModel.boost``) fitted on ``features`` (rows × FEATURES), their 0/1 ``labels`` and
    each row's recall-type flag, over ``model``'s linear logits: scikit-learn's HistGradientBoostingClassifier with
    ``BOOST_PARAMS`` (log loss, no subsampling, no early stopping: the same rows give the same trees), on one thread.
    scikit-learn is imported here only: answering a query never loads it."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from threadpoolctl import threadpool_limits

    flags = np.asarray(recall, dtype=bool)
    linear = np.where(flags, model.linear_score(features, RECALL), model.linear_score(features))
    inputs = boost_inputs(features, flags, linear)
    # one OpenMP thread: its spinning workers only slow a 2-core machine that also runs the graph server
    with threadpool_limits(limits=1, user_api="openmp"):
        booster = HistGradientBoostingClassifier(**BOOST_PARAMS, early_stopping=False, random_state=0)
        booster.fit(inputs, np.asarray(labels))
    return _trees(booster)


def _trees(booster: object) -> BoostedTrees:
    """A fitted HistGradientBoostingClassifier's trees in ``BoostedTrees``' layout (its leaf values already carry the
    learning rate; its raw prediction is the baseline plus their sum). It reads the estimator's private
    ``_predictors`` (each tree's node array) and ``_baseline_prediction``, unchanged since scikit-learn 0.21;
    ``tests/test_boosted_trees.py`` checks the exported trees against the estimator's own ``decision_function``."""
    nodes = [predictor.nodes for (predictor,) in booster._predictors]  # type: ignore[attr-defined]
    roots = np.cumsum([0, *(len(n) for n in nodes[:-1])]).astype(np.int64)
    every = np.concatenate(nodes)
    index = np.arange(len(every))
    offsets = np.repeat(roots, [len(n) for n in nodes])
    leaf = every["is_leaf"].astype(bool)
    left = np.where(leaf, index, every["left"].astype(np.int64) + offsets)
    right = np.where(leaf, index, every["right"].astype(np.int64) + offsets)
    return BoostedTrees(BOOST_INPUTS, float(np.ravel(booster._baseline_prediction)[0]),  # type: ignore[attr-defined]
                        roots, np.where(leaf, 0, every["feature_idx"]).astype(np.int64),
                        np.where(leaf, 0.0, every["num_threshold"]).astype(np.float64), left, right,
                        np.where(leaf, every["value"], 0.0).astype(np.float64))  # fmt: skip


def _fit(rows: Sequence[QuestionRows], recall_adjustment: bool = True, boost: bool = True) -> TurnRankerModel:
    """The ranker fitted on ``rows`` (with recall-type adjustments when ``recall_adjustment``, boosted trees over its
    logit when ``boost``), before adaptive stopping is calibrated."""
    features = np.vstack([r.features for r in rows])
    labels = np.concatenate([r.labels for r in rows])
    recall = np.concatenate([np.full(len(r.labels), r.recall_type) for r in rows])
    model = fit(features, labels, FEATURES, RANK_FEATURES, recall=recall if recall_adjustment else None)
    return replace(model, boost=fit_boost(model, features, labels, recall)) if boost else model


@dataclass(frozen=True)
class StoppingChoice:
    """What cross-validation over the training conversations chose (``choose_stopping``): the recall-type budget
    multiple ``recall_budget_scale``, the evidence-share ``share_scale`` calibrated at it on the out-of-fold
    probabilities, and ``recalls``: each candidate multiple's cross-validated recall (empty without a recall-type
    question: the multiple is then 1.0)."""

    recall_budget_scale: float
    share_scale: float
    recalls: dict[float, float]


def choose_stopping(rows: Sequence[QuestionRows], budget: int, recall_adjustment: bool = True,
                    boost: bool = True) -> StoppingChoice | None:  # fmt: skip
    """Each conversation's questions of ``rows`` scored by the ranker fitted on the other conversations (``_fit``);
    over those out-of-fold probabilities, the recall-type budget multiple among ``RECALL_BUDGET_SCALES`` under which
    the questions recall the most evidence, each cut by the evidence share calibrated over all of them at that
    multiple (a tie goes to the smaller), and that share scale. Calibrated out of fold, the share scale sees the
    probabilities a new conversation gets (the trees' in-sample probabilities are sharper: calibrated in sample, held-out
    LoCoMo questions got 8.04 turns for a budget of 8, out of fold 7.91, recall-type multiple 1.25). None with fewer than 3 conversations: too little
    to cross-validate on."""
    scored = [r for r in rows if len(r.features)]
    conversations = sorted({r.sample_id for r in scored})
    if len(conversations) < 3:
        return None
    probabilities: dict[int, npt.NDArray[np.float64]] = {}
    for held_out in conversations:
        model = _fit([r for r in scored if r.sample_id != held_out], recall_adjustment, boost)
        for i, r in enumerate(scored):
            if r.sample_id == held_out:
                probabilities[i] = model.probability(model.score(r.features, r.query_type))
    ordered = [probabilities[i] for i in range(len(scored))]
    candidates = RECALL_BUDGET_SCALES if any(r.recall_type for r in scored) else (1.0,)
    recalls: dict[float, float] = {}
    shares: dict[float, float] = {}
    for scale in candidates:
        budgets = [budget * scale if r.recall_type else float(budget) for r in scored]
        shares[scale] = _calibrated_scale(ordered, budgets, budget)
        recalls[scale] = float(np.mean([r.recall_at(p, evidence_share_count(p, b, shares[scale]))
                                        for r, p, b in zip(scored, ordered, budgets)]))  # fmt: skip
    best = max(candidates, key=lambda s: (round(recalls[s], 9), -s))
    return StoppingChoice(best, shares[best], recalls if len(candidates) > 1 else {})


def fit_rows(rows: Sequence[QuestionRows], sample_ids: Collection[str] | None = None, *, budget: int = 8,
             recall_adjustment: bool = True, boost: bool = True) -> TurnRankerModel:  # fmt: skip
    """The ranker fitted on the rows of ``sample_ids`` (all when None), rank features kept ≥ 0, with the recall-type
    budget multiple and the evidence-share scale chosen by cross-validation over those conversations
    (``choose_stopping``) for ``budget`` turns per question on average; with fewer than 3 conversations, one budget
    for every type and the share scale calibrated on the rows themselves (``calibrate_share_scale``).
    ``recall_adjustment``: fit the recall-type adjustment too (``TurnRankerModel.recall_weights``, ``fit``);
    ``boost``: the boosted trees over the linear logit too (``TurnRankerModel.boost``, ``fit_boost``)."""
    chosen = [r for r in rows if sample_ids is None or r.sample_id in sample_ids]
    if not chosen:
        raise ValueError("no question with evidence (a qa[].evidence naming a turn) to fit on")
    model = _fit(chosen, recall_adjustment, boost)
    choice = choose_stopping(chosen, budget, recall_adjustment, boost)
    if choice is None:
        return replace(model, share_scale=calibrate_share_scale(model, chosen, budget))
    return replace(model, recall_budget_scale=choice.recall_budget_scale, share_scale=choice.share_scale)
