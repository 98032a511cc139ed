"""Vectors stored as text: base64 of their float32 little-endian bytes (a ``WordVector``'s word vector).

A vector property (FalkorDB ``vecf32``, a Neo4j float list) comes back from the engine as one number per
element, formatted by the server and parsed one by one by the client: reading a memory's vocabulary
(~2,500 words × 384 floats) took ~400 ms that way on FalkorDB, the largest cost of a query to a memory
not asked before (``bench/bench_scale.py``). One base64 string per vector is read in one piece and
decoded by numpy, bit for bit the same float32 values. Vectors nothing searches by index inside the
engine (``model.UNINDEXED_VECTORS``' ``Term.embedding``, a ``WordVector``'s) can be kept this way.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

_FLOAT32 = np.dtype("<f4")


def pack_vector(vector: Sequence[float] | npt.NDArray[np.floating]) -> str:
    """``vector`` as base64 of its float32 little-endian bytes (4 bytes per element, 4/3 as text)."""
    return base64.b64encode(np.asarray(vector, dtype=_FLOAT32).tobytes()).decode("ascii")


def unpack_vector(value: str | Sequence[float]) -> npt.NDArray[np.float32]:
    """The float32 vector ``pack_vector`` packed, or, for a store written before it, a list of floats as is."""
    if isinstance(value, str):
        return np.frombuffer(base64.b64decode(value), dtype=_FLOAT32).astype(np.float32)
    return np.asarray(value, dtype=np.float32)
