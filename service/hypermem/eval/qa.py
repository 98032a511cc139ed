"""QA mode: answer each question from a system's retrieved context, then score the answers.

Every question is answered (``hypermem.llm.prompts.answer``). Scores cover categories 1-4:
category 5's gold is the *adversarial* answer the question tries to elicit, so matching it is
not a success. Scores per answer: LoCoMo token F1 and BLEU-1 (``hypermem.eval.metrics``) and
the LLM judge (``prompts.judge``, Mem0's "generous" prompt, temperature 0) averaged over
``JUDGE_RUNS`` runs. Each run is its own cached request (task ``judge``, ``judge_run2``, ...),
so re-runs cost nothing and the runs are not one cached reply counted three times.

Result per system::

    {"f1", "bleu1", "judge", "judge_runs", "questions", "by_category": {"1": {"f1", "bleu1", "judge", "questions"}, ...}}

plus the per-question records (question, gold, prediction, scores) for ``qa.jsonl``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rich.progress import Progress

from hypermem.eval.dataset import Question
from hypermem.eval.metrics import bleu1, token_f1

if TYPE_CHECKING:
    from hypermem.llm.prompts.common import CompletionClient

JUDGE_RUNS = 3
SCORED_CATEGORIES = (1, 2, 3, 4)


@dataclass
class _RunClient:
    """A client whose requests for run ``run`` (> 1) carry their own task name, hence their own cache entries."""

    client: CompletionClient
    run: int

    def complete_json(self, task: str, messages: list[dict], schema: dict) -> dict:
        return self.client.complete_json(f"{task}_run{self.run}" if self.run > 1 else task, messages, schema)

    def complete_text(self, task: str, messages: list[dict]) -> str:
        return self.client.complete_text(f"{task}_run{self.run}" if self.run > 1 else task, messages)


def _mean(values: list[float]) -> float:
    return float(sum(values) / len(values)) if values else 0.0


def _scores(records: list[dict]) -> dict:
    return {
        "f1": _mean([r["f1"] for r in records]),
        "bleu1": _mean([r["bleu1"] for r in records]),
        "judge": _mean([r["judge"] for r in records]),
        "questions": len(records),
    }


def run_qa(
    client, questions: list[Question], contexts: list[str], *, progress: Progress | None = None, label: str = "qa"
) -> tuple[dict, list[dict]]:
    """Answer and score ``questions`` (with their ``contexts``, same order) using the LLM ``client``.

    Returns ``(summary, records)``; records carry ``sample_id, index, category, question, gold,
    prediction`` and, for categories 1-4, ``f1, bleu1, judge`` (judge = fraction of runs CORRECT).
    Raises ``LLMError`` when the model fails for good.
    """
    from hypermem.llm import prompts

    task = progress.add_task(label, total=len(questions)) if progress is not None else None

    def one(item: tuple[Question, str]) -> dict:
        question, context = item
        prediction = prompts.answer(client, question.question, context).strip()
        record = {
            "sample_id": question.sample_id,
            "index": question.index,
            "category": question.category,
            "question": question.question,
            "gold": question.answer,
            "prediction": prediction,
        }
        if question.category in SCORED_CATEGORIES:
            verdicts = [
                prompts.judge(_RunClient(client, run), question.question, question.answer, prediction)
                for run in range(1, JUDGE_RUNS + 1)
            ]
            record |= {
                "f1": token_f1(prediction, question.answer),
                "bleu1": bleu1(prediction, question.answer),
                "judge": sum(verdicts) / len(verdicts),
            }
        if progress is not None and task is not None:
            progress.advance(task)
        return record

    records = client.map(one, list(zip(questions, contexts, strict=True)))
    scored = [r for r in records if "judge" in r]
    summary = _scores(scored) | {"judge_runs": JUDGE_RUNS}
    summary["by_category"] = {
        str(c): _scores(group) for c in SCORED_CATEGORIES if (group := [r for r in scored if r["category"] == c])
    }
    return summary, records


def run_qa_systems(client, run, systems: list[str], *, progress: Progress | None = None) -> tuple[dict, list[dict]]:
    """``run_qa`` for each named system of a ``BenchmarkRun`` (its contexts must have been kept).

    Returns ``({system: summary}, records)``, each record tagged with ``system``.
    """
    summaries, records = {}, []
    for name in systems:
        summaries[name], got = run_qa(client, run.questions, run.contexts[name], progress=progress, label=f"qa {name}")
        records += [{"system": name, **r} for r in got]
    return summaries, records
