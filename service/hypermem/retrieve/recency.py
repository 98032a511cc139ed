"""Supersession and recency over the ranked facts (issue 9), applied once in ``Retriever.query``.

- Supersession: a fact whose statement a later one replaced ("I live in Porto", then "I moved to
  Lisbon"; see ``hypermem.ingest.supersession``) is marked ``superseded_by`` with a ``superseded``
  step in its explanation path. When the query asks about the present ("now", "currently", "still")
  or names the fact's predicate family ("where does Ana live"), the latest statement of the chain
  ranks just above the superseded fact (fetched if retrieval had not reached it), and first of all
  when the question does both ("where does Ana live now").
- Recency: "what did Ana do most recently / lately / last" adds one more RRF ranker that orders the
  candidate facts newest first (by when they were said, then by the date they name), with a small RRF
  constant so that recent episodes come first among the relevant ones.

Both change order and scores only; the result shapes stay those of ``hypermem.retrieve.pipeline``.
"""

from __future__ import annotations

import re

from hypermem.store import GraphStore

RECENCY_WEIGHT = 1.0  # the recency ranker's weight in RRF, like one search ranker
RECENCY_K = 10  # its RRF constant: smaller than the search rankers' so that "most recently" decides the order
PROMOTION_MARGIN = 1e-6  # the superseding fact scores just above the fact it replaces

_PRESENT = re.compile(r"\b(now|currently|current|these days|nowadays|still|at the moment|any ?more|today)\b", re.I)
_RECENT = re.compile(r"\b(most recent(ly)?|latest|lately|recently|last time|newest|the last thing)\b", re.I)
QUERY_FAMILIES = {
    "residence": re.compile(r"\b(live|lives|living|lived|reside|resides|home|moved|move|based)\b", re.I),
    "work": re.compile(r"\b(work|works|working|job|employer|employed|company|career)\b", re.I),
    "partner": re.compile(r"\b(partner|boyfriend|girlfriend|husband|wife|dating|married|engaged|fianc[eé]e?)\b", re.I),
    "pet": re.compile(r"\b(pet|pets|dog|dogs|cat|cats|puppy|kitten)\b", re.I),
}


def asks_recent(query: str) -> bool:
    """True for "what did … do most recently / lately / last time"."""
    return bool(_RECENT.search(query))


def apply_recency(store: GraphStore, memory_id: str, query: str, facts: list[dict]) -> list[dict]:
    """The ranked ``facts`` (pipeline fact dicts, best first, each with the ``superseded_by`` of
    ``retrieve/fact_details``) with supersession and recency applied."""
    if not facts:
        return facts
    facts = _supersede(store, memory_id, query, facts)
    if asks_recent(query):
        newest = sorted(facts, key=lambda f: (max((s["timestamp"] for s in f["sources"]), default=""), f["date"] or ""),
                        reverse=True)  # fmt: skip
        for rank, fact in enumerate(newest, start=1):
            bonus = RECENCY_WEIGHT / (RECENCY_K + rank)
            fact["score"] = round(fact["score"] + bonus, 6)
            fact["path"].append({"level": "recency", "id": fact["id"], "rank": rank, "score": round(bonus, 6)})
        facts.sort(key=lambda f: f["score"], reverse=True)
    return facts


def successors_first(ranked: list[dict]) -> list[dict]:
    """``ranked`` (dicts with ``id`` and ``superseded_by``, best first) with the successor of every superseded item
    moved up to just before it, when both are ranked: "I moved to Lisbon" takes the place "I live in Porto" earned,
    and Porto follows it (fusing in the turn-level legs must not put the old statement above the current one). Chains
    (A by B by C) end in time order: C, B, A, from A's place."""
    out = list(ranked)
    for _ in range(len(out)):  # each pass moves one successor up; supersession has no cycles
        position = {item["id"]: n for n, item in enumerate(out) if item["id"]}
        late = next((item for item in out if item["superseded_by"] in position
                     and position[item["superseded_by"]] > position[item["id"]]), None)  # fmt: skip
        if late is None:
            break
        successor = out.pop(position[late["superseded_by"]])
        out.insert(position[late["id"]], successor)
    return out


def _supersede(store: GraphStore, memory_id: str, query: str, facts: list[dict]) -> list[dict]:
    """``facts`` with each superseded one marked and its chain's latest fact promoted; ``facts`` as they are, without a
    round trip, when none carries ``superseded_by`` (``retrieve/fact_details`` returns it)."""
    superseded = [f["id"] for f in facts if f.get("superseded_by")]
    rows = store.query("retrieve/supersession", memory_id=memory_id, ids=superseded) if superseded else []
    if not rows:
        return facts
    present = bool(_PRESENT.search(query) or _RECENT.search(query))
    by_id = {f["id"]: f for f in facts}
    top = max(f["score"] for f in facts)
    promote: dict[str, tuple[str, bool]] = {}  # superseded fact id -> (its chain's latest fact, to the top?)
    for row in {r["id"]: r for r in rows}.values():
        fact = by_id[row["id"]]
        fact["superseded_by"] = row["superseded_by"]
        fact["path"].append({"level": "superseded", "id": row["id"], "by": row["superseded_by"], "latest": row["head"]})
        family = QUERY_FAMILIES.get(row["family"])
        named = family is not None and bool(family.search(query))
        if row["head"] and (present or named):
            promote.setdefault(row["id"], (row["head"], present and named))
    missing = sorted({head for head, _ in promote.values()} - set(by_id))
    if missing:
        for fact in _fetch(store, memory_id, missing):
            by_id[fact["id"]] = fact
    for old_id, (head, to_top) in promote.items():
        old, new = by_id[old_id], by_id.get(head)
        floor = top if to_top else old["score"]
        if new is None or new["score"] > floor:
            continue
        new["score"] = round(floor + PROMOTION_MARGIN, 6)
        new["cosine"] = max(new["cosine"], old["cosine"])
        new["path"].append({"level": "supersedes", "id": new["id"], "replaces": old_id, "score": new["score"]})
    return sorted(by_id.values(), key=lambda f: f["score"], reverse=True)


def _fetch(store: GraphStore, memory_id: str, ids: list[str]) -> list[dict]:
    """Chain heads retrieval had not ranked, in the pipeline's fact shape (scored by promotion)."""
    out = []
    for row in store.query("retrieve/fact_details", memory_id=memory_id, ids=ids):
        sources = sorted(row["turns"], key=lambda t: t["seq"])
        out.append({
            "id": row["id"], "kind": row["kind"] or "fact", "content": row["content"], "date": row["date"],
            "episode_id": row["episode_id"], "score": 0.0, "cosine": 0.0,
            "source_dia_ids": [t["dia_id"] for t in sources], "sources": sources,
            "path": [{"level": "query", "id": "query", "via": "supersession"}, {"level": "fact", "id": row["id"]}],
        })  # fmt: skip
    return out
