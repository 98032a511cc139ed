"""`hypermem eval fit-ranker` and `hypermem eval cv` end to end through the CLI (issue 11), on two small
LoCoMo-format conversations with questions (no LoCoMo data needed): real embedded FalkorDB, real embeddings."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import make_testconv_record
from typer.testing import CliRunner

from hypermem.cli import app
from hypermem.retrieve.turn_ranker import FEATURES, RANK_FEATURES

QA = [
    ("Where did Omar go camping?", ["D2:7"], 4),
    ("What is the name of Omar's puppy?", ["D1:4"], 4),
    ("When did Nadia start her pottery class?", ["D2:1"], 2),
    ("Where did Nadia move for her new job?", ["D3:1"], 4),
    ("What happened to Nadia's first bowl?", ["D2:3"], 4),
    ("Where did the puppy swim?", ["D2:11"], 4),
]


@pytest.fixture
def labelled(tmp_path, monkeypatch):
    monkeypatch.setenv("HYPERMEM_STORE", f"falkordb://{tmp_path / 'db'}")
    monkeypatch.setenv("HYPERMEM_LLM_BASE_URL", "")
    records = []
    for sample_id in ("conv-a", "conv-b"):
        record = make_testconv_record(sample_id)
        record["qa"] = [{"question": q, "answer": "x", "evidence": e, "category": c} for q, e, c in QA]
        records.append(record)
    path = tmp_path / "labelled.json"
    path.write_text(json.dumps(records))
    return path


def test_fit_ranker_writes_weights_that_queries_then_use(labelled, tmp_path, monkeypatch):
    out = tmp_path / "ranker.json"
    result = CliRunner().invoke(app, ["eval", "fit-ranker", str(labelled), "--out", str(out)])
    assert result.exit_code == 0, result.output
    model = json.loads(out.read_text())
    assert set(model["weights"]) == set(FEATURES)
    assert all(model["weights"][name] >= 0 for name in RANK_FEATURES)
    assert sum(model["weights"][name] for name in RANK_FEATURES) > 0  # the legs' ranks carry the evidence
    monkeypatch.setenv("HYPERMEM_TURN_RANKER_MODEL", str(out))
    answered = CliRunner().invoke(app, ["query", "Where did Omar go camping?", "-m", "conv-a", "--json"])
    assert answered.exit_code == 0, answered.output
    turns = json.loads(answered.output)["turns"]
    assert "D2:7" in [t["dia_id"] for t in turns]
    fused = turns[0]["path"][-2]
    assert fused["ranker"]["bias"] == pytest.approx(model["bias"], abs=1e-4)
    assert fused["logit"] == pytest.approx(sum(fused["ranker"].values()), abs=1e-2)


def test_a_broken_weights_file_is_refused_naming_the_setting(labelled, tmp_path):
    broken = tmp_path / "broken.json"
    broken.write_text('{"bias": 0, "weights": {"hierarchy": 1}}')
    env = {**os.environ, "HYPERMEM_TURN_RANKER_MODEL": str(broken)}
    done = subprocess.run([sys.executable, "-m", "hypermem.cli", "query", "Where?", "-m", "conv-a"],
                          capture_output=True, text=True, env=env, timeout=120)  # fmt: skip
    assert done.returncode == 2
    assert "HYPERMEM_TURN_RANKER_MODEL" in done.stderr and "broken.json" in done.stderr
    assert "Traceback" not in done.stderr


def test_cv_fits_each_fold_without_its_test_conversation(labelled, tmp_path):
    out = tmp_path / "cv"
    result = CliRunner().invoke(app, ["eval", "cv", str(labelled), "--out", str(out)])
    assert result.exit_code == 0, result.output
    cv = json.loads((out / "cv.json").read_text())
    assert [f["test"] for f in cv["folds"]] == [["conv-a"], ["conv-b"]]
    assert all(set(f["ranker"]["weights"]) == set(FEATURES) for f in cv["folds"])
    assert cv["systems"]["hypermem"]["overall"]["questions"] == 2 * len(QA)
    assert 0.5 <= cv["systems"]["hypermem"]["overall"]["evidence_recall"] <= 1.0
    assert set(cv["parts"]) >= {"learned turn ranker (vs RRF)", "topic level", "hierarchy (flat facts)"}
    assert "bm25@8" in cv["systems"]
    assert "test recall" in (out / "cv.md").read_text()


def test_cv_refuses_an_unusable_out_before_running(labelled, tmp_path):
    taken = tmp_path / "a-file"
    taken.write_text("x")
    for out in (taken, tmp_path / "missing" / "cv"):
        result = CliRunner().invoke(app, ["eval", "cv", str(labelled), "--out", str(out), "--no-parts"])
        assert result.exit_code == 2 and "--out" in result.output, result.output
    assert not (tmp_path / "missing").exists()


def test_cv_without_parts_reports_the_folds_only(labelled, tmp_path):
    out = tmp_path / "cv"
    result = CliRunner().invoke(app, ["eval", "cv", str(labelled), "--out", str(out), "--no-parts"])
    assert result.exit_code == 0, result.output
    cv = json.loads((out / "cv.json").read_text())
    assert cv["parts"] == {} and len(cv["folds"]) == 2
    assert "Parts on held-out folds" not in (out / "cv.md").read_text()


def test_cv_on_one_conversation_names_the_file_not_folds(labelled, tmp_path):
    one = tmp_path / "one.json"
    one.write_text(json.dumps(json.loads(labelled.read_text())[:1]))
    result = CliRunner().invoke(app, ["eval", "cv", str(one), "--out", str(tmp_path / "cv"), "--no-parts"])
    assert result.exit_code == 2 and "cross-validation needs 2 or more" in result.output, result.output
    assert "--folds" not in result.output and not (tmp_path / "cv").exists()
