"""Cross-validated retrieval tuning on LoCoMo (issue 11): ``hypermem eval cv PATH [--folds N]``.

Conversations are split into folds (``--folds`` = number of conversations: leave one
conversation out). For each fold a small grid of search settings (``GRID``) is scored on the
*training* conversations; the best setting whose mean returned turns stay within the turn budget
is applied to the held-out conversation. Every reported number is measured on conversations that
took no part in choosing it. Each conversation is ingested once; every grid point is one pass of
``MemoryService.query(..., **overrides)`` over the questions, shared by all folds.

Contributions of the HyperMem/HingeMem parts (``PARTS``) are measured the same way: on each test
fold, the fold's chosen setting with the part switched off, against the same setting with it on.
Baselines (``hypermem.eval.baselines``) need no tuning; they are pooled over the same questions.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from hypermem.eval.baselines import standalone_baselines
from hypermem.eval.dataset import Question
from hypermem.eval.metrics import Outcome, stats, summarise
from hypermem.eval.report import margin
from hypermem.eval.systems import ConversationTurns, HyperMemSystem, System
from hypermem.ingest.locomo import Conversation

if TYPE_CHECKING:
    from hypermem.service import MemoryService

TURN_BUDGET = 8.0
# The knobs a fold tunes: each key's values are crossed.
GRID: dict[str, list] = {"turn_budget": [8], "rrf_k": [10, 20], "flat_weight": [0.0, 0.3]}
# A part switched off, as search overrides (README: "every part earns its place").
PARTS: dict[str, dict] = {
    "topic level": {"use_topics": False},
    "propagation": {"propagation": False},
    "adaptive stopping": {"stopping": "fixed"},
    "element salience": {"salience": False},
    "hierarchy (flat facts)": {"flat": True},
}


def grid_points(grid: dict[str, list]) -> list[dict]:
    """Every combination of ``grid``'s values as an overrides dict, in a stable order."""
    keys = sorted(grid)
    return [dict(zip(keys, values)) for values in itertools.product(*(grid[k] for k in keys))]


def folds_of(sample_ids: list[str], folds: int) -> list[list[str]]:
    """``folds`` groups of conversations, round-robin in file order (``folds`` = len: leave one out).

    Raises ``ValueError`` for fewer than 2 folds or more folds than conversations.
    """
    if not 2 <= folds <= len(sample_ids):
        raise ValueError(f"folds: must be from 2 to the number of conversations ({len(sample_ids)})")
    return [sample_ids[i::folds] for i in range(folds)]


def choose(candidates: list[tuple[dict, dict]], budget: float) -> tuple[dict, dict]:
    """The ``(overrides, stats)`` with the best recall among those within ``budget`` turns per question,
    or the one with the fewest turns when none is. Ties keep the earlier candidate."""
    within = [c for c in candidates if c[1]["turns_per_question"] <= budget]
    if within:
        return max(within, key=lambda c: c[1]["evidence_recall"])
    return min(candidates, key=lambda c: c[1]["turns_per_question"])


@dataclass
class Runner:
    """Outcomes per system over every question, computed once and kept (``key`` -> outcomes)."""

    svc: MemoryService
    conversations: list[Conversation]
    questions: list[Question]
    on_question: Callable[[], None] = lambda: None
    cache: dict[str, list[Outcome]] = field(default_factory=dict)

    def outcomes(self, system: System, key: str | None = None) -> list[Outcome]:
        key = key or system.name
        if key not in self.cache:
            out = []
            for conversation in self.conversations:
                turns = ConversationTurns(conversation, self.svc.embedder.count_tokens)
                for q in (q for q in self.questions if q.sample_id == conversation.sample_id):
                    got = system.retrieve(self.svc, turns, q.question)
                    out.append(
                        Outcome(q.category, q.evidence, frozenset(got.returned), got.context_tokens, got.latency_ms)
                    )
                    self.on_question()
            self.cache[key] = out
        return self.cache[key]

    def hypermem(self, overrides: dict) -> list[Outcome]:
        return self.outcomes(HyperMemSystem("hypermem", overrides), json.dumps(overrides, sort_keys=True))


def cross_validate(runner: Runner, folds: list[list[str]], *, grid: dict[str, list] | None = None,
                   budget: float = TURN_BUDGET, parts: dict[str, dict] | None = None) -> dict:  # fmt: skip
    """Tune on training folds, test on the held-out fold. Returns the ``cv.json`` document::

    {"budget", "grid", "folds": [{"test": [ids], "chosen": overrides, "train": STATS, "test_stats": STATS,
                                  "multi_hop": recall}],
     "hypermem": {"overall", "by_category"},          # pooled over the test folds
     "baselines": {name: {"overall", "by_category"}},  # the same questions, no tuning
     "margin": {...}, "parts": {part: {"on", "off", "contribution", "turns_off"}}}
    """
    points = grid_points(grid if grid is not None else GRID)
    parts = parts if parts is not None else PARTS
    index = {id(q): i for i, q in enumerate(runner.questions)}
    sample = [q.sample_id for q in runner.questions]

    def pick(outcomes: list[Outcome], ids: list[str]) -> list[Outcome]:
        return [outcomes[index[id(q)]] for q in runner.questions if q.sample_id in ids]

    report_folds: list[dict] = []
    pooled: list[Outcome] = []
    pooled_parts: dict[str, tuple[list[Outcome], list[Outcome]]] = {name: ([], []) for name in parts}
    for test in folds:
        train = [s for s in dict.fromkeys(sample) if s not in test]
        scored = [(p, stats(pick(runner.hypermem(p), train))) for p in points]
        chosen, train_stats = choose(scored, budget)
        tested = pick(runner.hypermem(chosen), test)
        pooled += tested
        by_category = summarise(tested)["by_category"]
        report_folds.append({
            "test": test, "chosen": chosen, "train": train_stats, "test_stats": stats(tested),
            "multi_hop": by_category.get("1", {}).get("evidence_recall"),
        })  # fmt: skip
        for name, switched_off in parts.items():
            pooled_parts[name][0].extend(tested)
            pooled_parts[name][1].extend(pick(runner.hypermem({**chosen, **switched_off}), test))
    results: dict[str, Any] = {
        "budget": budget,
        "grid": grid if grid is not None else GRID,
        "folds": report_folds,
        "systems": {"hypermem": summarise(pooled)},
    }
    for baseline in standalone_baselines():
        results["systems"][baseline.name] = summarise(runner.outcomes(baseline))
    results["margin"] = margin(results)
    results["parts"] = {}
    for name, (on, off) in pooled_parts.items():
        on_s, off_s = stats(on), stats(off)
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
        f"# Cross-validated retrieval (turn budget {results['budget']:.1f}, grid {json.dumps(results['grid'])})",
        "",
    ]
    rows = []
    for fold in results["folds"]:
        test, train = fold["test_stats"], fold["train"]
        multi = "-" if fold["multi_hop"] is None else f"{fold['multi_hop']:.3f}"
        rows.append([", ".join(fold["test"]), json.dumps(fold["chosen"], sort_keys=True), f"{train['evidence_recall']:.3f}",
                     f"{test['evidence_recall']:.3f}", f"{test['turns_per_question']:.1f}", multi, str(test["questions"])])  # fmt: skip
    recalls = [f["test_stats"]["evidence_recall"] for f in results["folds"]]
    rows.append(["mean of folds", "", "", f"{sum(recalls) / len(recalls):.3f}", "", "", ""])
    lines += _table(
        ["test fold", "chosen on training folds", "train recall", "test recall", "turns/q", "multi-hop", "n"], rows
    )
    lines += ["", "## Parts on held-out folds (chosen setting, part off)", ""]
    lines += _table(
        ["part", "recall on", "recall off", "contribution", "turns on", "turns off"],
        [[name, f"{p['on']:.3f}", f"{p['off']:.3f}", f"{p['contribution']:+.3f}", f"{p['turns_on']:.1f}", f"{p['turns_off']:.1f}"]
         for name, p in results["parts"].items()],
    )  # fmt: skip
    lines += ["", benchmark_markdown({"systems": results["systems"], "margin": results["margin"]}).split("\n", 1)[1]]
    return "\n".join(lines) + "\n"
