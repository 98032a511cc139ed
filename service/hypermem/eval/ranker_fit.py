"""Fitting the learned turn ranker (``hypermem.retrieve.turn_ranker``): L2-regularised logistic regression.

Rows are (question, candidate turn) pairs with the turn's features; the label is 1 when the turn is
one of the question's evidence turns (its gold ``dia_id``s). The fit is Newton's method (IRLS) on
standardised features; features named in ``nonnegative`` (every rank leg: a better rank in any
ranker must never lower a turn's score) are kept at a weight ≥ 0 by an active set: the most negative
one is pinned to 0 and the rest refitted, until none is negative. The weights are returned per raw
unit of each feature, so that a turn's score is ``bias + Σ weight × feature``.

The same training questions then calibrate adaptive stopping (``calibrate_share_scale``): the
evidence-share scale is the largest for which the questions get at most ``budget`` turns on average.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from hypermem.eval.dataset import Question
from hypermem.retrieve.pipeline import QueryError
from hypermem.retrieve.stopping import evidence_share_count
from hypermem.retrieve.turn_ranker import FEATURES, RANK_FEATURES, TurnRankerModel

if TYPE_CHECKING:
    from hypermem.service import MemoryService

L2 = 1.0  # penalty on standardised weights (sklearn's C = 1)
FEW_TRAINING_QUESTIONS = 50  # `hypermem eval fit-ranker` warns below this many questions with evidence
# Adaptive stopping is calibrated so that the training questions average at most this share of the budget: new
# questions spread around the training mean (±0.5 turn per held-out LoCoMo conversation), so their mean stays within.
SHARE_CALIBRATION = 0.98


def _irls(
    x: npt.NDArray[np.float64], y: npt.NDArray[np.float64], l2: float, steps: int = 50
) -> npt.NDArray[np.float64]:
    """Weights (last entry: bias) of L2 logistic regression on ``x`` (n × d, a bias column appended here)."""
    n, d = x.shape
    xb = np.hstack([x, np.ones((n, 1))])
    w = np.zeros(d + 1)
    penalty = np.full(d + 1, l2)
    penalty[-1] = 0.0  # the bias is not penalised
    for _ in range(steps):
        p = 1.0 / (1.0 + np.exp(-np.clip(xb @ w, -30, 30)))
        gradient = xb.T @ (p - y) + penalty * w
        hessian = (xb * (p * (1 - p))[:, None]).T @ xb + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return w


def fit(features: npt.NDArray[np.float64], labels: npt.NDArray[np.int_], names: Sequence[str],
        nonnegative: Sequence[str] = (), l2: float = L2) -> TurnRankerModel:  # fmt: skip
    """A ``TurnRankerModel`` fitted on ``features`` (rows × len(names)) and 0/1 ``labels``.

    Raises ``ValueError`` when shapes disagree or the labels are all one class.
    """
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
    while True:
        w = _irls(z[:, active], y, l2)
        negative = [(w[i], col) for i, col in enumerate(active) if col in constrained and w[i] < 0]
        if not negative:
            break
        active.remove(min(negative)[1])
    weights = np.zeros(len(names))
    weights[active] = w[:-1]
    per_unit = weights / scale
    bias = float(w[-1] - per_unit @ mean)
    return TurnRankerModel(dict(zip(names, (float(v) for v in per_unit))), bias)


@dataclass(frozen=True)
class QuestionRows:
    """One question's training rows: its candidates' ``dia_ids``, ``features`` (rows × FEATURES) and 0/1 ``labels``."""

    sample_id: str
    dia_ids: list[str]
    features: npt.NDArray[np.float64]
    labels: npt.NDArray[np.int_]


def question_rows(svc: MemoryService, questions: Sequence[Question], overrides: dict | None = None,
                  on_question: Callable[[], None] = lambda: None) -> list[QuestionRows]:  # fmt: skip
    """Training rows of every question with gold evidence, by ``Retriever.turn_features`` with ``overrides``."""
    out = []
    for q in questions:
        if q.evidence:
            try:
                dia_ids, rows = svc.retriever.turn_features(q.sample_id, q.question, **(overrides or {}))
            except QueryError as exc:
                raise QueryError(f"{q.sample_id}.qa[{q.index}].question: {exc}") from exc
            labels = np.array([1 if d in q.evidence else 0 for d in dia_ids], dtype=np.int_)
            out.append(QuestionRows(q.sample_id, dia_ids, rows, labels))
        on_question()
    return out


def calibrate_share_scale(model: TurnRankerModel, rows: Sequence[QuestionRows], budget: int) -> float:
    """The largest evidence-share scale (3 significant digits, within [0.1, 1000]) at which the questions of
    ``rows`` get at most ``SHARE_CALIBRATION`` × ``budget`` turns on average under ``model``
    (``hypermem.retrieve.stopping``)."""
    probabilities = [model.probability(model.score(r.features)) for r in rows if len(r.features)]
    if not probabilities:
        raise ValueError("rows: no question with candidate turns")

    def mean_turns(scale: float) -> float:
        return float(np.mean([evidence_share_count(p, budget, scale) for p in probabilities]))

    target = SHARE_CALIBRATION * budget
    low, high = 0.1, 1000.0  # mean_turns grows with the scale
    if mean_turns(high) <= target:
        return high
    for _ in range(40):
        middle = (low * high) ** 0.5
        low, high = (middle, high) if mean_turns(middle) <= target else (low, middle)
    places = 2 - math.floor(math.log10(low))  # 3 significant digits, rounded down so the mean stays within
    return math.floor(low * 10**places) / 10**places


def fit_rows(rows: Sequence[QuestionRows], sample_ids: Collection[str] | None = None, *,
             budget: int = 8) -> TurnRankerModel:  # fmt: skip
    """The ranker fitted on the rows of ``sample_ids`` (all when None), rank features kept ≥ 0, with its
    evidence-share scale calibrated on the same rows for ``budget`` turns per question."""
    chosen = [r for r in rows if sample_ids is None or r.sample_id in sample_ids]
    if not chosen:
        raise ValueError("no question with evidence (a qa[].evidence naming a turn) to fit on")
    features = np.vstack([r.features for r in chosen])
    labels = np.concatenate([r.labels for r in chosen])
    model = fit(features, labels, FEATURES, RANK_FEATURES)
    return replace(model, share_scale=calibrate_share_scale(model, chosen, budget))
