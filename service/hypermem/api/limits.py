"""Request-body limits checked before any route parses a body (issue 9 §5, §7).

- A body without ``Content-Length`` (chunked) that reaches ``Settings.max_request_bytes`` gets 413,
  as a declared one does (werkzeug would hand the route a truncated body: "Invalid JSON body");
  both say which limit they reach.
- A route that reads a JSON body (a flask-smorest ``arguments`` in ``json``) gets 415 naming
  ``application/json`` for any other Content-Type (form data, ``text/plain``, none), instead of
  a misleading 422 "Missing data for required field".
- A body that is not valid JSON, repeats a key within an object or holds NaN or Infinity gets 400 saying where
  (line, column), which key or which constant (``parse_json``), instead of webargs' bare "Invalid JSON body".
  The value checked is the one the route reads (``Blueprint``'s ``CheckedJsonParser``): the body is parsed once.
- A JSON body nested deeper than ``Settings.max_json_depth`` gets 400 naming ``json`` before the
  parser recurses into a ``RecursionError``; so does one holding a number of more than ``MAX_DIGITS``
  digits (Python refuses to convert it: a 500 otherwise), or starting with a UTF-8 byte-order mark.
- A /v1 route that reads no JSON body (``DELETE /v1/memories/m``, ``POST …/keys``) answers 422 to one, naming its
  fields, rather than acting as if it had none; an empty JSON object is no body.
- A request gunicorn refuses before the app sees it (both ``Transfer-Encoding: chunked`` and
  ``Content-Length``, a bad request line, too many headers) gets JSON ``{code, status, message}`` too,
  not gunicorn's HTML page (``answer_gunicorn_errors_in_json``, installed by ``hypermem.api.wsgi``).
"""

from __future__ import annotations

import json
import re

import flask_smorest
import gunicorn.util
import marshmallow as ma
import numpy as np
from flask import Flask, Request, current_app, g, request
from flask_smorest import abort
from gunicorn.http.errors import ParseException
from webargs.flaskparser import FlaskParser

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.S)
MAX_DIGITS = 4300  # Python's int-from-text limit (sys.get_int_max_str_digits): a longer integer fails to parse
_LONG_NUMBER = re.compile(rb"\d{%d,}" % (MAX_DIGITS + 1))
_OPEN, _CLOSE = np.frombuffer(b"[{", dtype=np.uint8), np.frombuffer(b"]}", dtype=np.uint8)


def json_depth(body: bytes) -> int:
    """The deepest nesting of ``[``/``{`` in a JSON text (brackets inside strings ignored)."""
    marks = np.frombuffer(_STRING.sub(b"", body), dtype=np.uint8)
    steps = np.isin(marks, _OPEN).astype(np.int64) - np.isin(marks, _CLOSE).astype(np.int64)
    return int(np.cumsum(steps).max(initial=0))


class _RepeatedKey(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, object]]) -> dict[str, object]:
    """A JSON object's members as a dict, refusing a name given twice (``json.loads`` would keep the last in silence:
    a second ``"text"`` must not replace the first unseen)."""
    members: dict[str, object] = {}
    for name, value in pairs:
        if name in members:
            raise _RepeatedKey(name)
        members[name] = value
    return members


class _Constant(ValueError):
    pass


def _no_constant(name: str) -> object:
    """Refuse ``NaN``, ``Infinity`` and ``-Infinity``, which ``json.loads`` reads though JSON has no such values."""
    raise _Constant(name)


class JsonProblem(ValueError):
    """Why a body is no JSON a route should read, as the end of a sentence starting "the JSON body"."""


def parse_json(body: bytes) -> object:
    """``body`` (UTF-8) parsed as JSON, refusing what ``json.loads`` would let through in silence.

    Raises ``JsonProblem``: ``is not valid JSON: Expecting ',' delimiter at line 1, column 12 (char 11)``,
    ``repeats the key 'text' in one object``, ``holds NaN, which is not JSON``."""
    try:
        return json.loads(body, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise JsonProblem(
            f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno} (char {exc.pos})"
        ) from None
    except _RepeatedKey as exc:
        raise JsonProblem(f"repeats the key {exc.args[0]!r} in one object") from None
    except _Constant as exc:
        raise JsonProblem(f"holds {exc.args[0]}, which is not JSON") from None


class CheckedJsonParser(FlaskParser):
    """webargs' Flask parser, reading the JSON body ``install``'s check parsed (``g.checked_json``) rather than
    parsing it a second time; a request the check did not parse (no body, not JSON) loads as webargs does."""

    def load_json(self, req: Request, schema: ma.Schema) -> object:
        if "checked_json" in g:
            return g.checked_json
        return super().load_json(req, schema)


class Blueprint(flask_smorest.Blueprint):
    """A flask-smorest blueprint whose ``arguments`` read the checked JSON body (``CheckedJsonParser``)."""

    ARGUMENTS_PARSER = CheckedJsonParser()


def _reads(endpoint: str | None, location: str) -> bool:
    """Whether the view of ``endpoint`` parses arguments from ``location`` (declared with flask-smorest ``arguments``)."""
    view = current_app.view_functions.get(endpoint) if endpoint else None
    parameters = getattr(view, "_apidoc", {}).get("arguments", {}).get("parameters", [])
    return any(parameter["in"] == location for parameter in parameters)


def reads_json(endpoint: str | None) -> bool:
    """Whether the view of ``endpoint`` parses a JSON body."""
    return _reads(endpoint, "json")


def install(app: Flask, max_bytes: int, max_depth: int) -> None:
    """Check every request with a body against ``max_bytes`` and ``max_depth``, and every /v1 request's query string."""

    @app.before_request
    def _check_query_string():
        """A /v1 route that takes no query parameters refuses any (a route that takes some refuses unknown ones itself,
        ``unknown=RAISE``): ``POST …/query?turn_budget=99`` must not look accepted while the body's settings apply.
        A parameter given more than once (``?limit=5&limit=7``) is refused too: each takes one value, and webargs
        would take the first in silence."""
        if not request.headers.get("Authorization") or not request.path.startswith("/v1/"):
            return  # the view answers 401 first: a caller without a key learns nothing about the route
        if request.args and not _reads(request.endpoint, "query"):
            names = sorted(request.args)
            abort(422, message=f"this route takes no query parameters (got {', '.join(names)})",
                  errors={"query": {name: ["Unknown field."] for name in names}})  # fmt: skip
        if repeated := sorted(name for name, values in request.args.lists() if len(values) > 1):
            abort(422, message=f"a query parameter is given more than once ({', '.join(repeated)})",
                  errors={"query": {name: ["given more than once"] for name in repeated}})  # fmt: skip

    @app.before_request
    def _check_body():
        if request.method not in ("POST", "PUT", "PATCH", "DELETE"):
            return
        too_large = f"the request body reaches the limit of {max_bytes} bytes"
        if (request.content_length or 0) > max_bytes:  # declared: refused before werkzeug reads it
            abort(413, message=too_large)
        try:
            body = request.get_data(cache=True)
        except (ParseException, OSError) as exc:  # gunicorn: a malformed chunk size, a missing terminator, a cut body
            abort(400, message=f"the request body cannot be read: {type(exc).__name__} (malformed chunked encoding?)",
                  errors={"body": ["malformed or incomplete"]})  # fmt: skip
        if request.content_length is None and len(body) >= max_bytes:
            abort(413, message=too_large)
        if not request.is_json and reads_json(request.endpoint):
            abort(415, message=f"the body must be JSON: send Content-Type: application/json "
                               f"(got {request.mimetype or 'none'})")  # fmt: skip
        if request.is_json and body:
            if request.headers.get("Content-Encoding", "identity").lower() != "identity":
                abort(415, message=f"a compressed body (Content-Encoding: {request.headers['Content-Encoding']}) "
                                   "is not accepted: send plain UTF-8 JSON")  # fmt: skip
            try:
                body.decode("utf-8")
            except UnicodeDecodeError as exc:
                abort(400, message=f"the JSON body is not UTF-8 (byte {exc.start}): send it UTF-8 encoded",
                      errors={"json": {"_body": ["not UTF-8"]}})  # fmt: skip
            if body.startswith(b"\xef\xbb\xbf"):
                abort(400, message="the JSON body starts with a byte-order mark (U+FEFF): send UTF-8 without one",
                      errors={"json": {"_body": ["starts with a byte-order mark"]}})  # fmt: skip
            if _LONG_NUMBER.search(_STRING.sub(b"", body)):
                abort(400, message=f"a number in the JSON body has more than {MAX_DIGITS} digits",
                      errors={"json": {"_body": [f"a number of more than {MAX_DIGITS} digits"]}})  # fmt: skip
            depth = json_depth(body)
            if depth > max_depth:
                abort(400, message="the JSON body is nested too deeply",
                      errors={"json": {"_body": [f"nested {depth} levels deep; the limit is {max_depth}"]}})  # fmt: skip
            try:
                g.checked_json = parse_json(body)
            except JsonProblem as exc:
                abort(400, message=f"the JSON body {exc}", errors={"json": {"_body": [str(exc)]}})

    @app.before_request
    def _check_unread_body():
        """A /v1 route that reads no JSON body refuses one (an empty JSON object is no body): ``DELETE /v1/memories/m``
        with ``{"message_ids": [...]}`` must not look like a partial delete while it deletes the whole memory."""
        if not request.headers.get("Authorization") or not request.path.startswith("/v1/"):
            return  # the view answers 401 first
        if request.url_rule is None:
            return  # no route matched: its 404/405 (or the path parameter's 422) answers, not the body
        if request.method not in ("POST", "PUT", "PATCH", "DELETE") or reads_json(request.endpoint):
            return
        body = request.get_data(cache=True)
        if not body.strip():
            return
        parsed = g.get("checked_json")
        if parsed == {}:
            return
        hint = "; its settings are query parameters (?name=value)" if _reads(request.endpoint, "query") else ""
        if isinstance(parsed, dict):
            names = sorted(parsed)
            abort(422, message=f"this request takes no body (got {', '.join(names)}){hint}",
                  errors={"json": {name: ["Unknown field."] for name in names}})  # fmt: skip
        got = f"{len(body)} byte{'s' if len(body) != 1 else ''} of {request.mimetype or 'no content type'}"
        abort(422, message=f"this request takes no body (got {got}){hint}",
              errors={"json": {"_body": ["this request takes no body"]}})  # fmt: skip


def write_json_error(sock, status_int: int, reason: str, mesg: str) -> None:
    """``gunicorn.util.write_error`` answering JSON ``{code, status, message}`` (message left out when gunicorn has
    none), as the app's errors read, instead of an HTML page; the connection is closed after it, as gunicorn does."""
    body = json.dumps({"code": status_int, "status": reason, **({"message": mesg} if mesg else {})}).encode()
    head = (f"HTTP/1.1 {status_int} {reason}\r\nConnection: close\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n")  # fmt: skip
    gunicorn.util.write_nonblock(sock, head.encode("latin-1") + body)


def answer_gunicorn_errors_in_json() -> None:
    """Make this process's gunicorn worker answer its own errors (a request refused before the app sees it) with
    ``write_json_error``. gunicorn has no setting or hook for that answer: its workers' ``handle_error`` logs the
    error and calls ``gunicorn.util.write_error`` by name, which this replaces."""
    gunicorn.util.write_error = write_json_error
