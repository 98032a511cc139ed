"""The default ``minilm-int8`` backend's batching: texts sorted by token count and cut into batches of at most
``BATCH_TOKENS`` padded tokens (and ``batch_size`` texts) give each text its vector alone, bit for bit, in the
order asked."""

from __future__ import annotations

import numpy as np
import pytest

from hypermem.embed import BATCH_TOKENS, ONNX_MINILM, Embedder


@pytest.fixture(scope="module")
def minilm() -> Embedder:
    return Embedder(ONNX_MINILM, batch_size=3)  # 3 texts: the count limit cuts batches too


def test_token_batches_give_each_text_its_vector_alone(minilm):
    words = ["the", "kiln", "glazed", "pottery", "while", "Caroline", "painted", "a", "sunset", "over", "the", "lake"]
    texts = [" ".join(words[: 1 + n % len(words)]) * (1 + n % 5) for n in range(40)]
    texts += ["", "word " * 600, "Melanie: " + "a long story about the weekend " * 30]  # empty, truncated, long
    assert max(minilm.count_tokens(t) for t in texts) > BATCH_TOKENS  # one text is cut to the 256-token window
    together = minilm.encode(texts)
    one_thread = minilm.encode(list(reversed(texts)), single_thread=True)[::-1]
    for n, text in enumerate(texts):
        alone = minilm.encode([text])[0]
        assert np.array_equal(alone, together[n]) and np.array_equal(alone, one_thread[n]), text[:40]
    assert np.allclose(np.linalg.norm(together, axis=1), 1.0, atol=1e-5)


def test_planned_tasks_are_longest_first_and_give_each_text_its_vector(minilm):
    texts = ["short", "a somewhat longer text about pottery", "word " * 400, "", "Caroline painted a sunset"] * 3
    tasks = minilm.plan_tasks(texts, 4)
    assert sorted(i for task in tasks for i in task.indices) == list(range(len(texts)))  # each text once
    assert [len(task.indices) for task in tasks] == [4, 4, 4, 3]
    lengths = [min(minilm.count_tokens(texts[i]), 254) for task in tasks for i in task.indices]
    assert lengths == sorted(lengths, reverse=True)  # longest first (the model reads at most 256 tokens)
    together = minilm.encode(texts)
    for task in tasks:
        assert np.array_equal(minilm.encode_task(task), together[task.indices])
