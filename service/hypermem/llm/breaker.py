"""A circuit breaker for the LLM endpoint (issue 9 §7).

An unreachable LLM cost every call its full retry budget (5 attempts, about 7.5 s of back-off).
After ``failures`` consecutive failed attempts the circuit opens for ``cooldown_s`` seconds: calls
fail at once (the client raises ``LLMError``) and every LLM stage takes its no-LLM twin. After the cool-down one
call may try again; a success closes the circuit, a failure opens it for another cool-down.
"""

from __future__ import annotations

import logging
import threading
import time

log = logging.getLogger(__name__)


class CircuitBreaker:
    """Thread-safe consecutive-failure breaker: ``is_open`` while the cool-down runs."""

    def __init__(self, failures: int = 5, cooldown_s: float = 60.0):
        self.threshold = failures
        self.cooldown_s = cooldown_s
        self.failures = 0
        self._open_until = 0.0
        self._lock = threading.Lock()

    @property
    def is_open(self) -> bool:
        return time.monotonic() < self._open_until

    def remaining_s(self) -> float:
        """Seconds until the circuit may close again (0 when closed)."""
        return max(0.0, self._open_until - time.monotonic())

    def failure(self) -> None:
        with self._lock:
            self.failures += 1
            if self.failures >= self.threshold:
                if not self.is_open:
                    log.warning(
                        "LLM circuit open for %.0fs after %d consecutive failures", self.cooldown_s, self.failures
                    )
                self._open_until = time.monotonic() + self.cooldown_s

    def success(self) -> None:
        with self._lock:
            self.failures = 0
            self._open_until = 0.0
