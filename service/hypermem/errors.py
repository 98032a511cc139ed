"""The one root of hypermem's own errors.

Every error hypermem raises on purpose derives from :class:`HypermemError`, so the CLI and the
API catch one class. Subclasses keep a built-in base where callers relied on it (``ValueError``
for bad input, ``RuntimeError`` for an unavailable dependency).
"""


class HypermemError(Exception):
    """Base class of every error hypermem raises on purpose."""
