"""Faults (issue 9 §1, §6, §7): the embedded engine killed mid-ingest, delete racing ingest across
store connections, lease locks, dead job workers.

Every test runs the real embedded FalkorDB and the real pipelines. The fault is real too: the
redis-server gets SIGKILL; "another worker" is a second store connection with a lock of its own.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from datetime import datetime, timedelta

import pytest
from conftest import hm_make_settings

from hypermem.api import create_app
from hypermem.config import Settings
from hypermem.embed import Embedder
from hypermem.locks import MemoryBusy, MemoryLock, process_id
from hypermem.model import Message
from hypermem.service import MemoryService
from hypermem.store import StoreError
from hypermem.store.falkordb import FalkorDBStore

ADMIN = "faults-admin"


def conversation(n: int, sessions: int = 4) -> list[Message]:
    """``n`` messages over ``sessions`` sessions, alternating two speakers."""
    start = datetime(2024, 3, 1, 9, 0)
    topics = ["hiking in the Alps", "a pottery class", "moving to Lisbon", "a new puppy named Biscuit", "learning Rust"]
    out = []
    for i in range(n):
        session = i * sessions // n
        speaker = ("Ana", "Ben")[i % 2]
        text = f"{speaker} talks about {topics[(i // 3) % len(topics)]}, part {i}."
        out.append(
            Message(
                f"D{session + 1}:{i}", speaker, text, start + timedelta(days=7 * session, minutes=i), f"s{session + 1}"
            )
        )
    return out


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder()


@pytest.fixture()
def fresh_service(tmp_path, embedder):
    """A MemoryService on an embedded store of its own (these tests kill its server; the embedded engine only)."""
    store = FalkorDBStore(tmp_path / "db")
    service = MemoryService(
        hm_make_settings(tmp_path / "db", lock_lease_s=2.0, lock_wait_s=30.0), store, embedder, use_llm=False
    )
    yield service
    service.close()


def _graph(service, memory_id: str) -> dict:
    """Everything derived, comparable across memories: counts and the turn texts by dia_id."""
    turns = service.store.run_cypher(
        "MATCH (t:Turn) WHERE t.memory_id = $m RETURN t.dia_id AS d, t.text AS x ORDER BY d", {"m": memory_id}
    )
    return {"counts": service.store.counts(memory_id), "turns": [(r["d"], r["x"]) for r in turns]}


def test_engine_killed_mid_ingest_is_restarted_and_the_memory_completed(fresh_service):
    messages = conversation(60)
    fresh_service.ingest_messages("reference", messages)
    store = fresh_service.store
    killed = []
    original = store.write_statements  # every write of an ingest goes through it

    def write_then_die(name, rows, **params):
        if name == "write/facts" and not killed:  # the real server dies halfway through the ingest
            killed.append(store.server.process.pid)
            os.kill(store.server.process.pid, signal.SIGKILL)
        return original(name, rows, **params)

    store.write_statements = write_then_die
    failed = None
    try:
        fresh_service.ingest_messages(
            "victim", messages
        )  # usually completes: the statement is retried on the new server
    except StoreError as exc:  # allowed: a clear error, and the next call completes the memory
        failed = exc
        assert "FalkorDB" in str(exc)
    del store.write_statements
    assert killed and store.restarts >= 1 and store.server.process.pid != killed[0]
    report = fresh_service.ingest_messages("victim", messages)  # the next call completes the memory
    assert _graph(fresh_service, "victim")["counts"] == _graph(fresh_service, "reference")["counts"]
    assert [t for t in _graph(fresh_service, "victim")["turns"]] == _graph(fresh_service, "reference")["turns"]
    done_before = (0, 4) if failed is None else (4, 0)  # (sessions ingested, skipped) by the next call
    assert (report.sessions_ingested, report.sessions_skipped) == done_before


def test_a_write_that_kills_the_engine_twice_is_a_clear_store_error_and_the_engine_comes_back(fresh_service):
    store = fresh_service.store
    with pytest.raises(StoreError, match="died twice"):
        store.write(
            "write/elements", [{"memory_id": "m", "id": "m/person/x ", "kind": "Person", "name": "x ", "value": "x "}]
        )
    assert store.restarts == 2
    store.write("write/elements", [{"memory_id": "m", "id": "m/person/x", "kind": "Person", "name": "x", "value": "x"}])
    assert store.run_cypher("MATCH (p:Person) WHERE p.memory_id = 'm' RETURN p.id AS id") == [{"id": "m/person/x"}]


def test_memory_lock_excludes_a_second_connection_and_lapses_when_its_holder_dies(fresh_service, tmp_path):
    other = FalkorDBStore(tmp_path / "db", keep_server=True)  # another worker process's connection
    try:
        with MemoryLock(fresh_service.store, "locked", "ingest", lease_s=2.0):
            with pytest.raises(MemoryBusy, match="ingest"):
                with MemoryLock(other, "locked", "delete", wait_s=0.3):
                    pass
        with MemoryLock(other, "locked", "delete", wait_s=0.3):  # released on exit
            pass
        # a holder on another host that died: its lease is not renewed and lapses
        fresh_service.store.query("lock/acquire", id="lock/dead", memory="dead", token="gone", holder="elsewhere:1",
                                  operation="ingest", now=time.time() - 10, lease=1.0)  # fmt: skip
        with MemoryLock(other, "dead", "delete", wait_s=5.0) as lock:
            assert lock.token != "gone"
        # a live lease of a process on another host is respected
        fresh_service.store.query("lock/acquire", id="lock/far", memory="far", token="far", holder="elsewhere:1",
                                  operation="ingest", now=time.time(), lease=600.0)  # fmt: skip
        with pytest.raises(MemoryBusy), MemoryLock(other, "far", "delete", wait_s=0.3):
            pass
        # a holder on this host whose process is gone: taken over at once, long lease or not
        gone = f"{os.uname().nodename}:{2**22 + 4321}"
        fresh_service.store.query("lock/acquire", id="lock/crashed", memory="crashed", token="crashed", holder=gone,
                                  operation="ingest", now=time.time(), lease=600.0)  # fmt: skip
        with MemoryLock(other, "crashed", "delete", wait_s=0.3) as lock:
            assert lock.token != "crashed"
    finally:
        other.close()


def test_delete_racing_ingest_leaves_no_orphans(fresh_service, tmp_path):
    """Issue 9 §6: a background ingest holds the memory; DELETE arrives, and a sync POST right after.

    Whatever order the lock gives them, the memory ends either absent (no node at all) or owned
    with its dialogue: never turns without an owner."""
    settings = Settings(store=fresh_service.settings.store, llm_base_url=None, admin_key=ADMIN, lock_wait_s=120.0)
    app = create_app(settings, fresh_service, sync_batch_limit=5)
    client = app.test_client()
    key = client.post("/v1/tenants/acme/keys", headers={"Authorization": f"Bearer {ADMIN}"}).get_json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    url = "/v1/memories/racy/messages"
    as_json = lambda messages: [{"message_id": m.message_id, "speaker": m.speaker, "text": m.text,  # noqa: E731
                                 "timestamp": m.timestamp.isoformat(), "session_id": m.session_id} for m in messages]  # fmt: skip
    assert client.post(url, headers=headers, json={"messages": as_json(conversation(4, 1))}).status_code == 200
    queued = client.post(url, headers=headers, json={"messages": as_json(conversation(80))})
    assert queued.status_code == 202
    job = queued.get_json()["job_id"]
    while client.get(f"/v1/jobs/{job}", headers=headers).get_json()["status"] == "queued":
        time.sleep(0.05)
    results = {}
    deleter = threading.Thread(
        target=lambda: results.update(delete=app.test_client().delete("/v1/memories/racy", headers=headers))
    )
    deleter.start()
    time.sleep(0.2)  # the repro: a sync POST right after the DELETE
    late = Message("late-1", "Ana", "One more message after the delete.", datetime(2024, 6, 1, 12, 0), "late")
    results["post"] = client.post(url, headers=headers, json={"messages": as_json([late])})
    deleter.join()
    app.extensions["hypermem"].jobs.close()
    assert results["delete"].status_code == 200 and results["post"].status_code == 200
    nodes = fresh_service.store.run_cypher(
        "MATCH (n) WHERE n.memory_id = 'racy' RETURN labels(n)[0] AS label, count(*) AS n"
    )
    by_label = {r["label"]: r["n"] for r in nodes}
    owned = client.get("/v1/memories/racy", headers=headers)
    if by_label:
        assert owned.status_code == 200 and by_label.get("MemoryOwner") == 1, by_label
        dialogue = fresh_service.store.run_cypher("MATCH (t:Turn) WHERE t.memory_id = 'racy' RETURN t.dia_id AS d")
        assert [r["d"] for r in dialogue] == ["late-1"]  # the delete removed everything before it, the POST came after
    else:
        assert owned.status_code == 404
    assert not fresh_service.store.run_cypher("MATCH (l:MemoryLock) RETURN l.id AS id")  # every lock released


def test_a_job_whose_worker_died_without_a_stored_batch_is_reported_failed(fresh_service):
    """Jobs of a version that did not keep their batch cannot run again: failed, saying why."""
    settings = Settings(store=fresh_service.settings.store, llm_base_url=None, admin_key=ADMIN)
    app = create_app(settings, fresh_service)
    client = app.test_client()
    key = client.post("/v1/tenants/acme/keys", headers={"Authorization": f"Bearer {ADMIN}"}).get_json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    client.post("/v1/memories/jobs-dead/messages", headers=headers,
                json={"messages": [{"message_id": "a", "speaker": "Ana", "text": "hello", "timestamp": "2024-01-01T10:00:00"}]})  # fmt: skip
    store = fresh_service.store
    dead_pid = 2**22 + 12345  # no such process
    store.query("api/create_job", id="c" * 32, memory_id="jobs-dead", messages=10, now="2024-01-01T00:00:00+00:00",
                worker=f"{os.uname().nodename}:{dead_pid}", batch=None)  # fmt: skip
    store.query(
        "api/create_job",
        id="d" * 32,
        memory_id="jobs-dead",
        messages=10,
        now="2024-01-01T00:00:00+00:00",
        worker="elsewhere:1",
        batch=None,
    )
    store.query("api/start_job", id="d" * 32, worker="elsewhere:1", now="2024-01-01T00:00:00+00:00",
                beat=time.time() - 3600)  # fmt: skip
    for job_id in ("c" * 32, "d" * 32):
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).get_json()
        assert job["status"] == "failed" and job["error"].startswith("WorkerLost"), job
        assert job["progress"] == 0 and "worker" not in job
        assert "messages were not kept" in job["error"], job
    app.extensions["hypermem"].jobs.close()


def _as_json(messages: list[Message]) -> list[dict]:
    return [{"message_id": m.message_id, "speaker": m.speaker, "text": m.text, "timestamp": m.timestamp.isoformat(),
             "session_id": m.session_id} for m in messages]  # fmt: skip


def _tenant(app) -> dict[str, str]:
    client = app.test_client()
    key = client.post("/v1/tenants/acme/keys", headers={"Authorization": f"Bearer {ADMIN}"}).get_json()["key"]
    return {"Authorization": f"Bearer {key}"}


def _until_ended(client, headers, job_id: str, timeout_s: float = 300.0) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).get_json()
        if job["status"] in ("done", "failed"):
            return job
        time.sleep(0.05)
    raise AssertionError(f"job {job_id} did not end: {job}")


def test_queued_and_running_jobs_survive_a_restart_of_the_service_and_complete(fresh_service):
    """The bug: SIGTERM while a job runs and another is queued lost the second (WorkerLost at the next start).
    Now the shutdown stops the running job after its chunk and gives both back; the next app runs them."""
    from hypermem.records.jobs import decode_batch

    settings = Settings(store=fresh_service.settings.store, llm_base_url=None, admin_key=ADMIN)
    app = create_app(settings, fresh_service, sync_batch_limit=2)
    client, headers = app.test_client(), _tenant(app)
    running = client.post("/v1/memories/resume-a/messages", headers=headers,
                          json={"messages": _as_json(conversation(24, 12))})  # fmt: skip
    queued = client.post("/v1/memories/resume-b/messages", headers=headers,
                         json={"messages": _as_json(conversation(6, 3))})  # fmt: skip
    assert (running.status_code, queued.status_code) == (202, 202)
    first, second = running.get_json()["job_id"], queued.get_json()["job_id"]
    deadline = time.monotonic() + 300
    while client.get(f"/v1/jobs/{first}", headers=headers).get_json()["progress"] < 2:
        assert time.monotonic() < deadline, "the first job never progressed"
        time.sleep(0.02)
    app.extensions["hypermem"].close()  # what SIGTERM to `hypermem serve` or a gunicorn worker runs
    store = fresh_service.store
    left = {job_id: dict(store.query("api/get_job", id=job_id)[0]) for job_id in (first, second)}
    assert all(job["status"] == "queued" and job["worker"] is None for job in left.values()), left
    assert 2 <= left[first]["progress"] < 24 and left[second]["progress"] == 0, left
    stored = store.run_cypher(f"MATCH (j:IngestJob {{id: '{second}'}}) RETURN j.batch AS batch")[0]["batch"]
    assert [m.text for m in decode_batch(stored)] == [m.text for m in conversation(6, 3)]  # kept with the job

    again = create_app(settings, fresh_service, sync_batch_limit=2)  # the next start takes both over
    client = again.test_client()
    done = _until_ended(client, headers, first)
    assert done["status"] == "done" and done["progress"] == 24, done
    assert done["report"]["turns"] == 24 and done["report"]["sessions_ingested"] == 12, done  # both runs counted
    other = _until_ended(client, headers, second)
    assert other["status"] == "done" and other["report"]["turns"] == 6, other
    again.extensions["hypermem"].close()
    turns = store.run_cypher("MATCH (t:Turn) WHERE t.memory_id = 'resume-a' RETURN count(t) AS n")[0]["n"]
    assert turns == 24
    batches = store.run_cypher("MATCH (j:IngestJob) WHERE j.batch IS NOT NULL RETURN count(j) AS n")[0]["n"]
    assert batches == 0  # an ended job drops its batch


def test_a_job_whose_worker_died_runs_again_from_its_stored_batch(fresh_service):
    """A worker killed mid-job (no shutdown ran): the next process that reads the job takes it over; a job
    whose workers died too often is failed instead (a batch that kills its worker is not retried forever)."""
    from hypermem.records.jobs import MAX_LOST, encode_batch

    settings = Settings(store=fresh_service.settings.store, llm_base_url=None, admin_key=ADMIN)
    app = create_app(settings, fresh_service)
    client, headers = app.test_client(), _tenant(app)
    first = conversation(2, 1)
    assert client.post("/v1/memories/orphan/messages", headers=headers,
                       json={"messages": _as_json(first)}).status_code == 200  # fmt: skip
    store = fresh_service.store
    dead = f"{os.uname().nodename}:{2**22 + 12346}"  # no such process
    batch = encode_batch(conversation(6, 2)[2:])
    # "7…": recorded by an earlier process of this very host:pid (a restarted container), not held by this one
    for job_id, worker in (("e" * 32, dead), ("f" * 32, dead), ("7" * 32, process_id())):
        store.query("api/create_job", id=job_id, memory_id="orphan", messages=4, now="2024-01-01T00:00:00+00:00",
                    worker=worker, batch=batch)  # fmt: skip
        store.query("api/start_job", id=job_id, worker=worker, now="2024-01-01T00:00:00+00:00", beat=time.time())
    store.run_cypher(f"MATCH (j:IngestJob {{id: '{'f' * 32}'}}) SET j.lost = {MAX_LOST}")
    job = _until_ended(client, headers, "e" * 32)
    assert job["status"] == "done" and job["progress"] == 4 and job["report"]["turns"] == 6, job
    same_pid = _until_ended(client, headers, "7" * 32)
    assert same_pid["status"] == "done" and same_pid["progress"] == 4, same_pid
    poisoned = client.get(f"/v1/jobs/{'f' * 32}", headers=headers).get_json()
    assert poisoned["status"] == "failed" and "not run again" in poisoned["error"], poisoned
    app.extensions["hypermem"].close()


def test_query_records_keep_the_newest_and_stay_bounded(fresh_service):
    from hypermem.records import queries

    store = fresh_service.store
    settings = Settings(store=fresh_service.settings.store, query_records_per_memory=3, query_record_max_bytes=2_000)
    for i in range(5):
        result = {"query_id": f"q{i}", "created_at": f"2099-01-01T00:00:0{i}+00:00", "context": "c" * 100,
                  "turns": [{"dia_id": f"D{j}", "text": "x" * 50} for j in range(60 if i == 4 else 1)]}  # fmt: skip
        queries.save(store, settings, "records", "what?", result)
    old = {"query_id": "q-old", "created_at": "2000-01-01T00:00:00+00:00", "turns": []}
    queries.save(store, settings, "records", "what?", old)  # older than the age limit: dropped at once
    kept = store.run_cypher(
        "MATCH (q:QueryRecord) WHERE q.memory_id = 'records' RETURN q.id AS id, q.result AS r ORDER BY id"
    )
    assert [r["id"] for r in kept] == ["q2", "q3", "q4"]
    big = next(r["r"] for r in kept if r["id"] == "q4")
    assert len(big) <= 2_000 and '"truncated": true' in big and '"turns": []' in big


def test_a_background_job_reports_progress(fresh_service):
    settings = Settings(store=fresh_service.settings.store, llm_base_url=None, admin_key=ADMIN)
    app = create_app(settings, fresh_service, sync_batch_limit=4)
    client = app.test_client()
    key = client.post("/v1/tenants/acme/keys", headers={"Authorization": f"Bearer {ADMIN}"}).get_json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    messages = [{"message_id": m.message_id, "speaker": m.speaker, "text": m.text, "timestamp": m.timestamp.isoformat(),
                 "session_id": m.session_id} for m in conversation(12, 3)]  # fmt: skip
    job_id = client.post("/v1/memories/progress/messages", headers=headers, json={"messages": messages}).get_json()[
        "job_id"
    ]
    seen = []
    while True:
        job = client.get(f"/v1/jobs/{job_id}", headers=headers).get_json()
        seen.append(job["progress"])
        if job["status"] in ("done", "failed"):
            break
        time.sleep(0.05)
    app.extensions["hypermem"].jobs.close()
    assert job["status"] == "done" and job["progress"] == 12 and job["report"]["turns"] == 12
    assert seen == sorted(seen) and set(seen) <= {0, 4, 8, 12}  # whole sessions of 4 messages at a time
