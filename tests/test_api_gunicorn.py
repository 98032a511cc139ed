"""The API once through a real gunicorn process on loopback: two workers joining the embedded
FalkorDB that the master started; health, key, ingest and query over HTTP; the server stops with gunicorn."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import requests

from hypermem.store.embedded import EmbeddedFalkorDB, alive

ROOT = Path(__file__).resolve().parents[1]
ADMIN = "gunicorn-admin-key"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for(url: str, process: subprocess.Popen, attempts: int = 600) -> requests.Response:
    """Poll ``url`` until it answers (at most ~2 minutes: workers load their models first)."""
    for _ in range(attempts):
        if process.poll() is not None:
            pytest.fail(f"gunicorn exited with {process.returncode}")
        try:
            return requests.get(url, timeout=5)
        except (requests.ConnectionError, requests.Timeout):
            time.sleep(0.2)
    pytest.fail(f"{url} did not answer")


def raw_request(host: str, port: int, request: bytes) -> bytes:
    """The whole reply to ``request`` sent as is (the server closes the connection after it)."""
    with socket.create_connection((host, port), timeout=30) as sock:
        sock.sendall(request)
        return b"".join(iter(lambda: sock.recv(65536), b""))


def start_gunicorn(tmp_path: Path, data: Path, port: int, log_name: str = "gunicorn.log") -> subprocess.Popen:
    env = {
        **os.environ,
        "HYPERMEM_STORE": f"falkordb://{data}",
        "HYPERMEM_ADMIN_KEY": ADMIN,
        "HYPERMEM_LLM_BASE_URL": "",
        "WEB_CONCURRENCY": "2",
        "HYPERMEM_THREADS": "2",
    }
    command = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "docker" / "gunicorn.conf.py"),
               "--bind", f"127.0.0.1:{port}", "hypermem.api.wsgi:app"]  # fmt: skip
    with (tmp_path / log_name).open("w") as log:
        return subprocess.Popen(command, cwd=tmp_path, env=env, stdout=log, stderr=subprocess.STDOUT)


def stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=90)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture
def gunicorn(tmp_path):
    port = free_port()
    data = tmp_path / "falkordb"
    process = start_gunicorn(tmp_path, data, port)
    try:
        yield f"http://127.0.0.1:{port}", process, data
    finally:
        stop(process)


def test_gunicorn_serves_health_ingest_and_query(gunicorn):
    base, process, data = gunicorn
    assert wait_for(f"{base}/v1/health", process).json() == {"status": "ok"}
    ready = requests.get(f"{base}/v1/ready", timeout=30).json()
    assert ready["status"] == "ready" and ready["engine"].startswith("FalkorDB")

    key = requests.post(
        f"{base}/v1/tenants/acme/keys", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
    ).json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    messages = [
        {"message_id": "g1", "speaker": "Caroline", "text": "I adopted a grey cat called Pixel from the shelter.",
         "timestamp": "2023-07-02T18:00:00", "session_id": "s1"},
        {"message_id": "g2", "speaker": "Melanie", "text": "Lovely! I'm off to a pottery workshop in Lisbon next week.",
         "timestamp": "2023-07-02T18:01:00", "session_id": "s1"},
    ]  # fmt: skip
    ingested = requests.post(
        f"{base}/v1/memories/chat-1/messages", json={"messages": messages}, headers=headers, timeout=120
    )
    assert ingested.status_code == 200, ingested.text
    assert ingested.json()["report"]["turns"] == 2
    # Several requests, so that both workers (each joining the master's server) very likely answer one.
    for _ in range(4):
        result = requests.post(
            f"{base}/v1/memories/chat-1/query",
            json={"query": "What is the name of Caroline's cat?"},
            headers=headers,
            timeout=120,
        )
        assert result.status_code == 200, result.text
        assert any("Pixel" in turn["text"] for turn in result.json()["turns"])
    explained = requests.get(f"{base}/v1/queries/{result.json()['query_id']}/explanation", headers=headers, timeout=30)
    assert explained.json()["query"] == "What is the name of Caroline's cat?"

    # a malformed chunked body (a chunk size that is not hex) is the client's error, before authentication too
    host, port = base.removeprefix("http://").split(":")
    post = b"POST /v1/tenants/x/keys HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nConnection: close\r\n"
    for chunks in (b"zz\r\nabc\r\n0\r\n\r\n", b"3\r\nabcdef\r\n0\r\n\r\n"):
        reply = raw_request(host, int(port), post + b"Transfer-Encoding: chunked\r\n\r\n" + chunks)
        assert reply.startswith(b"HTTP/1.1 400"), reply[:300]
    # both Transfer-Encoding and Content-Length: gunicorn refuses it before the app sees it, in JSON too
    reply = raw_request(host, int(port), post + b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n\r\n0\r\n\r\n")
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and b"\r\nContent-Type: application/json\r\n" in head, reply[:300]
    assert json.loads(payload) == {
        "code": 400,
        "status": "Bad Request",
        "message": "Invalid HTTP Header: 'CONTENT-LENGTH'",
    }
    # a bad %-escape in a path part (gunicorn passes it on in RAW_URI) is a 400 naming the part
    reply = raw_request(host, int(port), b"GET /v1/memories/chat-1/people/%ZZ/timeline HTTP/1.1\r\nHost: x\r\n"
                        b"Authorization: Bearer " + key.encode() + b"\r\nConnection: close\r\n\r\n")  # fmt: skip
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400") and json.loads(payload)["errors"] == {"path": {"person": ["bad %-escape"]}}

    server = EmbeddedFalkorDB(data)
    assert server.socket_path.exists()
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=90) == 0
    assert not server.socket_path.exists()  # the master stopped the server it started


def test_a_job_accepted_before_sigterm_completes_after_gunicorn_restarts(gunicorn, tmp_path):
    """SIGTERM to gunicorn while a background job runs: the worker ends its chunk and gives the job back
    (``worker_exit``); the next gunicorn's workers take it over at start and finish it."""
    base, process, data = gunicorn
    wait_for(f"{base}/v1/health", process)
    key = requests.post(
        f"{base}/v1/tenants/acme/keys", headers={"Authorization": f"Bearer {ADMIN}"}, timeout=30
    ).json()["key"]
    headers = {"Authorization": f"Bearer {key}"}
    messages = [{"message_id": f"j{i}", "speaker": ("Ana", "Ben")[i % 2], "text": f"Ana talks about hiking day {i}.",
                 "timestamp": f"2024-03-{1 + i // 10:02d}T10:{i % 60:02d}:00", "session_id": f"s{i // 10}"}
                for i in range(60)]  # fmt: skip
    accepted = requests.post(f"{base}/v1/memories/jobs-1/messages", json={"messages": messages}, headers=headers,
                             timeout=120)  # fmt: skip
    assert accepted.status_code == 202, accepted.text
    job_id = accepted.json()["job_id"]
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=90) == 0
    port = int(base.rsplit(":", 1)[1])
    again = start_gunicorn(tmp_path, data, port, "gunicorn-again.log")
    try:
        wait_for(f"{base}/v1/health", again)
        deadline = time.monotonic() + 300
        while True:
            job = requests.get(f"{base}/v1/jobs/{job_id}", headers=headers, timeout=30).json()
            if job["status"] in ("done", "failed") or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert job["status"] == "done" and job["progress"] == 60 and job["report"]["turns"] == 60, job
    finally:
        stop(again)


def test_gunicorn_that_cannot_bind_leaves_no_server_running(tmp_path):
    """The master starts the embedded FalkorDB once it listens (``when_ready``): a bind that fails ("Can't connect",
    exit 1, no ``on_exit``) left the server it had started in ``on_starting`` running, adopted by init."""
    data = tmp_path / "falkordb"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        process = start_gunicorn(tmp_path, data, taken.getsockname()[1])
        try:
            assert process.wait(timeout=120) != 0
        finally:
            stop(process)
    log = (tmp_path / "gunicorn.log").read_text()
    assert "Can't connect" in log, log
    server = EmbeddedFalkorDB(data)
    pid = int(server.pid_file.read_text() or 0) if server.pid_file.exists() else 0
    try:
        assert not (pid and alive(pid)), log
        assert not server.socket_path.exists()
    finally:
        if pid and alive(pid):  # the server this test's gunicorn left behind
            os.kill(pid, signal.SIGTERM)


@pytest.mark.parametrize(
    ("name", "value", "problem"),
    [
        ("HYPERMEM_TIMEOUT", "x", "must be a whole number of at least 0, not 'x'"),
        ("HYPERMEM_THREADS", "0", "must be a whole number of at least 1, not '0'"),
        ("WEB_CONCURRENCY", "0", "must be a whole number of at least 1, not '0'"),  # gunicorn refuses 'abc', -1
        ("HYPERMEM_MAX_JSON_DEPTH", "2", "Input should be greater than or equal to"),
        ("HYPERMEM_LOCK_WAIT_S", "-1", "Input should be greater than"),
        ("HYPERMEM_BIND", "127.0.0.1:99999", "the port must be a whole number 0-65535, not '99999'"),
    ],
)
def test_gunicorn_names_a_bad_setting_on_one_line(tmp_path, name, value, problem):
    """As the CLI does (``error: bad setting: NAME: problem``, exit 2), before it binds or starts anything; not
    gunicorn's "Failed to read config file" and a traceback."""
    env = {**os.environ, "HYPERMEM_STORE": f"falkordb://{tmp_path / 'falkordb'}", name: value}
    command = [sys.executable, "-m", "gunicorn", "-c", str(ROOT / "docker" / "gunicorn.conf.py"),
               "--bind", f"127.0.0.1:{free_port()}", "hypermem.api.wsgi:app"]  # fmt: skip
    done = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(f"error: bad setting: {name}: {problem}") and done.stderr.count("\n") == 1, done
    assert not (tmp_path / "falkordb").exists()
