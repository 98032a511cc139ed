"""Gradient-boosted regression trees that correct the turn ranker's linear logit (``TurnRankerModel.boost``).

The trees read a candidate's ``BOOST_INPUTS``: its ``FEATURES`` row, whether the query is recall-type (1 or 0) and the
linear model's logit for it; their sum plus ``baseline`` is the candidate's final logit. They are fitted by
scikit-learn's ``HistGradientBoostingClassifier`` (``hypermem.eval.ranker_fit.fit_boost``) and evaluated here with
numpy alone, so answering a query needs no scikit-learn: a node sends a row to its left child when the row's value
of the node's input is ``<=`` its threshold (as the fitted model does for inputs that are never missing).

Layout: every tree's nodes in one array per field, tree after tree; ``roots[t]`` is tree t's first node, a node's
children come after it (so every path ends), and a leaf is its own child (``left == right == itself``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True, eq=False)
class BoostedTrees:
    """``baseline`` plus the sum of the trees' leaf values (a logit). Per node: the index into the input row it tests
    (``feature``), its ``threshold``, its ``left`` and ``right`` children (absolute node indices), its leaf ``value``
    (0 for an inner node). ``inputs``: the names of the input columns, in order (``BOOST_INPUTS`` for the ranker)."""

    inputs: tuple[str, ...]
    baseline: float
    roots: npt.NDArray[np.int64]
    feature: npt.NDArray[np.int64]
    threshold: npt.NDArray[np.float64]
    left: npt.NDArray[np.int64]
    right: npt.NDArray[np.int64]
    value: npt.NDArray[np.float64]

    def __post_init__(self) -> None:
        n = len(self.feature)
        if not len(self.roots) or not all(len(a) == n for a in (self.threshold, self.left, self.right, self.value)):
            raise ValueError("boost.trees: every tree needs nodes, and every node a feature, threshold, left, right"
                             " and value")  # fmt: skip
        if not (np.isfinite(self.threshold).all() and np.isfinite(self.value).all() and np.isfinite(self.baseline)):
            raise ValueError("boost: thresholds, values and the baseline must be finite numbers")
        if self.feature.min() < 0 or self.feature.max() >= len(self.inputs):
            raise ValueError(f"boost.trees: a node's feature must index the {len(self.inputs)} inputs")
        index = np.arange(n)
        ends = np.append(self.roots[1:], n)
        owner = np.repeat(np.arange(len(self.roots)), ends - self.roots)
        if self.roots[0] != 0 or (np.diff(self.roots) <= 0).any() or len(owner) != n:
            raise ValueError("boost.trees: malformed tree layout")
        for child in (self.left, self.right):
            leaf = child == index
            inside = (child > index) & (child < ends[owner])
            if not (leaf | inside).all():
                raise ValueError("boost.trees: a node's child must come after it in its own tree (a leaf's is itself)")
        if ((self.left == index) != (self.right == index)).any():
            raise ValueError("boost.trees: a node has either two children or none")

    def predict(self, rows: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        """Logits of ``rows`` (n × len(inputs)): ``baseline`` + each tree's leaf value, summed. Every (row, tree) pair
        walks down one level a step, those that reached a leaf drop out (a LoCoMo query, ~110 rows × 200 trees:
        about 1 ms)."""
        x = np.asarray(rows, dtype=np.float64)
        n, width = x.shape
        trees = len(self.roots)
        node = np.tile(self.roots, n)
        offset = np.repeat(np.arange(n) * width, trees)  # where each pair's row starts in x, flattened
        flat = x.ravel()
        walking = np.flatnonzero(self.left[node] != node)
        while len(walking):
            at = node[walking]
            below = flat[offset[walking] + self.feature[at]] <= self.threshold[at]
            node[walking] = child = np.where(below, self.left[at], self.right[at])
            walking = walking[self.left[child] != child]
        return self.baseline + self.value[node].reshape(n, trees).sum(axis=1)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BoostedTrees):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    def as_dict(self) -> dict:
        """``{"inputs", "baseline", "trees": [{"feature", "threshold", "left", "right", "value"}]}``, each tree's
        children numbered within it (its root is 0)."""
        ends = np.append(self.roots[1:], len(self.feature))
        trees = []
        for start, end in zip(self.roots, ends):
            span = slice(int(start), int(end))
            trees.append({
                "feature": self.feature[span].tolist(), "threshold": self.threshold[span].tolist(),
                "left": (self.left[span] - start).tolist(), "right": (self.right[span] - start).tolist(),
                "value": self.value[span].tolist(),
            })  # fmt: skip
        return {"inputs": list(self.inputs), "baseline": self.baseline, "trees": trees}

    @classmethod
    def from_dict(cls, data: object, inputs: Sequence[str]) -> BoostedTrees:
        """The inverse of ``as_dict``; ``inputs`` must be the names the file lists. Raises ``ValueError`` naming the
        field that is missing or unusable."""
        if not isinstance(data, Mapping) or set(data) != {"inputs", "baseline", "trees"}:
            raise ValueError('boost: must be an object {"inputs": [names], "baseline": number, "trees": [...]}')
        if list(data["inputs"]) != list(inputs):
            raise ValueError(f"boost.inputs: expected {list(inputs)}")
        baseline = data["baseline"]
        if isinstance(baseline, bool) or not isinstance(baseline, (int, float)):
            raise ValueError("boost.baseline: must be a number")
        trees = data["trees"]
        keys = {"feature", "threshold", "left", "right", "value"}
        if not isinstance(trees, list) or not trees:
            raise ValueError("boost.trees: must be a non-empty list of trees")
        if not all(isinstance(t, Mapping) and set(t) == keys for t in trees):
            raise ValueError(f"boost.trees: every tree must be an object of {sorted(keys)}")
        try:
            sizes = [len(t["feature"]) for t in trees]
            roots = np.cumsum([0, *sizes[:-1]]).astype(np.int64)
            columns = {k: np.concatenate([np.asarray(t[k], dtype=np.float64) for t in trees]) for k in keys}
        except (TypeError, ValueError) as exc:
            raise ValueError(f"boost.trees: every field must be a list of numbers ({exc})") from exc
        offsets = np.repeat(roots, sizes)

        def whole(name: str) -> npt.NDArray[np.int64]:
            values = columns[name]
            if len(values) != len(offsets) or (values != np.round(values)).any():
                raise ValueError(f"boost.trees: {name} must hold one whole number per node")
            return values.astype(np.int64)

        return cls(tuple(inputs), float(baseline), roots, whole("feature"), columns["threshold"],
                   whole("left") + offsets, whole("right") + offsets, columns["value"])  # fmt: skip
