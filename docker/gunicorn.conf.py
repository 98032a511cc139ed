"""Gunicorn settings for the hypermem API.

    gunicorn -c docker/gunicorn.conf.py hypermem.api.wsgi:app

The master opens the store once, when it listens and before any worker forks (``when_ready``:
a master that cannot bind exits without ``on_exit``, so nothing is started before). For the
embedded FalkorDB (``HYPERMEM_STORE=falkordb:///PATH``) that starts the server; every worker then
joins it (``hypermem.api.wsgi`` opens with ``keep_server=True``) and the master stops it at exit.
For Neo4j it checks the database answers before any worker starts.

Environment: the ``HYPERMEM_*`` settings (``hypermem.config.Settings``), plus
``HYPERMEM_BIND`` (default ``0.0.0.0:8000``), ``WEB_CONCURRENCY`` (workers, default 2),
``HYPERMEM_THREADS`` (threads per worker, default 4) and ``HYPERMEM_TIMEOUT`` (seconds a
request may take, default 120: a first query loads models, an LLM answer can be slow).
Every worker loads its own embedding and spaCy models (~0.5 GB each).

A bad setting (these or any ``HYPERMEM_*``) is one line on stderr, ``error: bad setting: NAME: problem``
as the CLI prints it, and exit 2 before anything starts. (gunicorn itself reads ``WEB_CONCURRENCY``
before this file: it refuses a negative one, and one that is not a number with a traceback.)
"""

import os
import sys
from typing import NoReturn

from pydantic import ValidationError

from hypermem.config import Settings, setting_problems
from hypermem.text import visible


def _bad_setting(problem: str) -> NoReturn:
    """Exit 2 with the CLI's one line ``error: bad setting: ...`` (gunicorn would print a traceback)."""
    print(visible(f"error: bad setting: {problem}", one_line=True), file=sys.stderr, flush=True)
    raise SystemExit(2)  # not an Exception: gunicorn lets it through instead of "Failed to read config file"


def _whole_number(name: str, default: int, low: int) -> int:
    """Environment variable ``name`` as an integer of at least ``low``; ``default`` when unset."""
    given = os.environ.get(name)
    if given is None:
        return default
    try:
        value = int(given)
    except ValueError:
        value = low - 1
    if value < low:
        _bad_setting(f"{name}: must be a whole number of at least {low}, not {given!r}")
    return value


try:
    _settings = Settings()
except ValidationError as exc:
    _bad_setting(setting_problems(exc))

def _bind(given: str) -> str:
    """``HYPERMEM_BIND`` as gunicorn takes it (``HOST:PORT``, ``[IPv6]:PORT`` or ``unix:PATH``), its port 0-65535
    (gunicorn's own check of a larger one is a traceback)."""
    if given.startswith("unix:") or ":" not in given:
        return given
    port = given.rsplit(":", 1)[1]
    if not port.isdigit() or int(port) > 65535:
        _bad_setting(f"HYPERMEM_BIND: the port must be a whole number 0-65535, not {port!r} (in {given!r})")
    return given


bind = _bind(os.environ.get("HYPERMEM_BIND", "0.0.0.0:8000"))
workers = _whole_number("WEB_CONCURRENCY", 2, 1)
worker_class = "gthread"
threads = _whole_number("HYPERMEM_THREADS", 4, 1)
timeout = _whole_number("HYPERMEM_TIMEOUT", 120, 0)  # 0: no limit (gunicorn's meaning)
graceful_timeout = 60  # lets a running background ingest end its chunk (it and the queued jobs are given back)
accesslog = "-"
errorlog = "-"
control_socket_disable = True  # no ~/.gunicorn/gunicorn.ctl shared between instances

_store = None  # the master's store: owns the embedded server, if any


def when_ready(server):
    """Open the store in the master once it listens, before any worker forks (starts an embedded FalkorDB)."""
    global _store
    from hypermem.store import open_store

    _store = open_store(_settings)
    server.log.info("hypermem store ready: %s (%s)", _settings.store, _store.engine_version())


def worker_exit(server, worker):
    """Let the worker's running ingest job end its chunk, give it and the queued jobs back (another worker,
    or the next start, runs them) and close the worker's store connection."""
    app = getattr(worker, "wsgi", None)
    if app is not None:
        app.extensions["hypermem"].close()


def on_exit(server):
    """Close the master's store: this stops the embedded FalkorDB the master started."""
    if _store is not None:
        _store.close()
