"""``hypermem serve`` leaves no embedded redis-server behind (issue 9 §7): not when it fails at start
(a store built with another embedding dimension), and not when SIGTERM arrives during start-up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.processes import servers_of

from hypermem.store.falkordb import FalkorDBStore


def _serve(data_dir: Path, port: int) -> subprocess.Popen:
    env = {**os.environ, "HYPERMEM_STORE": f"falkordb://{data_dir}", "HYPERMEM_LLM_BASE_URL": ""}
    return subprocess.Popen([sys.executable, "-m", "hypermem.cli", "serve", "--port", str(port)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip


def _wait_no_server(data_dir: Path, timeout_s: float = 20.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while servers_of(data_dir) and time.monotonic() < deadline:
        time.sleep(0.1)
    return servers_of(data_dir)


def test_serve_failing_at_start_stops_its_embedded_server(tmp_path):
    data_dir = (tmp_path / "db").resolve()
    with FalkorDBStore(data_dir) as store:
        store.ensure_schema("some-other-model", 8)  # built at another dimension
    proc = _serve(data_dir, 18931)
    _, err = proc.communicate(timeout=180)
    assert proc.returncode == 1
    assert "cannot start" in err and "8 dimensions" in err
    assert _wait_no_server(data_dir) == []


def test_sigterm_during_start_up_stops_its_embedded_server(tmp_path):
    data_dir = (tmp_path / "db").resolve()
    proc = _serve(data_dir, 18932)
    deadline = time.monotonic() + 180
    while not servers_of(data_dir) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert servers_of(data_dir), "serve never started its embedded server"
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert _wait_no_server(data_dir) == []


def test_serve_logs_plain_text_off_a_terminal(tmp_path):
    """stderr is a pipe: werkzeug's banner and request lines come without ANSI colour codes."""
    import urllib.request

    data_dir = (tmp_path / "db").resolve()
    proc = _serve(data_dir, 18933)
    try:
        lines = []
        for line in proc.stderr:  # until the server listens
            lines.append(line)
            if "Running on" in line or "Press CTRL+C" in line:
                break
        assert urllib.request.urlopen("http://127.0.0.1:18933/v1/health", timeout=30).status == 200
    finally:
        proc.send_signal(signal.SIGTERM)
        _, rest = proc.communicate(timeout=60)
    err = "".join(lines) + rest
    assert "development server" in err and "GET /v1/health" in err, err
    assert "\x1b" not in err, err
    assert _wait_no_server(data_dir) == []
