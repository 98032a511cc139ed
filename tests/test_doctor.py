"""``hypermem doctor``: engine, version, indexes, embedding model and dimension; exit codes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from engines import ENGINES, engine_env, engine_settings
from typer.testing import CliRunner

from hypermem.cli import app
from hypermem.store import open_store


def _env_without_hypermem(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPERMEM_")}
    env.update(extra)
    return env


def test_doctor_on_a_fresh_install_creates_the_default_store(tmp_path):
    """No settings at all: the default embedded store under $HOME is created, and doctor exits 0."""
    home = tmp_path / "home"
    home.mkdir()
    done = subprocess.run(
        [str(Path(sys.executable).with_name("hypermem")), "doctor"],
        env=_env_without_hypermem(HOME=str(home), COLUMNS="200"),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    assert "FalkorDB 4." in out
    assert "minilm-int8" in out and "384" in out
    assert "minilm-int8 (384 dimensions)" in out  # the store meta it recorded
    # piped: tab-separated lines, a long value whole on its line (a table would fold it)
    assert any(line.startswith("model path\t") and line.endswith("model.onnx") for line in out.splitlines()), out
    for line in ("Turn", "embedding", "FULLTEXT", "memory_id", "RANGE"):
        assert line in out
    assert "\tVECTOR" not in out  # the embedded default keeps no HNSW index, and says how vectors are searched
    assert "vector search\texact cosine over the memory" in out
    store_dir = home / ".local" / "share" / "hypermem" / "falkordb"
    assert (store_dir / "appendonly.aof").exists() or (store_dir / "appendonlydir").is_dir()
    assert not (store_dir / "server.pid").exists()  # the server it started is stopped again


@pytest.mark.neo4j
def test_doctor_on_neo4j_reports_the_server_and_its_indexes(tmp_path):
    settings = engine_settings("neo4j", tmp_path)
    user, password, rest = settings.neo4j_user, settings.neo4j_password, settings.store.split("://", 1)[1]
    env = {"HYPERMEM_STORE": f"bolt://{user}:{password}@{rest}", "COLUMNS": "200"}  # credentials in the URL
    result = CliRunner().invoke(app, ["doctor"], env=env)
    assert result.exit_code == 0, result.output
    out = " ".join(result.output.replace("│", " ").split())
    assert f"bolt://{user}:***@{rest}" in out and password not in out  # never printed
    assert "Neo4j 5." in out and "(community)" in out
    assert "minilm-int8 (384 dimensions)" in out
    for label, prop, kind in (("Turn", "embedding", "VECTOR"), ("Fact", "embedding_raw", "VECTOR"),
                              ("Fact", "text", "FULLTEXT"), ("Hyperedge", "id", "RANGE"), ("Turn", "memory_id", "RANGE")):  # fmt: skip
        assert f"{label} {prop} {kind}" in out


@pytest.mark.parametrize("engine", ENGINES)
def test_doctor_refuses_a_store_built_with_another_dimension(engine, tmp_path):
    settings = engine_settings(engine, tmp_path / "db")
    with open_store(settings) as store:
        before = store.meta()
        store.query("schema/set_meta", embedding_model="some-768-model", dimension=768)
    try:
        result = CliRunner().invoke(app, ["doctor"], env={**engine_env(settings), "COLUMNS": "200"})
    finally:  # the Neo4j test database serves the rest of the run
        with open_store(settings) as store:
            if before:
                store.query("schema/set_meta", embedding_model=before["embedding_model"], dimension=before["dimension"])
            else:
                store.run_cypher("MATCH (m:StoreMeta) DELETE m")
    assert result.exit_code == 1
    assert "some-768-model (768 dimensions)" in " ".join(result.output.split())


def test_doctor_reports_an_unreachable_neo4j(tmp_path):
    result = CliRunner().invoke(app, ["doctor"], env={"HYPERMEM_STORE": "bolt://127.0.0.1:1", "COLUMNS": "200"})
    assert result.exit_code == 1
    assert "not reachable" in result.output


def test_doctor_warns_of_a_memory_an_interrupted_ingest_left_unfinished(tmp_path):
    """A memory with a session no ingest finished (its marker gone, as a killed reindex leaves it) is named with its
    count, and the remedy; not while a writer holds its lock (an ingest still running), and not once finished."""
    from conftest import make_testconv_record

    from hypermem.config import Settings
    from hypermem.ingest.locomo import conversation_from_record
    from hypermem.locks import MemoryLock
    from hypermem.service import MemoryService

    settings = Settings(store=f"falkordb://{tmp_path / 'db'}", llm_base_url=None)
    conversation = conversation_from_record(make_testconv_record("half"))
    with MemoryService.open(settings, use_llm=False) as svc:
        svc.ingest_conversation(conversation)
        sessions = len(svc.store.query("ingest/session_states", memory_id="half"))
        svc.store.run_cypher("MATCH (s:IngestState {memory_id: 'half'}) WITH s LIMIT 1 DELETE s")
    env = {"HYPERMEM_STORE": settings.store, "COLUMNS": "200", "HYPERMEM_LLM_BASE_URL": ""}
    result = CliRunner().invoke(app, ["doctor"], env=env)
    assert result.exit_code == 0, result.output
    assert f"unfinished memories\thalf (1 of its {sessions} stored sessions unfinished)" in result.output
    assert "warning: unfinished memories" in result.output and "hypermem reindex" in result.output
    asked = CliRunner().invoke(app, ["query", "-m", "half", "What is the name of Omar's puppy?"], env=env)
    assert asked.exit_code == 0, asked.output  # answered, and warned that the memory is half built
    assert f"warning: half has 1 of its {sessions} stored sessions unfinished" in asked.output
    with MemoryService.open(settings, use_llm=False) as svc, MemoryLock(svc.store, "half", "ingest"):
        held = CliRunner().invoke(app, ["doctor"], env=env)
    assert "unfinished memories\tnone" in held.output and held.output.rstrip().endswith("ok")
    gone = subprocess.Popen(["true"])  # a pid whose process has ended
    gone.wait()
    with MemoryService.open(settings, use_llm=False) as svc:  # a killed writer's lock, its lease still running
        svc.store.query("lock/acquire", id="lock/half", memory="half", token="t", holder=f"{socket.gethostname()}:{gone.pid}",
                        operation="reindex", now=time.time(), lease=600.0)  # fmt: skip
        killed = CliRunner().invoke(app, ["doctor"], env=env)
        svc.store.query("lock/release", id="lock/half", token="t")
    assert f"unfinished memories\thalf (1 of its {sessions} stored sessions unfinished)" in killed.output
    with MemoryService.open(settings, use_llm=False) as svc:
        svc.ingest_conversation(conversation)  # the ingest again rebuilds the unmarked session
    assert "unfinished memories\tnone" in CliRunner().invoke(app, ["doctor"], env=env).output
