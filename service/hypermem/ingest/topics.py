"""Stage 5: topics over episodes, maintained incrementally (HyperMem §3.2, "topic initialisation / update").

Each new episode is compared with the memory's existing topics: with no topic yet it
initialises one; if its *centred* cosine to the best topic centroid reaches ``join_similarity``
it updates that topic (centroid, title, member weights); otherwise it creates a new topic.
Centring subtracts the mean of the memory's earlier episode vectors first (shrunk towards 0
while the memory is young, so two near-identical first episodes still meet): in chat, every episode
shares a strong "small talk" direction, and raw cosines put 70 of 74 episodes in one topic;
centred, a LoCoMo conversation gets 14-19 topics of 2-23 episodes.
Earlier topics are never rebuilt, so a new session costs only its own episodes.
``LLMTopicAssigner`` lets the LLM make the same decision among the nearest topics.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from hypermem.ingest.episodes import centroid


@dataclass
class TopicState:
    """A topic while ingesting: member episode ids with their raw unit vectors and titles."""

    id: str
    members: dict[str, np.ndarray] = field(default_factory=dict)
    titles: dict[str, str] = field(default_factory=dict)
    changed: bool = False

    @property
    def centroid(self) -> np.ndarray:
        return centroid(np.stack(list(self.members.values())))

    def weights(self) -> dict[str, float]:
        """Member weight w∈[0,1]: (1 + cos(episode, centroid)) / 2."""
        c = self.centroid
        return {eid: round(float((1 + v @ c) / 2), 6) for eid, v in self.members.items()}


class TopicAssigner:
    """No-LLM topic assignment by centroid similarity. ``assign`` returns the topic id it used."""

    def __init__(self, join_similarity: float = 0.2):
        self.join_similarity = join_similarity

    @staticmethod
    def similarity(vector: np.ndarray, topic: TopicState, center: np.ndarray) -> float:
        """Cosine of ``vector`` and the topic centroid, both centred on ``center``."""
        a, b = vector - center, topic.centroid - center
        denominator = float(np.linalg.norm(a) * np.linalg.norm(b))
        return float(a @ b) / denominator if denominator else 0.0

    def choose(self, vector: np.ndarray, title: str, summary: str, topics: list[TopicState],
               center: np.ndarray) -> TopicState | None:  # fmt: skip
        """The topic to update, or None for a new topic. ``center``: mean episode vector of the memory."""
        if not topics:
            return None
        sims = [self.similarity(vector, t, center) for t in topics]
        best = int(np.argmax(sims))
        return topics[best] if sims[best] >= self.join_similarity else None


class LLMTopicAssigner(TopicAssigner):
    """The LLM picks among the 5 nearest topics (or says "new")."""

    def __init__(self, client, join_similarity: float = 0.2):
        super().__init__(join_similarity)
        self.client = client

    def choose(self, vector: np.ndarray, title: str, summary: str, topics: list[TopicState],
               center: np.ndarray) -> TopicState | None:  # fmt: skip
        from hypermem.llm.client import LLMError
        from hypermem.llm.prompts import topic_decision

        if not topics:
            return None
        nearest = sorted(topics, key=lambda t: -self.similarity(vector, t, center))[:5]
        try:
            decision = topic_decision(
                self.client,
                {"title": title, "summary": summary},
                [{"id": t.id, "title": ", ".join(list(t.titles.values())[:3]), "summary": ""} for t in nearest],
            )
        except LLMError:
            return super().choose(vector, title, summary, topics, center)
        chosen = {t.id: t for t in nearest}.get(decision.get("topic_id") or "")
        return chosen if decision.get("action") == "update" else None
