"""The learned turn ranker: which candidate turns become the evidence set (HiGMem §3: a small set of turns).

Every leg of the search proposes turns: the hierarchy (topic → episode → fact, HyperMem §3.4) in its
fact order, BM25 and dense search over every turn, and BM25 and dense search over every fact
(unpropagated vectors). A turn's score starts as a linear model over its features::

    linear = bias + Σ weight[f] × feature[f]         (a logit: P(evidence) = 1 / (1 + e^-score))

and gradient-boosted trees over the features, the query type and that logit correct it (``TurnRankerModel.boost``,
``hypermem.retrieve.boosted_trees``): score = trees(features, is recall-type, linear). The line alone ranks by the sum
of its evidence; the trees learn where that sum misleads: which features matter differently for a strong or a weak
linear score, or for a recall-type query. Held out (leave one LoCoMo dev conversation out, each fold's trees, budget
multiple and stopping scale fitted on the other six) they raise multi-hop recall 0.537 → 0.565 and pooled recall
0.813 → 0.817 at the same budget (README "Benchmarks").

Rank features are reciprocal ranks ``1 / (RR_K + rank)`` (0 when the leg did not return the turn),
as in RRF; their weights are kept ≥ 0, so a better rank in any leg never lowers a turn. The weights
are fitted by logistic regression on (question, turn, is-evidence) rows (``hypermem eval fit-ranker``,
``hypermem.eval.ranker_fit``) and cross-validated by ``hypermem eval cv``: a fold's ranker never sees
its test conversation. ``DEFAULT_MODEL`` was fitted on the 7 LoCoMo dev conversations.

Features (``FEATURES``):
- ``hierarchy``, ``turn_bm25``, ``turn_dense``, ``fact_bm25``, ``fact_dense``: reciprocal ranks per leg;
- ``turn_bm25_expanded``: the reciprocal rank in BM25 over turns for the query expanded through the store's
  vocabulary (``hypermem.retrieve.expansion``: "books" also asks for "novel", "reading");
- ``neighbor_hierarchy``: the best hierarchy reciprocal rank of the previous or next turn (evidence
  sits next to what the hierarchy found: the answer after a question, the second half of a story);
- ``speaker_named``: 1 when the query names the turn's speaker (HingeMem's Person element);
- ``asks``: 1 when the turn asks something (contains "?"): questions are rarely the evidence;
- ``length``: ln(1 + characters), capped at ``LENGTH_CAP`` characters (substantive turns are longer);
- ``bm25_matched``: 1 when the turn shares any query word (BM25 returned it at all);
- ``turn_bm25_relative``, ``fact_bm25_relative``: the turn's BM25 score (over turns; its best fact's, over
  facts) divided by the query's best score in that leg, 0 when the leg did not return it: how close to
  the top match it is, which a rank alone does not say (one strong match, or many alike);
- ``query_coverage``, ``window_coverage``: the share of the query's words (BM25's analyzer) in the turn,
  and in the turn with its previous and next turns (a remark is often explained by its neighbours);
- ``mentions_time``: 1 when the turn names a point in time ("last week", "in May", "2022");
- ``when_mentions_time``: ``mentions_time`` for a query that asks when (temporal questions);
- ``specific_names``: ln(1 + the number of capitalised words inside a sentence of the turn that are not a speaker's
  name (nor its prefix: "Mel") nor "I"), ``quoted_title``: 1 when the turn quotes a capitalised title ("Dune"),
  ``names_something``: 1 when ``specific_names`` > 0 (``specific_names``). A question that names a category
  ("What books has John read?") is answered by turns that name its members ("I'm reading "Dune" by Frank
  Herbert"), not by the many turns that only say "book";
- ``word_match_max``, ``word_match_mean``: over the query's content words, the best cosine of each with a word of
  the turn (both words' vectors from the memory's vocabulary, ``hypermem.retrieve.expansion.word_match``): the
  maximum and the mean; 0 when the query has no content word or the turn no vocabulary word.

Measured offline (leave one conversation out on dumped candidates, fixed 8 turns): the five last features
together raise recall 0.788 → 0.796, multi-hop 0.458 → 0.472, open-domain 0.383 → 0.432 (each group alone
+0.004–0.005).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import numpy.typing as npt

from hypermem.dates import mentions_time
from hypermem.errors import HypermemError
from hypermem.retrieve.boosted_trees import BoostedTrees
from hypermem.store import bm25

RR_K = 10  # reciprocal-rank constant of the rank features
LENGTH_CAP = 1000  # characters; a longer turn's passages carry the rest
MAX_WEIGHT = 1e4  # a fitted weight is below 100; this bound keeps every logit finite
NEIGHBOR_SOURCES = 10  # the neighbours of the hierarchy's best turns join the candidates
# the recall-type budget's multiples of the turn budget (``TurnRankerModel.recall_budget_scale``): from the same budget
# to twice it (adaptive stopping keeps up to 1.75 x that: 28 turns of a recall-type question at the default budget of 8)
MIN_RECALL_BUDGET_SCALE, MAX_RECALL_BUDGET_SCALE = 1.0, 2.0
EXACT_MATCH_SHARE = Fraction(2, 3)  # of the query's held terms in the best BM25 turn: it comes first (``exact_match``)
EXACT_MATCH_MIN_TERMS = 2  # held terms a query needs for ``exact_match``: one word ("garden") is in too many turns

RANK_FEATURES = ("hierarchy", "turn_bm25", "turn_dense", "fact_bm25", "fact_dense", "neighbor_hierarchy",
                 "turn_bm25_expanded")  # fmt: skip
FEATURES = ("hierarchy", "turn_bm25", "turn_dense", "fact_bm25", "fact_dense", "neighbor_hierarchy", "speaker_named", "asks", "length", "bm25_matched", "query_coverage", "window_coverage",
            "mentions_time", "when_mentions_time", "turn_bm25_relative", "fact_bm25_relative",
            "turn_bm25_expanded", "specific_names", "quoted_title", "names_something", "word_match_max",
            "word_match_mean")  # fmt: skip
_ASKS_WHEN = re.compile(
    r"^\s*when\b|\bwhat (date|day|month|year|time)\b|\bhow long ago\b|\bwhich (year|month|day)\b", re.I
)

_CAPITALISED = re.compile(r"\b[A-Z][a-zA-Z'’-]+")
_SENTENCE_START = re.compile(r"(?:^|[.!?]\s+)(?=\S)")
_QUOTED_TITLE = re.compile(r"[\"“”'‘’]\s*[A-Z][^\"“”]{1,60}?[\"“”]")
_NOT_NAMES = frozenset({"i", "i'm", "i’m", "i've", "i’ve", "i'll", "i’ll", "i'd", "i’d", "hey", "hi", "wow", "yeah",
                        "thanks", "omg", "lol"})  # fmt: skip


def specific_names(text: str, speakers: Collection[str]) -> tuple[int, bool]:
    """``(count, quoted)`` for the turn ``text`` (an image caption, from "[shares", left out): the capitalised words
    that do not open a sentence, are no speaker's name or its prefix ("Mel" of Melanie; ``speakers`` lowercase,
    a possessive "'s" ignored) nor "I", "Hey" and the like; and whether it quotes a capitalised title."""
    return _specific_names(text, frozenset(speakers))


@lru_cache(maxsize=50_000)
def _specific_names(text: str, speakers: frozenset[str]) -> tuple[int, bool]:
    """``specific_names``, cached: every query reads the same stored turns again."""
    body = text.split("[shares")[0]
    starts = {m.end() for m in _SENTENCE_START.finditer(body)}
    count = 0
    for match in _CAPITALISED.finditer(body):
        word = re.sub(r"['’]s$", "", match.group(0).lower())
        if match.start() in starts or word in _NOT_NAMES or any(s.startswith(word) for s in speakers):
            continue
        count += 1
    return count, bool(_QUOTED_TITLE.search(body))


class TurnRankerModelError(HypermemError, ValueError):
    """A turn ranker weights file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class TurnLists:
    """The legs' turn ids, each best first (a turn reached by several facts keeps its best rank), and the BM25
    scores of the two BM25 legs (turn id -> score; over facts, the turn's best fact's score)."""

    hierarchy: Sequence[str]
    turn_bm25: Sequence[str]
    turn_dense: Sequence[str]
    fact_bm25: Sequence[str]
    fact_dense: Sequence[str]
    turn_bm25_scores: Mapping[str, float] = field(default_factory=dict)
    fact_bm25_scores: Mapping[str, float] = field(default_factory=dict)
    turn_bm25_expanded: Sequence[str] = ()

    def candidates(self) -> list[str]:
        """Every turn some leg returned, once, hierarchy first."""
        return list(
            dict.fromkeys(
                [
                    *self.hierarchy,
                    *self.turn_bm25,
                    *self.turn_dense,
                    *self.fact_bm25,
                    *self.fact_dense,
                    *self.turn_bm25_expanded,
                ]
            )  # fmt: skip
        )


@dataclass(frozen=True)
class TurnFacts:
    """What the features need to know about one candidate turn (``*_text``: its neighbours' words, "" for none)."""

    speaker: str
    text: str
    prev_id: str | None
    next_id: str | None
    prev_text: str = ""
    next_text: str = ""


def reciprocal_ranks(ids: Sequence[str]) -> dict[str, float]:
    """``{id: 1 / (RR_K + rank)}``, ranks from 1."""
    return {turn_id: 1.0 / (RR_K + rank) for rank, turn_id in enumerate(ids, start=1)}


def exact_match(query: str, text: str, held: Collection[str]) -> bool:
    """Whether ``text`` holds at least ``EXACT_MATCH_SHARE`` of ``query``'s BM25 terms (stems) that the memory
    holds at all (``held``: its vocabulary's terms, ``Vocabulary.stems``, which leave out stop words: "What is my
    locker code at the gym?" asks about a memory without "gym" through "locker" and "code").
    The turn-level BM25 leg's best turn when it does comes first whatever the ranker scores it: the weights,
    fitted on LoCoMo's paraphrased questions, hold a query's words against a turn (``query_coverage`` < 0), so
    "My locker code is 4512." could rank 16th for "What is my locker code?" and a later remark that repeats the
    query ("the pool fix worked at peak traffic") fall out of the evidence. On the 7 dev conversations (leave one
    conversation out, fixed 8 turns) the rule changes no recall (0.7962 with it and without). A query with fewer than
    ``EXACT_MATCH_MIN_TERMS`` held terms never matches: for "Where is the garden?" any short turn saying "garden" would
    ("See you at the garden on Saturday!" came before the turn that says where it is)."""
    terms = set(bm25.analyze(query)).intersection(held)
    matched = terms.intersection(bm25.analyze(text))
    return len(terms) >= EXACT_MATCH_MIN_TERMS and len(matched) >= EXACT_MATCH_SHARE * len(terms)


def relative_scores(scores: Mapping[str, float]) -> dict[str, float]:
    """``{id: score / best score}`` (1.0 for the best; empty for no positive score)."""
    best = max(scores.values(), default=0.0)
    return {turn_id: score / best for turn_id, score in scores.items()} if best > 0 else {}


def feature_matrix(query: str, candidates: Sequence[str], lists: TurnLists, turns: Mapping[str, TurnFacts],
                   persons: Collection[str],
                   word_match: Mapping[str, tuple[float, float]] | None = None) -> npt.NDArray[np.float64]:  # fmt: skip
    """``len(candidates) × len(FEATURES)`` features for ``query``; ``turns`` must hold every candidate,
    ``persons`` the names the query mentions (any case), ``word_match`` a candidate's ``(word_match_max,
    word_match_mean)`` (``hypermem.retrieve.expansion.word_match``; a candidate it lacks gets 0, 0)."""
    rr = {name: reciprocal_ranks(getattr(lists, name)) for name in RANK_FEATURES if name != "neighbor_hierarchy"}
    named = {p.lower() for p in persons}
    words = set(bm25.query_words(query))
    share = 1.0 / max(1, len(words))
    asks_when = 1.0 if _ASKS_WHEN.search(query) else 0.0
    turn_bm25, fact_bm25 = relative_scores(lists.turn_bm25_scores), relative_scores(lists.fact_bm25_scores)
    matches = word_match or {}
    speakers = {turns[c].speaker.lower() for c in candidates} | named
    rows = np.zeros((len(candidates), len(FEATURES)))
    for i, turn_id in enumerate(candidates):
        turn = turns[turn_id]
        names, quoted = specific_names(turn.text, speakers)
        match_max, match_mean = matches.get(turn_id, (0.0, 0.0))
        neighbors = [rr["hierarchy"].get(n, 0.0) for n in (turn.prev_id, turn.next_id) if n]
        own = words.intersection(bm25.analyze(turn.text))
        window = (
            own | words.intersection(bm25.analyze(turn.prev_text)) | words.intersection(bm25.analyze(turn.next_text))
        )
        time = 1.0 if mentions_time(turn.text) else 0.0
        rows[i] = (
            rr["hierarchy"].get(turn_id, 0.0),
            rr["turn_bm25"].get(turn_id, 0.0),
            rr["turn_dense"].get(turn_id, 0.0),
            rr["fact_bm25"].get(turn_id, 0.0),
            rr["fact_dense"].get(turn_id, 0.0),
            max(neighbors, default=0.0),
            1.0 if turn.speaker.lower() in named else 0.0,
            1.0 if "?" in turn.text else 0.0,
            math.log1p(min(len(turn.text), LENGTH_CAP)),
            1.0 if turn_id in rr["turn_bm25"] else 0.0,
            len(own) * share,
            len(window) * share,
            time,
            asks_when * time,
            turn_bm25.get(turn_id, 0.0),
            fact_bm25.get(turn_id, 0.0),
            rr["turn_bm25_expanded"].get(turn_id, 0.0),
            math.log1p(names),
            1.0 if quoted else 0.0,
            1.0 if names else 0.0,
            match_max,
            match_mean,
        )
    return rows


RECALL = "recall"  # the query type (``hypermem.retrieve.analysis``) with weights and a turn budget of its own
# what the boosted trees read (``TurnRankerModel.boost``): the features, whether the query is recall-type, the linear logit
BOOST_INPUTS = (*FEATURES, "recall_type", "linear_logit")


@dataclass(frozen=True)
class TurnRankerModel:
    """Per-unit ``weights`` (one per name in ``FEATURES``) and ``bias`` of the linear turn score, and the
    ``share_scale`` of adaptive stopping (``hypermem.retrieve.stopping.evidence_share_cut``: a turn is kept while
    its share of the query's evidence probability reaches 1 / (share_scale × the query's budget)), calibrated with
    the weights so that the training questions get ``turn_budget`` turns on average.

    Recall-type questions (HingeMem's enumerations: "What books has John read?", "list every error we hit") are
    scored and cut apart: ``recall_weights`` and ``recall_bias`` are added to the weights and the bias for them
    (their evidence is spread over sessions and ranks differently), and their budget is ``recall_budget_scale`` ×
    ``turn_budget``, the others' ``turn_budget``; the share scale keeps the mean at the budget, so the turns a
    recall-type question gets more are taken from the questions whose top is clearly right. ``hypermem eval
    fit-ranker`` fits the recall weights after the others (a second logistic regression over the recall-type rows,
    the first logit as offset: ``hypermem.eval.ranker_fit.fit``) and chooses the recall budget scale by
    cross-validation over the training conversations (``hypermem.eval.ranker_fit.choose_stopping``).

    ``boost`` (None: the linear logit is the score): boosted trees over ``BOOST_INPUTS`` whose output is the score
    (``score``); ``linear_score`` is the linear part alone, the trees' input."""

    weights: Mapping[str, float]
    bias: float
    share_scale: float = 6.25
    recall_weights: Mapping[str, float] = field(default_factory=dict)  # empty: no adjustment (every weight 0)
    recall_bias: float = 0.0
    recall_budget_scale: float = 1.0
    boost: BoostedTrees | None = None

    def __post_init__(self) -> None:
        if not self.recall_weights:  # no adjustment: every recall weight 0 (as a weights file without one reads)
            object.__setattr__(self, "recall_weights", dict.fromkeys(FEATURES, 0.0))
        for where, weights in (("weights", self.weights), ("recall.weights", self.recall_weights)):
            if set(weights) != set(FEATURES):
                missing, extra = sorted(set(FEATURES) - set(weights)), sorted(set(weights) - set(FEATURES))
                raise ValueError(f"{where}: expected exactly the {len(FEATURES)} features {list(FEATURES)}"
                                 f" (missing {missing}, unknown {extra})")  # fmt: skip
        numbers = [*((f"weights.{k}", v) for k, v in self.weights.items()),
                   *((f"recall.weights.{k}", v) for k, v in self.recall_weights.items()),
                   ("bias", self.bias), ("share_scale", self.share_scale), ("recall.bias", self.recall_bias),
                   ("recall.budget_scale", self.recall_budget_scale)]  # fmt: skip
        for where, value in numbers:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise ValueError(f"{where}: must be a finite number, not {value!r}")
            if abs(value) > MAX_WEIGHT:
                raise ValueError(f"{where}: must be within ±{MAX_WEIGHT:g} (a logit must stay finite), not {value!r}")
        if self.share_scale <= 0:
            raise ValueError(f"share_scale: must be > 0, not {self.share_scale!r}")
        if not MIN_RECALL_BUDGET_SCALE <= self.recall_budget_scale <= MAX_RECALL_BUDGET_SCALE:
            raise ValueError(f"recall.budget_scale: must be within [{MIN_RECALL_BUDGET_SCALE:g}, "
                             f"{MAX_RECALL_BUDGET_SCALE:g}], not {self.recall_budget_scale!r}")  # fmt: skip
        if self.boost is not None and self.boost.inputs != BOOST_INPUTS:
            raise ValueError(f"boost.inputs: expected {list(BOOST_INPUTS)}")

    @property
    def vector(self) -> npt.NDArray[np.float64]:
        return np.array([self.weights[name] for name in FEATURES])

    def vector_for(self, query_type: str | None) -> npt.NDArray[np.float64]:
        """The weights that score a query of ``query_type``: ``weights`` (+ ``recall_weights`` for "recall")."""
        if query_type == RECALL:
            return self.vector + np.array([self.recall_weights[name] for name in FEATURES])
        return self.vector

    def bias_for(self, query_type: str | None) -> float:
        return self.bias + (self.recall_bias if query_type == RECALL else 0.0)

    def budget_for(self, query_type: str | None, budget: int) -> float:
        """The turn budget of a query of ``query_type`` under the mean ``budget``: ``recall_budget_scale`` ×
        ``budget`` for a recall-type query, ``budget`` for the others (``evidence_share_cut``'s ``budget``)."""
        return budget * self.recall_budget_scale if query_type == RECALL else float(budget)

    def linear_score(self, features: npt.NDArray[np.float64], query_type: str | None = None) -> npt.NDArray[np.float64]:
        """The linear model's logits, one per row of ``features`` (rows × ``FEATURES``), for ``query_type``."""
        return self.bias_for(query_type) + features @ self.vector_for(query_type)

    def score(self, features: npt.NDArray[np.float64], query_type: str | None = None) -> npt.NDArray[np.float64]:
        """Logits, one per row of ``features`` (rows × ``FEATURES``), for a query of ``query_type``: the linear
        model's, or, with ``boost``, the boosted trees' over the features, the query type and that logit."""
        linear = self.linear_score(features, query_type)
        if self.boost is None:
            return linear
        return self.boost.predict(boost_inputs(features, query_type == RECALL, linear))

    @staticmethod
    def probability(logits: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """P(evidence) of each logit: the logistic function 1 / (1 + e^-logit), in its overflow-free tanh form."""
        return 0.5 * (1.0 + np.tanh(0.5 * logits))

    def contributions(self, row: npt.NDArray[np.float64], query_type: str | None = None,
                      logit: float | None = None) -> dict[str, float]:  # fmt: skip
        """``{"bias": bias, feature: weight × value, ..., "boost": trees' correction}`` of one row, the non-zero
        features only: the parts that add up to the turn's logit (its explanation; a recall-type query's weights
        and bias include their adjustment; ``boost``, with trees only, is the final logit minus the linear one).
        ``logit``: the row's ``score`` when the caller has it (the trees are not walked again)."""
        vector = self.vector_for(query_type)
        parts = {name: round(float(w * v), 4) for name, w, v in zip(FEATURES, vector, row) if w * v}
        out = {"bias": round(self.bias_for(query_type), 4), **parts}
        if self.boost is not None:
            one = np.asarray(row, dtype=np.float64)[None, :]
            final = float(self.score(one, query_type)[0]) if logit is None else logit
            out["boost"] = round(final - float(self.linear_score(one, query_type)[0]), 4)
        return out

    def as_dict(self) -> dict:
        recall = {
            "bias": self.recall_bias,
            "weights": dict(self.recall_weights),
            "budget_scale": self.recall_budget_scale,
        }
        out = {"bias": self.bias, "weights": dict(self.weights), "share_scale": self.share_scale, "recall": recall}
        if self.boost is not None:
            out["boost"] = self.boost.as_dict()
        return out

    @classmethod
    def from_dict(cls, data: object) -> TurnRankerModel:
        """The inverse of ``as_dict``, for weights files. Raises ``ValueError`` naming the field that is missing or
        unusable, or a rank weight that is negative (for recall-type queries: with its adjustment added;
        ``hypermem eval fit-ranker`` never writes one). ``recall`` may be left out (a file from before it: no
        adjustment, one budget for every query type); so may ``boost`` (the linear model alone)."""
        keys, optional = {"bias", "weights", "share_scale"}, {"recall", "boost"}
        if not isinstance(data, Mapping):
            raise ValueError(
                'expected a JSON object {"bias": number, "weights": {feature: number}, "share_scale": number}'
            )
        if missing := sorted(keys - set(data)):
            hint = " (a file from before adaptive stopping was fitted: refit it with `hypermem eval fit-ranker`)"
            raise ValueError(f"{missing[0]}: missing" + (hint if missing == ["share_scale"] else ""))
        if extra := sorted(set(data) - keys - optional):
            raise ValueError(f"{extra[0]}: unknown field; expected only {sorted(keys | optional)}")
        if not isinstance(data["weights"], Mapping):
            raise ValueError(f"weights: must be an object of the {len(FEATURES)} feature weights")
        recall = data.get("recall", {"bias": 0.0, "weights": {}, "budget_scale": 1.0})
        if not isinstance(recall, Mapping) or set(recall) != {"bias", "weights", "budget_scale"}:
            raise ValueError('recall: must be an object {"bias": number, "weights": {feature: number},'
                             ' "budget_scale": number}')  # fmt: skip
        if not isinstance(recall["weights"], Mapping):
            raise ValueError(f"recall.weights: must be an object of the {len(FEATURES)} feature weights")
        boost = BoostedTrees.from_dict(data["boost"], BOOST_INPUTS) if "boost" in data else None
        model = cls(dict(data["weights"]), data["bias"], data["share_scale"], dict(recall["weights"]),
                    recall["bias"], recall["budget_scale"], boost)  # fmt: skip
        for name in RANK_FEATURES:
            if model.weights[name] < 0:
                raise ValueError(f"weights.{name}: a rank weight must be >= 0 (a better rank never lowers a turn)")
            if model.vector_for(RECALL)[FEATURES.index(name)] < 0:
                raise ValueError(f"recall.weights.{name}: a rank weight with its recall adjustment must be >= 0"
                                 " (a better rank never lowers a turn)")  # fmt: skip
        return model


# Fitted by `hypermem eval fit-ranker ../shared/data/locomo-dev.json --out service/hypermem/retrieve/turn_ranker_model.json`
# on the 7 LoCoMo dev conversations (1,394 questions with evidence; cross-validated by `hypermem eval cv`, README
# "Benchmarks"), under the default search settings (the topic level off): the linear weights on every question,
# the recall-type adjustment on the recall-type ones, the boosted trees over the linear logit on every question, and
# the recall-type budget multiple and the adaptive-stopping scale chosen by leave-one-conversation-out over them for
# the default budget of 8 turns. The file is ``TurnRankerModel.as_dict`` (a weights file like any other).
DEFAULT_MODEL_FILE = "turn_ranker_model.json"
DEFAULT_MODEL = TurnRankerModel.from_dict(
    json.loads(resources.files("hypermem.retrieve").joinpath(DEFAULT_MODEL_FILE).read_text(encoding="utf-8"))
)


def boost_inputs(features: npt.NDArray[np.float64], recall_type: bool | npt.NDArray[np.bool_],
                 linear: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:  # fmt: skip
    """The boosted trees' input rows (rows × ``BOOST_INPUTS``): ``features``, the recall-type flag (one for every row,
    or one per row) and the linear logits."""
    flags = np.broadcast_to(np.asarray(recall_type, dtype=np.float64), (len(features),))
    return np.column_stack([features, flags, linear])


def load_model(path: str | Path | None) -> TurnRankerModel:
    """The weights in ``path`` (``TurnRankerModel.as_dict`` as JSON), or ``DEFAULT_MODEL`` for None.

    Raises ``TurnRankerModelError`` naming the file and the field for a missing, unreadable or malformed
    file, a weight that is not a finite number, or a negative rank weight.
    """
    if path is None:
        return DEFAULT_MODEL
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except IsADirectoryError as exc:
        raise TurnRankerModelError(f"{path}: is a directory, not a weights file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise TurnRankerModelError(f"{path}: cannot read it ({exc.__class__.__name__}: {exc})") from exc
    try:
        return TurnRankerModel.from_dict(json.loads(text))
    except json.JSONDecodeError as exc:
        raise TurnRankerModelError(f"{path}: not JSON ({exc})") from exc
    except ValueError as exc:
        raise TurnRankerModelError(f"{path}: {exc}") from exc
