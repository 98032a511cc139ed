"""Cross-validated retrieval on LoCoMo (issue 11): ``hypermem eval cv PATH [--folds N]``.

Conversations are split into folds (``--folds`` = number of conversations: leave one conversation
out). What is learned, the turn ranker's weights (``hypermem.retrieve.turn_ranker``), is fitted on
the *training* conversations of each fold and applied to its held-out conversation, so every
reported number is measured on conversations that took no part in fitting it. Each conversation
is ingested once.

Contributions of the HyperMem/HingeMem parts (``PARTS``) are measured the same way: with the part
switched on and then off (whatever its default), the ranker is refitted on the training folds (the
features change with the part) and the held-out folds are answered again; the contribution is recall
on minus recall off, pooled over the held-out folds. Baselines (``hypermem.eval.baselines``) need no tuning; they are pooled over
the same questions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hypermem.eval.baselines import standalone_baselines
from hypermem.eval.dataset import Question
from hypermem.eval.metrics import Outcome, stats, summarise
from hypermem.eval.ranker_fit import QuestionRows, fit_rows, question_rows
from hypermem.eval.report import margin
from hypermem.eval.systems import ConversationTurns, HyperMemSystem, System
from hypermem.model import Conversation
from hypermem.retrieve.config import SearchConfig
from hypermem.retrieve.turn_ranker import TurnRankerModel

if TYPE_CHECKING:
    from hypermem.service import MemoryService

# Each part as (its setting on, its setting off), search overrides (README: "every part earns its place"). A part
# off by default is measured the same way: its "on" run switches it on.
PARTS: dict[str, tuple[dict, dict]] = {
    "learned turn ranker (vs RRF)": ({"turn_ranker": "learned"}, {"turn_ranker": "rrf"}),
    "topic level": ({"use_topics": True}, {"use_topics": False}),
    "propagation": ({"propagation": True}, {"propagation": False}),
    "adaptive stopping": ({"stopping": "adaptive"}, {"stopping": "fixed"}),
    "element salience": ({"salience": True}, {"salience": False}),
    "hierarchy (flat facts)": ({"flat": False}, {"flat": True}),
}


def folds_of(sample_ids: list[str], folds: int) -> list[list[str]]:
    """``folds`` groups of conversations, round-robin in file order (``folds`` = len: leave one out).

    Raises ``ValueError`` for fewer than 2 folds or more folds than conversations.
    """
    if not 2 <= folds <= len(sample_ids):
        raise ValueError(f"folds: must be from 2 to the number of conversations ({len(sample_ids)})")
    return [sample_ids[i::folds] for i in range(folds)]


@dataclass(frozen=True)
class HeldOut:
    """Outcomes of every question, each answered by the ranker fitted without its fold; ``models``: one per fold."""

    outcomes: list[Outcome]
    models: list[TurnRankerModel | None]


@dataclass
class Runner:
    """Runs the questions of a store's conversations; training rows and held-out outcomes are cached per setting."""

    svc: MemoryService
    conversations: list[Conversation]
    questions: list[Question]
    on_question: Callable[[], None] = lambda: None
    cache: dict[str, list[Outcome]] = field(default_factory=dict)
    rows_cache: dict[str, list[QuestionRows]] = field(default_factory=dict)
    held_out_cache: dict[str, HeldOut] = field(default_factory=dict)

    def outcomes(self, system: System, key: str | None = None, sample_ids: set[str] | None = None) -> list[Outcome]:
        """``system``'s outcome for every question (of ``sample_ids`` only, when given), in question order."""
        key = key or system.name
        if key not in self.cache:
            out = []
            for conversation in self.conversations:
                if sample_ids is not None and conversation.sample_id not in sample_ids:
                    continue
                turns = ConversationTurns(conversation, self.svc.embedder.count_tokens)
                for q in (q for q in self.questions if q.sample_id == conversation.sample_id):
                    got = system.retrieve(self.svc, turns, q.question)
                    out.append(
                        Outcome(q.category, q.evidence, frozenset(got.returned), got.context_tokens, got.latency_ms)
                    )
                    self.on_question()
            self.cache[key] = out
        return self.cache[key]

    def key(self, overrides: dict) -> str:
        """A cache key of ``overrides`` without the ones that repeat a default (so a default met twice runs once)."""
        defaults = SearchConfig.from_settings(self.svc.settings)
        return json.dumps({k: v for k, v in overrides.items() if getattr(defaults, k) != v}, sort_keys=True)

    def rows(self, overrides: dict) -> list[QuestionRows]:
        """The turn ranker's training rows of every question under ``overrides``."""
        key = self.key(overrides)
        if key not in self.rows_cache:
            self.rows_cache[key] = question_rows(self.svc, self.questions, overrides, self.on_question)
        return self.rows_cache[key]

    @contextmanager
    def ranker(self, model: TurnRankerModel | None) -> Iterator[None]:
        retriever = self.svc.retriever
        default = retriever.turn_ranker
        retriever.turn_ranker = model or default
        try:
            yield
        finally:
            retriever.turn_ranker = default

    def held_out(self, overrides: dict, folds: list[list[str]]) -> HeldOut:
        """Every question answered under ``overrides`` by the turn ranker fitted on the other folds
        (no fitting when ``overrides`` picks the RRF turn ranker)."""
        key = self.key(overrides)
        if key not in self.held_out_cache:
            learned = overrides.get("turn_ranker", "learned") == "learned"
            rows = self.rows(overrides) if learned else []
            by_question: dict[int, Outcome] = {}
            models: list[TurnRankerModel | None] = []
            for test in folds:
                train = {c.sample_id for c in self.conversations} - set(test)
                model = fit_rows(rows, train, budget=self.svc.settings.turn_budget) if learned else None
                models.append(model)
                with self.ranker(model):
                    tested = self.outcomes(HyperMemSystem("hypermem", overrides), f"{key} {test}", set(test))
                asked = [i for i, q in enumerate(self.questions) if q.sample_id in test]
                by_question.update(zip(asked, tested))
            self.held_out_cache[key] = HeldOut([by_question[i] for i in range(len(self.questions))], models)
        return self.held_out_cache[key]


def cross_validate(
    runner: Runner, folds: list[list[str]], *, parts: dict[str, tuple[dict, dict]] | None = None
) -> dict:
    """Fit on training folds, test on the held-out fold. Returns the ``cv.json`` document::

    {"folds": [{"test": [ids], "ranker": {bias, weights}, "test_stats": STATS, "multi_hop": recall}],
     "systems": {"hypermem": {"overall", "by_category"}, baseline: {...}},   # pooled over the test folds
     "margin": {...}, "parts": {part: {"on", "off", "contribution", "turns_on", "turns_off"}}}
    """
    parts = parts if parts is not None else PARTS
    full = runner.held_out({}, folds)
    report_folds: list[dict] = []
    for test, model in zip(folds, full.models):
        tested = [o for o, q in zip(full.outcomes, runner.questions) if q.sample_id in test]
        by_category = summarise(tested)["by_category"]
        report_folds.append({
            "test": test, "ranker": model.as_dict() if model else None, "test_stats": stats(tested),
            "multi_hop": by_category.get("1", {}).get("evidence_recall"),
        })  # fmt: skip
    results: dict[str, Any] = {"folds": report_folds, "systems": {"hypermem": summarise(full.outcomes)}}
    for baseline in standalone_baselines():
        results["systems"][baseline.name] = summarise(runner.outcomes(baseline))
    results["margin"] = margin(results)
    results["parts"] = {}
    for name, (switched_on, switched_off) in parts.items():
        on_s = stats(runner.held_out(switched_on, folds).outcomes)
        off_s = stats(runner.held_out(switched_off, folds).outcomes)
        results["parts"][name] = {
            "on": on_s["evidence_recall"], "off": off_s["evidence_recall"],
            "contribution": on_s["evidence_recall"] - off_s["evidence_recall"],
            "turns_on": on_s["turns_per_question"], "turns_off": off_s["turns_per_question"],
        }  # fmt: skip
    return results


def markdown(results: dict) -> str:
    """``cv.md``: per-fold choices and test numbers, pooled test recall by category, baselines, parts."""
    from hypermem.eval.report import _table
    from hypermem.eval.report import markdown as benchmark_markdown

    lines = [
        "# Cross-validated retrieval (turn ranker fitted on the training folds, tested on the held-out fold)",
        "",
    ]
    rows = []
    for fold in results["folds"]:
        test = fold["test_stats"]
        multi = "-" if fold["multi_hop"] is None else f"{fold['multi_hop']:.3f}"
        rows.append([", ".join(fold["test"]), f"{test['evidence_recall']:.3f}", f"{test['turns_per_question']:.2f}",
                     multi, str(test["questions"])])  # fmt: skip
    recalls = [f["test_stats"]["evidence_recall"] for f in results["folds"]]
    rows.append(["mean of folds", f"{sum(recalls) / len(recalls):.3f}", "", "", ""])
    pooled = results["systems"]["hypermem"]
    multi = pooled["by_category"].get("1", {}).get("evidence_recall")
    rows.append(["pooled", f"{pooled['overall']['evidence_recall']:.3f}", f"{pooled['overall']['turns_per_question']:.2f}",
                 "-" if multi is None else f"{multi:.3f}", str(pooled["overall"]["questions"])])  # fmt: skip
    lines += _table(["test fold", "test recall", "turns/q", "multi-hop", "n"], rows)
    if results["parts"]:
        lines += ["", "## Parts on held-out folds (ranker refitted with the part on, then off)", ""]
        lines += _table(
            ["part", "recall on", "recall off", "contribution", "turns on", "turns off"],
            [[name, f"{p['on']:.3f}", f"{p['off']:.3f}", f"{p['contribution']:+.3f}", f"{p['turns_on']:.2f}", f"{p['turns_off']:.2f}"]
             for name, p in results["parts"].items()],
        )  # fmt: skip
    lines += ["", benchmark_markdown({"systems": results["systems"], "margin": results["margin"]}).split("\n", 1)[1]]
    return "\n".join(lines) + "\n"
