"""Engine parity: one LoCoMo conversation on the embedded FalkorDB and on Neo4j, side by side.

    tests/neo4j/server.sh start .neo4j
    NEO4J_URI=bolt://127.0.0.1:PORT NEO4J_PASSWORD=hypermem-test \\
        python bench/bench_engine_parity.py [--conversation conv-30] [--data ../shared/data/locomo-dev.json]

Per engine: a fresh ingest of the conversation (no LLM; the memory is deleted first, so on Neo4j
only that memory id is touched), its node counts per label and hyperedge memberships, the ingest
seconds, then ``hypermem eval locomo`` on that conversation (``run_benchmark`` with the default
systems: hypermem, its ablations and the turn baselines) with evidence recall, turns per question and
p50 retrieval latency. The FalkorDB store lives in a temporary directory. Prints one table, engines
as columns, and the largest recall gap between the engines.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

from hypermem.config import Settings
from hypermem.eval.benchmark import run_benchmark
from hypermem.ingest.locomo import load_locomo
from hypermem.service import MemoryService

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"


def measure(settings: Settings, data: Path, sample_id: str) -> dict[str, float]:
    """Fresh ingest + benchmark of ``sample_id`` on the store of ``settings``: a flat metric -> value dict."""
    conversation = load_locomo(data, [sample_id])[0]
    out: dict[str, float] = {}
    with MemoryService.open(settings, use_llm=False) as svc:
        out["engine"] = svc.store.engine_version()
        svc.store.delete_memory(sample_id)
        start = time.perf_counter()
        svc.ingest_conversation(conversation)
        out["ingest seconds"] = time.perf_counter() - start
        for label, count in sorted(svc.store.counts(sample_id).items()):
            out[f"count {label}"] = count
        run = run_benchmark(svc, data, [sample_id])
        for name, summary in run.results()["systems"].items():
            overall = summary["overall"]
            out[f"recall {name}"] = overall["evidence_recall"]
            out[f"turns/q {name}"] = overall["turns_per_question"]
            out[f"p50 ms {name}"] = overall["p50_ms"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--conversation", default="conv-30")
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--neo4j", default=os.environ.get("NEO4J_URI"), help="Bolt URI (default: $NEO4J_URI)")
    args = parser.parse_args()
    if not args.neo4j:
        parser.error("no Neo4j: pass --neo4j bolt://... or set NEO4J_URI (tests/neo4j/server.sh start .neo4j)")
    neo4j = Settings(
        store=args.neo4j,
        neo4j_user=os.environ.get("NEO4J_USER", "neo4j"),
        neo4j_password=os.environ.get("NEO4J_PASSWORD", "hypermem-test"),
        llm_base_url=None,
    )
    with tempfile.TemporaryDirectory(prefix="parity-") as tmp:
        results = {
            "falkordb": measure(
                Settings(store=f"falkordb://{tmp}/db", llm_base_url=None), args.data, args.conversation
            ),
            "neo4j": measure(neo4j, args.data, args.conversation),
        }
    falkor, neo = results["falkordb"], results["neo4j"]
    print(f"\n{args.conversation}: {falkor.pop('engine')} vs {neo.pop('engine')}")
    print(f"{'metric':<38}{'falkordb':>12}{'neo4j':>12}{'neo4j-falkordb':>16}")
    for metric in falkor:
        a, b = falkor[metric], neo.get(metric, float("nan"))
        digits = 0 if metric.startswith("count") else 1 if ("ms" in metric or "seconds" in metric) else 3
        print(f"{metric:<38}{a:>12.{digits}f}{b:>12.{digits}f}{b - a:>+16.{digits}f}")
    gaps = {m: abs(neo[m] - falkor[m]) for m in falkor if m.startswith("recall")}
    worst = max(gaps, key=gaps.get)
    print(f"largest recall gap: {gaps[worst]:.3f} ({worst}); hypermem gap {gaps['recall hypermem']:.3f}")


if __name__ == "__main__":
    main()
