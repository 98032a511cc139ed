"""The real embedder with a record of what it was asked to embed (for the tests of vector reuse)."""

from __future__ import annotations


class CountingEmbedder:
    """Wraps an ``Embedder``: every text sent to ``encode`` or planned for ``encode_task`` (``plan_tasks``) is appended
    to ``sent``; the vectors are the model's."""

    def __init__(self, embedder):
        self.embedder = embedder
        self.sent: list[str] = []

    def encode(self, texts, **options):
        self.sent.extend(texts)
        return self.embedder.encode(texts, **options)

    def plan_tasks(self, texts, size):
        self.sent.extend(texts)
        return self.embedder.plan_tasks(texts, size)

    def __getattr__(self, name):
        return getattr(self.embedder, name)
