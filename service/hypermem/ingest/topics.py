"""Stage 5b: topics over episodes, maintained incrementally (HyperMem §3.2, "topic initialisation / update").

Each new episode is compared with the memory's existing topics: with no topic yet it
initialises one; if its *centred* cosine to the best topic centroid reaches ``join_similarity``
it updates that topic (centroid, title, member weights); otherwise it creates a new topic.
Centring subtracts the mean of the memory's earlier episode vectors first (shrunk towards 0
while the memory is young, so two near-identical first episodes still meet): in chat, every episode
shares a strong "small talk" direction, and raw cosines put 70 of 74 episodes in one topic;
centred, a LoCoMo conversation gets 14-19 topics of 2-23 episodes.
Earlier topics are never rebuilt, so a new session costs only its own episodes.
``CentroidTopicAssigner`` decides without an LLM; ``LLMTopicAssigner`` lets the LLM make the same
decision among the nearest topics. ``assign_topics`` runs the update over a batch of new episodes and
``topic_rows`` turns the changed topics into rows to write; neither touches the store.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from hypermem.ingest.episodes import centroid
from hypermem.ingest.keywords import KeywordExtractor
from hypermem.model import Episode, node_id, unused_id

# The topic centre is the mean of the earlier episodes shrunk towards 0 by this many pseudo-episodes,
# so that a young memory (2-3 episodes) is compared almost uncentred.
TOPIC_CENTER_PRIOR = 5


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


class TopicAssigner(Protocol):
    def choose(self, vector: np.ndarray, title: str, summary: str, topics: list[TopicState],
               center: np.ndarray) -> TopicState | None:  # fmt: skip
        """The topic a new episode (raw unit ``vector``, ``title``, ``summary``) joins, or None for a new
        topic. ``center``: mean episode vector of the memory, subtracted before comparing."""


class CentroidTopicAssigner:
    """No-LLM topic assignment by centred centroid similarity."""

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


class LLMTopicAssigner(CentroidTopicAssigner):
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


def assign_topics(memory_id: str, episodes: list[Episode], stored: list[TopicState],
                  assigner: TopicAssigner) -> list[TopicState]:  # fmt: skip
    """Incremental topic update (HyperMem §3.2): each of ``episodes`` (with ``embedding_raw``), oldest first,
    joins the topic ``assigner`` chooses or founds ``{memory_id}/topic/{episode key}`` (``#2``, ``#3``... appended
    while a stored topic holds that id). ``stored``: the
    memory's topics without the episodes being rebuilt (left unchanged: the update works on copies).
    Returns the topics that gained an episode, stored ones first, with member vectors and titles."""
    topics = {t.id: TopicState(t.id, dict(t.members), dict(t.titles)) for t in stored}
    if not episodes:
        return []
    known = [v for t in topics.values() for v in t.members.values()]
    dimension = len(episodes[0].embedding_raw or ())
    total, count = (np.sum(known, axis=0), len(known)) if known else (np.zeros(dimension), 0)
    for episode in sorted(episodes, key=lambda e: e.start):
        vector = np.asarray(episode.embedding_raw, dtype=np.float32)
        center = total / (count + TOPIC_CENTER_PRIOR)
        chosen = assigner.choose(vector, episode.title, episode.summary, list(topics.values()), center)
        total, count = total + vector, count + 1
        if chosen is None:
            chosen = TopicState(unused_id(node_id(memory_id, "topic", episode.id.rsplit("/", 1)[-1]), topics))
            topics[chosen.id] = chosen
        chosen.members[episode.id] = vector
        chosen.titles[episode.id] = episode.title
        chosen.changed = True
    return [t for t in topics.values() if t.changed]


def topic_rows(memory_id: str, topics: list[TopicState], keywords: KeywordExtractor) -> tuple[list[dict], list[dict]]:
    """``(write/topics rows, write/hyperedges rows)`` of ``topics``: title = the top 3 keywords of the member
    titles (else the first title), summary = the first 8 titles; one ``topic`` hyperedge per topic,
    ``{memory_id}/hyperedge/topic:{topic key}``, members weighted by ``TopicState.weights``."""
    topic_out, edge_out = [], []
    for topic in topics:
        titles = list(topic.titles.values())
        title = ", ".join(keywords.top(" ".join(titles), 3)) or titles[0]
        topic_out.append({"memory_id": memory_id, "id": topic.id, "title": title, "summary": "; ".join(titles[:8]),
                          "text": f"{title}. {' '.join(titles)}", "embedding": topic.centroid.tolist()})  # fmt: skip
        local = topic.id.rsplit("/", 1)[-1]
        edge_out.append({"memory_id": memory_id, "id": node_id(memory_id, "hyperedge", f"topic:{local}"),
                         "kind": "topic", "owner_ids": [topic.id],
                         "members": [{"id": k, "weight": v} for k, v in topic.weights().items()]})  # fmt: skip
    return topic_out, edge_out
