"""What the routes of one app share, reached through ``state()`` inside a request."""

from __future__ import annotations

import logging
from collections.abc import Sequence

from flask import current_app

from hypermem.config import Settings
from hypermem.model import Message
from hypermem.records.jobs import IngestJobs
from hypermem.vocabulary import vocabulary

log = logging.getLogger(__name__)

SYNC_TEXT_CHARS = 100_000  # a batch with more text than this is queued (about 20 s of embedding on a loaded core)
# a batch with more distinct content words than this is queued: each word new to the memory is embedded alone
# (hypermem.vocabulary), ~1,350 words/s on one idle core, so 100k characters of distinct words would take ~7-40 s
SYNC_WORDS = 3_000
# a batch with more model tokens than this is queued: what the ingest embeds grows with tokens, not characters (short
# tokens with digits, code and logs take one token per 1-3 characters); 16.8k tokens took 8.2 s at load 6
SYNC_TOKENS = 20_000


class ApiState:
    """What the routes share: settings, the MemoryService, the ingest jobs. ``close()`` at shutdown."""

    def __init__(self, settings: Settings, service, owns_service: bool, sync_batch_limit: int,
                 sync_text_limit: int = SYNC_TEXT_CHARS, sync_word_limit: int = SYNC_WORDS,
                 sync_token_limit: int = SYNC_TOKENS):  # fmt: skip
        self.settings = settings
        self.service = service
        self.owns_service = owns_service
        self.sync_batch_limit = sync_batch_limit
        self.sync_text_limit = sync_text_limit
        self.sync_word_limit = sync_word_limit
        self.sync_token_limit = sync_token_limit
        self.jobs = IngestJobs(service, chunk_size=sync_batch_limit)
        try:  # jobs given back at the last shutdown, or whose worker died, run again here
            self.jobs.resume()
        except Exception:  # the store may be starting; a job is also taken over when it is read
            log.exception("could not take over the ingest jobs left by stopped workers")

    def runs_synchronously(self, messages: Sequence[Message]) -> bool:
        """True when a batch is ingested before answering: at most ``sync_batch_limit`` messages,
        ``sync_text_limit`` characters of text, ``sync_token_limit`` tokens of the embedding model and
        ``sync_word_limit`` distinct content words (each may be new to the memory's vocabulary, and is then
        embedded alone); a larger one runs as a background job (a worker's request timeout must not cut a long
        ingest)."""
        chars = sum(len(m.text) for m in messages)
        if len(messages) > self.sync_batch_limit or chars > self.sync_text_limit:
            return False
        # a text has at most about one token per character: only a batch longer than the limit is tokenized
        if chars > self.sync_token_limit:
            count = self.service.embedder.count_tokens
            if sum(count(m.text) for m in messages) > self.sync_token_limit:
                return False
        return len(vocabulary(m.text for m in messages)) <= self.sync_word_limit

    @property
    def store(self):
        return self.service.store

    def close(self) -> None:
        """Let the running ingest job end its chunk, give it and the queued ones back (the next process to
        start runs them), then close the service if this app opened it."""
        self.jobs.close()
        if self.owns_service:
            self.service.close()


def state() -> ApiState:
    """The ``ApiState`` of the current app."""
    return current_app.extensions["hypermem"]
