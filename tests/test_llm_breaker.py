"""LLM circuit breaker (issue 9 §7): an unreachable LLM costs one retry budget, then calls fail fast
and the no-LLM twin takes over. The endpoint is a closed local port (a real connection refusal)."""

from __future__ import annotations

import socket

import pytest

from hypermem.llm.breaker import CircuitBreaker
from hypermem.llm.client import LLMClient, LLMError


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]  # closed again when the block ends


def test_unreachable_llm_opens_the_circuit_and_later_calls_fail_fast():
    client = LLMClient(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="none", max_attempts=5,
                       backoff_s=(0.01, 0.02), breaker=CircuitBreaker(failures=3, cooldown_s=600))  # fmt: skip
    with pytest.raises(LLMError, match="after 3 attempts"):
        client.complete_text("first", [{"role": "user", "content": "hi"}])
    assert client.stats["calls"] == 3 and client.breaker.is_open
    for task in ("second", "third"):
        with pytest.raises(LLMError, match="circuit open"):
            client.complete_text(task, [{"role": "user", "content": "hi"}])
    assert client.stats["calls"] == 3  # no request while open


def test_a_success_closes_the_circuit():
    breaker = CircuitBreaker(failures=2, cooldown_s=600)
    breaker.failure()
    assert not breaker.is_open
    breaker.failure()
    assert breaker.is_open and breaker.remaining_s() > 0
    breaker.success()
    assert not breaker.is_open and breaker.failures == 0


def test_facts_fall_back_to_the_no_llm_twin_while_open(hm_service):
    from datetime import datetime

    from hypermem.ingest.elements import TurnElements
    from hypermem.ingest.facts import LLMFactExtractor, TurnFactExtractor
    from hypermem.ingest.keywords import KeywordExtractor
    from hypermem.model import Turn

    client = LLMClient(base_url=f"http://127.0.0.1:{_closed_port()}/v1", model="none", backoff_s=(0.01, 0.02),
                       breaker=CircuitBreaker(failures=1, cooldown_s=600))  # fmt: skip
    twin = TurnFactExtractor(KeywordExtractor())
    turn = Turn(
        "m",
        "m/turn/1",
        "1",
        "Ana",
        "I adopted a puppy named Biscuit yesterday.",
        datetime(2024, 1, 2).isoformat(),
        "s1",
        0,
    )
    expected = twin.extract([turn], [TurnElements()], [None])
    got = LLMFactExtractor(client, twin).extract([turn], [TurnElements()], [None])
    assert [d.content for d in got] == [d.content for d in expected] and client.breaker.is_open
