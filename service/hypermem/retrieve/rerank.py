"""Optional cross-encoder rerank of the fact candidates (HyperMem §3.4, final step).

No cross-encoder ships offline on PyPI, so the step is off unless
``Settings.reranker_model`` names a local model directory (or a package shipping one).
The response says which: ``{"enabled": bool, "reason" | "model": str}``.
"""

from __future__ import annotations

import logging
from functools import cached_property

log = logging.getLogger(__name__)


class Reranker:
    """``rerank(query, facts) -> (facts, info)``; facts are dicts with ``content`` and ``score``."""

    def __init__(self, model: str | None):
        self.model_name = model

    @cached_property
    def _model(self):
        if not self.model_name:
            return None
        from sentence_transformers import CrossEncoder

        from hypermem.embed import EmbeddingModelError, resolve_model_path

        try:
            return CrossEncoder(str(resolve_model_path(self.model_name)), device="cpu")
        except (EmbeddingModelError, OSError, ValueError) as exc:
            log.warning("reranker %s unavailable (%s): rerank is off", self.model_name, exc)
            return None

    def rerank(self, query: str, facts: list[dict]) -> tuple[list[dict], dict]:
        if self._model is None:
            reason = "no reranker_model configured" if not self.model_name else f"{self.model_name} could not be loaded"
            return facts, {"enabled": False, "reason": reason}
        if not facts:
            return facts, {"enabled": True, "model": self.model_name}
        scores = self._model.predict([(query, f["content"]) for f in facts])
        for fact, score in zip(facts, scores):
            fact["rerank_score"] = round(float(score), 6)
            fact["path"][-1]["rerank_score"] = fact["rerank_score"]
        return sorted(facts, key=lambda f: f["rerank_score"], reverse=True), {"enabled": True, "model": self.model_name}
