"""A kill -9 in the middle of ``hypermem ingest locomo`` leaves a memory that the next run completes.

The CLI runs in a subprocess against the session store, on each engine (on FalkorDB it joins the
embedded server this test session started). The file holds two generated conversations: ``kill-a`` (small) and
``kill-b`` (200 turns). The test polls the store and kills the process as soon as kill-b's
first Turn nodes appear: kill-a is complete, kill-b half-written. A second run must leave
kill-b exactly as a clean ingest of the same conversation (``clean-b``, in-process) leaves it,
with no orphan hyperedge.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

from engines import engine_env

from hypermem.config import Settings
from hypermem.ingest.locomo import conversation_from_record

NAMES = ["Iris", "Tariq"]
PLACES = ["Toronto", "Lyon", "Osaka", "Quito"]
ACTIVITIES = ["painting a mural", "training for a triathlon", "learning the cello", "fixing an old motorbike",
              "planting tomatoes", "writing a short story", "baking rye bread", "volunteering at the shelter"]  # fmt: skip
WHENS = ["yesterday", "last Saturday", "two weeks ago", "a few days ago", "last weekend", "this morning", ""]


def generated_record(sample_id: str, sessions: int, turns: int, seed: int) -> dict:
    """A deterministic LoCoMo record of ``sessions`` x ``turns`` turns from templates."""
    rng = random.Random(seed)
    conv: dict = {"speaker_a": NAMES[0], "speaker_b": NAMES[1]}
    for s in range(1, sessions + 1):
        conv[f"session_{s}_date_time"] = (
            f"{1 + s % 11}:30 pm on {1 + (3 * s) % 27} {['March', 'April', 'May'][s % 3]}, 2023"
        )
        rows = []
        for t in range(1, turns + 1):
            activity, place, when = rng.choice(ACTIVITIES), rng.choice(PLACES), rng.choice(WHENS)
            text = rng.choice([
                f"I started {activity} in {place} {when}.",
                f"Have you kept up with {activity} since you were in {place}?",
                f"My friend Lena says {activity} is the best way to relax {when}.",
                f"We talked about {activity} for hours {when}, it was great.",
            ])  # fmt: skip
            rows.append(
                {"speaker": NAMES[t % 2], "dia_id": f"D{s}:{t}", "text": text.replace("  ", " ").replace(" .", ".")}
            )
        conv[f"session_{s}"] = rows
    return {"sample_id": sample_id, "conversation": conv, "qa": []}


def _count(store, cypher: str, memory_id: str) -> int:
    return int(store.run_cypher(cypher, {"m": memory_id})[0]["n"])


def _cli(settings: Settings, path: Path) -> subprocess.Popen:
    env = {**os.environ, **engine_env(settings), "HYPERMEM_LLM_BASE_URL": "",
           "HF_HUB_OFFLINE": "1", "COLUMNS": "200"}  # fmt: skip
    hypermem = Path(sys.executable).with_name("hypermem")
    return subprocess.Popen(
        [str(hypermem), "ingest", "locomo", str(path), "--no-llm"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _without_memory(ids: set[str], memory_id: str) -> set[str]:
    return {i.removeprefix(memory_id + "/") for i in ids}


def _ids(store, memory_id: str) -> set[str]:
    return {r["id"] for r in store.run_cypher("MATCH (n) WHERE n.memory_id = $m RETURN n.id AS id", {"m": memory_id})}


def test_kill_mid_ingest_then_rerun_completes(hm_service, hm_settings, tmp_path):
    store = hm_service.store
    small, big = generated_record("kill-a", 2, 8, seed=1), generated_record("kill-b", 8, 25, seed=2)
    path = tmp_path / "two.json"
    path.write_text(json.dumps([small, big]), encoding="utf-8")

    proc = _cli(hm_settings, path)
    try:
        deadline = time.monotonic() + 240
        while _count(store, "MATCH (t:Turn) WHERE t.memory_id = $m RETURN count(t) AS n", "kill-b") == 0:
            assert proc.poll() is None, f"ingest ended before it could be killed:\n{proc.stdout.read()}"
            assert time.monotonic() < deadline, "kill-b never started"
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL

    # the kill landed mid-ingest: kill-a complete, kill-b unfinished (no resume marker)
    assert _count(store, "MATCH (s:IngestState) WHERE s.memory_id = $m RETURN count(s) AS n", "kill-a") == 2
    assert _count(store, "MATCH (s:IngestState) WHERE s.memory_id = $m RETURN count(s) AS n", "kill-b") == 0
    half = store.counts("kill-b")

    rerun = _cli(hm_settings, path)
    out, _ = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, out
    rows = {
        line.split("\t")[0]: line.split("\t")[1:] for line in out.splitlines() if line.startswith("kill-")
    }  # plain table
    assert rows["kill-a"][8] == "0/2"  # sessions new/skipped: kill-a was complete
    assert rows["kill-b"][8] == "8/0" and rows["kill-b"][0] == "200"

    hm_service.ingest_conversation(conversation_from_record({**big, "sample_id": "clean-b"}))
    resumed, clean = store.counts("kill-b"), store.counts("clean-b")
    assert resumed == clean
    assert resumed != half
    assert resumed["Turn"] == 200 and resumed["IngestState"] == 8
    assert _without_memory(_ids(store, "kill-b"), "kill-b") == _without_memory(_ids(store, "clean-b"), "clean-b")
    orphans = store.run_cypher(
        "MATCH (h:Hyperedge) WHERE h.memory_id = $m AND (NOT (h)<-[:HAS_HYPEREDGE]-() OR NOT (h)-[:MEMBER]->()) "
        "RETURN h.id AS id",
        {"m": "kill-b"},
    )
    assert orphans == []
    no_source = store.run_cypher(
        "MATCH (n) WHERE n.memory_id = $m AND (n:Fact OR n:Episode) AND NOT (n)-[:FROM_TURN]->(:Turn) RETURN n.id AS id",
        {"m": "kill-b"},
    )
    assert no_source == []


def test_generated_record_is_valid_locomo():
    conv = conversation_from_record(generated_record("gen", 1, 5, seed=3))
    assert len(conv.messages) == 5 and all(m.text and m.speaker in NAMES for m in conv.messages)
