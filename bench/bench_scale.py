"""Scale: many memories in one store, up to 1M facts: query latency, ingest turns/s, RSS and disk size.

    python bench/bench_scale.py [--memories 12] [--steps 1,4,12] [--sources conv-30,conv-26,sample-1]
        [--sources-per-memory 1] [--queries 60] [--store falkordb:///tmp/x] [--data ...]
        [--replay-batch 1000] [--min-free-gb 4] [--no-aof-rewrite]
    python bench/bench_scale.py --query-only --store falkordb:///PATH [--sources ... --sources-per-memory 2]
    python bench/bench_scale.py --resume --store falkordb:///PATH --memories 1000 --steps 1000 [--sources ...]
    # the 1,000-memory / ~1M-fact run (about an hour on 2 cores; stop it any time, every step prints):
    nice python bench/bench_scale.py --memories 1000 --steps 1,10,100,300,600,1000 \
        --sources conv-26,conv-30,conv-41,conv-42,conv-43,conv-44,conv-48,sample-1 --sources-per-memory 2

The data set is generated here and never written to the repository: each memory is made of LoCoMo
conversations (``--data``) and the bundled sample conversation, with both speakers renamed (one
name pair per memory, case-preserving, in every text, id and question) and every year shifted (a
different shift per memory, in timestamps, dates and text). With ``--sources-per-memory 2`` a
memory is two source conversations told by one renamed pair, the second moved after the first.

How memories are written (the shortcut, exactly):
- *template* memories (one per group of ``--sources-per-memory`` sources, at most as many as there
  are groups) go through the full no-LLM ingest pipeline (embedding, NER, dates, keywords,
  segmentation, facts, topics, propagation, salience), and every write the ingest makes (file name + rows,
  ``GraphStore.write_statements``) is recorded;
- every other memory *replays* a template's recorded writes through the same ``GraphStore.write``
  and ``cypher/write/*.cypher`` files, in the same order, with renamed speakers, shifted years and
  its own ids in every string, then runs ``maintain/salience`` for itself. The vectors are the
  template's (reused, not re-embedded: the renamed text is not re-encoded), and no NER, keyword,
  segmentation or topic work is redone. This keeps 1M facts feasible on 2 cores.
- three more replay shortcuts, none of which changes what is stored: (1) on FalkorDB each template
  vector is formatted to query text once (the store's own float32 formatting,
  ``store.falkordb._cypher_literal``) and that text is sent by every replay of the template, instead
  of formatting ~3,000 vectors of 384 floats again per memory (it was 1/4 of replay time);
  (2) a replay sends ``--replay-batch`` rows per statement (default 1,000, every file), where an
  ingest sends 100 rows with vectors or 500 without (``HYPERMEM_VECTOR_WRITE_BATCH_SIZE``; the
  smaller batches are for concurrent queries, which never run during a replay); (3) the next
  memory's rows are renamed on a thread while the current memory's are written (the writing thread
  waits on the server's socket, so the two overlap).

At each step (number of memories built) it prints: memories, facts, turns and nodes in the store;
the replay write rate; p50/p95 wall latency of ``MemoryService.query`` over ``--queries`` LoCoMo
questions asked to random memories (renamed like their memory); the turns/s of a *real* ingest of
one more conversation (``--probe``, renamed, into a fresh memory that is deleted afterwards) and
that ingest's ratio to embedding the same texts alone; the FalkorDB server's RSS, this process's
RSS, the store's size on disk (the append-only file), and the seconds the queries waited for the server's
background rewrite of the append-only file to end (a fork the replay's writes start; the queries time the store
at rest, as a query-only run would). Before the queries, the bench's own template rows are frozen out of Python's
collector (``gc.freeze``): a service process does not hold them. Issue 13's targets at 1,000 memories and
1M facts: query p95 < 150 ms; ingest turns/s within 20% of the empty store's (first step).

Building stops early (that size is then the last step, measured and printed) when, before a
replayed memory, the machine's available memory (``MemAvailable``) is below ``--min-free-gb``
(default 4 GB; the template memories are always built): the server's RSS grows ~14.3 kB (1,000
bytes) per fact, so 1M facts needs ~14.5 GB, plus what its forks copy (``--no-aof-rewrite`` avoids the largest).

``--query-only`` builds nothing: it times ``--queries`` questions to random memories of an existing ``--store``
(one an earlier run built with the same ``--sources`` and ``--sources-per-memory``, e.g. a run still going, or
stopped), as a step of the build does, with this code, and prints p50/p95, the server's RSS and the disk size.
Each question goes to a memory this process has not asked before (most of them, in a large store): its vocabulary,
BM25 statistics and index shares are cold. ``--resume`` goes on building a stopped run's ``--store`` (same sources):
its template memories are ingested again for real (their recorded writes are what the replays copy), the memories
it replayed are kept, and the missing ones are replayed; the probe ratio of its steps compares with the first run's.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import random
import re
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import redis
from bench_ingest import recorded_encode  # this directory is on sys.path when run as a script

from hypermem.config import Settings
from hypermem.eval.dataset import load_questions
from hypermem.eval.metrics import percentile
from hypermem.ingest.locomo import Conversation, Message, load_locomo
from hypermem.service import MemoryService
from hypermem.store import bm25
from hypermem.store.embedded import EmbeddedFalkorDB
from hypermem.store.falkordb import FalkorDBStore, _cypher_literal, _Literal

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_DATA = ROOT / ".." / "shared" / "data" / "locomo-dev.json"
SAMPLE = ROOT / "samples" / "sample-conversation.json"
NAMES = [
    "Avery",
    "Blake",
    "Casey",
    "Dana",
    "Elliot",
    "Frankie",
    "Gray",
    "Harper",
    "Indigo",
    "Jules",
    "Kai",
    "Logan",
    "Morgan",
    "Noel",
    "Oakley",
    "Parker",
    "Quinn",
    "Reese",
    "Sage",
    "Tatum",
    "Umber",
    "Vale",
    "Wren",
    "Xen",
    "Yael",
    "Zion",
    "Arden",
    "Bellamy",
    "Corin",
    "Devon",
    "Emery",
    "Finley",
    "Greer",
    "Hollis",
    "Islay",
    "Jessie",
    "Kendall",
    "Linden",
    "Marlowe",
    "Nico",
    "Ocean",
    "Perry",
    "Rowan",
    "Sidney",
    "Teagan",
    "Val",
    "Winter",
    "Yuri",
]
_YEAR = re.compile(r"\b(19[5-9]\d|20[0-4]\d)\b")
PACKED_VECTORS = frozenset({"embedding_b64"})  # write-row fields holding a vector as base64 text (store.packed)


@dataclass(frozen=True)
class Variant:
    """How one memory differs from its source text: names (old -> new) and a year shift."""

    memory_id: str
    names: dict[str, str]
    years: int
    prefix: str | None = None  # a template memory id whose ids this variant rewrites

    def __post_init__(self) -> None:
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, self.names)) + r")\b", re.I) if self.names else None
        object.__setattr__(self, "_names", pattern)
        object.__setattr__(self, "_lower", {k.lower(): v for k, v in self.names.items()})

    def _name(self, match: re.Match) -> str:
        new = self._lower[match.group(0).lower()]
        word = match.group(0)
        return new.lower() if word.islower() else new.upper() if word.isupper() and len(word) > 1 else new

    def text(self, value: str) -> str:
        if self.prefix and value.startswith(self.prefix + "/"):
            value = self.memory_id + value[len(self.prefix) :]
        elif self.prefix and value == self.prefix:
            return self.memory_id
        if self._names is not None:
            value = self._names.sub(self._name, value)
        if self.years:
            value = _YEAR.sub(lambda m: str(int(m.group(0)) + self.years), value)
        return value

    def row(self, value):
        """``value`` (a write row, list or scalar) with every string rewritten; float lists, pre-formatted
        vectors (``preformat``) and vectors packed as text (a Term's ``embedding_b64``: a name or a year may occur
        in base64) are shared."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            row = {k: v if k in PACKED_VECTORS else self.row(v) for k, v in value.items()}
            if "terms" in row:  # a searched node's analysed text: of the renamed text
                row.update(bm25.stored_analysis(row["text"]))
            return row
        if isinstance(value, list):
            if value and type(value[0]) is float:
                return value
            return [self.row(v) for v in value]
        return value


def preformat(value):
    """``value`` (a write row, list or scalar) with every vector replaced by the FalkorDB store's own
    query text for it (``_cypher_literal``: float32 decimals), so replays do not format it again."""
    if isinstance(value, dict):
        return {k: preformat(v) for k, v in value.items()}
    if isinstance(value, list):
        if value and type(value[0]) is float:
            return _Literal(_cypher_literal(value))
        return [preformat(v) for v in value]
    return value


def shift_years(moment, years: int):
    try:
        return moment.replace(year=moment.year + years)
    except ValueError:  # 29 February
        return moment.replace(year=moment.year + years, day=28)


def name_pair(index: int) -> tuple[str, str]:
    a = NAMES[index % len(NAMES)]
    b = NAMES[(index // len(NAMES) + 1 + index) % len(NAMES)]
    return (a, b) if a != b else (a, NAMES[(NAMES.index(b) + 1) % len(NAMES)])


def group_messages(group: list[Conversation], index: int) -> tuple[list[Message], list[Variant]]:
    """The messages of one memory made of ``group`` (renamed pair ``index``), and each source's variant."""
    pair = name_pair(index)
    messages, variants, years = [], [], (index % 15) - 7
    last_year = None
    for k, conv in enumerate(group):
        first = min(m.timestamp for m in conv.messages)
        shift = years if last_year is None else last_year + 1 - first.year
        variant = Variant(f"m{index}", dict(zip(conv.speakers, pair)), shift)
        variants.append(variant)
        for m in conv.messages:
            messages.append(Message(
                message_id=f"{k}.{m.message_id}", speaker=variant.text(m.speaker), text=variant.text(m.text),
                timestamp=shift_years(m.timestamp, shift), session_id=f"{k}.{m.session_id}",
                image_caption=variant.text(m.image_caption) if m.image_caption else None,
            ))  # fmt: skip
        last_year = max(shift_years(m.timestamp, shift) for m in conv.messages).year
    return messages, variants


@dataclass
class Template:
    """A memory ingested for real, with the writes it made and what it holds."""

    memory_id: str
    pair: tuple[str, str]
    writes: list[tuple[str, list[dict]]]
    sources: list[str]
    variants: list[Variant]
    facts: int
    turns: int
    nodes: int


def rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def available_gb() -> float:
    """The machine's available memory (``MemAvailable`` of ``/proc/meminfo``), GB (2**30 bytes); inf elsewhere."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("inf")


def disk_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 2**20


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


@contextlib.contextmanager
def aof_rewrite_paused(data_dir: Path, paused: bool) -> Iterator[None]:
    """With ``paused``, the embedded server rewrites no append-only file while the block runs
    (``auto-aof-rewrite-percentage 0``; the value before is restored after). A rewrite is a fork, and in a store of
    ~1M facts the pages the replay's writes touch meanwhile are copied: several GB beside a 13 GB server."""
    if not paused:
        yield
        return
    client = redis.Redis(unix_socket_path=str(EmbeddedFalkorDB(data_dir).socket_path), socket_timeout=30)
    before = client.config_get("auto-aof-rewrite-percentage")["auto-aof-rewrite-percentage"]
    client.config_set("auto-aof-rewrite-percentage", 0)
    try:
        yield
    finally:
        client.config_set("auto-aof-rewrite-percentage", before)
        client.close()


def wait_background_rewrite(data_dir: Path, limit_s: float = 900.0) -> float:
    """Wait (at most ``limit_s``) until the embedded server has no background child: the append-only file's
    rewrite, which FalkorDB runs as a module fork taking a core for seconds to minutes in a large store and
    which the writes just made start. Returns the seconds waited. The timed queries then measure the store at
    rest; a concurrent ingest's effect is ``bench_retrieval_latency.py``'s measure."""
    client = redis.Redis(unix_socket_path=str(EmbeddedFalkorDB(data_dir).socket_path), socket_timeout=30)
    started = time.perf_counter()
    try:
        while time.perf_counter() - started < limit_s:
            info = client.info("persistence")
            busy = ("aof_rewrite_in_progress", "rdb_bgsave_in_progress", "module_fork_in_progress")
            if not any(int(info.get(name, 0)) for name in busy):
                break
            time.sleep(0.5)
    finally:
        client.close()
    return time.perf_counter() - started


def ingest_template(svc: MemoryService, group: list[Conversation], index: int) -> Template:
    messages, variants = group_messages(group, index)
    writes: list[tuple[str, list[dict]]] = []
    statements = svc.store.write_statements  # every write goes through it (GraphStore.write, OrderedWrites)

    def recording(name, rows, **params):
        assert not params, "the ingest writes rows only"
        writes.append((name, list(rows)))
        return statements(name, rows)

    svc.store.write_statements = recording
    try:
        report = svc.ingest_messages(f"m{index}", messages)
    finally:
        del svc.store.write_statements
    nodes = report.turns + report.episodes + report.topics + report.facts + report.persons + report.times
    nodes += report.locations + report.hyperedges
    if isinstance(svc.store, FalkorDBStore):
        writes = [(name, [preformat(r) for r in rows]) for name, rows in writes]
    return Template(f"m{index}", name_pair(index), writes, [c.sample_id for c in group], variants, report.facts,
                    report.turns, nodes)  # fmt: skip


@dataclass
class Replay:
    """One replayed memory's rows, renamed and ready to write, and its source variants."""

    memory_id: str
    writes: list[tuple[str, list[dict]]]
    variants: list[Variant]


def prepare_replay(template: Template, index: int) -> Replay:
    """Memory ``m{index}`` as a renamed, year-shifted copy of ``template``'s writes (nothing written yet)."""
    pair = name_pair(index)
    years = (index % 15) - 7 - ((template_index(template)) % 15 - 7)
    variant = Variant(f"m{index}", dict(zip(template.pair, pair)), years, prefix=template.memory_id)
    writes = [(name, [variant.row(r) for r in rows]) for name, rows in template.writes]
    # Questions are asked in the memory's own names and years: compose source -> template -> this memory.
    variants = [Variant(variant.memory_id, {old: pair[template.pair.index(new)] for old, new in v.names.items()},
                        v.years + years) for v in template.variants]  # fmt: skip
    return Replay(variant.memory_id, writes, variants)


def write_replay(svc: MemoryService, prepared: Replay, batch: int) -> None:
    """Write a prepared memory through ``GraphStore.write`` (``batch`` rows per statement), then its salience and
    BM25 statistics."""
    store = svc.store
    saved = store.write_batch_size, store.vector_write_batch_size
    store.write_batch_size = store.vector_write_batch_size = batch
    try:
        for name, rows in prepared.writes:
            store.write(name, rows)
    finally:
        store.write_batch_size, store.vector_write_batch_size = saved
    store.query("maintain/salience", memory_id=prepared.memory_id)
    store.refresh_corpus_stats(prepared.memory_id)


def template_index(template: Template) -> int:
    return int(template.memory_id[1:])


def probe_ingest(svc: MemoryService, conversation: Conversation, step: int) -> tuple[float, float]:
    """Real ingest of one more renamed conversation into a fresh memory; (turns/s, ingest/embedding)."""
    messages, _ = group_messages([conversation], 10_000 + step)
    memory = f"probe-{step}"
    svc.store.delete_memory(memory)
    with recorded_encode(svc.embedder) as texts:
        started = time.perf_counter()
        report = svc.ingest_messages(memory, messages)
        seconds = time.perf_counter() - started
    started = time.perf_counter()
    svc.embedder.encode([text for batch in texts for text in batch])
    embed_s = time.perf_counter() - started
    svc.store.delete_memory(memory)
    return report.turns / seconds, seconds / embed_s


def time_queries(svc: MemoryService, asked: list[tuple[str, Variant, list[str]]], n: int, rng: random.Random):
    """Wall milliseconds of ``n`` questions, each from a random (memory, variant, questions) of ``asked``."""
    latencies = []
    for _ in range(n):
        memory, variant, pool = rng.choice(asked)
        question = variant.text(rng.choice(pool))
        started = time.perf_counter()
        svc.query(memory, question)
        latencies.append((time.perf_counter() - started) * 1000)
    return latencies


def query_only(args, groups: list[list[Conversation]], questions: dict[str, list[str]], rng: random.Random) -> None:
    """Ask random memories of an existing store (built earlier with the same sources), as a step of the build
    does: each question in its memory's own names and years; build nothing."""
    data_dir = Path(args.store.removeprefix("falkordb://"))
    settings = Settings(store=args.store, llm_base_url=None)
    with MemoryService.open(settings, use_llm=False, keep_server=True) as svc:
        stored = set(svc.store.memory_ids())
        asked = []
        for index in range(len(stored)):
            if f"m{index}" in stored:
                group = groups[index % len(groups)]
                _, variants = group_messages(group, index)
                asked += [(f"m{index}", v, questions[c.sample_id]) for c, v in zip(group, variants)]
        time_queries(svc, asked, 2, rng)  # warm-up: models
        waited = wait_background_rewrite(data_dir)
        latencies = time_queries(svc, asked, args.queries, rng)
        server_pid = int((data_dir / "server.pid").read_text())
        print(f"query only, {len(stored)} memories in {args.store}: q p50 {percentile(latencies, 50):.1f} ms, "
              f"p95 {percentile(latencies, 95):.1f} ms over {len(latencies)} questions to random memories; server RSS "
              f"{rss_mb(server_pid):.0f} MB; disk {disk_mb(data_dir):.0f} MB; waited {waited:.0f} s for the store's background "
              f"rewrite; load {load()}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default=str(DEFAULT_DATA))
    parser.add_argument("--memories", type=int, default=12, help="memories to build (default 12)")
    parser.add_argument("--steps", default="1,4,12", help="measure after this many memories (comma list)")
    parser.add_argument(
        "--sources", default="conv-30,conv-26,sample-1", help="source conversations (LoCoMo ids, sample-1)"
    )
    parser.add_argument("--sources-per-memory", type=int, default=1)
    parser.add_argument("--queries", type=int, default=60, help="timed queries per step")
    parser.add_argument("--probe", default="conv-30", help="conversation ingested for real at each step")
    parser.add_argument("--store", help="store URL (falkordb:///PATH); default a temporary one")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--min-free-gb", type=float, default=4.0,
        help="stop building (and measure a last step) when the machine's available memory falls below this, GB",
    )  # fmt: skip
    parser.add_argument(
        "--no-aof-rewrite", action="store_true",
        help="no rewrite of the append-only file while building (each is a fork whose copied pages can take GBs)",
    )  # fmt: skip
    parser.add_argument("--replay-batch", type=int, default=1000, help="rows per statement in a replay (default 1000)")
    parser.add_argument(
        "--query-only", action="store_true",
        help="only time queries to random memories of --store (built earlier with the same sources)",
    )  # fmt: skip
    parser.add_argument(
        "--resume", action="store_true",
        help="go on building --store where an earlier run with the same sources stopped: its template memories are "
        "ingested again (their writes are the replays' source), its replayed ones kept",
    )  # fmt: skip
    args = parser.parse_args()
    if args.resume and not args.store:
        parser.error("--resume needs --store")

    wanted = args.sources.split(",")
    locomo_ids = [s for s in wanted if s != "sample-1"]
    by_id = {c.sample_id: c for c in load_locomo(args.data, locomo_ids)} if locomo_ids else {}
    if "sample-1" in wanted:
        by_id["sample-1"] = load_locomo(SAMPLE)[0]
    sources = [by_id[s] for s in wanted]
    questions = {s: [q.question for q in load_questions(args.data, [by_id[s]])[0]] for s in locomo_ids}
    if "sample-1" in wanted:
        questions["sample-1"] = [q.question for q in load_questions(SAMPLE, [by_id["sample-1"]])[0]]
    probe = load_locomo(args.data, [args.probe])[0]
    k = args.sources_per_memory
    groups = [sources[i : i + k] for i in range(0, len(sources) - k + 1, k)]
    steps = sorted({s for s in map(int, args.steps.split(",")) if s <= args.memories} | {args.memories})
    rng = random.Random(args.seed)
    if args.query_only:
        if not args.store:
            parser.error("--query-only needs --store")
        query_only(args, groups, questions, rng)
        return

    with tempfile.TemporaryDirectory(prefix="hypermem-scale-") as tmp:
        url = args.store or f"falkordb://{tmp}/db"
        data_dir = Path(url.removeprefix("falkordb://"))
        # ingest_nice 0: the probe's ingest/embedding ratio compares work at one priority (run the bench with nice)
        settings = Settings(store=url, llm_base_url=None, ingest_nice=0)
        with MemoryService.open(settings, use_llm=False) as svc:
            svc.embedder.encode(["warm-up"])
            svc.ingestor  # loads spaCy and YAKE  # noqa: B018
            server_pid = int((data_dir / "server.pid").read_text())
            with aof_rewrite_paused(data_dir, args.no_aof_rewrite):
                resumed = set(svc.store.memory_ids()) if args.resume else set()
                templates: list[Template] = []
                asked: list[tuple[str, Variant, list[str]]] = []  # (memory, variant, its source's questions)
                facts = turns = nodes = built = 0
                print(
                    f"sources {','.join(wanted)}; {k} per memory; {len(groups)} template memories; probe {args.probe}"
                )
                print("template memories are ingested for real; the others replay a template's writes renamed and "
                      "year-shifted, REUSING its vectors (not re-embedded); the probe ingest is real")  # fmt: skip
                print(f"{'memories':>8} {'facts':>9} {'turns':>9} {'nodes':>9} {'replay facts/s':>14} {'q p50 ms':>9} "
                      f"{'q p95 ms':>9} {'probe turns/s':>13} {'probe/embed':>11} {'server RSS MB':>13} "
                      f"{'bench RSS MB':>12} {'disk MB':>8} {'rewrite s':>9}  load")  # fmt: skip
                print(
                    f"replay: {args.replay_batch} rows per statement; vectors formatted once per template"
                    + ("; no append-only-file rewrite while building" if args.no_aof_rewrite else ""),
                    flush=True,
                )
                first_rate = None
                preparing = ThreadPoolExecutor(1, thread_name_prefix="replay-prep")
                pending: dict[int, Future[Replay]] = {}  # memory index -> its rows, renamed on the thread

                def prepare(index: int) -> None:
                    if len(templates) == len(groups) and index < args.memories and index not in pending:
                        pending[index] = preparing.submit(prepare_replay, templates[index % len(templates)], index)

                stopped, measured = False, -1
                for step in steps:
                    if stopped:
                        break
                    replay_facts, replay_s = 0, 0.0
                    while built < step:
                        if len(templates) == len(groups) and available_gb() < args.min_free_gb:  # templates always
                            print(f"stopped building at {built} memories: available memory {available_gb():.1f} GB "
                                  f"< --min-free-gb {args.min_free_gb}; this is the last step", flush=True)  # fmt: skip
                            stopped = True
                            break
                        if len(templates) < len(groups):
                            if f"m{built}" in resumed:
                                svc.delete_memory(f"m{built}")  # ingested again, for real, to record its writes
                            t = ingest_template(svc, groups[len(templates)], built)
                            templates.append(t)
                            variants = t.variants
                        elif f"m{built}" in resumed:  # replayed by the run being resumed
                            t = templates[built % len(templates)]
                            variants = group_messages(groups[built % len(groups)], built)[1]
                        else:
                            t = templates[built % len(templates)]
                            started = time.perf_counter()
                            prepare(built)
                            prepared = pending.pop(built).result()
                            prepare(built + 1)  # renamed while this one is written
                            write_replay(svc, prepared, args.replay_batch)
                            variants = prepared.variants
                            replay_s += time.perf_counter() - started
                            replay_facts += t.facts
                        for source, variant in zip(t.sources, variants):
                            asked.append((f"m{built}", variant, questions[source]))
                        facts, turns, nodes, built = facts + t.facts, turns + t.turns, nodes + t.nodes, built + 1
                    if stopped and built == measured:
                        break  # nothing built since the step just printed
                    measured = built
                    for renaming in pending.values():  # the next memory's renaming (a thread of this process) is done
                        renaming.result()  # before the clock starts: it would take the GIL from the queries
                    waited = wait_background_rewrite(data_dir)
                    # The templates' rows (millions of objects) are this bench's, not the service's: out of the
                    # collector's walks while the service is timed (a full collection over them took ~150 ms). Never
                    # unfrozen (that would thaw the service's own frozen models too); acyclic rows still free by refcount.
                    gc.freeze()
                    latencies = time_queries(svc, asked, args.queries, rng)
                    rate, ratio = probe_ingest(svc, probe, step)
                    first_rate = first_rate or rate
                    replay_rate = f"{replay_facts / replay_s:14.0f}" if replay_s else f"{'-':>14}"
                    print(f"{built:>8} {facts:>9,} {turns:>9,} {nodes:>9,} {replay_rate} {percentile(latencies, 50):>9.1f} "
                          f"{percentile(latencies, 95):>9.1f} {rate:>13.1f} {ratio:>11.2f} {rss_mb(server_pid):>13.0f} "
                          f"{rss_mb(os.getpid()):>12.0f} {disk_mb(data_dir):>8.0f} {waited:>9.0f}  {load()}", flush=True)  # fmt: skip
                print(
                    f"probe ingest turns/s at {built} memories / first step: {rate / first_rate:.2f} "
                    f"(probe ingest/embedding ratio is the load-independent view)"
                )
                preparing.shutdown(cancel_futures=True)


if __name__ == "__main__":
    main()
