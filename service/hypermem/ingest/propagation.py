"""Stage 5a (and after the topics, 5b): one-step hypergraph embedding propagation (HyperMem §3.3, eq. 3-4).

h_e  = Σ_{u∈e} softmax(w)_u · h_u                (hyperedge embedding from member weights)
h'_v = h_v + λ · mean_{e∋v} h_e                   (λ = 0.5 by default)

Vectors are unit-norm float32 ``(d,)``; results are re-normalised so cosine scores stay
comparable with the raw vectors, which are kept for the ablation.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence

import numpy as np


def hyperedge_embedding(vectors: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Σ softmax(w)·h over member rows: ``vectors`` (m, d), ``weights`` (m,) -> (d,)."""
    shifted = np.exp(weights - weights.max())
    return (shifted / shifted.sum()) @ vectors


def propagate(
    raw: Mapping[str, np.ndarray], hyperedges: Sequence[Mapping[str, float]], lam: float = 0.5
) -> dict[str, np.ndarray]:
    """Propagated unit vectors for every node in ``raw``.

    ``hyperedges`` are member -> weight maps; members missing from ``raw`` are ignored.
    A node in no hyperedge keeps its raw vector.
    """
    incident: dict[str, list[np.ndarray]] = defaultdict(list)
    for members in hyperedges:
        ids = [m for m in members if m in raw]
        if not ids:
            continue
        h_e = hyperedge_embedding(
            np.stack([raw[m] for m in ids]), np.array([members[m] for m in ids], dtype=np.float32)
        )
        for m in ids:
            incident[m].append(h_e)
    out = {}
    for node, vector in raw.items():
        if node in incident:
            vector = vector + lam * np.mean(incident[node], axis=0)
            vector = vector / (np.linalg.norm(vector) or 1.0)
        out[node] = vector.astype(np.float32)
    return out
