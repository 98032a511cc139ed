"""Retrieval on the test conversation (issue 4, Must show): real store, real embeddings, no LLM.

RRF ranks as computed by hand from the store's own BM25 and dense rankings; adaptive stopping
cuts where the rule says; expansion returns only members of the chosen hyperedges; a query
never returns data from another memory_id; every turn carries its explanation path.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from conftest import make_testconv_record

from hypermem.config import Settings
from hypermem.ingest.locomo import conversation_from_record
from hypermem.retrieve.config import SearchConfig
from hypermem.retrieve.pipeline import QueryError
from hypermem.retrieve.stopping import elbow

GOLD = [
    ("When did Nadia run the half marathon?", "D1:1"),
    ("Where did Omar go camping?", "D2:7"),
    ("When did Nadia start her pottery class?", "D2:1"),
]
RRF_K = SearchConfig.from_settings(Settings()).rrf_k
KEYS = {"turns", "facts", "episodes", "stop", "context", "context_tokens"}


@pytest.fixture(scope="module")
def ask(hm_service, hm_ingested):
    """``ask(question, **overrides)`` on the test memory, cached per call signature."""
    cache: dict = {}

    def run(text: str, **overrides):
        key = (text, tuple(sorted(overrides.items())))
        if key not in cache:
            cache[key] = hm_service.query(hm_ingested.memory_id, text, **overrides)
        return cache[key]

    return run


def _members(svc, hyperedge_id: str) -> dict[str, float]:
    rows = svc.store.run_cypher(
        "MATCH (h:Hyperedge {id: $h})-[m:MEMBER]->(x) RETURN x.id AS id, m.weight AS w", {"h": hyperedge_id}
    )
    return {r["id"]: r["w"] for r in rows}


# --- output contract ---------------------------------------------------------------------------------------
@pytest.mark.parametrize(("question", "gold"), GOLD)
def test_gold_turn_is_returned(ask, question, gold):
    result = ask(question)
    assert gold in [t.dia_id for t in result.turns]


def test_output_shape(ask):
    result = ask(GOLD[0][0])
    shape = result.to_dict()  # the JSON of the API, the MCP server and ``hypermem query --json``
    assert json.loads(json.dumps(shape)) == shape
    assert set(shape) >= KEYS
    assert set(shape["stop"]) >= {"query_type", "rule", "cut_at"}
    assert shape["turns"] and shape["facts"] and shape["episodes"]
    for turn in shape["turns"]:
        assert {"dia_id", "text", "score", "path"} <= set(turn)
        assert {"level", "id"} <= set(turn["path"][-1]) and None not in turn["path"][-1].values()
    for fact in shape["facts"]:
        assert {"id", "content", "score", "source_dia_ids", "path"} <= set(fact) and "sources" not in fact
    for episode in shape["episodes"]:
        assert {"id", "title", "summary", "score", "path"} <= set(episode)
    assert shape["config"] == dataclasses.asdict(result.config) and shape["analysis"]["query_type"] == "precision"
    assert result.rerank == {"enabled": False, "reason": "no reranker_model configured"}
    assert result.answer is None and result.selection["enabled"] is False


def test_temporal_answer_is_in_the_context(ask, hm_service):
    result = ask("When did Nadia run the half marathon?")
    assert "[D1:1]" in result.context and "last Saturday (10 June 2023)" in result.context
    assert result.context_tokens > 0
    assert result.context_tokens == hm_service.embedder.count_tokens(result.context)


# --- RRF on real rankings ------------------------------------------------------------------------------------
def test_topic_ranks_equal_rrf_by_hand(ask, hm_service, hm_ingested):
    question = "Where did Omar go camping?"
    result = ask(question, use_topics=True)
    vector = hm_service.embedder.encode_one(question)
    k = hm_service.settings.k_topic
    dense = hm_service.store.vector_search("Topic", hm_ingested.memory_id, vector, k)
    bm25 = hm_service.store.fulltext_search("Topic", hm_ingested.memory_id, question, k)
    scores: dict[str, float] = {}
    for ranking in (bm25, dense):
        for rank, hit in enumerate(ranking, start=1):
            scores[hit.id] = scores.get(hit.id, 0.0) + 1.0 / (RRF_K + rank)
    expected = sorted(scores, key=lambda i: -scores[i])
    assert [t.id for t in result.topics] == expected
    for topic in result.topics:
        assert topic.score == pytest.approx(scores[topic.id], abs=1e-6)
        assert topic.score == pytest.approx(sum(1 / (RRF_K + r["rank"]) for r in topic.rankers.values()), abs=1e-6)


def test_fact_scores_are_rrf_plus_parent_term(ask):
    """A fact's score = Σ 1/(k + rank) over its rankers + w_member / (k + episode rank) for its episode."""
    result = ask("Where did Omar go camping?", stopping="fixed", turn_budget=30)
    ranks = {e.id: e.rank for e in result.episodes}
    assert result.facts
    for fact in result.facts:
        step = fact.path[-1]
        assert step.level == "fact" and step.score == fact.score
        own = sum(1 / (RRF_K + r["rank"]) for r in step.rankers.values())
        edge = fact.path[-2]
        parent = edge.weight / (RRF_K + ranks[fact.episode_id]) if edge.level == "hyperedge" else 0.0
        assert fact.score == pytest.approx(own + parent, abs=2e-6)
    assert [f.score for f in result.facts] == sorted((f.score for f in result.facts), reverse=True)


# --- stopping ------------------------------------------------------------------------------------------------
# With the learned turn ranker (the default), adaptive stopping cuts on the candidates' P(evidence); the HingeMem
# rules (80% of best, elbow, first confident hit) cut the fact ranking of the RRF turn ranker.
@pytest.mark.parametrize("question", ["When did Nadia run the half marathon?",
                                      "How many times did Nadia and Omar talk about pottery?"])  # fmt: skip
@pytest.mark.parametrize("budget", [3, 8])
def test_learned_ranker_stops_at_the_evidence_share(ask, hm_service, hm_ingested, question, budget):
    result = ask(question, turn_budget=budget)
    _, rows, query_type = hm_service.retriever.turn_rows(hm_ingested.memory_id, question, turn_budget=budget)
    assert query_type == result.stop.query_type
    model = hm_service.retriever.turn_ranker
    probability = model.probability(model.score(rows, query_type))
    own = model.budget_for(query_type, budget)  # a recall-type question's budget is its own multiple
    assert own == (budget * model.recall_budget_scale if query_type == "recall" else budget)
    stop = result.stop
    assert stop.rule.startswith("evidence-share")
    assert stop.considered == len(probability)
    assert stop.threshold == pytest.approx(1 / (model.share_scale * own), abs=1e-6)
    natural = int((probability / probability.sum() >= 1 / (model.share_scale * own)).sum())
    low, high = max(1, math.ceil(own / 2)), math.floor(1.75 * own)
    assert stop.cut_at == min(len(probability), max(low, min(high, natural)))
    assert stop.rule.endswith(f"(floor {low})") == (natural < low)
    assert len(result.turns) == stop.cut_at  # the cut is the number of turns read


def test_a_recall_type_question_is_scored_and_cut_with_its_own_weights_and_budget(hm_service, hm_ingested):
    """Under a model whose recall-type adjustment doubles the budget and favours the hierarchy, a recall-type
    question's logits and cut follow the adjusted weights and the doubled budget; a precision question's do not."""
    from hypermem.retrieve.turn_ranker import DEFAULT_MODEL, FEATURES

    retriever = hm_service.retriever
    adjustment = {name: 0.0 for name in FEATURES} | {"hierarchy": 30.0}
    linear = dataclasses.replace(DEFAULT_MODEL, boost=None)  # the adjustment's effect on the logit, by hand
    model = dataclasses.replace(linear, recall_weights=adjustment, recall_bias=1.5, recall_budget_scale=2.0)
    shipped, retriever.turn_ranker = retriever.turn_ranker, model
    try:
        for question, query_type, budget in [("How many times did Nadia and Omar talk about pottery?", "recall", 12),
                                             ("When did Nadia run the half marathon?", "precision", 6)]:  # fmt: skip
            result = hm_service.query(hm_ingested.memory_id, question, turn_budget=6)
            _, rows, seen = retriever.turn_rows(hm_ingested.memory_id, question, turn_budget=6)
            assert (seen, result.stop.query_type) == (query_type, query_type)
            logits = linear.score(rows) + (1.5 + 30.0 * rows[:, FEATURES.index("hierarchy")]
                                                  if query_type == "recall" else 0.0)  # fmt: skip
            assert model.score(rows, query_type) == pytest.approx(logits)
            probability = model.probability(logits)
            assert result.stop.threshold == pytest.approx(1 / (model.share_scale * budget), abs=1e-6)
            natural = int((probability / probability.sum() >= 1 / (model.share_scale * budget)).sum())
            low, high = math.ceil(budget / 2), math.floor(1.75 * budget)
            assert result.stop.cut_at == len(result.turns) == min(len(probability), max(low, min(high, natural)))
            fused = result.turns[0].path[-2]
            assert fused.logit == pytest.approx(sum(fused.ranker.values()), abs=2e-3)
            assert fused.ranker["bias"] == pytest.approx(model.bias_for(query_type), abs=1e-4)
    finally:
        retriever.turn_ranker = shipped


def _rule(stop) -> str:
    """The HingeMem rule that cut the facts, without the note that the turn budget then cut the turns."""
    return stop.rule.split(" (turn budget")[0]


def test_precision_query_stops_at_80_percent_of_best(ask):
    full = ask(
        "When did Nadia run the half marathon?", stopping="fixed", turn_budget=200, min_facts=1, turn_ranker="rrf"
    )
    cut_result = ask("When did Nadia run the half marathon?", min_facts=1, turn_ranker="rrf")
    stop = cut_result.stop
    assert (stop.query_type, _rule(stop)) == ("precision", "80%-of-best")
    scores = [f.score for f in full.facts]
    assert stop.considered == len(scores)
    assert stop.threshold == pytest.approx(0.8 * scores[0], abs=1e-6)
    assert stop.cut_at == sum(1 for s in scores if s >= 0.8 * scores[0])
    # the cut sets how many turns are read (a kept fact's source turn, and its reply); the fused ranking picks them
    assert 0 < len(cut_result.turns) <= min(2 * stop.cut_at, cut_result.config.turn_budget)


def test_recall_query_stops_at_the_elbow(ask):
    question = "How many times did Nadia and Omar talk about pottery?"
    full = ask(question, stopping="fixed", turn_budget=200, min_facts=1, turn_ranker="rrf")
    result = ask(question, min_facts=1, turn_ranker="rrf")
    assert (result.stop.query_type, _rule(result.stop)) == ("recall", "elbow")
    assert result.stop.cut_at == elbow([f.score for f in full.facts])


def test_stopping_floor_keeps_at_least_min_facts(ask):
    question = "When did Nadia run the half marathon?"
    bare = ask(question, min_facts=1, turn_ranker="rrf").stop
    floored = ask(question, turn_ranker="rrf").stop  # default min_facts = 8
    assert floored.cut_at == max(bare.cut_at, min(8, floored.considered))
    assert _rule(floored) == _rule(bare) + (" (floor 8)" if bare.cut_at < 8 else "")
    tight = ask(question, min_facts=1, turn_budget=200, stopping="fixed", turn_ranker="rrf").stop
    assert tight.cut_at == tight.considered  # fixed mode ignores the floor and keeps up to the budget


def test_judgment_query_stops_at_first_confident_hit(ask):
    result = ask("Did Nadia move to Berlin for a new job?", min_facts=1, turn_ranker="rrf")
    stop = result.stop
    assert stop.query_type == "judgment"
    if stop.rule == "first-confident-hit":
        kept = result.facts
        assert kept and kept[-1].cosine >= stop.threshold
        assert all(f.cosine < stop.threshold for f in kept[:-1])
    assert "D3:1" in [t.dia_id for t in result.turns]


def test_rrf_stop_says_when_the_turn_budget_cut_the_turns(ask):
    result = ask("When did Nadia run the half marathon?", turn_ranker="rrf", turn_budget=1)
    assert len(result.turns) == 1
    assert result.stop.rule.endswith("(turn budget 1)") and result.stop.counts == "facts"
    wide = ask("When did Nadia run the half marathon?", turn_ranker="rrf", turn_budget=200, min_facts=1)
    assert "turn budget" not in wide.stop.rule


def test_fixed_stopping_and_turn_budget(ask):
    result = ask("What did Omar say about his puppy?", stopping="fixed", turn_budget=3)
    assert result.stop.rule.startswith("fixed-k")
    # with the learned turn ranker the fixed cut is over its candidate turns
    assert (result.stop.counts, result.stop.cut_at) == ("candidate turns", 3) and result.stop.considered >= 3
    assert len(result.turns) <= 3
    assert len({t.dia_id for t in result.turns}) == len(result.turns)


# --- expansion -----------------------------------------------------------------------------------------------
def test_expand_topic_episodes_returns_exactly_the_member_edges(hm_service, hm_ingested):
    memory = hm_ingested.memory_id
    topics = [
        r["id"]
        for r in hm_service.store.run_cypher("MATCH (t:Topic) WHERE t.memory_id = $m RETURN t.id AS id", {"m": memory})
    ]
    for topic in topics:
        rows = hm_service.store.query("retrieve/expand_topic_episodes", memory_id=memory, topic_ids=[topic])
        edge = {r["hyperedge_id"] for r in rows}
        assert len(edge) == 1
        assert {r["id"]: r["weight"] for r in rows} == _members(hm_service, edge.pop())
        assert {r["topic_id"] for r in rows} == {topic}
    # another memory's id expands to nothing from this memory
    assert hm_service.store.query("retrieve/expand_topic_episodes", memory_id="other-memory", topic_ids=topics) == []


def test_expand_episode_facts_returns_exactly_the_member_edges(hm_service, hm_ingested):
    memory = hm_ingested.memory_id
    episode = f"{memory}/episode/D2:7"
    rows = hm_service.store.query("retrieve/expand_episode_facts", memory_id=memory, episode_ids=[episode])
    assert {r["hyperedge_id"] for r in rows} == {f"{memory}/hyperedge/episode:D2:7"}
    assert {r["id"]: r["weight"] for r in rows} == _members(hm_service, f"{memory}/hyperedge/episode:D2:7")
    assert {r["id"].split("/")[-1].split("#")[0] for r in rows} == {f"D2:{i}" for i in range(7, 12)}


def test_pipeline_episodes_and_facts_come_only_from_chosen_hyperedges(ask, hm_service):
    hierarchy_only = {"global_facts": False, "turn_ranker": "rrf", "flat_weight": 0.0}
    for extra in ({}, hierarchy_only):
        result = ask("Where did Omar go camping?", use_topics=True, k_topic=1, k_episode=1, stopping="fixed",
                     turn_budget=50, **extra)  # fmt: skip
        (topic,) = result.topics
        topic_edge = {r["hyperedge_id"] for r in hm_service.store.query(
            "retrieve/expand_topic_episodes", memory_id="testconv", topic_ids=[topic.id])}.pop()  # fmt: skip
        (episode,) = result.episodes
        assert episode.id in _members(hm_service, topic_edge)
        episode_edge = "testconv/hyperedge/episode:" + episode.id.split("/")[-1]
        members = _members(hm_service, episode_edge)
        assert result.facts
        for fact in result.facts:
            through = [s.id for s in fact.path if s.level == "hyperedge"]
            if fact.id in members:
                assert through == [topic_edge, episode_edge]
            else:  # reached by a memory-wide search, and says so
                assert not extra and through == [] and fact.path[0].via == "memory-wide fact search"
        if extra:
            assert {f.id for f in result.facts} <= set(members)


# --- explanation paths ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("use_topics", [False, True])
@pytest.mark.parametrize("question", [q for q, _ in GOLD] + ["Did Nadia move to Berlin for a new job?"])
def test_every_turn_has_a_consistent_explanation_path(ask, hm_service, question, use_topics):
    result = ask(question, use_topics=use_topics)
    assert result.turns
    hierarchy = ["query", *(["topic", "hyperedge"] if use_topics else []), "episode", "hyperedge", "fact"]
    for turn in result.turns:
        path = turn.path
        levels = [s.level for s in path]
        assert levels[0] == "query" and levels[-2:] == ["fused", "turn"]
        assert levels in (
            [*hierarchy, "fused", "turn"],
            ["query", "fact", "fused", "turn"],
            ["query", "fused", "turn"],
        )  # the last: turn-level leg only
        fused = path[-2]
        assert (fused.rankers or fused.ranker) and fused.score > 0
        source = fused.id.split("/")[-1]  # the ranked turn; a reply follows it
        assert turn.dia_id == source or path[-1].reply_to == source
        assert path[-1].dia_id == turn.dia_id and path[-1].id == f"testconv/turn/{turn.dia_id}"
        for step in path:
            if step.level in ("topic", "episode", "fact"):
                assert isinstance(step.score, float) and step.score > 0
                assert step.rankers and all(r["rank"] >= 1 for r in step.rankers.values())
            if step.level == "hyperedge":
                assert 0.0 <= step.weight <= 1.0 and step.kind in ("topic", "episode")
        # each hyperedge step joins its neighbours in the graph, with the weight the path reports
        for before, edge, after in zip(path, path[1:], path[2:]):
            if edge.level != "hyperedge":
                continue
            owner = hm_service.store.run_cypher(
                "MATCH (o {id: $o})-[:HAS_HYPEREDGE]->(h:Hyperedge {id: $h}) RETURN count(o) AS n",
                {"o": before.id, "h": edge.id},
            )
            assert owner[0]["n"] == 1
            assert _members(hm_service, edge.id)[after.id] == pytest.approx(edge.weight, abs=1e-6)
        if levels[-3] != "fact":
            continue
        fact = path[-3].id
        sources = hm_service.store.run_cypher(
            "MATCH (:Fact {id: $f})-[:FROM_TURN]->(t:Turn) RETURN t.dia_id AS d", {"f": fact}
        )
        if path[-1].reply_to is not None:  # the reply to a question turn of the fact, i.e. the turn right after it
            assert path[-1].reply_to in {r["d"] for r in sources}
            nxt = hm_service.store.run_cypher(
                "MATCH (q:Turn {id: $q})-[:NEXT]->(a:Turn) RETURN a.dia_id AS d, q.text AS q",
                {"q": f"testconv/turn/{path[-1].reply_to}"},
            )
            assert nxt[0]["d"] == turn.dia_id and "?" in nxt[0]["q"]
        else:
            assert turn.dia_id in {r["d"] for r in sources}


def test_flat_ablation_has_no_hierarchy(ask):
    result = ask("Where did Omar go camping?", flat=True)
    assert result.topics == [] and result.episodes == []
    assert all(f.path[0].via == "memory-wide fact search" for f in result.facts)
    assert "D2:7" in [t.dia_id for t in result.turns]


# --- isolation -----------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def twins(hm_service):
    """The test conversation as iso-a and as iso-b, where Omar's puppy is called Pretzel instead of Biscuit."""
    hm_service.ingest_conversation(conversation_from_record(make_testconv_record("iso-a")))
    edit = {"D1:4": "His name is Pretzel. My sister Leila helped me pick him at the shelter."}
    hm_service.ingest_conversation(conversation_from_record(make_testconv_record("iso-b", edit)))
    return hm_service


def _all_ids(value):
    """Every string under an ``id`` or ``*_id`` key, anywhere in a result."""
    if isinstance(value, dict):
        for key, item in value.items():
            if (key == "id" or key.endswith("_id") or key.endswith("_ids")) and key not in ("query_id", "memory_id"):
                yield from ([item] if isinstance(item, str) else item if isinstance(item, list) else [])
            yield from _all_ids(item)
    elif isinstance(value, list):
        for item in value:
            yield from _all_ids(item)


@pytest.mark.parametrize(
    ("memory", "own", "foreign"), [("iso-a", "Biscuit", "Pretzel"), ("iso-b", "Pretzel", "Biscuit")]
)
@pytest.mark.parametrize(
    "overrides", [{}, {"flat": True}, {"use_topics": True}, {"stopping": "fixed", "turn_budget": 30}]
)
def test_a_query_never_returns_another_memory(twins, memory, own, foreign, overrides):
    result = twins.query(memory, f"What is the name of Omar's puppy, {foreign} or {own}?", **overrides)
    assert result.memory_id == memory
    ids = [i for i in _all_ids(result.to_dict()) if "/" in i]
    assert ids and all(i.startswith(memory + "/") for i in ids), [i for i in ids if not i.startswith(memory + "/")]
    dia_ids = {t.dia_id for t in result.turns} | {d for f in result.facts for d in f.source_dia_ids}
    assert dia_ids  # the same dia_ids exist in both memories: their path ids above carry the memory
    evidence = result.context.split("\n", 1)[1]  # the first line repeats the query
    assert foreign not in evidence
    assert all(foreign not in t.text for t in result.turns)
    if "D1:4" in dia_ids:
        assert own in evidence


# --- errors --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "overrides", "field"),
    [
        ("", {}, "query"),
        ("   ", {}, "query"),
        ("x" * 2001, {}, "query"),
        (None, {}, "query"),
        ("🧠🧠🧠", {}, "query"),  # no word to search for
        ("?! ...", {}, "query"),
        ("🧠 a", {}, "query"),
        ("is it?", {}, "query"),  # stop words only
        ("When?", {"k_topic": 0}, "k_topic"),
        ("When?", {"k_fact": 501}, "k_fact"),
        ("When?", {"turn_budget": "ten"}, "turn_budget"),
        ("When?", {"stopping": "never"}, "stopping"),
        ("When?", {"propagation": 1}, "propagation"),
        ("When?", {"colour": "blue"}, "colour"),
    ],
)
def test_bad_query_raises_query_error_naming_the_field(hm_service, hm_ingested, text, overrides, field):
    with pytest.raises(QueryError, match=rf"^{field}: "):
        hm_service.query(hm_ingested.memory_id, text, **overrides)


def test_the_pipeline_over_a_memory_without_dialogue_returns_empty_evidence(hm_service):
    result = hm_service.retriever.query("no-such-memory", "Where did Omar go camping?")  # the service refuses it
    assert result.turns == [] and result.facts == [] and result.stop.rule == "empty"


def test_short_statements_without_facts_are_found_by_the_turn_legs(hm_service):
    from datetime import datetime

    from hypermem.model import Message

    memory = "short-statements"
    hm_service.ingest_messages(memory, [
        Message("a1", "Ana", "I moved to Paris.", datetime(2024, 5, 1, 9), "s1"),
        Message("a2", "Ana", "I quit my job.", datetime(2024, 5, 1, 9, 1), "s1"),
        Message("a3", "Ben", "We adopted a little dog named Pixel from the shelter near the river last week.",
                datetime(2024, 5, 1, 9, 2), "s1"),
    ])  # fmt: skip
    assert hm_service.store.counts(memory)["Fact"] < 3  # the premise: the short turns make no fact
    for overrides in ({}, {"stopping": "fixed"}):
        moved = [t.dia_id for t in hm_service.query(memory, "Where did Ana move?", **overrides).turns]
        assert sorted(moved) == ["a1", "a2", "a3"], (overrides, moved)  # the whole small memory
        quit_ = [t.dia_id for t in hm_service.query(memory, "Did Ana quit her job?", turn_budget=2, **overrides).turns]
        assert "a2" in quit_ and len(quit_) == 2, (overrides, quit_)
    rrf = hm_service.query(memory, "Where did Ana move?", turn_ranker="rrf")
    assert "a1" in [t.dia_id for t in rrf.turns]
    assert len(rrf.turns) > rrf.stop.cut_at and "from the turn-level legs" in rrf.stop.rule  # says where they came from


def test_a_query_of_a_memory_without_dialogue_raises_unknown_memory(hm_service):
    from hypermem.service import UnknownMemory

    with pytest.raises(UnknownMemory, match="memory_id: no memory 'nobody-here'"):
        hm_service.query("nobody-here", "Where does Alice live?")


def test_a_failing_memory_wide_leg_fails_the_query_after_every_leg_has_ended(hm_service, hm_ingested, monkeypatch):
    """The legs run on threads beside the hierarchy: one leg's error reaches the caller, and no leg is still
    running when it does (each search is counted as it starts and as it ends)."""
    import threading

    store = hm_service.retriever.store
    running, lock = [0], threading.Lock()
    vector_search, fulltext_search = store.vector_search, store.fulltext_search

    def counted(search, fail: bool):
        def run(label, *args, **kwargs):
            with lock:
                running[0] += 1
            try:
                if fail and label == "Turn":
                    raise RuntimeError("turn leg down")
                return search(label, *args, **kwargs)
            finally:
                with lock:
                    running[0] -= 1

        return run

    monkeypatch.setattr(store, "vector_search", counted(vector_search, fail=True))
    monkeypatch.setattr(store, "fulltext_search", counted(fulltext_search, fail=False))
    with pytest.raises(RuntimeError, match="turn leg down"):
        hm_service.retriever.query(hm_ingested.memory_id, "Where did Omar go camping?")
    assert running[0] == 0
    monkeypatch.undo()
    assert hm_service.retriever.query(hm_ingested.memory_id, "Where did Omar go camping?").turns  # the pool recovered


def test_a_short_turn_that_holds_the_query_s_words_comes_first(hm_service):
    """A fresh user's case: fifteen long turns about other things and one short turn that is the answer; the
    ranker alone put it 16th of 17 (its weights hold a query's words against a turn), the exact-match rule first."""
    from datetime import datetime, timedelta

    from hypermem.model import Message

    start = datetime(2024, 5, 1, 9)
    topics = ["the garden", "a new recipe", "the football match", "a holiday in Spain", "the quarterly report"]
    messages = [
        Message(f"t{i}", "Ana" if i % 2 else "Ben", f"Let me tell you about {topics[i % 5]}. " * 12, start + timedelta(minutes=i), "s1")
        for i in range(15)
    ]  # fmt: skip
    messages.append(Message("t15", "Ana", "My locker code is 4512.", start + timedelta(minutes=15), "s1"))
    hm_service.ingest_messages("locker", messages)
    try:
        result = hm_service.query("locker", "What is my locker code?")
        assert result.turns[0].dia_id == "t15"
        fused = [step for step in result.turns[0].path if step.level == "fused"]
        assert fused and fused[0].via == "exact_match"
    finally:
        hm_service.delete_memory("locker")


def test_an_open_service_spaces_out_young_collections_and_freezes_what_it_loaded(ask):
    """``hypermem.cpu``: full collections walking the loaded modules were the query latency's tail."""
    import gc

    from hypermem.cpu import YOUNG_GC_ALLOCATIONS

    assert ask(GOLD[0][0]).turns  # the first query freezes the query-side models too
    assert gc.get_threshold()[0] == YOUNG_GC_ALLOCATIONS
    assert gc.get_freeze_count() > 10_000  # the modules, the models and the store client


def test_the_contexts_lines_of_one_day_follow_dialogue_order(hm_service):
    """Turns said the same day are listed in dialogue order (their ``seq``), not by text: m2 before m10."""
    from datetime import datetime, timedelta

    from hypermem.model import Message

    start = datetime(2023, 6, 27, 10, 0)
    messages = [
        Message(f"m{n}", "Ana" if n % 2 else "Ben", f"Note {n} about the crown jewels and the tower guard rota.",
                start + timedelta(minutes=n), "s1")
        for n in range(12)
    ]  # fmt: skip
    hm_service.ingest_messages("seq-order", messages)
    result = hm_service.query("seq-order", "What about the crown jewels and the tower guard?",
                              stopping="fixed", turn_budget=12)  # fmt: skip
    listed = [line.split("]")[0].lstrip("[").split(", ") for line in result.context.splitlines()[1:]]
    first = [int(ids[0][1:]) for ids in listed]
    assert len(first) >= 10 and first == sorted(first)
