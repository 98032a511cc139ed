"""docker/: the compose file and Dockerfile are checked statically (no Docker engine on these
machines), and with ``docker compose config`` where the compose CLI plugin exists."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from xml.etree import ElementTree

import pytest
import yaml

from hypermem.config import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCKER = ROOT / "docker"
GUNICORN_ENV = {"HYPERMEM_BIND", "HYPERMEM_THREADS", "HYPERMEM_TIMEOUT", "WEB_CONCURRENCY"}  # docker/gunicorn.conf.py


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "compose.yaml").read_text(encoding="utf-8"))


def test_neo4j_service_is_5_13_or_newer_with_healthcheck_and_volumes(compose):
    neo4j = compose["services"]["neo4j"]
    major, minor = map(int, re.match(r"neo4j:(\d+)\.(\d+)", neo4j["image"]).groups())
    assert major == 5 and minor >= 13
    assert "cypher-shell" in " ".join(neo4j["healthcheck"]["test"])
    assert neo4j["healthcheck"]["retries"] >= 1
    mounts = {v.split(":")[1]: v.split(":")[0] for v in neo4j["volumes"]}
    assert mounts["/data"] in compose["volumes"]
    assert neo4j["environment"]["NEO4J_AUTH"].startswith("neo4j/${NEO4J_PASSWORD")


def test_neo4j_image_is_the_version_the_tests_run(compose):
    """compose pins the exact Neo4j release that tests/neo4j/server.sh fetches (tests/neo4j/pom.xml)."""
    pom = ElementTree.parse(ROOT / "tests" / "neo4j" / "pom.xml").getroot()
    version = pom.find(
        "{http://maven.apache.org/POM/4.0.0}properties/{http://maven.apache.org/POM/4.0.0}neo4j.version"
    ).text
    assert re.fullmatch(r"5\.26\.\d+", version)  # the 5.26 LTS line (2025.x needs Java 21)
    assert compose["services"]["neo4j"]["image"] == f"neo4j:{version}-community"


def test_service_waits_for_a_healthy_neo4j_and_connects_over_bolt(compose):
    service = compose["services"]["hypermem"]
    assert service["depends_on"]["neo4j"]["condition"] == "service_healthy"
    env = service["environment"]
    assert env["HYPERMEM_STORE"] == "bolt://neo4j:7687"
    Settings(store=env["HYPERMEM_STORE"])  # a URL the settings accept
    known = {f"HYPERMEM_{name.upper()}" for name in Settings.model_fields} | GUNICORN_ENV
    assert set(env) <= known, set(env) - known
    context = (DOCKER / service["build"]["context"]).resolve()
    assert context == ROOT
    assert (context / service["build"]["dockerfile"]).is_file()
    assert "/v1/ready" in " ".join(service["healthcheck"]["test"])
    assert {v.split(":")[0] for v in service["volumes"]} <= set(compose["volumes"])


def test_dockerfile_runs_gunicorn_on_the_wsgi_app():
    text = (DOCKER / "Dockerfile").read_text(encoding="utf-8")
    assert re.search(r"^FROM python:3\.11-slim$", text, re.M)
    assert "torch" not in text  # the default install embeds with onnxruntime: no multi-GB PyTorch layer
    assert "RUN pip install .\n" in text
    assert 'CMD ["gunicorn", "-c", "docker/gunicorn.conf.py", "hypermem.api.wsgi:app"]' in text
    for line in re.findall(r"^COPY (.+)$", text, re.M):
        for source in line.split()[:-1]:
            assert (ROOT / source).exists(), f"COPY source {source} is missing"
    assert (DOCKER / "gunicorn.conf.py").exists()
    assert re.search(r"^app = ", (ROOT / "service" / "hypermem" / "api" / "wsgi.py").read_text(), re.M)
    assert ".venv" in (DOCKER / "Dockerfile.dockerignore").read_text()


def test_docker_compose_config_accepts_the_file():
    docker = shutil.which("docker")
    if docker is None:
        pytest.skip("no docker CLI on this machine")
    probe = subprocess.run([docker, "compose", "version"], capture_output=True, text=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip(f"the docker compose plugin is not installed: {probe.stderr.strip() or probe.stdout.strip()}")
    env = {**os.environ, "NEO4J_PASSWORD": "test-password", "HYPERMEM_ADMIN_KEY": "test-admin-key"}
    done = subprocess.run(
        [docker, "compose", "-f", str(DOCKER / "compose.yaml"), "config", "--format", "json"],
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert '"condition": "service_healthy"' in done.stdout
    missing = subprocess.run(
        [docker, "compose", "-f", str(DOCKER / "compose.yaml"), "config"],
        capture_output=True, text=True, timeout=60,
        env={k: v for k, v in os.environ.items() if k not in ("NEO4J_PASSWORD", "HYPERMEM_ADMIN_KEY")},
    )  # fmt: skip
    assert missing.returncode != 0 and "NEO4J_PASSWORD" in missing.stderr  # no default password
