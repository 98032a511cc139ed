"""Lifecycle of the embedded FalkorDB: persistence across restarts, recovery from a killed
server (stale pid file and socket, append-only data kept), a hung server, and two stores
on one directory sharing one server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support.processes import gone, servers_of

from hypermem.store import embedded
from hypermem.store.embedded import EmbeddedFalkorDB
from hypermem.store.falkordb import FalkorDBStore

ROWS = [
    {"memory_id": "m", "id": f"m/el/{i}", "kind": "Person", "name": f"person {i}", "value": f"p{i}"} for i in range(50)
]


def _names(store: FalkorDBStore) -> list[str]:
    return [
        r["name"]
        for r in store.run_cypher("MATCH (p:Person) WHERE p.memory_id = 'm' RETURN p.name AS name ORDER BY p.value")
    ]


def _wait_gone(pid: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not gone(pid):
        assert time.monotonic() < deadline, f"process {pid} did not stop"
        time.sleep(0.05)


def test_data_persists_across_close_and_reopen(tmp_path):
    with FalkorDBStore(tmp_path / "db") as store:
        store.write("write/elements", ROWS)
        pid = store.server.process.pid
    _wait_gone(pid)
    assert not (tmp_path / "db" / "server.pid").exists()
    with FalkorDBStore(tmp_path / "db") as store:
        assert store.server.process.pid != pid
        assert len(_names(store)) == len(ROWS)
        assert store.counts("m") == {"Person": len(ROWS), "memberships": 0}


def test_the_append_only_file_is_the_only_persistence(tmp_path):
    """No RDB snapshot forks beside the append-only file: a closed store leaves no dump.rdb, and the data is back."""
    with FalkorDBStore(tmp_path / "db") as store:
        store.write("write/elements", ROWS)
        assert store.db.connection.config_get("save") == {"save": ""}
        assert store.db.connection.config_get("appendonly") == {"appendonly": "yes"}
        pid = store.server.process.pid
    _wait_gone(pid)
    assert not (tmp_path / "db" / "dump.rdb").exists()
    with FalkorDBStore(tmp_path / "db") as store:
        assert len(_names(store)) == len(ROWS)


def _killed_writer(data_dir) -> int:
    """Start the store at ``data_dir`` in a process that writes ``ROWS`` and gets SIGKILL; return its server's pid."""
    writer = (
        "import json, os, signal, sys\n"
        "from hypermem.store.falkordb import FalkorDBStore\n"
        "store = FalkorDBStore(sys.argv[1])\n"
        "store.write('write/elements', json.loads(sys.argv[2]))\n"
        "print(store.server.process.pid, flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", writer, str(data_dir), json.dumps(ROWS)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    return int(done.stdout.split()[0])


def test_recovers_from_kill_9_with_stale_pid_and_socket(tmp_path):
    """A run dies with its server: the writer process and redis-server both get SIGKILL."""
    data_dir = tmp_path / "db"
    server_pid = _killed_writer(data_dir)
    os.kill(server_pid, signal.SIGKILL)
    _wait_gone(server_pid)
    server = EmbeddedFalkorDB(data_dir)
    assert server.pid_file.read_text().strip() == str(server_pid)  # stale pid file left behind
    assert server.socket_path.exists()  # stale socket left behind

    with FalkorDBStore(data_dir) as store:
        assert store.server.owned and store.server.process.pid != server_pid
        assert server.pid_file.read_text().strip() == str(store.server.process.pid)
        assert len(_names(store)) == len(ROWS)  # appendonly: every acknowledged write survived


def test_stale_pid_of_an_unrelated_process_is_not_killed(tmp_path):
    data_dir = tmp_path / "db"
    data_dir.mkdir()
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        (data_dir / "server.pid").write_text(str(bystander.pid))
        with FalkorDBStore(data_dir) as store:
            store.write("write/elements", ROWS[:3])
            assert len(_names(store)) == 3
        assert bystander.poll() is None  # still running: a reused pid is left alone
    finally:
        bystander.kill()
        bystander.wait()


def test_hung_server_is_replaced(tmp_path, monkeypatch):
    monkeypatch.setattr(embedded, "BUSY_GRACE_S", 3.0)  # silent this long: hung, not busy
    data_dir = tmp_path / "db"
    store = FalkorDBStore(data_dir, keep_server=True)
    store.write("write/elements", ROWS)
    store.close()  # the server keeps running (keep_server), as for a gunicorn master
    hung_pid = store.server.process.pid
    os.kill(hung_pid, signal.SIGSTOP)
    try:
        with FalkorDBStore(data_dir) as fresh:
            assert fresh.server.process.pid != hung_pid
            assert len(_names(fresh)) == len(ROWS)
        _wait_gone(hung_pid)
    finally:
        if not gone(hung_pid):
            os.kill(hung_pid, signal.SIGKILL)
        store.server.process.wait()


def _computing_stand_in(data_dir, seconds: int) -> subprocess.Popen:
    """A process with a redis-server command line naming ``data_dir``, recorded as its server, that computes for
    ``seconds`` and answers nothing: FalkorDB loading a large store, to the code that waits for one."""
    data_dir.mkdir()
    code = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
    process = subprocess.Popen([sys.executable, "-c", code, "redis-server", str(data_dir)])
    cmdline = Path(f"/proc/{process.pid}/cmdline")
    deadline = time.monotonic() + 10
    while b"redis-server" not in cmdline.read_bytes() and time.monotonic() < deadline:
        time.sleep(0.01)  # until it has exec'd: before, its command line is still the test's
    (data_dir / "server.pid").write_text(str(process.pid))
    return process


def test_a_silent_server_that_uses_cpu_is_loading_not_hung(tmp_path, monkeypatch):
    """FalkorDB loading a large store answers nothing for minutes (it rebuilds its indexes): a server silent past
    the grace while it uses CPU is waited for, not killed. Here a stand-in with a redis-server command line that
    computes for 4 s, against a grace of 1 s."""
    monkeypatch.setattr(embedded, "BUSY_GRACE_S", 1.0)
    data_dir = tmp_path / "db"
    loading = _computing_stand_in(data_dir, seconds=4)
    started = time.monotonic()
    try:
        with FalkorDBStore(data_dir) as store:
            waited = time.monotonic() - started
            store.write("write/elements", ROWS[:2])
            assert len(_names(store)) == 2
        assert waited >= 3.0  # it waited while the stand-in worked, then started a server of its own
        assert loading.wait(5) == 0  # it ended by itself, never killed
    finally:
        if loading.poll() is None:
            loading.kill()


def test_a_server_silent_past_the_load_limit_is_hung_even_while_it_uses_cpu(tmp_path, monkeypatch):
    """A runaway server that spins without ever answering is not loading forever: past ``LOAD_LIMIT_S`` of silence
    it is replaced. Here a stand-in computing for 60 s, against a limit of 2 s."""
    monkeypatch.setattr(embedded, "BUSY_GRACE_S", 1.0)
    monkeypatch.setattr(embedded, "LOAD_LIMIT_S", 2.0)
    data_dir = tmp_path / "db"
    spinning = _computing_stand_in(data_dir, seconds=60)
    started = time.monotonic()
    try:
        with FalkorDBStore(data_dir) as store:
            assert time.monotonic() - started < 30  # gave up on it after the limit, not after its 60 s
            store.write("write/elements", ROWS[:1])
        assert spinning.wait(10) == -signal.SIGKILL  # stopped as a hung server of this directory
    finally:
        if spinning.poll() is None:
            spinning.kill()


def test_a_busy_server_is_waited_for_not_replaced(tmp_path):
    """A server silent for a few seconds (here CLIENT PAUSE; at scale, forking for an append-only-file
    rewrite) is joined once it answers again: a joining process does not kill it."""
    data_dir = tmp_path / "db"
    store = FalkorDBStore(data_dir)
    try:
        store.write("write/elements", ROWS)
        busy_pid = store.server.process.pid
        store.db.connection.execute_command("CLIENT", "PAUSE", "5000", "ALL")  # PINGs go unanswered for 5 s
        started = time.monotonic()
        with FalkorDBStore(data_dir) as second:
            assert time.monotonic() - started >= 4.0  # it waited for the pause to end
            assert not second.server.owned and servers_of(data_dir) == [busy_pid]
            assert len(_names(second)) == len(ROWS)
    finally:
        store.close()
    _wait_gone(busy_pid)


def test_two_stores_on_one_directory_share_one_server(tmp_path):
    data_dir = tmp_path / "db"
    first = FalkorDBStore(data_dir)
    try:
        second = FalkorDBStore(data_dir)
        assert first.server.owned and not second.server.owned
        assert first.server.socket_path == second.server.socket_path
        first.write("write/elements", ROWS[:5])
        assert len(_names(second)) == 5  # one server, one graph
        second.close()  # a joiner does not stop the owner's server
        assert len(_names(first)) == 5
    finally:
        pid = first.server.process.pid
        first.close()
    _wait_gone(pid)
    assert not first.server.socket_path.exists()


def test_long_data_dir_uses_a_short_socket_path(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)
    with FalkorDBStore(deep) as store:
        assert len(str(store.server.socket_path)) <= 100
        store.write("write/elements", ROWS[:2])
        assert len(_names(store)) == 2
    with FalkorDBStore(deep) as store:
        assert len(_names(store)) == 2


def test_graph_names_separate_graphs_on_one_server(tmp_path):
    with FalkorDBStore(tmp_path / "db") as main, FalkorDBStore(tmp_path / "db", "other") as other:
        main.write("write/elements", ROWS[:1])
        other.write("write/elements", ROWS[:4])
        assert (len(_names(main)), len(_names(other))) == (1, 4)


def test_server_of_a_killed_run_is_adopted_and_stopped_by_the_next(tmp_path):
    """The starter gets SIGKILL and its server lives on; the next run adopts it and stops it at close."""
    data_dir = (tmp_path / "db").resolve()
    orphan = _killed_writer(data_dir)
    assert servers_of(data_dir) == [orphan]  # the starter is gone, its server is not

    store = FalkorDBStore(data_dir)
    assert store.server.owned and store.server.process is None  # joined and adopted, not restarted
    assert store.server.owner_file.read_text() == str(os.getpid())
    assert len(_names(store)) == len(ROWS)
    store.close()
    _wait_gone(orphan)
    assert servers_of(data_dir) == []
    assert not store.server.owner_file.exists() and not store.server.socket_path.exists()
    with FalkorDBStore(data_dir) as reopened:
        assert len(_names(reopened)) == len(ROWS)  # SHUTDOWN flushed the append-only file


def test_owner_closing_first_hands_the_server_to_the_last_client(tmp_path):
    data_dir = (tmp_path / "db").resolve()
    first, second = FalkorDBStore(data_dir), FalkorDBStore(data_dir)
    pid = first.server.process.pid
    first.write("write/elements", ROWS[:5])
    assert first.server.owned and not second.server.owned
    first.close()  # the owner, but `second` is still connected: the server stays
    assert servers_of(data_dir) == [pid]
    assert len(_names(second)) == 5
    assert not second.server.owner_file.exists()  # handed over: the next last client stops it
    second.close()
    _wait_gone(pid)
    assert servers_of(data_dir) == []


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("falkordb://relative/path", "'relative' would be read as a host"),
        ("falkordb://", "needs a path"),
        ("falkordb:///", "a directory of its own, not the root"),
        ("falkordb:///proc/hypermem-nope", "cannot hold the store (No such file or directory)"),
        ("FILE", "cannot hold the store (a file, not a directory)"),
        ("falkordb:///tmp/hypermem-x?mode=ro", "takes no ?query"),
        ("falkordb:///tmp/hypermem-x#main", "takes no ?query"),
        ("falkordb:///tmp/hypermem-%ff", "not UTF-8 once percent-decoded"),
        ("falkordb:///tmp/hypermem-%00", "a NUL in the path"),
        ("falkordb:///tmp/hypermem-%ZZ", "a bad percent-escape"),
        ("falkordb:///tmp/hypermem-a%2F..%2Fb", "an encoded '/'"),
        ("falkordb:///tmp/hypermem-a/../b", "may not hold '..'"),
    ],
)
def test_a_store_path_that_cannot_hold_the_store_is_refused_naming_the_setting(tmp_path, url, problem):
    from hypermem.store import StoreError, embedded_data_dir

    if url == "FILE":
        (tmp_path / "a-file").write_text("x")
        url = f"falkordb://{tmp_path / 'a-file'}"
    with pytest.raises(StoreError, match=r"HYPERMEM_STORE") as refused:
        embedded_data_dir(url)
    assert problem in str(refused.value)
    assert not os.path.exists("/path") and not os.path.exists("/relative")  # nothing created elsewhere
    assert embedded_data_dir(f"falkordb://{tmp_path}/new/store") == tmp_path / "new" / "store"
    assert (tmp_path / "new" / "store").is_dir()
    assert embedded_data_dir(f"falkordb://{tmp_path}/my%20store") == tmp_path / "my store"  # a URL's escapes
