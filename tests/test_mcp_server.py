"""The MCP server end to end with the ``mcp`` SDK's own client, on the session's embedded FalkorDB.

stdio: ``hypermem mcp`` started as a subprocess on the same store directory (the embedded server
is shared by every process on one path), reading the test conversation. Streamable HTTP:
``hypermem mcp --http`` with the JSON API's tenant keys: a request without a key or with an
unknown one gets 401, a tenant reads only its own memories.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from importlib.metadata import version
from pathlib import Path

import anyio
import httpx2
import pytest
from engines import engine_env
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.types import LATEST_PROTOCOL_VERSION, JSONRPCMessage, jsonrpc_message_adapter

from hypermem import browse
from hypermem.mcp_server import _answer, unreadable_line_error
from hypermem.records import keys, owners

HYPERMEM = str(Path(sys.executable).with_name("hypermem"))
QUESTION = "What is the name of Omar's puppy?"
TOOLS = {"list_memories", "ingest_messages", "query_memory", "explain_query", "list_topics", "person_timeline"}
MESSAGES = [
    {"message_id": "1", "speaker": "Caroline", "text": "I adopted a grey cat called Pixel from the shelter yesterday!",
     "timestamp": "2023-07-02T18:00:00", "session_id": "s1"},
    {"message_id": "2", "speaker": "Melanie", "text": "Lovely! I am off to a pottery workshop in Lisbon next week.",
     "timestamp": "2023-07-02T18:01:00", "session_id": "s1"},
]  # fmt: skip


def server_env(settings) -> dict[str, str]:
    """The environment of a server process on the session's store (either engine), no LLM."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HYPERMEM_")}
    return {**env, **engine_env(settings)}


def data(result) -> dict:
    """A successful tool call's structured result."""
    assert not result.is_error, result.content
    return result.structured_content


def error(result) -> str:
    assert result.is_error
    return result.content[0].text


async def stdio_session(settings, tmp_path: Path, memory_id: str) -> dict:
    params = StdioServerParameters(command=HYPERMEM, args=["mcp"], env=server_env(settings), cwd=str(tmp_path))
    out: dict = {}
    async with Client(params, read_timeout_seconds=300) as client:
        out["tools"] = {tool.name for tool in (await client.list_tools()).tools}
        out["memories"] = data(await client.call_tool("list_memories", {}))["memories"]
        out["topics"] = data(await client.call_tool("list_topics", {"memory_id": memory_id}))["topics"]
        out["timeline"] = data(await client.call_tool("person_timeline", {"memory_id": memory_id, "person": "Nadia"}))
        out["query"] = data(await client.call_tool("query_memory", {"memory_id": memory_id, "query": QUESTION}))
        out["explained"] = data(await client.call_tool("explain_query", {"query_id": out["query"]["query_id"]}))
        out["window"] = data(await client.call_tool(
            "person_timeline", {"memory_id": memory_id, "person": "Nadia", "from": "2000-01-01", "to": "2000-01-31"}))  # fmt: skip
        out["bad_from"] = error(await client.call_tool(
            "person_timeline", {"memory_id": memory_id, "person": "Nadia", "from": "garbage"}))  # fmt: skip
        out["bad_order"] = error(await client.call_tool(
            "person_timeline", {"memory_id": memory_id, "person": "Nadia", "from": "2023-05-02", "to": "2023-05-01"}))  # fmt: skip
        out["unknown"] = error(await client.call_tool("list_topics", {"memory_id": "no-such-memory"}))
        out["nobody"] = error(await client.call_tool("person_timeline", {"memory_id": memory_id, "person": "Zelda"}))
        out["bad_ingest"] = error(await client.call_tool(
            "ingest_messages", {"memory_id": "mcp-stdio", "messages": [{"message_id": "1", "speaker": "A"}]}))  # fmt: skip
        out["bad_id"] = error(
            await client.call_tool("ingest_messages", {"memory_id": "../x", "messages": MESSAGES[:1]})
        )
        out["extra"] = error(await client.call_tool(
            "person_timeline", {"memory_id": memory_id, "person": "Caroline", "start": "2023-99-01", "x": 1}))  # fmt: skip
        out["no_person"] = error(await client.call_tool("person_timeline", {"memory_id": memory_id}))
        out["long_query_id"] = error(await client.call_tool("explain_query", {"query_id": "q" * 10_000}))
        out["long_memory_id"] = error(await client.call_tool("list_topics", {"memory_id": "m" * 100_000}))
        out["text_budget"] = error(await client.call_tool(
            "query_memory", {"memory_id": memory_id, "query": QUESTION, "turn_budget": "8"}))  # fmt: skip
        out["bool_limit"] = error(await client.call_tool("list_topics", {"memory_id": memory_id, "limit": True}))
        out["over_page"] = error(await client.call_tool("list_topics", {"memory_id": memory_id, "limit": 501}))
        out["full_page"] = data(await client.call_tool("list_topics", {"memory_id": memory_id, "limit": 500}))["topics"]
        out["text_offset"] = error(await client.call_tool("list_topics", {"memory_id": memory_id, "offset": "2"}))
        try:
            await client.read_resource("hypermem://memories/nope/topics")
        except Exception as exc:  # the SDK's protocol error: its text is what the client shows
            out["no_resource"] = str(exc)
        resource = await client.read_resource(f"hypermem://memories/{memory_id}/topics")
        out["resource_topics"] = json.loads(resource.contents[0].text)["topics"]
        templates = await client.list_resource_templates()
        out["templates"] = {t.uri_template for t in templates.resource_templates}
    return out


def test_stdio_server_answers_with_explained_evidence(hm_service, hm_ingested, tmp_path):
    memory = hm_ingested.memory_id
    out = anyio.run(stdio_session, hm_service.settings, tmp_path, memory)
    assert out["tools"] == TOOLS
    assert memory in out["memories"]
    assert out["topics"] == browse.topics(hm_service.store, memory, limit=20)
    assert out["resource_topics"] == out["topics"]
    assert "hypermem://memories/{memory_id}/topics" in out["templates"]
    assert out["timeline"]["items"] == browse.timeline(hm_service.store, memory, "Nadia")

    result = out["query"]
    turns = {t["dia_id"]: t for t in result["turns"]}
    assert "Biscuit" in turns["D1:4"]["text"]
    levels = [step["level"] for step in turns["D1:4"]["path"]]
    assert levels == ["query", "episode", "hyperedge", "fact", "fused", "turn"]  # the topic level is off by default
    assert result["stop"]["rule"] and result["stop"]["cut_at"] <= result["stop"]["considered"]
    assert result["answer"] is None  # no LLM configured
    assert out["explained"]["turns"] == result["turns"] and out["explained"]["query"] == QUESTION

    assert out["timeline"]["items"] and out["window"]["items"] == []  # the window applies: nothing in 2000
    assert out["bad_from"].endswith("from: Not a valid date.")
    assert out["bad_order"].endswith("to: must not be before 'from'")
    assert out["unknown"].endswith("memory_id: no memory 'no-such-memory'")
    assert "person: no person 'Zelda' in memory" in out["nobody"]
    assert "ingest_messages: messages[0].text: Missing data" in out["bad_ingest"]  # a field path, not nested JSON
    assert "messages[0].timestamp: Missing data for required field." in out["bad_ingest"]
    assert "mcp-stdio" not in hm_service.store.memory_ids()  # refused input stored nothing
    assert "memory_id: must be 1-128 characters" in out["bad_id"]
    assert "../x" not in owners.all_memories(hm_service.store)
    assert out["extra"].endswith("unknown argument(s): 'start', 'x'")  # as the JSON API's 422 for unknown fields
    assert out["no_person"].endswith("person: Field required")  # field: problem, no pydantic help link
    assert "query_id: String should match pattern" in out["long_query_id"]  # the HTTP route's rule
    assert "q" * 200 not in out["long_query_id"]  # refused, not echoed whole
    assert "memory_id: must be 1-128 characters" in out["long_memory_id"] and len(out["long_memory_id"]) < 500
    assert out["text_budget"].endswith("turn_budget: Input should be a valid integer")  # strict, as the JSON API
    assert out["bool_limit"].endswith("limit: Input should be a valid integer")
    assert out["over_page"].endswith("limit: Input should be less than or equal to 500")  # as HTTP's ?limit=501
    assert out["full_page"] == browse.topics(hm_service.store, memory, limit=500)
    assert out["text_offset"].endswith("offset: Input should be a valid integer")
    assert out["no_resource"] == "no memory 'nope'"


INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
    "protocolVersion": LATEST_PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})  # fmt: skip


def raw_answers(settings, tmp_path: Path, lines: list[str], last_id: int) -> list[dict]:
    """``hypermem mcp``'s answers to raw stdin ``lines`` sent after the ``initialize`` handshake, read until the one
    to request ``last_id`` (sent last: every line before it is read by then). A server that goes silent is killed
    after 300 s (model loading on a busy machine; not a timing assertion), failing the test instead of hanging it."""
    process = subprocess.Popen(
        [HYPERMEM, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=server_env(settings), cwd=tmp_path, text=True,
    )  # fmt: skip
    answers: list[dict] = []
    silence = threading.Timer(300, process.kill)
    silence.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        handshake = [INITIALIZE, '{"jsonrpc":"2.0","method":"notifications/initialized"}']
        process.stdin.write("\n".join([*handshake, *lines]) + "\n")
        process.stdin.flush()
        while not any(a.get("id") == last_id for a in answers):
            line = process.stdout.readline()
            assert line, f"the server closed stdout (or went silent) with {answers[-1:]} the last answer"
            answers.append(json.loads(line))
    finally:
        silence.cancel()
        process.stdin.close()
        process.wait(timeout=60)
    return answers


def call(request_id: int, tool: str, arguments: object) -> str:
    """A raw ``tools/call`` line; a lone surrogate is written as its escape."""
    return json.dumps({"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
                       "params": {"name": tool, "arguments": arguments}})  # fmt: skip


def test_stdio_answers_every_line_it_cannot_read(hm_service, hm_ingested, tmp_path):
    """Raw JSON-RPC lines: one the SDK cannot read gets an error (with its id when it has one) instead of no answer
    at all, and a NUL in a person or an offset past the HTTP route's bound fails naming the field."""
    memory = hm_ingested.memory_id
    lines = [
        call(1, "person_timeline", {"memory_id": memory, "person": "Caroline\ud800"}),
        "{broken json",
        "[1, 2]",
        call(2, "person_timeline", {"memory_id": memory, "person": "Caroline\x00"}),
        call(3, "list_topics", {"memory_id": memory, "offset": 2**63 - 1}),
        call(4, "ingest_messages", {"memory_id": "raw-mcp", "messages": [5]}),
        call(5, "ingest_messages", {"memory_id": "raw-mcp", "messages": [MESSAGES[0], MESSAGES[0]]}),
        call(6, "list_memories", {}),
    ]
    answers = raw_answers(hm_service.settings, tmp_path, lines, last_id=6)
    by_id = {a["id"]: a for a in answers if a.get("id") is not None}
    assert by_id[1]["error"]["code"] == -32700 and "unpaired surrogate" in by_id[1]["error"]["message"]
    unidentified = [a["error"] for a in answers if a.get("id") is None]
    assert [e["code"] for e in unidentified] == [-32700, -32600]  # the broken line, then the JSON that is no message
    assert "key must be a string" in unidentified[0]["message"]
    assert (
        by_id[2]["result"]["isError"] and "person: contains a NUL character" in by_id[2]["result"]["content"][0]["text"]
    )
    assert (
        by_id[3]["result"]["isError"]
        and "offset: Input should be less than or equal to 1000000" in (by_id[3]["result"]["content"][0]["text"])
    )
    assert by_id[4]["result"]["content"][0]["text"].endswith("messages[0]: Input should be a valid dictionary")
    duplicate = by_id[5]["result"]["content"][0]["text"]
    assert duplicate.endswith("ingest_messages: messages[1].message_id: repeats an earlier message_id in this batch")
    assert memory in by_id[6]["result"]["structuredContent"]["memories"]  # the server went on answering


SURROGATE_ERROR = "Parse error: a string holds an unpaired surrogate escape (text must be valid Unicode)"
HOSTILE_IDS = ["null", '{"a":1}', "1.5", "2.0", "1e3", "true", "[1]"]


def test_stdio_answers_a_hostile_envelope_and_goes_on(hm_service, tmp_path):
    """A lone-surrogate id, params nested past every JSON reader's depth, ids that are no string or integer, a bad
    envelope around a readable id, and tools/call params of the wrong shape: each line is answered, naming its
    problem, with the line's id when that is a valid one; the server answers the request after them all."""

    def envelope(request_id: str, fields: str = '"jsonrpc":"2.0","method":"tools/list"') -> str:
        return f'{{"id":{request_id},{fields}}}'

    lines = [
        envelope('"\\ud800"'),
        envelope("1", '"jsonrpc":"2.0","method":"tools/list","params":' + "[" * 2000 + "]" * 2000),
        envelope("10", '"jsonrpc":"2.0","method":"tools/list","params":{"deep":' + "[" * 600 + "]" * 600 + "}"),
        *map(envelope, HOSTILE_IDS),
        envelope("11", '"jsonrpc":"1.0","method":"tools/list"'),
        envelope("12", '"method":"tools/list"'),
        envelope("13", '"jsonrpc":"2.0","method":5'),
        envelope("14", '"jsonrpc":"2.0","method":"tools/list","params":"x"'),
        envelope("15", '"jsonrpc":"2.0","method":"tools/list","params":[]'),
        call(16, "list_memories", [1, 2]),
        envelope("17", '"jsonrpc":"2.0","method":"tools/call","params":{"arguments":{}}'),
        call(18, "list_memories", {}),
    ]
    answers = raw_answers(hm_service.settings, tmp_path, lines, last_id=18)
    surrogate, too_deep, *bad_ids = [(a["error"]["code"], a["error"]["message"]) for a in answers if a["id"] is None]
    assert surrogate == (-32700, SURROGATE_ERROR)
    assert too_deep[0] == -32700 and "recursion limit exceeded" in too_deep[1]  # Python's reader fails too: no id
    assert bad_ids == [(-32600, "Invalid Request: id: must be a string or an integer")] * len(HOSTILE_IDS)
    by_id = {a["id"]: a for a in answers if a["id"] is not None}
    assert by_id[10]["error"]["code"] == -32700 and "recursion limit exceeded" in by_id[10]["error"]["message"]
    assert "surrogate" not in by_id[10]["error"]["message"]
    assert {i: (by_id[i]["error"]["code"], by_id[i]["error"]["message"]) for i in range(11, 18)} == {
        11: (-32600, "Invalid Request: jsonrpc: Input should be '2.0'"),
        12: (-32600, "Invalid Request: jsonrpc: Field required"),
        13: (-32600, "Invalid Request: method: Input should be a valid string"),
        14: (-32600, "Invalid Request: params: Input should be an object"),
        15: (-32600, "Invalid Request: params: Input should be an object"),
        16: (-32602, "Invalid request parameters: arguments: Input should be a valid dictionary"),
        17: (-32602, "Invalid request parameters: name: Field required"),
    }
    assert "memories" in by_id[18]["result"]["structuredContent"]  # the server went on answering


def verdict(line: str) -> JSONRPCMessage | Exception:
    """What the SDK's stdio reader makes of ``line``: the message, or the exception it raises."""
    try:
        return jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:
        return exc


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":' + "[" * 300 + "]" * 300 + "}}",
         (1, -32700, "Parse error: recursion limit exceeded at line 1 column 251")),
        ('{"jsonrpc":"2.0","id":2,"method":"x","params":{"\\udc00":1}}',  # a surrogate in a key
         (2, -32700, SURROGATE_ERROR)),
        ('{"jsonrpc":"2.0","id":"\\ud83d\\ude00","method":"x","params":{"a":' + "[" * 300 + "]" * 300 + "}}",
         ("\U0001f600", -32700, "Parse error: recursion limit exceeded at line 1 column 264")),  # a pair is Unicode
        ('{"jsonrpc":"2.0","id":9,"result":5}',  # a response's id is the server's own: not echoed
         (None, -32600, "Invalid Request: result: Input should be an object")),
        ('{"jsonrpc":"2.0","id":9}', (9, -32600, "Invalid Request: method: Field required")),
        ('{"jsonrpc":"2.0","id":true,"method":5}',
         (None, -32600, "Invalid Request: id: must be a string or an integer; method: Input should be a valid string")),
        ("[]", (None, -32600, "Invalid Request: a message must be a JSON object (batches are not supported)")),
    ],
)  # fmt: skip
def test_unreadable_line_error_names_what_is_wrong(line, expected):
    error = unreadable_line_error(line, verdict(line))
    assert error is not None
    assert (error.id, error.error.code, error.error.message) == expected


def test_unreadable_line_error_serves_a_readable_message():
    for line in ('{"jsonrpc":"2.0","id":"","method":"x"}', '{"jsonrpc":"2.0","method":"notifications/initialized"}'):
        assert unreadable_line_error(line, verdict(line)) is None


def test_an_answer_that_cannot_be_built_is_logged_and_the_line_still_answered(caplog):
    """Any failure while answering (here: no line left to match the verdict with) is logged; a line the SDK could not
    read still gets -32600 with id null, one it read is served as read."""
    error = _answer(deque(), verdict("[1]"))
    assert error is not None and (error.id, error.error.code, error.error.message) == (None, -32600, "Invalid Request")
    assert _answer(deque(), verdict('{"jsonrpc":"2.0","method":"notifications/initialized"}')) is None
    assert [r.getMessage() for r in caplog.records] == ["could not answer stdin line ''"] * 2


# --- streamable HTTP with tenant keys ---------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="module")
def http_server(hm_service, tmp_path_factory):
    """``hypermem mcp --http`` on a free loopback port; yields its URL once it accepts connections."""
    port = free_port()
    log = tmp_path_factory.mktemp("mcp-http") / "server.log"
    with log.open("w") as sink:
        process = subprocess.Popen(
            [HYPERMEM, "mcp", "--http", "--port", str(port)], env=server_env(hm_service.settings),
            cwd=log.parent, stdout=sink, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 300  # model loading on a busy machine; not a timing assertion
        while True:
            assert process.poll() is None, log.read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, log.read_text()
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=60)


@pytest.fixture(scope="module")
def tenant_keys(hm_service) -> dict[str, str]:
    return {name: keys.create_key(hm_service.store, f"mcp-{name}")["key"] for name in ("acme", "globex")}


async def http_session(url: str, key: str | None, calls: list[tuple[str, dict]]) -> list:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=300) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]


def test_http_refuses_requests_without_a_valid_tenant_key(http_server, tenant_keys):
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "test", "version": "0"}}}  # fmt: skip
    for headers in ({}, {"Authorization": "Bearer hmk_0000000000000000_forged"}, {"Authorization": "Bearer not-a-key"}):
        response = httpx2.post(
            http_server, json=initialize, headers={"Accept": "application/json, text/event-stream", **headers}
        )
        assert response.status_code == 401, (headers, response.text)
        assert response.headers["WWW-Authenticate"].startswith("Bearer")
    with pytest.raises(Exception):  # noqa: B017 - the SDK raises its own ExceptionGroup: it cannot even connect without a key
        anyio.run(http_session, http_server, None, [("list_memories", {})])
    accepted = httpx2.post(http_server, json=initialize, headers={
        "Accept": "application/json, text/event-stream", "Authorization": f"Bearer {tenant_keys['acme']}"})  # fmt: skip
    assert accepted.status_code == 200, accepted.text
    assert f'"serverInfo":{{"name":"hypermem","version":"{version("hypermem")}"' in accepted.text.replace(" ", "")


def test_http_tenant_ingests_queries_and_sees_only_its_memories(http_server, tenant_keys, hm_service, hm_ingested):
    memory = "mcp-http-chat"
    ingest, listed, query, foreign = anyio.run(http_session, http_server, tenant_keys["acme"], [
        ("ingest_messages", {"memory_id": memory, "messages": MESSAGES}),
        ("list_memories", {}),
        ("query_memory", {"memory_id": memory, "query": "What is the name of Caroline's cat?", "turn_budget": 3}),
        ("list_topics", {"memory_id": hm_ingested.memory_id}),  # exists, but acme does not own it
    ])  # fmt: skip
    report = data(ingest)["report"]
    assert report["turns"] == 2 and report["episodes"] == 1
    assert data(listed)["memories"] == [memory]
    turns = data(query)["turns"]
    assert turns[0]["dia_id"] == "1" and "Pixel" in turns[0]["text"]
    assert error(foreign).endswith(f"memory_id: no memory {hm_ingested.memory_id!r}")
    assert owners.owner_of(hm_service.store, memory)["tenant"] == "mcp-acme"

    query_id = data(query)["query_id"]
    listed, topics, explained = anyio.run(http_session, http_server, tenant_keys["globex"], [
        ("list_memories", {}), ("list_topics", {"memory_id": memory}), ("explain_query", {"query_id": query_id}),
    ])  # fmt: skip
    assert data(listed)["memories"] == []
    assert error(topics).endswith(f"memory_id: no memory {memory!r}")
    assert error(explained).endswith(f"query_id: no query {query_id!r}")


def test_http_ingest_with_a_bad_memory_id_claims_nothing(http_server, tenant_keys, hm_service):
    """The memory id is checked before the tenant claims it: no owner record of an id the API cannot address."""
    calls = [("ingest_messages", {"memory_id": bad, "messages": MESSAGES[:1]}) for bad in ("../y", "bad id")]
    *refused, listed = anyio.run(http_session, http_server, tenant_keys["acme"], [*calls, ("list_memories", {})])
    for result in refused:
        assert "memory_id: must be 1-128 characters of ASCII letters, digits" in error(result)
    assert not {"../y", "bad id"} & set(data(listed)["memories"])
    assert owners.owner_of(hm_service.store, "../y") is None and owners.owner_of(hm_service.store, "bad id") is None
