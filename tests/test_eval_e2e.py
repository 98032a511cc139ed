"""The LoCoMo benchmark end to end through the CLI, on the smallest dev conversation (conv-30).

A fresh embedded FalkorDB store, the real ingest (no LLM) and real embeddings; the first
QUESTIONS questions only, to keep the suite fast.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hypermem.cli import app
from hypermem.eval.systems import default_systems

DATA = Path(__file__).resolve().parents[1] / ".." / "shared" / "data" / "locomo-dev.json"
QUESTIONS = 20
CONV30_TURNS = 369
KEYS = {"evidence_recall", "precision", "turns_per_question", "context_tokens", "p50_ms", "p95_ms", "questions"}


def _missing_pipeline() -> str | None:
    for module in ("hypermem.retrieve.pipeline", "hypermem.ingest.pipeline"):
        if importlib.util.find_spec(module) is None:
            return module
    return None


@pytest.fixture
def cli_env(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERMEM_STORE", f"falkordb://{tmp_path / 'db'}")
    monkeypatch.setenv("HYPERMEM_LLM_BASE_URL", "")
    monkeypatch.setenv("HYPERMEM_LLM_CACHE_DIR", str(tmp_path / "llm-cache"))
    return tmp_path


def test_qa_without_llm_exits_nonzero(cli_env):
    data = cli_env / "empty.json"
    data.write_text("[]")
    result = CliRunner().invoke(app, ["eval", "locomo", str(data), "--out", str(cli_env / "out"), "--qa"])
    assert result.exit_code == 2
    assert "--qa needs an LLM" in result.output
    assert not (cli_env / "out").exists()


@pytest.mark.locomo
@pytest.mark.skipif(not DATA.is_file(), reason=f"LoCoMo dev data not found at {DATA}")
@pytest.mark.skipif(_missing_pipeline() is not None, reason=f"{_missing_pipeline()} is not importable yet")
def test_benchmark_end_to_end_on_conv30(cli_env):
    out = cli_env / "out"
    result = CliRunner().invoke(
        app, ["eval", "locomo", str(DATA), "--conversation", "conv-30", "--out", str(out), "--limit", str(QUESTIONS)]
    )
    assert result.exit_code == 0, result.output
    results = json.loads((out / "results.json").read_text())
    assert (out / "results.md").read_text().count("\n| ") >= len(default_systems())
    assert (out / "recall_vs_turns.png").read_bytes()[:4] == b"\x89PNG"

    systems = results["systems"]
    assert list(systems) == [s.name for s in default_systems()]
    baselines = {f"{m}@{k}" for m in ("bm25", "dense", "rrf") for k in (3, 5, 8, 10, 25)}
    assert {"hypermem", "hypermem-topics", "hypermem-flat", "hypermem-no-propagation", "hypermem-fixed-k",
            "hypermem@5", "hypermem@10", "full-context"} | baselines == set(systems)  # fmt: skip
    assert systems["bm25@8"]["overall"]["turns_per_question"] <= 8.0
    assert results["margin"]["system"] == "hypermem"
    assert results["margin"]["margin"] == pytest.approx(
        results["margin"]["recall"] - results["margin"]["baseline_recall"], abs=1e-3
    )
    for name, summary in systems.items():
        overall = summary["overall"]
        assert set(overall) == KEYS, name
        assert overall["questions"] == QUESTIONS, name
        assert 0.0 <= overall["evidence_recall"] <= 1.0, name
        assert 0.0 <= overall["precision"] <= 1.0, name
        assert 0.0 <= overall["p50_ms"] <= overall["p95_ms"], name
        assert sum(c["questions"] for c in summary["by_category"].values()) == QUESTIONS, name
        assert set(summary["by_category"]) <= {"1", "2", "3", "4", "5"}, name

    full = systems["full-context"]["overall"]
    assert full["evidence_recall"] == 1.0
    assert full["turns_per_question"] == CONV30_TURNS
    assert all(c["evidence_recall"] == 1.0 for c in systems["full-context"]["by_category"].values())
    assert all(
        s["overall"]["context_tokens"] < full["context_tokens"] for n, s in systems.items() if n != "full-context"
    )
    for method in ("bm25", "dense", "rrf"):
        assert 0 < systems[f"{method}@8"]["overall"]["turns_per_question"] <= 8
        assert 8 < systems[f"{method}@25"]["overall"]["turns_per_question"] <= 25
    assert systems["dense@8"]["overall"]["turns_per_question"] == 8
    assert systems["hypermem"]["overall"]["turns_per_question"] > 0
    assert systems["hypermem"]["overall"]["context_tokens"] > 0
    assert results["conversations"] == {"conv-30": {"turns": CONV30_TURNS, "questions": QUESTIONS}}
    assert results["dataset"]["unmatched_evidence"] == {"count": 0, "ids": []}
