"""The LoCoMo retrieval benchmark: ingest if needed, run every question through every system.

``run_benchmark(svc, path, ...)`` returns a ``BenchmarkRun``; ``BenchmarkRun.results()`` is the
``results.json`` document::

    {"systems": {NAME: {"overall": STATS, "by_category": {"1": STATS, ...}}},
     "dataset": {... unmatched_evidence: {"count", "ids"} ...},
     "conversations": {sample_id: {"turns", "questions"}}, "limit": N | None,
     "margin": {"system", "turns", "recall", "best_baseline", "baseline_recall", "margin"} | None}

with STATS as in ``hypermem.eval.metrics.stats``. Latencies are wall time per question, after
one untimed warm-up query per system (model loading is not retrieval).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hypermem.eval.dataset import DatasetReport, Question, load_questions
from hypermem.eval.metrics import Outcome, summarise
from hypermem.eval.report import margin
from hypermem.eval.systems import ConversationTurns, System, default_systems
from hypermem.ingest.locomo import load_locomo
from hypermem.model import Conversation

if TYPE_CHECKING:
    from hypermem.service import MemoryService


@dataclass
class BenchmarkRun:
    """Outcomes per system (in question order) and, for ``keep_contexts`` systems, the contexts."""

    questions: list[Question]
    dataset: DatasetReport
    conversations: dict[str, dict]
    limit: int | None
    outcomes: dict[str, list[Outcome]] = field(default_factory=dict)
    contexts: dict[str, list[str]] = field(default_factory=dict)

    def results(self) -> dict:
        results = {
            "systems": {name: summarise(outcomes) for name, outcomes in self.outcomes.items()},
            "dataset": self.dataset.as_dict(),
            "conversations": self.conversations,
            "limit": self.limit,
        }
        results["margin"] = margin(results)
        return results


def make_progress(console: Console | None = None, *, show: bool = True) -> Progress:
    """The rich progress display the benchmark and its CLI share: on stderr unless ``console`` says otherwise, so
    piped results stay clean."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console or Console(stderr=True),
        disable=not show,
    )


def ensure_ingested(svc: MemoryService, conversation: Conversation, progress: Progress) -> bool:
    """Ingest ``conversation`` unless its memory already has Turns. Returns True when it ingested now."""
    if svc.store.counts(conversation.sample_id).get("Turn", 0) > 0:
        return False
    task = progress.add_task(f"ingest {conversation.sample_id}", total=len(conversation.messages))
    svc.ingest_conversation(conversation, progress=lambda turns: progress.advance(task, turns))
    progress.update(task, completed=len(conversation.messages))
    return True


def run_benchmark(
    svc: MemoryService,
    path: str | Path,
    conversation_ids: list[str] | None = None,
    *,
    systems: list[System] | None = None,
    limit: int | None = None,
    keep_contexts: Iterable[str] = (),
    progress: Progress | None = None,
) -> BenchmarkRun:
    """Run the benchmark on ``conversation_ids`` (all in the file when None) of the LoCoMo file at ``path``.

    ``limit`` keeps the first N questions of each conversation. ``keep_contexts`` names systems
    whose context strings are kept (for ``--qa``). Raises ``FileNotFoundError``,
    ``LocomoFormatError``, and whatever ingest/retrieval raise.
    """
    systems = systems if systems is not None else default_systems()
    keep = set(keep_contexts)
    progress = progress or make_progress(show=False)  # the caller starts and stops a shown one
    conversations = load_locomo(path, conversation_ids)
    questions, dataset = load_questions(path, conversations)
    if limit is not None:
        questions = [q for q in questions if q.index < limit]
    run = BenchmarkRun(
        questions=questions,
        dataset=dataset,
        conversations={
            c.sample_id: {"turns": len(c.messages), "questions": sum(q.sample_id == c.sample_id for q in questions)}
            for c in conversations
        },
        limit=limit,
        outcomes={s.name: [] for s in systems},
        contexts={name: [] for name in keep},
    )
    task = progress.add_task("retrieve", total=len(questions) * len(systems))
    warm = set()
    asked = 0
    for conversation in conversations:
        ensure_ingested(svc, conversation, progress)
        turns = ConversationTurns(conversation, svc.embedder.count_tokens)
        for question in (q for q in questions if q.sample_id == conversation.sample_id):
            # Each question starts with the next system in turn: the first to ask it pays for what the store and
            # the process then hold for the others (the question's BM25 rankings, the memory's statistics).
            first = asked % len(systems)
            asked += 1
            for system in systems[first:] + systems[:first]:
                if system.name not in warm:
                    system.retrieve(svc, turns, question.question)
                    warm.add(system.name)
                got = system.retrieve(svc, turns, question.question)
                run.outcomes[system.name].append(
                    Outcome(
                        question.category,
                        question.evidence,
                        frozenset(got.returned),
                        got.context_tokens,
                        got.latency_ms,
                    )
                )
                if system.name in keep:
                    run.contexts[system.name].append(got.context)
                progress.advance(task)
    return run
