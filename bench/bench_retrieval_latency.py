"""Retrieval latency (no LLM): p50/p95 of ``MemoryService.query`` over 200 LoCoMo questions.

    python bench/bench_retrieval_latency.py [--data ../shared/data/locomo-dev.json]
        [--conversation conv-30 --conversation conv-26] [-n 200] [--store falkordb:///tmp/x]

Takes the first ``n`` questions of the named conversations (default conv-30 then conv-26, the
two smallest with 304 questions between them), ingesting a conversation (no LLM) when its
memory is empty. Without ``--store`` a temporary embedded FalkorDB is used and removed
afterwards. One untimed warm-up query loads the models first. Prints wall-time p50/p95/mean/max
in milliseconds, the pipeline's own ``timings_ms`` percentiles per stage, and the turn baselines'
latencies at k=8 for comparison (standalone, outside the store). Issue 4's target: p95 < 50 ms.
"""

from __future__ import annotations

import argparse
import tempfile
from collections import defaultdict
from pathlib import Path
from time import perf_counter

from hypermem.config import Settings
from hypermem.eval.benchmark import ensure_ingested, make_progress
from hypermem.eval.dataset import load_questions
from hypermem.eval.metrics import percentile
from hypermem.eval.baselines import StandaloneBaseline, TurnIndexes
from hypermem.eval.systems import ConversationTurns
from hypermem.ingest.locomo import load_locomo
from hypermem.service import MemoryService

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"


def line(name: str, values: list[float]) -> str:
    return (
        f"{name:<24} p50 {percentile(values, 50):8.1f}  p95 {percentile(values, 95):8.1f}  "
        f"mean {sum(values) / max(len(values), 1):8.1f}  max {max(values, default=0.0):8.1f}  (n={len(values)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--conversation", action="append", help="sample_id (repeatable); default conv-30, conv-26")
    parser.add_argument("-n", type=int, default=200, help="number of questions")
    parser.add_argument("--store", help="store URL; default a temporary embedded FalkorDB")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="hypermem-bench-") as tmp:
        settings = Settings(store=args.store or f"falkordb://{tmp}/db", llm_base_url=None)
        conversations = load_locomo(args.data, args.conversation or ["conv-30", "conv-26"])
        questions = load_questions(args.data, conversations)[0][: args.n]
        with MemoryService.open(settings) as svc:
            with make_progress() as progress:
                for conversation in conversations:
                    ensure_ingested(svc, conversation, progress)
            turns = {c.sample_id: ConversationTurns(c, svc.embedder.count_tokens) for c in conversations}
            svc.query(questions[0].sample_id, questions[0].question)  # warm-up: loads models
            wall, stages = [], defaultdict(list)
            for q in questions:
                start = perf_counter()
                result = svc.query(q.sample_id, q.question)
                wall.append((perf_counter() - start) * 1000)
                for stage, ms in result.get("timings_ms", {}).items():
                    stages[stage].append(float(ms))
            indexes = TurnIndexes()
            for conversation in conversations:
                indexes.get(conversation, svc.embedder)  # built once per conversation, not timed
            rrf8 = StandaloneBaseline("rrf", 8, indexes)  # ranks by BM25, dense and their RRF in one go
            baselines = {rrf8.name: [rrf8.retrieve(svc, turns[q.sample_id], q.question).latency_ms for q in questions]}

    print(f"retrieval latency, ms, over {len(questions)} questions of {', '.join(c.sample_id for c in conversations)}")
    print(line("hypermem (wall)", wall))
    for stage, values in stages.items():
        print(line(f"  timings_ms.{stage}", values))
    for name, values in baselines.items():
        print(line(name, values))


if __name__ == "__main__":
    main()
