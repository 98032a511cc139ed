"""Write throughput of the store: 100k nodes and 300k hyperedge memberships.

Writes, through the real ``cypher/write/*.cypher`` files and ``GraphStore.write``:
70k elements (Person/Time/Location), 10k episodes (with 384-d vectors, as ingest
writes them), and 20k segment hyperedges of 15 weighted members each, owned by the
episodes. That is 100k nodes, 300k MEMBER and 20k HAS_HYPEREDGE relationships.

    python bench/bench_store_write.py [--store falkordb:///tmp/x | bolt://…] [--batch-size 500]
        [--vector-batch-size 100]

Without ``--store`` a temporary embedded FalkorDB is used and removed afterwards.
Prints nodes/s and relationships/s per file and overall.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np

from hypermem.config import Settings
from hypermem.store import open_store

N_ELEMENTS = 70_000
N_EPISODES = 10_000
N_HYPEREDGES = 20_000
MEMBERS_PER_HYPEREDGE = 15
DIMENSION = 384
MEMORY = "bench"


def rows(seed: int = 7) -> dict[str, list[dict]]:
    rng = np.random.default_rng(seed)
    kinds = ("Person", "Time", "Location")
    elements = [
        {"memory_id": MEMORY, "id": f"{MEMORY}/el/{i}", "kind": kinds[i % 3], "name": f"element {i}", "value": f"v{i}"}
        for i in range(N_ELEMENTS)
    ]
    vectors = rng.standard_normal((N_EPISODES, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    episodes = [
        {
            "memory_id": MEMORY, "id": f"{MEMORY}/ep/{i}", "session": str(i // 20), "title": f"episode {i}",
            "summary": f"summary of episode {i}", "text": f"episode {i}. summary of episode {i}",
            "start": "2023-05-07T10:00:00", "end": "2023-05-07T11:00:00", "participants": ["A", "B"],
            "turn_ids": [], "embedding": vectors[i].tolist(), "embedding_raw": None,
        }
        for i in range(N_EPISODES)
    ]  # fmt: skip
    hyperedges = []
    for i in range(N_HYPEREDGES):
        members = rng.choice(N_ELEMENTS, size=MEMBERS_PER_HYPEREDGE, replace=False)
        hyperedges.append(
            {
                "memory_id": MEMORY,
                "id": f"{MEMORY}/he/{i}",
                "kind": "segment",
                "owner_ids": [f"{MEMORY}/ep/{i // 2}"],
                "members": [
                    {"id": f"{MEMORY}/el/{m}", "weight": float(w)} for m, w in zip(members, rng.random(len(members)))
                ],
            }
        )
    return {"write/elements": elements, "write/episodes": episodes, "write/hyperedges": hyperedges}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="store URL (default: a temporary embedded FalkorDB)")
    parser.add_argument("--batch-size", type=int, default=None, help="rows per UNWIND batch (default: the setting)")
    parser.add_argument("--vector-batch-size", type=int, default=None, help="the same for rows with vectors")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hypermem-bench-") as tmp:
        overrides = {"store": args.store or f"falkordb://{tmp}/db"}
        if args.batch_size:
            overrides["write_batch_size"] = args.batch_size
        if args.vector_batch_size:
            overrides["vector_write_batch_size"] = args.vector_batch_size
        settings = Settings(**overrides)
        data = rows()
        with open_store(settings) as store:
            store.ensure_schema("bench-random", DIMENSION)
            store.delete_memory(MEMORY)
            print(
                f"{store.engine_version()}, batch size {store.write_batch_size}, with vectors {store.vector_write_batch_size}"
            )
            total_nodes = total_rels = 0
            started = time.perf_counter()
            for name, batch in data.items():
                t0 = time.perf_counter()
                store.write(name, batch)
                seconds = time.perf_counter() - t0
                nodes = len(batch)
                rels = sum(len(r["members"]) + len(r["owner_ids"]) for r in batch) if name == "write/hyperedges" else 0
                total_nodes += nodes
                total_rels += rels
                print(
                    f"{name:18s} {nodes:7d} nodes {rels:7d} rels {seconds:7.1f} s  {nodes / seconds:9.0f} nodes/s  {rels / seconds:9.0f} rels/s"
                )
            seconds = time.perf_counter() - started
            counts = store.counts(MEMORY)
            print(
                f"{'total':18s} {total_nodes:7d} nodes {total_rels:7d} rels {seconds:7.1f} s  {total_nodes / seconds:9.0f} nodes/s  {total_rels / seconds:9.0f} rels/s"
            )
            print(
                f"stored: {sum(v for k, v in counts.items() if k != 'memberships')} nodes, {counts['memberships']} memberships"
            )
            store.delete_memory(MEMORY)


if __name__ == "__main__":
    main()
