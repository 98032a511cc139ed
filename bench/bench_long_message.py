"""Ingest cost of one long assistant answer (issue 9): seconds and characters/s by message size.

    python bench/bench_long_message.py [--sizes 10000,30000,100000,350000] [--store falkordb:///tmp/x]

Each size is the coding chat of ``tests/long_messages.py`` (six short turns around one long answer of
prose, fenced code, logs and markup) ingested into its own memory of a fresh embedded FalkorDB, no LLM,
models loaded before the clock starts. Prints characters, passages, seconds, characters/s and seconds
per stage; characters/s staying flat as the size grows is the evidence that nothing is quadratic.
Then one prose line in the middle of the long answer is edited and the chat ingested again (the session is
rebuilt): its seconds, their ratio to the first ingest's, and how many texts went to the model (the vectors of
unchanged texts are reused). The load average is printed beside each row.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from bench_ingest import STAGES, load, recorded_encode, timed_stages

from hypermem.config import Settings
from hypermem.model import Message
from hypermem.service import MemoryService

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from long_messages import coding_chat


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,30000,100000,350000")
    parser.add_argument("--store", help="store URL; default a temporary embedded FalkorDB")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="hypermem-bench-") as tmp:
        settings = Settings(store=args.store or f"falkordb://{tmp}/db", llm_base_url=None)
        with MemoryService.open(settings, use_llm=False) as svc:
            svc.embedder.encode(["warm-up"])
            seconds = timed_stages(svc.ingestor)
            with recorded_encode(svc.embedder) as calls:
                print(f"{'characters':>11}{'passages':>10}{'seconds':>9}{'chars/s':>10}{'edit s':>8}{'edit/first':>11}"
                      f"{'embedded':>9}   " + "  ".join(STAGES))  # fmt: skip
                for size in sizes:
                    messages = coding_chat(size)
                    chars = sum(len(m.text) for m in messages)
                    seconds.clear()
                    start = time.perf_counter()
                    report = svc.ingest_messages(f"bench-long-{size}", messages)
                    elapsed = time.perf_counter() - start
                    stages = "  ".join(f"{seconds.get(name, 0.0):.2f}" for name in STAGES)
                    calls.clear()
                    start = time.perf_counter()
                    svc.ingest_messages(f"bench-long-{size}", edit_one_line(messages))
                    edit = time.perf_counter() - start
                    embedded = sum(len(texts) for texts in calls)
                    print(f"{chars:>11}{report.facts:>10}{elapsed:>9.1f}{chars / elapsed:>10.0f}{edit:>8.1f}"
                          f"{edit / elapsed:>11.2f}{embedded:>9}   {stages}   ({load()})")  # fmt: skip


def edit_one_line(messages: list[Message]) -> list[Message]:
    """``messages`` with one prose line in the middle of the long answer (``C1:4``) extended by a sentence."""
    long = messages[3]
    prose = [line for line in long.text.split("\n") if line.startswith("For the ")]
    line = prose[len(prose) // 2]
    edited = Message(long.message_id, long.speaker, long.text.replace(line, f"{line} Edited.", 1),
                     long.timestamp, long.session_id)  # fmt: skip
    return [*messages[:3], edited, *messages[4:]]


if __name__ == "__main__":
    main()
