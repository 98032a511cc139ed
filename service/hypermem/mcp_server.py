"""hypermem as an MCP server (Model Context Protocol), built on the ``mcp`` SDK's ``MCPServer``.

Tools: ``list_memories``, ``ingest_messages``, ``query_memory`` (evidence with each item's
explanation path inline, the stop decision, the context, and an answer when an LLM is
configured), ``explain_query`` (a past query's stored result), ``list_topics`` and
``person_timeline``. Resources: ``hypermem://memories`` and ``hypermem://memories/{memory_id}/topics``
(JSON). Results have the shapes of the JSON API (``docs/api.md``); a query is stored as a
``QueryRecord`` exactly as ``POST /v1/memories/{memory_id}/query`` stores it, so either side
can explain the other's queries.

Transports (``hypermem mcp``): stdio, for a local agent that runs the server itself, sees every
memory of the store as the CLI does; streamable HTTP (``--http``) needs a tenant key of the
JSON API (``Authorization: Bearer hmk_...``, checked by ``hypermem.records.keys``), refuses any other
request with 401, and gives a tenant only its own memories (another tenant's memory is "not
found", as in the JSON API). A tool's bad input fails the call with a message naming the field
(``field: problem``), an argument the tool does not take too; reading the topics of an unknown
memory fails with "no memory ...". Request params the SDK refuses (``tools/call`` ``arguments`` that are
no object, no ``name``) fail with -32602 naming the field (``name_invalid_params``); on stdio every line
gets an answer, a line that is no JSON-RPC message a -32700 or -32600 naming its problem
(``unreadable_line_error``).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import version
from typing import IO, Annotated, Any, cast

import anyio
import anyio.to_thread
from marshmallow import ValidationError
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ResourceNotFoundError, ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ErrorData,
    InputRequiredResult,
    JSONRPCError,
    JSONRPCMessage,
    JSONRPCNotification,
    JSONRPCRequest,
    JSONRPCResponse,
    RequestId,
)
from pydantic import AnyHttpUrl, Field
from pydantic import ValidationError as ArgumentsError

from hypermem import browse
from hypermem.api.schemas import IngestRequestSchema, TimelineArgsSchema
from hypermem.ingest.pipeline import check_memory_id
from hypermem.ingest.turns import IngestInputError, validate
from hypermem.model import MEMORY_ID_PATTERN, Message
from hypermem.records import keys, owners, queries
from hypermem.records.jobs import IngestJobs
from hypermem.retrieve.config import SEARCH_FIELDS
from hypermem.retrieve.pipeline import QueryError
from hypermem.service import MemoryService, UnknownMemory

INSTRUCTIONS = (
    "hypermem is a hypergraph memory of conversations (topics -> episodes -> facts -> dialogue turns). "
    "Call query_memory to get the evidence turns for a question, each with the path that found it; "
    "ingest_messages to remember new dialogue; list_topics and person_timeline to browse."
)
MCP_PATH = "/mcp"
_SURROGATE = re.compile("[\ud800-\udfff]")

logger = logging.getLogger(__name__)


def _field_problems(errors: object, path: str = "") -> str:
    """marshmallow's nested error messages as ``field: problem`` parts joined by "; ", each field a path
    ("messages[0].timestamp: Missing data for required field.") instead of nested JSON."""
    if isinstance(errors, dict):
        parts = []
        for key, value in errors.items():
            parts.append(_field_problems(value, _field_step(path, key)))
        return "; ".join(parts)
    if isinstance(errors, list):
        return f"{path}: {' '.join(map(str, errors))}"
    return f"{path}: {errors}"


def unreadable_line_error(line: str, verdict: JSONRPCMessage | Exception) -> JSONRPCError | None:
    """The JSON-RPC error answering stdin line ``line``, given the SDK reader's ``verdict`` on it (the message it read,
    or the exception it raised), or None for a line the SDK serves as it read it:

    - -32700 ``Parse error: ...`` for a line that is no JSON, in the JSON parser's words (``key must be a string``,
      ``recursion limit exceeded``), or whose JSON holds an unpaired surrogate escape (``"\\ud800"``: no Unicode text);
    - -32600 ``Invalid Request: field: problem; ...`` for JSON that is no JSON-RPC message: no object (a batch too),
      ``jsonrpc`` not "2.0", a ``method`` that is no string, ``params`` that are no object, or an ``id`` that is no
      string or integer (``id: must be a string or an integer``; the SDK reads such a request as a notification and
      would drop it unanswered).

    The error carries the line's ``id`` when it is a valid one (an integer, or a string of valid Unicode) and the line
    is no response (one with a ``result`` or an ``error`` and no ``method``), else null.
    """
    if not isinstance(verdict, Exception | JSONRPCNotification):
        return None
    found = _python_json(line)
    message = found if isinstance(found, dict) else {}
    request_id = message.get("id")
    valid_id = type(request_id) is int or (isinstance(request_id, str) and not _SURROGATE.search(request_id))
    # a response's id is the server's own: echoed, it could pass for the answer to the client's request of that id
    reply_id = request_id if valid_id and ("method" in message or not {"result", "error"} & message.keys()) else None
    problems = ["id: must be a string or an integer"] if "id" in message and not valid_id else []
    if isinstance(verdict, JSONRPCNotification):
        return _error(None, INVALID_REQUEST, f"Invalid Request: {problems[0]}") if problems else None
    first = verdict.errors()[0] if isinstance(verdict, ArgumentsError) and verdict.error_count() else None
    if first is not None and first["type"] == "json_invalid":
        if _holds_surrogate(found):
            text = "a string holds an unpaired surrogate escape (text must be valid Unicode)"
        else:
            text = first.get("ctx", {}).get("error", "not JSON")
        return _error(reply_id, PARSE_ERROR, f"Parse error: {text}")
    if not isinstance(found, dict):
        problems = ["a message must be a JSON object (batches are not supported)"]
    elif isinstance(verdict, ArgumentsError):
        problems += _envelope_problems(message, verdict)
    return _error(reply_id, INVALID_REQUEST, "Invalid Request" + (f": {'; '.join(problems)}" if problems else ""))


def _error(request_id: RequestId | None, code: int, message: str) -> JSONRPCError:
    return JSONRPCError(jsonrpc="2.0", id=request_id, error=ErrorData(code=code, message=message))


def _python_json(line: str) -> object:
    """``line`` read by Python's JSON reader, which takes lone surrogates (so the id of such a line is read); None
    when it cannot read it either (no JSON, nested past Python's recursion limit, an integer of over 4300 digits)."""
    try:
        return json.loads(line)
    except (ValueError, RecursionError):
        return None


def _holds_surrogate(value: object) -> bool:
    """Whether a string of the JSON ``value`` (a key too) holds a lone surrogate; walks without recursion, so any
    depth Python's JSON reader returns is safe."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, dict):
            pending += [*item, *item.values()]
        elif isinstance(item, list):
            pending += item
        elif isinstance(item, str) and _SURROGATE.search(item):
            return True
    return False


def _envelope_problems(message: dict, error: ArgumentsError) -> list[str]:
    """The SDK's complaints (``field: problem``) about the kind of JSON-RPC message ``message`` means to be (a
    request when it has a ``method`` and an ``id``, a notification with a ``method`` only, else an error or a
    response); the ``id`` is left out, ``unreadable_line_error`` names its problem itself."""
    kind: type
    if "method" in message:
        kind = JSONRPCRequest if "id" in message else JSONRPCNotification
    else:
        kind = JSONRPCError if "error" in message else JSONRPCResponse if "result" in message else JSONRPCRequest
    problems = (
        f"{_field_path(e['loc'][1:])}: {e['msg']}"
        for e in error.errors()
        if e["loc"][:1] == (kind.__name__,) and e["loc"][1:2] != ("id",)
    )
    return list(dict.fromkeys(problems))


def _field_step(path: str, key: object) -> str:
    """``path`` one key further: ``messages`` + 0 is ``messages[0]``, ``messages[0]`` + "text" is ``messages[0].text``."""
    if isinstance(key, int) or str(key).isdigit():
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _field_path(loc: tuple) -> str:
    """A pydantic error's location as the field paths of ``_field_problems`` read: ``messages[0].text``."""
    path = ""
    for part in loc:
        path = _field_step(path, part)
    return path


async def name_invalid_params(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
    """Server middleware: a request whose params the SDK refuses (a pydantic ``ValidationError``, which the SDK answers
    with a bare -32602 "Invalid request parameters") fails with -32602 naming each field (``MCPError``):
    ``Invalid request parameters: arguments: Input should be a valid dictionary; name: Field required``."""
    try:
        return await call_next(ctx)
    except ArgumentsError as exc:
        problems = (
            f"{_field_path(e['loc'][1:] if e['loc'][:1] == ('params',) else e['loc'])}: {e['msg']}"
            for e in exc.errors()
        )
        raise MCPError(INVALID_PARAMS, f"Invalid request parameters: {'; '.join(dict.fromkeys(problems))}") from exc


class _WireLines(anyio.AsyncFile[str]):
    """stdin's text as the SDK's stdio reader reads it, each line kept in ``lines`` until taken: the reader hands on
    one verdict per line (the message, or the exception), in order, but not the line itself."""

    def __init__(self, text: IO[str]):
        super().__init__(text)
        self.lines: deque[str] = deque()

    async def readline(self) -> str:
        """The next line (kept in ``lines`` too); "" at the end of stdin."""
        line = await super().readline()
        if line:
            self.lines.append(line)
        return line


@contextmanager
def _stdin_wire() -> Iterator[_WireLines]:
    """stdin as ``_WireLines`` over a duplicate of fd 0 while fd 0 itself reads the null device (as the SDK diverts
    it: a handler or child that reads stdin gets EOF, not a client's line); fd 0 is the wire again on exit.

    The duplicate stays open: a worker thread may still be blocked reading it after the transport exits.
    """
    wire = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        yield _WireLines(open(wire, encoding="utf-8", errors="replace", closefd=False))  # noqa: SIM115
    finally:
        os.dup2(wire, 0)


def _answer(lines: deque[str], verdict: JSONRPCMessage | Exception) -> JSONRPCError | None:
    """``unreadable_line_error`` for the SDK reader's ``verdict`` on the first of ``lines`` (taken from it), checked
    to serialize as the stdout writer will (a failure there would stop the writer). Should that fail in any way, the
    failure is logged and a line the SDK could not read gets -32600 "Invalid Request" with id null all the same (one
    it read is served as read)."""
    line = ""
    try:
        line = lines.popleft()
        error = unreadable_line_error(line, verdict)
        if error is not None:
            error.model_dump_json(by_alias=True, exclude_unset=True)
        return error
    except Exception:
        logger.exception("could not answer stdin line %.200r", line)
        return _error(None, INVALID_REQUEST, "Invalid Request") if isinstance(verdict, Exception) else None


class TenantKeyVerifier:
    """The SDK's ``TokenVerifier`` for the JSON API's tenant keys: ``client_id`` is the tenant.

    The admin key and unknown or revoked keys are refused (the admin key reads no memory).
    """

    def __init__(self, service: MemoryService):
        self.service = service

    async def verify_token(self, token: str) -> AccessToken | None:
        """``AccessToken(client_id=tenant)`` for a live tenant key, else None (the SDK answers 401)."""
        found = await anyio.to_thread.run_sync(keys.principal_for_key, self.service.store, None, token)
        if found is None or found.tenant is None:  # unknown or revoked, or the admin key
            return None
        return AccessToken(token=token, client_id=found.tenant, scopes=[])


def _search_field(name: str) -> Any:
    """A tool argument's bounds and help for search setting ``name``, from ``SearchConfig``; strict, as the JSON
    API is: ``"8"`` is no integer and ``"true"`` no boolean."""
    spec = SEARCH_FIELDS[name]
    low, high = spec.bounds or (None, None)
    return Field(ge=low, le=high, description=spec.help, strict=True)


class HypermemServer(MCPServer):
    """``MCPServer`` whose tools refuse arguments they do not take (as the JSON API answers 422 for an unknown
    field) and whose argument errors read ``field: problem; ...`` (pydantic's, without its help links)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context | None = None
    ) -> CallToolResult | InputRequiredResult:
        """``MCPServer.call_tool``; raises ``ToolError`` naming every unknown argument before the tool runs."""
        schema = self._tool_input_schema(name)
        unknown = sorted(set(arguments) - set(schema["properties"])) if schema is not None else []
        if unknown:
            raise ToolError(f"Error executing tool {name}: unknown argument(s): {', '.join(map(repr, unknown))}")
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(exc, UnexpectedToolError) or not isinstance(cause, ArgumentsError):
                raise
            problems = "; ".join(f"{_field_path(e['loc'])}: {e['msg']}" for e in cause.errors())
            raise ToolError(f"Error executing tool {name}: {problems}") from cause

    async def run_stdio_async(self) -> None:
        """``MCPServer.run_stdio_async``, except that a stdin line that is no JSON-RPC message, or a request whose
        ``id`` is no string or integer, is answered with a JSON-RPC error (``unreadable_line_error``): the SDK drops
        such a line, and a client waiting for its answer would wait forever."""
        with _stdin_wire() as wire:
            async with stdio_server(stdin=wire) as (read_stream, write_stream):
                readable_writer, readable = anyio.create_memory_object_stream[SessionMessage | Exception](0)

                async def answer_unreadable() -> None:
                    async with readable_writer:
                        async for item in read_stream:
                            error = _answer(wire.lines, item if isinstance(item, Exception) else item.message)
                            if error is not None:
                                await write_stream.send(SessionMessage(error))
                            elif isinstance(item, SessionMessage):
                                await readable_writer.send(item)

                async with anyio.create_task_group() as tasks:
                    tasks.start_soon(answer_unreadable)
                    lowlevel = self._lowlevel_server
                    await lowlevel.run(readable, write_stream, lowlevel.create_initialization_options())


class HypermemTools:
    """The tools and resources over one ``MemoryService``; ``tenant_keys`` turns tenant isolation on."""

    def __init__(self, service: MemoryService, *, tenant_keys: bool):
        self.service = service
        self.store = service.store
        self.tenant_keys = tenant_keys
        self.jobs = IngestJobs(service)

    # --- who may read what ----------------------------------------------------------------------
    def _tenant(self) -> str | None:
        """The calling tenant over HTTP; None on stdio (the local user, who reads every memory)."""
        if not self.tenant_keys:
            return None
        token = get_access_token()
        if token is None:  # the SDK's bearer middleware refuses such requests before they get here
            raise ToolError("send a tenant API key as 'Authorization: Bearer KEY'")
        return token.client_id

    def _memory(self, memory_id: str, *, claim: bool = False) -> str:
        """``memory_id`` once the caller may read it (``claim``: may write it), else ToolError naming the field (a
        malformed id is refused by its shape, as the HTTP routes do, never echoed back whole)."""
        try:
            check_memory_id(memory_id)
        except IngestInputError as exc:
            raise ToolError(str(exc)) from None
        tenant = self._tenant()
        if tenant is None:
            known = claim or memory_id in self.store.memory_ids()
        else:
            known = owners.tenant_owner(self.store, tenant, memory_id, claim=claim) is not None
        if not known:
            raise ToolError(f"memory_id: no memory {memory_id!r}")
        return memory_id

    def memories(self) -> list[str]:
        """The memory ids the caller may read."""
        tenant = self._tenant()
        if tenant is None:
            return self.store.memory_ids()
        return [m["memory_id"] for m in owners.tenant_memories(self.store, tenant)]

    # --- tools ------------------------------------------------------------------------------------
    def list_memories(self) -> dict[str, list[str]]:
        """The memories this caller may read: ``{"memories": [memory_id, ...]}``."""
        return {"memories": self.memories()}

    def ingest_messages(
        self,
        memory_id: Annotated[str, Field(description="The memory to write; a new id becomes the caller's memory.")],
        messages: Annotated[
            list[dict[str, Any]],
            Field(
                description="Messages in dialogue order: {message_id, speaker, text, timestamp (ISO 8601), "
                "session_id?, image_caption?}. Idempotent by message_id."
            ),  # fmt: skip
        ],
    ) -> dict[str, Any]:
        """Remember dialogue: ingest messages into a memory (HyperMem topics/episodes/facts, HingeMem
        Person/Time/Location hyperedges). Returns the ingest report (counts of what was built).

        The memory id and every message are checked (as by ``POST /v1/memories/{memory_id}/messages``) before the
        memory is claimed: bad input fails naming the field and leaves nothing behind, nor does a failed first ingest.
        """
        try:
            check_memory_id(memory_id)
        except IngestInputError as exc:
            raise ToolError(str(exc)) from exc
        try:
            loaded = IngestRequestSchema().load({"messages": messages})["messages"]
        except ValidationError as exc:
            raise ToolError(_field_problems(exc.messages)) from exc
        batch = [Message(**message) for message in loaded]
        try:
            validate(batch, self.service.settings.max_message_chars)
        except IngestInputError as exc:  # it names the field itself: "messages[1].message_id: ..."
            raise ToolError(str(exc)) from exc
        claimed = self.tenant_keys and owners.owner_of(self.store, memory_id) is None
        self._memory(memory_id, claim=True)
        try:
            report = self.jobs.ingest_now(memory_id, batch)
        except BaseException:
            if claimed:
                owners.release_claim(self.store, memory_id)
            raise
        return {"memory_id": memory_id, "messages": len(batch), "report": report}

    def query_memory(
        self,
        memory_id: Annotated[str, Field(description="The memory to search.")],
        query: Annotated[str, Field(description="The question, in natural language.")],
        turn_budget: Annotated[int | None, _search_field("turn_budget")] = None,
        answer: Annotated[bool, _search_field("answer")] = True,
    ) -> dict[str, Any]:
        """Evidence for a question: dialogue turns (dia_id, speaker, timestamp, text, score), each with its
        explanation path query -> episode -> hyperedge -> fact -> fused -> turn (scores, rankers, member weights,
        the turn ranker's logit and its parts; query -> fused -> turn for a turn only the memory-wide searches
        found; topic -> hyperedge first with use_topics), the facts and episodes, the stop rule, the context and,
        with an LLM, the answer. ``query_id`` lets explain_query return it later."""
        self._memory(memory_id)
        overrides = {"answer": answer, **({"turn_budget": turn_budget} if turn_budget else {})}
        try:
            result = self.service.query(memory_id, query, **overrides)
        except (QueryError, UnknownMemory) as exc:
            raise ToolError(str(exc)) from exc
        record = queries.record(result)
        queries.save(self.store, self.service.settings, memory_id, query, record)
        return record

    def explain_query(
        self,
        query_id: Annotated[
            str, Field(pattern=f"^{MEMORY_ID_PATTERN}$", description="The query_id of a past query.")
        ],  # the HTTP route's rule (``api.app.RecordIdConverter``): a 10,000-character id is refused, not echoed
    ) -> dict[str, Any]:
        """A past query's full stored result: analysis, evidence with explanation paths, stop rule, context, answer."""
        found = queries.get(self.store, query_id)
        if found is None:
            raise ToolError(f"query_id: no query {query_id!r}")
        memory_id, result = found
        try:
            self._memory(memory_id)
        except ToolError:
            raise ToolError(f"query_id: no query {query_id!r}") from None
        return result

    def list_topics(
        self,
        memory_id: Annotated[str, Field(description="The memory to browse.")],
        offset: Annotated[int, Field(ge=0, le=browse.MAX_OFFSET, strict=True, description="Topics to skip.")] = 0,
        limit: Annotated[int, Field(ge=1, le=browse.MAX_PAGE, strict=True, description="Most topics to return.")] = 20,
    ) -> dict[str, Any]:
        """A memory's topics (HyperMem top layer), most episodes first, with episode count and date span."""
        return {"topics": browse.topics(self.store, self._memory(memory_id), offset=offset, limit=limit)}

    def person_timeline(
        self,
        memory_id: Annotated[str, Field(description="The memory to browse.")],
        person: Annotated[str, Field(min_length=1, max_length=200, description="A person's name (case-insensitive).")],
        start: Annotated[
            str | None, Field(validation_alias="from", description="First day (YYYY-MM-DD), inclusive.")
        ] = None,
        end: Annotated[
            str | None, Field(validation_alias="to", description="Last day (YYYY-MM-DD), inclusive.")
        ] = None,
    ) -> dict[str, Any]:
        """A person's episodes and facts in date order (HingeMem Person element), optionally between two days
        (``from``/``to``, ISO dates checked as by ``GET .../people/{name}/timeline``; a bad one fails naming it)."""
        if "\x00" in person:  # as the HTTP route's pattern refuses it
            raise ToolError("person: contains a NUL character")
        window = {key: value for key, value in (("from", start), ("to", end)) if value is not None}
        try:
            days = TimelineArgsSchema().load(window)
        except ValidationError as exc:
            named = exc.normalized_messages().items()
            raise ToolError("; ".join(f"{field}: {' '.join(errors)}" for field, errors in named)) from exc
        items = browse.timeline(self.store, self._memory(memory_id), person, start=days["start"], end=days["end"])
        if items is None:
            raise ToolError(f"person: no person {person!r} in memory {memory_id!r}")
        return {"person": person, "items": items}

    # --- resources ----------------------------------------------------------------------------------
    def memories_resource(self) -> str:
        """JSON list of the memories the caller may read."""
        return json.dumps(self.list_memories())

    def topics_resource(self, memory_id: str) -> str:
        """JSON of a memory's first 200 topics; ``ResourceNotFoundError`` ("no memory ...") for one the caller
        may not read."""
        try:
            return json.dumps(self.list_topics(memory_id, limit=200), ensure_ascii=False)
        except ToolError as exc:
            raise ResourceNotFoundError(f"no memory {memory_id!r}") from exc


def build_server(service: MemoryService, *, http_url: str | None = None) -> tuple[HypermemServer, HypermemTools]:
    """The MCP server over ``service``. ``http_url`` (``http://host:port``) turns on tenant keys
    for streamable HTTP; without it the server is for stdio. Returns the server and its tools
    (``tools.jobs.close()`` at shutdown)."""
    tools = HypermemTools(service, tenant_keys=http_url is not None)
    options: dict[str, Any] = {}
    if http_url is not None:
        options = {
            "token_verifier": TenantKeyVerifier(service),
            # AuthSettings validates the strings into AnyHttpUrl itself (pydantic); cast only informs the checker.
            # validate_token_resource False: a tenant key is not an OAuth token bound to a resource; the verifier checks it
            "auth": AuthSettings(
                issuer_url=cast(AnyHttpUrl, http_url),
                resource_server_url=cast(AnyHttpUrl, f"{http_url}{MCP_PATH}"),
                validate_token_resource=False,
            ),
        }
    server = HypermemServer(
        "hypermem", instructions=INSTRUCTIONS, version=version("hypermem"), middleware=[name_invalid_params], **options
    )
    for tool in (tools.list_memories, tools.ingest_messages, tools.query_memory, tools.explain_query,
                 tools.list_topics, tools.person_timeline):  # fmt: skip
        server.tool()(tool)
    server.resource("hypermem://memories", mime_type="application/json")(tools.memories_resource)
    server.resource("hypermem://memories/{memory_id}/topics", mime_type="application/json")(tools.topics_resource)
    return server, tools


def run(*, http: bool = False, host: str = "127.0.0.1", port: int = 8765, settings=None) -> None:
    """Serve until stopped: stdio (default) or streamable HTTP at ``http://host:port/mcp`` with tenant keys.

    Opens the configured store (``HYPERMEM_*`` settings) and closes it on exit. Nothing but MCP
    messages goes to stdout on stdio; logs go to stderr.
    """
    import signal
    import sys

    from hypermem.config import Settings

    service = MemoryService.open(settings or Settings())
    server, tools = build_server(service, http_url=f"http://{host}:{port}" if http else None)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # close the store on `kill` too
    try:
        if http:
            server.run("streamable-http", host=host, port=port, streamable_http_path=MCP_PATH)
        else:
            server.run("stdio")
    finally:
        tools.jobs.close()
        service.close()
