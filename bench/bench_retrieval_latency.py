"""Retrieval latency (no LLM): p50/p95 of ``MemoryService.query``, idle and while another process ingests.

    python bench/bench_retrieval_latency.py [--data ../shared/data/locomo-dev.json]
        [--conversation conv-30 --conversation conv-26] [-n 200] [--store falkordb:///tmp/x]
        [--ingest conv-41 --ingest conv-42] [--no-concurrent]

Takes the first ``n`` questions of the named conversations (default conv-30 then conv-26, the
two smallest with 304 questions between them), ingesting a conversation (no LLM) when its
memory is empty. Without ``--store`` a temporary embedded FalkorDB is used and removed
afterwards. One untimed warm-up query loads the models first.

1. idle: the ``n`` questions once; wall-time p50/p95/mean/max in milliseconds, the pipeline's
   own ``timings_ms`` percentiles per stage, and the standalone RRF(BM25, dense) turn baseline at
   k=8 for comparison (outside the store);
2. under a concurrent ingest: a second process (this script, ``--ingest-worker``) opens the same
   store and ingests the ``--ingest`` conversations (default conv-41 and conv-42, 1,292 turns) into
   new memories, while this process keeps asking the questions, in order and round again, until
   that ingest ends. Prints p50/p95 and the failed queries (any exception), and the worker's turns/s.

Issue 13's targets: idle p95 < 50 ms; under a concurrent ingest p95 < 80 ms and no failed query.
The load average is printed beside each block (the machine is shared; compare blocks of one run).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path
from time import perf_counter

from hypermem.config import Settings
from hypermem.eval.baselines import StandaloneBaseline, TurnIndexes
from hypermem.eval.benchmark import ensure_ingested, make_progress
from hypermem.eval.dataset import load_questions
from hypermem.eval.metrics import percentile
from hypermem.eval.systems import ConversationTurns
from hypermem.ingest.locomo import load_locomo
from hypermem.service import MemoryService

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"
READY = "ingest-worker ready"


def line(name: str, values: list[float]) -> str:
    return (
        f"{name:<24} p50 {percentile(values, 50):8.1f}  p95 {percentile(values, 95):8.1f}  "
        f"mean {sum(values) / max(len(values), 1):8.1f}  max {max(values, default=0.0):8.1f}  (n={len(values)})"
    )


def load() -> str:
    return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def ingest_worker(settings: Settings, data: str, conversations: list[str]) -> None:
    """The concurrent writer: ingest ``conversations`` as memories ``concurrent-{sample_id}``."""
    with MemoryService.open(settings, use_llm=False) as svc:
        svc.embedder.encode(["warm-up"])
        svc.ingestor  # loads spaCy and YAKE  # noqa: B018
        print(READY, flush=True)
        turns, started = 0, perf_counter()
        for conversation in load_locomo(data, conversations):
            svc.store.delete_memory(f"concurrent-{conversation.sample_id}")
            turns += svc.ingest_messages(f"concurrent-{conversation.sample_id}", conversation.messages).turns
        seconds = perf_counter() - started
        print(f"concurrent ingest: {turns} turns in {seconds:.1f} s = {turns / seconds:.1f} turns/s", flush=True)


def under_ingest(svc: MemoryService, questions, args, store_url: str) -> tuple[list[float], int, str]:
    """Ask ``questions`` round and round while another process ingests. Returns latencies, failures, its report."""
    command = [sys.executable, __file__, "--ingest-worker", "--store", store_url, "--data", args.data]
    for name in args.ingest:
        command += ["--ingest", name]
    worker = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        if worker.stdout.readline().strip() != READY:
            raise RuntimeError("the ingest worker did not start")
        wall, failed, i = [], 0, 0
        while worker.poll() is None:
            q = questions[i % len(questions)]
            i += 1
            start = perf_counter()
            try:
                svc.query(q.sample_id, q.question)
            except Exception as exc:
                failed += 1
                print(f"failed query: {type(exc).__name__}: {exc}", file=sys.stderr)
                continue
            wall.append((perf_counter() - start) * 1000)
        report = worker.stdout.read().strip()
    finally:
        if worker.poll() is None:
            worker.kill()
        worker.wait()
    return wall, failed, report


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--conversation", action="append", help="sample_id (repeatable); default conv-30, conv-26")
    parser.add_argument("-n", type=int, default=200, help="number of questions")
    parser.add_argument("--store", help="store URL; default a temporary embedded FalkorDB")
    parser.add_argument(
        "--ingest", action="append", help="conversation the concurrent process ingests; default conv-41, conv-42"
    )
    parser.add_argument("--no-concurrent", action="store_true", help="idle measurement only")
    parser.add_argument("--ingest-worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    args.ingest = args.ingest or ["conv-41", "conv-42"]

    if args.ingest_worker:
        ingest_worker(Settings(store=args.store, llm_base_url=None), args.data, args.ingest)
        return
    with tempfile.TemporaryDirectory(prefix="hypermem-bench-") as tmp:
        store_url = args.store or f"falkordb://{tmp}/db"
        settings = Settings(store=store_url, llm_base_url=None)
        conversations = load_locomo(args.data, args.conversation or ["conv-30", "conv-26"])
        questions = load_questions(args.data, conversations)[0][: args.n]
        with MemoryService.open(settings) as svc:
            with make_progress() as progress:
                for conversation in conversations:
                    ensure_ingested(svc, conversation, progress)
            turns = {c.sample_id: ConversationTurns(c, svc.embedder.count_tokens) for c in conversations}
            svc.query(questions[0].sample_id, questions[0].question)  # warm-up: loads models
            idle_load = load()
            wall, stages = [], defaultdict(list)
            for q in questions:
                start = perf_counter()
                result = svc.query(q.sample_id, q.question)
                wall.append((perf_counter() - start) * 1000)
                for stage, ms in result.timings_ms.items():
                    stages[stage].append(float(ms))
            indexes = TurnIndexes()
            for conversation in conversations:
                indexes.get(conversation, svc.embedder)  # built once per conversation, not timed
            rrf8 = StandaloneBaseline("rrf", 8, indexes)  # ranks by BM25, dense and their RRF in one go
            baselines = {rrf8.name: [rrf8.retrieve(svc, turns[q.sample_id], q.question).latency_ms for q in questions]}
            if not args.no_concurrent:
                busy_before = load()
                busy, failed, report = under_ingest(svc, questions, args, store_url)
                busy_after = load()

    print(f"retrieval latency, ms, over {len(questions)} questions of {', '.join(c.sample_id for c in conversations)}")
    print(f"idle ({idle_load})")
    print(line("hypermem (wall)", wall))
    for stage, values in stages.items():
        print(line(f"  timings_ms.{stage}", values))
    for name, values in baselines.items():
        print(line(name, values))
    if not args.no_concurrent:
        print(f"\nwhile another process ingests {', '.join(args.ingest)} into the same store "
              f"({busy_before} before, {busy_after} after)")  # fmt: skip
        print(line("hypermem (wall)", busy))
        print(f"failed queries: {failed} of {len(busy) + failed}")
        print(report)
        print(f"p95 under ingest / p95 idle: {percentile(busy, 95) / max(percentile(wall, 95), 1e-9):.2f}")


if __name__ == "__main__":
    main()
