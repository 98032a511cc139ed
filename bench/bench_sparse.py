"""The store's full-text ranking over Turn nodes against a standard BM25 (bm25s), recall@k on LoCoMo.

    HYPERMEM_STORE=falkordb:///tmp/x python bench/bench_sparse.py [--data ../shared/data/locomo-dev.json]
        [--conversation conv-30]... [-k 8]

For every question with gold evidence: the top ``k`` turns by ``GraphStore.fulltext_search("Turn", ...)``
(the engine from ``HYPERMEM_STORE``: FalkorDB or Neo4j) and by the standalone ``bm25s`` baseline
(``hypermem.eval.baselines``). Ingests a conversation (no LLM) when its memory is empty. Prints
recall@k of both per conversation and overall, their difference (issue 11: within 0.02), and the
full-text search latency p50/p95 in milliseconds.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from time import perf_counter

from hypermem.config import Settings
from hypermem.eval.baselines import TurnIndex
from hypermem.eval.benchmark import ensure_ingested, make_progress
from hypermem.eval.dataset import load_questions
from hypermem.eval.metrics import percentile
from hypermem.eval.systems import ConversationTurns
from hypermem.ingest.locomo import load_locomo
from hypermem.service import MemoryService

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"


def recall(gold: frozenset[str], returned: list[str]) -> float:
    return len(gold & set(returned)) / len(gold)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--conversation", action="append", help="sample_id (repeatable); default all")
    parser.add_argument("-k", type=int, default=8)
    args = parser.parse_args()

    settings = Settings(llm_base_url=None)
    conversations = load_locomo(args.data, args.conversation)
    questions = [q for q in load_questions(args.data, conversations)[0] if q.evidence]
    store_all, bm25s_all, latencies = [], [], []
    with MemoryService.open(settings) as svc:
        print(f"store {settings.store} ({svc.store.engine_version()}), recall@{args.k} over turns")
        with make_progress() as progress:
            for conversation in conversations:
                ensure_ingested(svc, conversation, progress)
        for conversation in conversations:
            turns = ConversationTurns(conversation, svc.embedder.count_tokens)
            index = TurnIndex(conversation, svc.embedder)
            store_r, bm25s_r = [], []
            for q in (q for q in questions if q.sample_id == conversation.sample_id):
                start = perf_counter()
                hits = svc.store.fulltext_search("Turn", conversation.sample_id, q.question, args.k)
                latencies.append((perf_counter() - start) * 1000)
                store_r.append(recall(q.evidence, [turns.dia_id(h.id) for h in hits]))
                bm25s_r.append(recall(q.evidence, index.rankings(q.question)["bm25"][: args.k]))
            store_all += store_r
            bm25s_all += bm25s_r
            print(f"{conversation.sample_id:<10} store {sum(store_r) / len(store_r):.3f}  "
                  f"bm25s {sum(bm25s_r) / len(bm25s_r):.3f}  (n={len(store_r)})")  # fmt: skip
    store_mean, bm25s_mean = sum(store_all) / len(store_all), sum(bm25s_all) / len(bm25s_all)
    print(f"{'overall':<10} store {store_mean:.3f}  bm25s {bm25s_mean:.3f}  difference {store_mean - bm25s_mean:+.3f}  "
          f"(n={len(store_all)})")  # fmt: skip
    print(f"full-text search ms: p50 {percentile(latencies, 50):.1f}  p95 {percentile(latencies, 95):.1f}")


if __name__ == "__main__":
    main()
