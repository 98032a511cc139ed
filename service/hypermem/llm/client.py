"""The one door to an OpenAI-compatible chat-completions server.

``LLMClient`` adds what every LLM stage needs on top of the ``openai`` package:

- **structured output**: ``complete_json`` asks for ``response_format=json_schema``
  and, when the server rejects that (HTTP 400/422 naming the response format or the
  schema), switches for the rest of the client's life to ``json_object`` with the
  schema spelt out in the prompt. Either way the reply is parsed and validated
  against the schema (``jsonschema``);
- **retries** with exponential backoff (tenacity) on transient failures: connection
  errors, time-outs, HTTP 408/409/429/5xx, and replies that are not valid JSON for
  the schema (except a reply cut at ``max_tokens``, which would be cut again);
- a **disk cache** (diskcache) keyed by (model, task, kind, messages, schema), so a
  re-run of the same ingest or evaluation sends no request at all;
- **counters** (``stats``) and **bounded concurrency**: at most ``concurrency``
  requests are in flight per client, whatever the number of calling threads, and
  ``map`` runs a function over items on that many threads.

Temperature is always 0. Failures that survive the retries raise ``LLMError``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar, cast

import diskcache
import jsonschema
import openai
from openai.types.chat import ChatCompletionMessageParam
from tenacity import RetryError, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from hypermem.errors import HypermemError
from hypermem.llm.breaker import CircuitBreaker

log = logging.getLogger(__name__)

T = TypeVar("T")
R = TypeVar("R")

_RETRY_STATUS = {408, 409, 429}
_FORMAT_COMPLAINT = re.compile(r"response_format|json_schema|schema|grammar", re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.DOTALL)


class LLMError(HypermemError, RuntimeError):
    """An LLM call failed for good: retries exhausted, or a non-transient server error."""


class _BadReply(ValueError):
    """The server answered, but not with usable output (retried like a transient error)."""


def _is_transient(exc: BaseException) -> bool:
    if isinstance(exc, (_BadReply, openai.APIConnectionError)):  # APITimeoutError is a subclass
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in _RETRY_STATUS or exc.status_code >= 500
    return False


def _parse_json(text: str | None) -> Any:
    """Parse a reply as JSON, tolerating a Markdown code fence around it."""
    if not text:
        raise _BadReply("empty reply")
    fenced = _FENCE.match(text)
    try:
        return json.loads(fenced.group(1) if fenced else text)
    except json.JSONDecodeError as exc:
        raise _BadReply(f"reply is not JSON: {exc}") from exc


class LLMClient:
    """Thread-safe client for one model at one OpenAI-compatible base URL.

    Args:
        base_url: e.g. ``http://127.0.0.1:8080/v1``.
        api_key: sent as the bearer token (local servers ignore it).
        model: the model name sent with every request; part of the cache key.
        concurrency: most requests in flight at once (>= 1).
        timeout_s: per-request time-out in seconds.
        cache_dir: diskcache directory, or None for no cache.
        max_attempts: tries per call, the first included (>= 1).
        backoff_s: (initial, maximum) wait between tries in seconds; doubles each try.
        max_tokens: completion-token cap per request.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str = "not-needed",
        model: str,
        concurrency: int = 4,
        timeout_s: float = 60.0,
        cache_dir: Path | str | None = None,
        max_attempts: int = 5,
        backoff_s: tuple[float, float] = (0.5, 20.0),
        max_tokens: int = 2048,
        breaker: CircuitBreaker | None = None,
    ):
        if concurrency < 1 or max_attempts < 1:
            raise ValueError("concurrency and max_attempts must be >= 1")
        self.model = model
        self.concurrency = concurrency
        self.max_tokens = max_tokens
        # tenacity owns the retries, so the SDK's own are off (no double counting).
        self._openai = openai.OpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s, max_retries=0)
        self._cache = diskcache.Cache(str(cache_dir)) if cache_dir is not None else None
        self._max_attempts = max_attempts
        self._backoff = backoff_s
        self._slots = threading.BoundedSemaphore(concurrency)
        self._lock = threading.Lock()
        self._json_schema_supported = True
        self.breaker = breaker or CircuitBreaker()
        self._stats = dict.fromkeys(("calls", "cache_hits", "prompt_tokens", "completion_tokens", "errors"), 0)

    @classmethod
    def from_settings(cls, settings) -> LLMClient:
        """Build from ``hypermem.config.Settings``. Raises ``LLMError`` when ``llm_base_url`` is unset."""
        if not settings.llm_base_url:
            raise LLMError("no LLM configured: set HYPERMEM_LLM_BASE_URL")
        log.info(
            "LLM path on: model %s at %s, cache %s", settings.llm_model, settings.llm_base_url, settings.llm_cache_dir
        )
        return cls(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            model=settings.llm_model,
            concurrency=settings.llm_concurrency,
            timeout_s=settings.llm_timeout_s,
            cache_dir=settings.llm_cache_dir,
            breaker=CircuitBreaker(settings.llm_breaker_failures, settings.llm_breaker_cooldown_s),
        )

    # --- public API -----------------------------------------------------------------

    @property
    def stats(self) -> dict[str, int]:
        """A snapshot of the counters.

        ``calls``: HTTP requests sent (retries included); ``cache_hits``: calls answered
        from the disk cache; ``prompt_tokens``/``completion_tokens``: as the server
        reported them; ``errors``: requests that failed or gave unusable output.
        """
        with self._lock:
            return dict(self._stats)

    def complete_json(self, task: str, messages: list[dict], schema: dict) -> dict:
        """One chat completion constrained to ``schema`` (a JSON Schema for an object).

        ``task`` names the prompt (it is the schema's name and part of the cache key).
        Returns the parsed object, already validated against ``schema``.
        Raises ``LLMError``.
        """
        return self._cached("json", task, messages, schema, lambda: self._json_call(task, messages, schema))

    def complete_text(self, task: str, messages: list[dict]) -> str:
        """One free-text chat completion; returns the stripped reply. Raises ``LLMError``."""
        return self._cached("text", task, messages, None, lambda: self._text_call(messages))

    def map(self, fn: Callable[[T], R], items: Iterable[T]) -> list[R]:
        """``[fn(x) for x in items]`` on ``concurrency`` threads, in input order.

        The first exception raised by ``fn`` propagates once all items have run.
        """
        items = list(items)
        if len(items) <= 1 or self.concurrency == 1:
            return [fn(item) for item in items]
        with ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="hypermem-llm") as pool:
            return list(pool.map(fn, items))

    def close(self) -> None:
        """Release the HTTP connection pool and the cache's file handles."""
        self._openai.close()
        if self._cache is not None:
            self._cache.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # --- internals ------------------------------------------------------------------

    def _cached(self, kind: str, task: str, messages: list[dict], schema: dict | None, compute: Callable[[], Any]):
        if self._cache is None:
            return self._with_retries(task, compute)
        blob = json.dumps(
            {"model": self.model, "task": task, "kind": kind, "messages": messages, "schema": schema},
            sort_keys=True,
            ensure_ascii=False,
        )
        key = hashlib.sha256(blob.encode("utf-8")).hexdigest()
        hit = self._cache.get(key)
        if hit is not None:
            self._count(cache_hits=1)
            return hit
        value = self._with_retries(task, compute)
        self._cache.set(key, value)
        return value

    def _with_retries(self, task: str, compute: Callable[[], Any]):
        """``compute()`` with retries on transient errors; fails fast while the circuit breaker is open."""
        if self.breaker.is_open:
            raise LLMError(f"LLM task {task!r} skipped: the LLM failed {self.breaker.failures} times in a row "
                           f"(circuit open for {self.breaker.remaining_s():.0f}s more)")  # fmt: skip

        def attempt():
            try:
                value = compute()
            except Exception as exc:
                if _is_transient(exc):
                    self.breaker.failure()
                raise
            self.breaker.success()
            return value

        attempts_used = stop_after_attempt(self._max_attempts)
        retrying = Retrying(
            retry=retry_if_exception(_is_transient),
            stop=lambda state: attempts_used(state) or self.breaker.is_open,
            wait=wait_exponential(multiplier=self._backoff[0], max=self._backoff[1]),
            before_sleep=lambda state: log.warning(
                "LLM task %s: attempt %d failed (%s); retrying",
                task,
                state.attempt_number,
                state.outcome and state.outcome.exception(),
            ),
            reraise=False,
        )
        try:
            return retrying(attempt)
        except RetryError as exc:
            cause = exc.last_attempt.exception()
            raise LLMError(
                f"LLM task {task!r} failed after {exc.last_attempt.attempt_number} attempts: {cause}"
            ) from cause
        except openai.OpenAIError as exc:
            raise LLMError(f"LLM task {task!r} failed: {exc}") from exc

    def _request(self, messages: list[dict], **extra) -> tuple[str | None, str | None]:
        """One HTTP request; returns (content, finish_reason)."""
        self._count(calls=1)
        try:
            with self._slots:
                response = self._openai.chat.completions.create(
                    model=self.model,
                    messages=cast(list[ChatCompletionMessageParam], messages),
                    temperature=0,
                    max_tokens=self.max_tokens,
                    **extra,
                )
        except openai.OpenAIError:
            self._count(errors=1)
            raise
        usage = response.usage
        if usage is not None:
            self._count(prompt_tokens=usage.prompt_tokens or 0, completion_tokens=usage.completion_tokens or 0)
        if not response.choices:
            self._count(errors=1)
            raise _BadReply("reply has no choices")
        choice = response.choices[0]
        return choice.message.content, choice.finish_reason

    def _text_call(self, messages: list[dict]) -> str:
        text = (self._request(messages)[0] or "").strip()
        if not text:
            self._count(errors=1)
            raise _BadReply("empty reply")
        return text

    def _json_call(self, task: str, messages: list[dict], schema: dict) -> dict:
        if self._json_schema_supported:
            fmt = {"type": "json_schema", "json_schema": {"name": _schema_name(task), "schema": schema, "strict": True}}
            try:
                text, finish = self._request(messages, response_format=fmt)
            except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
                if not _FORMAT_COMPLAINT.search(str(exc)):
                    raise
                log.warning("server rejected response_format=json_schema (%s); using json_object from now on", exc)
                self._json_schema_supported = False
                return self._json_call(task, messages, schema)
        else:
            text, finish = self._request(_with_schema_hint(messages, schema), response_format={"type": "json_object"})
        try:
            value = _parse_json(text)
            jsonschema.validate(value, schema)
        except (_BadReply, jsonschema.ValidationError) as exc:
            self._count(errors=1)
            if finish == "length":  # the same request at temperature 0 would be cut again: no retry
                raise LLMError(
                    f"LLM task {task!r}: the reply hit max_tokens={self.max_tokens} before the JSON ended"
                ) from exc
            raise _BadReply(f"reply does not match the {task} schema: {getattr(exc, 'message', exc)}") from exc
        return value

    def _count(self, **deltas: int) -> None:
        with self._lock:
            for name, delta in deltas.items():
                self._stats[name] += delta


def _schema_name(task: str) -> str:
    """OpenAI wants ``^[a-zA-Z0-9_-]{1,64}$`` for a schema name."""
    return re.sub(r"[^a-zA-Z0-9_-]", "_", task)[:64] or "output"


def _with_schema_hint(messages: list[dict], schema: dict) -> list[dict]:
    """The messages plus a system note that spells out the schema (json_object mode has no schema slot)."""
    hint = "Reply with one JSON object only, valid against this JSON Schema:\n" + json.dumps(schema)
    return [*messages, {"role": "system", "content": hint}]
