"""A user–assistant coding chat with long assistant turns (prose, fenced code, logs, markup), for the
long-message tests and ``bench/bench_long_message.py``. Deterministic; no data files."""

from __future__ import annotations

import random
from datetime import datetime, timedelta

from hypermem.model import Message

TOPICS = ["caching layer", "login form", "payment webhook", "search index", "image resizer", "report export",
          "rate limiter", "email queue", "feature flags", "audit log"]  # fmt: skip
WORDS = [
    "request",
    "response",
    "handler",
    "service",
    "worker",
    "queue",
    "retry",
    "timeout",
    "latency",
    "config",
    "database",
    "index",
    "table",
    "column",
    "migration",
    "schema",
    "cache",
    "token",
    "session",
    "cookie",
    "header",
    "payload",
    "parser",
    "builder",
    "client",
    "server",
    "thread",
    "process",
    "memory",
    "buffer",
    "stream",
    "socket",
    "route",
    "endpoint",
    "template",
    "widget",
    "layout",
    "style",
]
TAIL = (
    "One last thing about the staging outage: the root cause of the flaky deploys was an expired TLS "
    "certificate on the staging load balancer, so renew it with certbot every sixty days."
)


def _prose(rng: random.Random, topic: str) -> str:
    sentences = []
    for _ in range(rng.randint(3, 6)):
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(8, 16)))
        sentences.append(f"For the {topic}, the {words}.")
    return " ".join(sentences)


def _code(rng: random.Random, n: int) -> str:
    name = rng.choice(WORDS)
    body = "\n".join(
        f"    {rng.choice(WORDS)}_{i} = {rng.choice(WORDS)}.get('{rng.choice(WORDS)}', {i})"
        for i in range(rng.randint(5, 20))
    )
    return f"```python\ndef handle_{name}_{n}(request):\n{body}\n    return {name}\n```"


def _log(rng: random.Random) -> str:
    return "\n".join(
        f"2024-06-0{rng.randint(1, 9)} 12:{rng.randint(10, 59)}:00 ERROR {rng.choice(WORDS)}: {rng.choice(WORDS)} failed"
        for _ in range(rng.randint(3, 8))
    )


def _markup(rng: random.Random) -> str:
    return '<div class="toolbar">\n  <button id="toggleDarkMode">Toggle Dark Mode</button>\n</div>'


def long_answer(chars: int, *, tail: str = TAIL, seed: int = 7) -> str:
    """An assistant answer of about ``chars`` characters (prose, code, logs, markup), ending with ``tail``."""
    rng = random.Random(seed)
    parts: list[str] = []
    size = 0
    n = 0
    while size < chars - len(tail):
        topic = rng.choice(TOPICS)
        part = [_prose(rng, topic), _code(rng, n), _log(rng), _markup(rng)][n % 4]
        parts.append(part)
        size += len(part) + 2
        n += 1
    return "\n\n".join(parts) + "\n\n" + tail


def coding_chat(long_chars: int, *, day: datetime = datetime(2024, 6, 3, 9, 0)) -> list[Message]:
    """Six short user/assistant turns around one long assistant answer (``C1:4``, ``long_chars`` long)."""
    rng = random.Random(3)
    texts = [
        ("user", "Can you help me speed up the caching layer? Requests time out under load."),
        ("assistant", "Sure. Start by measuring hit rates per route, then raise the TTL for static pages."),
        ("user", "The deploys on staging keep failing at random. Can you review everything I pasted?"),
        ("assistant", long_answer(long_chars)),
        ("user", "Thanks! Also, how should I name the feature flags for the new checkout?"),
        ("assistant", "Prefix them with the team and the quarter, for example payments_q3_new_checkout."),
        ("user", _prose(rng, "audit log")),
    ]
    return [
        Message(f"C1:{i + 1}", speaker, text, day + timedelta(minutes=i), "C1")
        for i, (speaker, text) in enumerate(texts)
    ]
