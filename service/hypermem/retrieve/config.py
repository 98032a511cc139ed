"""A declarative search configuration: retrieval variants (and the benchmark's ablations) are settings, not forks."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Literal

from hypermem.config import Settings


@dataclass(frozen=True)
class SearchConfig:
    """How one query is answered.

    - ``k_topic``/``k_episode``/``k_fact``: candidates kept per level (HyperMem k^T, k^E, k^F);
    - ``use_topics``: False skips the topic level (episodes searched in the whole memory);
    - ``flat``: True searches facts directly in the whole memory (no hierarchy);
    - ``propagation``: False searches the raw (unpropagated) vectors;
    - ``stopping``: "adaptive" (HingeMem rules by query type) or "fixed" (top ``turn_budget``);
    - ``turn_budget``: most evidence turns returned;
    - ``min_facts``: adaptive stopping never keeps fewer facts than this;
    - ``rrf_k``: the RRF constant;
    - ``global_facts``: also fuse a memory-wide fact search into the fact level (recall safety net);
    - ``replies``: a returned turn that asks a question brings its reply turn along;
    - ``salience``: False drops HingeMem element matching (query elements × member weight × salience)
      from the episode score;
    - ``turn_ranker``: how candidate turns become the evidence set: "learned" (the learned turn ranker
      over every leg, ``hypermem.retrieve.turn_ranker``) or "rrf" (the hierarchy's turn order fused by
      RRF with the turn-level leg);
    - ``flat_weight``: with ``turn_ranker`` "rrf", the weight of the turn-level (flat) leg, BM25 + dense
      over turns (0 turns it off); the hierarchy's weight is 1.
    """

    k_topic: int = 10
    k_episode: int = 10
    k_fact: int = 30
    use_topics: bool = True
    flat: bool = False
    propagation: bool = True
    stopping: Literal["adaptive", "fixed"] = "adaptive"
    turn_budget: int = 8
    min_facts: int = 8
    rrf_k: int = 10
    global_facts: bool = True
    replies: bool = True
    salience: bool = True
    turn_ranker: Literal["learned", "rrf"] = "learned"
    flat_weight: float = 0.3
    answer: bool = True

    @classmethod
    def from_settings(cls, settings: Settings, **overrides) -> SearchConfig:
        """Defaults from ``settings``, then ``overrides``. Raises ``ValueError`` naming an unknown or bad field."""
        base = cls(
            k_topic=settings.k_topic,
            k_episode=settings.k_episode,
            k_fact=settings.k_fact,
            stopping=settings.stopping,
            turn_budget=settings.turn_budget,
            rrf_k=settings.rrf_k,
        )
        known = {f.name: f.type for f in fields(cls)}
        for name, value in overrides.items():
            if name not in known:
                raise ValueError(f"{name}: unknown search setting; expected one of {sorted(known)}")
            if name.startswith("k_") or name in ("turn_budget", "rrf_k", "min_facts"):
                if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= 500:
                    raise ValueError(f"{name}: must be an integer from 1 to 500")
            elif name == "flat_weight":
                if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 10:
                    raise ValueError("flat_weight: must be a number from 0 to 10")
            elif name == "turn_ranker":
                if value not in ("learned", "rrf"):
                    raise ValueError("turn_ranker: must be 'learned' or 'rrf'")
            elif name == "stopping":
                if value not in ("adaptive", "fixed"):
                    raise ValueError("stopping: must be 'adaptive' or 'fixed'")
            elif not isinstance(value, bool):
                raise ValueError(f"{name}: must be true or false")
        return replace(base, **overrides)

    @property
    def vector_property(self) -> str:
        return "embedding" if self.propagation else "embedding_raw"
