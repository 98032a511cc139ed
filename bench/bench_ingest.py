"""No-LLM ingest throughput: turns/s over LoCoMo dev, with seconds per stage.

    python bench/bench_ingest.py [--data ../shared/data/locomo-dev.json] [--conversation conv-30]...
        [--store falkordb:///tmp/x] [--profile]

Ingests the named conversations (default: all of the file) into a fresh temporary embedded
FalkorDB (or ``--store``), one ``MemoryService`` for the run, no LLM. Model loading happens
before the clock starts. Prints per conversation turns, episodes, facts, topics, hyperedges and
seconds, then the total turns/s, and seconds per ingest stage (the ``Ingestor`` methods, timed
by wrapping them). Issue 3's target: all of LoCoMo (5,882 turns) in under 120 s.
"""

from __future__ import annotations

import argparse
import functools
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from hypermem.config import Settings
from hypermem.ingest.locomo import load_locomo
from hypermem.ingest.pipeline import Ingestor
from hypermem.service import MemoryService

DEFAULT_DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"
# Ingestor stages, in pipeline order (see hypermem.ingest.pipeline).
STAGES = {
    "_changed_sessions": "turns: load + diff",
    "_embed_turns": "turns: embed",
    "_extract_elements": "elements: NER + dates",
    "_build_episodes": "episodes: segment + describe",
    "_build_facts": "facts: extract",
    "_embed_facts": "facts: vectors",
    "_assign_topics": "topics + propagation",
    "_segment_hyperedges": "segments: merge",
    "_write": "write (incl. topics, segments, salience)",
}


def timed_stages(ingestor: Ingestor) -> dict[str, float]:
    """Wrap the ingestor's stage methods so each adds its wall seconds to the returned dict."""
    seconds: dict[str, float] = defaultdict(float)
    for name in STAGES:
        method = getattr(ingestor, name)

        @functools.wraps(method)
        def wrapper(*args, _method=method, _name=name, **kwargs):
            start = time.perf_counter()
            try:
                return _method(*args, **kwargs)
            finally:
                seconds[_name] += time.perf_counter() - start

        setattr(ingestor, name, wrapper)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--conversation", action="append", help="sample_id (repeatable); default all")
    parser.add_argument("--store", help="store URL; default a temporary embedded FalkorDB")
    args = parser.parse_args()

    conversations = load_locomo(args.data, args.conversation)
    with tempfile.TemporaryDirectory(prefix="hypermem-bench-") as tmp:
        settings = Settings(store=args.store or f"falkordb://{tmp}/db", llm_base_url=None)
        with MemoryService.open(settings, use_llm=False) as svc:
            svc.embedder.encode(["warm-up"])  # loads the embedding model
            ingestor = svc.ingestor  # loads spaCy and YAKE
            seconds = timed_stages(ingestor)
            print(f"{'conversation':<14}{'turns':>7}{'episodes':>10}{'facts':>7}{'topics':>8}{'hyperedges':>12}{'seconds':>9}{'turns/s':>9}")
            total_turns, started = 0, time.perf_counter()
            for conv in conversations:
                t0 = time.perf_counter()
                report = svc.ingest_conversation(conv)
                elapsed = time.perf_counter() - t0
                total_turns += report.turns
                print(f"{conv.sample_id:<14}{report.turns:>7}{report.episodes:>10}{report.facts:>7}{report.topics:>8}"
                      f"{report.hyperedges:>12}{elapsed:>9.1f}{report.turns / elapsed:>9.1f}")  # fmt: skip
            wall = time.perf_counter() - started
    print(f"\ntotal: {total_turns} turns in {wall:.1f} s = {total_turns / wall:.1f} turns/s "
          f"(target: 5,882 turns in < 120 s = 49 turns/s)")  # fmt: skip
    print("\nseconds per stage (nested: _assign_topics and _segment_hyperedges run inside _write):")
    for name, label in STAGES.items():
        print(f"  {label:<42}{seconds.get(name, 0.0):>8.2f}")


if __name__ == "__main__":
    main()
