"""LLMClient against a real HTTP server on a loopback port.

The server below is a small, deterministic implementation of ``POST /v1/chat/completions``
(werkzeug): the real ``openai`` package talks to it over real sockets, so retries, the
json_schema -> json_object fallback, the disk cache, the counters and the concurrency bound
are all exercised for real. Only the model is replaced: it echoes the last user message.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from hypermem.config import Settings
from hypermem.llm.client import LLMClient, LLMError

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}
PROMPT_TOKENS, COMPLETION_TOKENS = 11, 7


class FakeOpenAI:
    """Deterministic chat-completions server.

    ``script`` holds one behaviour per request, consumed in order: an int is an HTTP error
    status, a str is the literal reply content, a (str, str) pair is content and finish_reason. With the script empty, the reply is
    ``{"answer": <last user message>}`` for JSON requests and ``echo: <last user message>``
    for text requests. ``reject_json_schema`` answers 400 to ``response_format=json_schema``.
    ``barrier`` (optional) makes the first requests wait for each other.
    """

    def __init__(self):
        self.script: list[int | str | tuple[str, str]] = []
        self.requests: list[dict] = []
        self.reject_json_schema = False
        self.barrier: threading.Barrier | None = None
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = make_server("127.0.0.1", 0, self._app, threaded=True)
        self.base_url = f"http://127.0.0.1:{self._server.server_port}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    def close(self):
        self._server.shutdown()
        self._thread.join()

    @Request.application
    def _app(self, request: Request) -> Response:
        if request.path != "/v1/chat/completions":
            return Response(status=404)
        body = request.get_json()
        with self._lock:
            self.requests.append(body)
            step = self.script.pop(0) if self.script else None
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.barrier is not None:
                self.barrier.wait(timeout=10)
            return self._reply(body, step)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _reply(self, body: dict, step: int | str | tuple[str, str] | None) -> Response:
        fmt = (body.get("response_format") or {}).get("type")
        if isinstance(step, int):
            return _json_response({"error": {"message": f"scripted {step}", "type": "server_error"}}, step)
        if self.reject_json_schema and fmt == "json_schema":
            return _json_response({"error": {"message": "response_format json_schema unsupported"}}, 400)
        last_user = [m["content"] for m in body["messages"] if m["role"] == "user"][-1]
        content, finish = step if isinstance(step, tuple) else (step, "stop")
        if content is None:
            content = f"echo: {last_user}" if fmt is None else json.dumps({"answer": last_user})
        return _json_response(
            {
                "id": f"chatcmpl-{len(self.requests)}",
                "object": "chat.completion",
                "created": 0,
                "model": body["model"],
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}
                ],
                "usage": {
                    "prompt_tokens": PROMPT_TOKENS,
                    "completion_tokens": COMPLETION_TOKENS,
                    "total_tokens": PROMPT_TOKENS + COMPLETION_TOKENS,
                },
            }
        )


def _json_response(payload: dict, status: int = 200) -> Response:
    return Response(json.dumps(payload), status=status, mimetype="application/json")


@pytest.fixture
def server():
    fake = FakeOpenAI()
    yield fake
    fake.close()


@pytest.fixture
def make_client(server, tmp_path):
    clients = []

    def make(**overrides) -> LLMClient:
        options = dict(
            base_url=server.base_url,
            model="fake-model",
            cache_dir=tmp_path / "cache",
            backoff_s=(0.01, 0.05),
            timeout_s=20,
        )
        options.update(overrides)
        client = LLMClient(**options)
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


def _ask(text: str) -> list[dict]:
    return [{"role": "system", "content": "Answer in JSON."}, {"role": "user", "content": text}]


def _stats(calls=0, cache_hits=0, successes=0, errors=0):
    return {
        "calls": calls,
        "cache_hits": cache_hits,
        "prompt_tokens": PROMPT_TOKENS * successes,
        "completion_tokens": COMPLETION_TOKENS * successes,
        "errors": errors,
    }


def test_json_call_sends_schema_at_temperature_zero(server, make_client):
    client = make_client()
    assert client.complete_json("probe", _ask("hello"), SCHEMA) == {"answer": "hello"}
    (request,) = server.requests
    assert request["temperature"] == 0
    assert request["model"] == "fake-model"
    assert request["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "probe", "schema": SCHEMA, "strict": True},
    }
    assert client.stats == _stats(calls=1, successes=1)


def test_500_is_retried_then_succeeds(server, make_client):
    server.script = [500]
    client = make_client()
    assert client.complete_json("probe", _ask("retry me"), SCHEMA) == {"answer": "retry me"}
    assert len(server.requests) == 2
    assert server.requests[0] == server.requests[1]
    assert client.stats == _stats(calls=2, successes=1, errors=1)


def test_429_and_bad_json_are_retried(server, make_client):
    server.script = [429, "not json at all", '{"wrong": 1}', '```json\n{"answer": "fenced"}\n```']
    client = make_client()
    assert client.complete_json("probe", _ask("x"), SCHEMA) == {"answer": "fenced"}
    assert client.stats == _stats(calls=4, successes=3, errors=3)


def test_final_failure_raises_llm_error_and_caches_nothing(server, make_client):
    server.script = [503, 503, 503]
    client = make_client(max_attempts=3)
    with pytest.raises(LLMError, match=r"'probe' failed after 3 attempts"):
        client.complete_json("probe", _ask("doomed"), SCHEMA)
    assert client.stats == _stats(calls=3, errors=3)
    # Nothing was cached: the same call goes to the server again (and now succeeds).
    assert client.complete_json("probe", _ask("doomed"), SCHEMA) == {"answer": "doomed"}
    assert len(server.requests) == 4


def test_reply_cut_at_max_tokens_is_not_retried(server, make_client):
    server.script = [('{"answer": "this never ends', "length")]
    client = make_client(max_tokens=5)
    with pytest.raises(LLMError, match="max_tokens=5"):
        client.complete_json("probe", _ask("x"), SCHEMA)
    assert server.requests[0]["max_tokens"] == 5
    assert client.stats == _stats(calls=1, successes=1, errors=1)


def test_non_transient_error_is_not_retried(server, make_client):
    server.script = [401]
    client = make_client()
    with pytest.raises(LLMError, match="'answer' failed"):
        client.complete_text("answer", _ask("who?"))
    assert len(server.requests) == 1
    assert client.stats == _stats(calls=1, errors=1)


def test_rejected_json_schema_falls_back_to_json_object(server, make_client):
    server.reject_json_schema = True
    client = make_client()
    assert client.complete_json("probe", _ask("one"), SCHEMA) == {"answer": "one"}
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_object"]
    hint = server.requests[1]["messages"][-1]
    assert hint["role"] == "system" and json.dumps(SCHEMA) in hint["content"]
    # The client remembers: the next call goes straight to json_object.
    assert client.complete_json("probe", _ask("two"), SCHEMA) == {"answer": "two"}
    assert [r["response_format"]["type"] for r in server.requests[2:]] == ["json_object"]
    assert client.stats == _stats(calls=3, successes=2, errors=1)


def test_other_bad_request_does_not_switch_to_json_object(server, make_client):
    server.script = [400]  # "scripted 400": says nothing about the response format
    client = make_client()
    with pytest.raises(LLMError, match="scripted 400"):
        client.complete_json("probe", _ask("too long"), SCHEMA)
    assert client.complete_json("probe", _ask("next"), SCHEMA) == {"answer": "next"}
    assert [r["response_format"]["type"] for r in server.requests] == ["json_schema", "json_schema"]


def test_fallback_output_is_validated_against_the_schema(server, make_client):
    server.reject_json_schema = True
    # One step per request: the json_schema request is rejected (its step unused), then an empty
    # reply, then JSON that breaks the schema, then the default valid reply.
    server.script = ['{"unused": true}', "", '{"answer": 3}']
    client = make_client()
    assert client.complete_json("probe", _ask("valid"), SCHEMA) == {"answer": "valid"}
    assert client.stats == _stats(calls=4, successes=3, errors=3)


def test_disk_cache_makes_a_rerun_free(server, make_client):
    first = make_client()
    assert first.complete_json("probe", _ask("cache me"), SCHEMA) == {"answer": "cache me"}
    assert first.complete_text("answer", _ask("cache me")) == "echo: cache me"
    first.close()

    rerun = make_client()  # same cache directory, new process-level client
    assert rerun.complete_json("probe", _ask("cache me"), SCHEMA) == {"answer": "cache me"}
    assert rerun.complete_text("answer", _ask("cache me")) == "echo: cache me"
    assert len(server.requests) == 2
    assert rerun.stats == _stats(cache_hits=2)


@pytest.mark.parametrize(
    "change",
    [
        {"model": "other-model"},
        {"task": "other-task"},
        {"messages": _ask("cache me!")},
        {"schema": {**SCHEMA, "properties": {"answer": {"type": "string", "description": "d"}}}},
    ],
)
def test_cache_key_covers_model_task_messages_and_schema(server, make_client, change):
    make_client().complete_json("probe", _ask("cache me"), SCHEMA)
    client = make_client(model=change.get("model", "fake-model"))
    client.complete_json(
        change.get("task", "probe"), change.get("messages", _ask("cache me")), change.get("schema", SCHEMA)
    )
    assert len(server.requests) == 2
    assert client.stats["cache_hits"] == 0


def test_no_cache_dir_means_every_call_goes_out(server, make_client):
    client = make_client(cache_dir=None)
    client.complete_text("answer", _ask("a"))
    client.complete_text("answer", _ask("a"))
    assert client.stats == _stats(calls=2, successes=2)


def test_map_keeps_order_and_runs_concurrently(server, make_client):
    server.barrier = threading.Barrier(2)  # the first two requests wait for each other: needs 2 in flight
    client = make_client(concurrency=2, cache_dir=None)
    words = [f"w{i}" for i in range(6)]
    out = client.map(lambda w: client.complete_json("probe", _ask(w), SCHEMA)["answer"], words)
    assert out == words
    assert server.max_in_flight == 2
    assert client.stats == _stats(calls=6, successes=6)


def test_concurrency_is_bounded_across_caller_threads(server, make_client):
    client = make_client(concurrency=2, cache_dir=None)
    with ThreadPoolExecutor(max_workers=6) as pool:
        out = list(pool.map(lambda i: client.complete_text("answer", _ask(str(i))), range(12)))
    assert out == [f"echo: {i}" for i in range(12)]
    assert 1 <= server.max_in_flight <= 2


def test_from_settings(server, tmp_path):
    settings = Settings(
        llm_base_url=server.base_url,
        llm_model="fake-model",
        llm_concurrency=3,
        llm_cache_dir=tmp_path / "c",
        store=f"falkordb://{tmp_path / 'db'}",
    )
    with LLMClient.from_settings(settings) as client:
        assert client.concurrency == 3 and client.model == "fake-model"
        assert client.complete_text("answer", _ask("hi")) == "echo: hi"
    assert (tmp_path / "c").is_dir()
    with pytest.raises(LLMError, match="HYPERMEM_LLM_BASE_URL"):
        LLMClient.from_settings(Settings(llm_base_url=None))


def test_no_llm_configured_imports_nothing_from_the_llm_package():
    code = (
        "import sys, hypermem.service, hypermem.cli;"
        "loaded = sorted(m for m in sys.modules if m.startswith('hypermem.llm') or m == 'openai');"
        "print(','.join(loaded))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
