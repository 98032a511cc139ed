"""Every LLM prompt of hypermem, with its JSON schema and the parser that repairs its output.

Each task is one function ``task(client, ...)``: it builds the messages, calls
``client.complete_json`` (or ``complete_text``) and turns the reply into plain
Python data that the caller can trust: ids that were not in the input are
dropped, ranges are clamped and made contiguous, dates are ISO or None. The
parsers are public (``parse_*``) so that they can be tested without a model.

``client`` is anything with the ``LLMClient`` methods ``complete_json(task,
messages, schema) -> dict`` and ``complete_text(task, messages) -> str``.

The schemas follow OpenAI's strict structured-output subset: every property is
required, ``additionalProperties`` is false, optional values are ``[type, "null"]``.
"""

from __future__ import annotations

import bisect
import json
import re
from datetime import date, datetime
from typing import Any, Protocol


class CompletionClient(Protocol):
    def complete_json(self, task: str, messages: list[dict], schema: dict) -> dict: ...

    def complete_text(self, task: str, messages: list[dict]) -> str: ...


# --- shared helpers ----------------------------------------------------------------------

_ISO_PARTIAL = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?)?$")
TITLE_FALLBACK_CHARS = 80


def _obj(properties: dict[str, dict]) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


_STR = {"type": "string"}
_STR_LIST = {"type": "array", "items": {"type": "string"}}
_INT = {"type": "integer"}


def _messages(system: str, user: str) -> list[dict]:
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]


def _clean_strings(values: Any) -> list[str]:
    """Stripped, non-empty, first occurrence kept (case-insensitive), order kept."""
    out, seen = [], set()
    for value in values if isinstance(values, list) else []:
        text = str(value).strip() if value is not None else ""
        if text and text.lower() not in seen:
            seen.add(text.lower())
            out.append(text)
    return out


def _known_ids(values: Any, allowed: list[str]) -> list[str]:
    """The ids of ``values`` that are in ``allowed``, each once, in the model's order."""
    allowed_set = set(allowed)
    out: list[str] = []
    for value in values if isinstance(values, list) else []:
        text = str(value).strip()
        if text in allowed_set and text not in out:
            out.append(text)
    return out


def normalise_date(value: Any) -> str | None:
    """``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` for a valid (partial) ISO date or datetime, else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    if len(text) > 10 and text[:10].count("-") == 2:
        try:
            return datetime.fromisoformat(text).date().isoformat()
        except ValueError:
            return None
    match = _ISO_PARTIAL.match(text)
    if not match:
        return None
    year, month, day = match.groups()
    try:
        date(int(year), int(month or 1), int(day or 1))
    except ValueError:
        return None
    return text


def _turn_date(timestamp: Any) -> str | None:
    """The calendar date of an ISO timestamp, or None."""
    if isinstance(timestamp, datetime):
        return timestamp.date().isoformat()
    if isinstance(timestamp, date):
        return timestamp.isoformat()
    date_only = normalise_date(timestamp)
    return date_only if date_only and len(date_only) == 10 else None


def _shorten(text: str, limit: int = TITLE_FALLBACK_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _render_turn(prefix: str, turn: dict) -> str:
    when = f" ({turn['timestamp']})" if turn.get("timestamp") else ""
    return f"[{prefix}]{when} {turn['speaker']}: {turn['text']}"


# --- 1. episode segmentation (HingeMem boundaries) ----------------------------------------

SEGMENT_SCHEMA = _obj(
    {"episodes": {"type": "array", "items": _obj({"start_idx": _INT, "end_idx": _INT, "title": _STR, "summary": _STR})}}
)

SEGMENT_SYSTEM = """
You split a conversation into episodes. An episode is a run of consecutive turns about one
event. Start a new episode where the people involved, the time, the location or the topic
changes. Episodes are contiguous, in order, and together cover every turn exactly once.
For each episode give start_idx and end_idx (inclusive turn numbers from the [n] marks), a
short title (at most 10 words) and a one- or two-sentence summary that names the speakers
and uses absolute dates.
"""


def segment_episodes(client: CompletionClient, turns: list[dict]) -> list[dict]:
    """Split ``turns`` into episodes.

    Args:
        turns: ``[{idx: int, speaker, text, timestamp}]`` in conversation order, ``idx`` ascending.
    Returns:
        ``[{start_idx, end_idx, title, summary}]`` covering every input ``idx`` once, contiguous and in
        order (see ``parse_segments`` for the repairs); ``[]`` when the model proposed no usable range,
        so that the caller can fall back to another segmenter. Empty input gives ``[]`` without a call.
    Raises:
        ``LLMError`` when the model fails.
    """
    if not turns:
        return []
    lines = "\n".join(_render_turn(str(t["idx"]), t) for t in turns)
    reply = client.complete_json("segment_episodes", _messages(SEGMENT_SYSTEM, f"Conversation:\n{lines}"), SEGMENT_SCHEMA)
    return parse_segments(reply, turns)


def parse_segments(reply: dict, turns: list[dict]) -> list[dict]:
    """Repair a segmentation into a partition of the turns.

    Each proposed range is clamped to the input's ``idx`` values (snapped to the nearest
    existing ones), and swapped when reversed. Episodes are then cut at the distinct start
    positions, sorted; the first always starts at the first turn, and each one runs until the
    next start, so gaps join the episode before them and overlaps are cut. For two ranges with
    the same start the longer one names the episode. A blank title becomes the episode's first
    turn text (shortened). No usable range at all gives ``[]``.
    """
    idxs = [int(t["idx"]) for t in turns]
    position = {idx: pos for pos, idx in enumerate(idxs)}

    def snap(value: Any) -> int:
        value = int(value)
        if value in position:
            return position[value]
        pos = bisect.bisect_left(idxs, value)
        if pos == 0:
            return 0
        if pos == len(idxs):
            return len(idxs) - 1
        return pos if idxs[pos] - value < value - idxs[pos - 1] else pos - 1

    proposals = []
    for item in reply.get("episodes") or []:
        try:
            start, end = sorted((snap(item["start_idx"]), snap(item["end_idx"])))
        except (KeyError, TypeError, ValueError):
            continue
        proposals.append((start, -end, str(item.get("title") or "").strip(), str(item.get("summary") or "").strip()))
    proposals.sort()

    chosen: list[tuple[int, str, str]] = []
    for start, _neg_end, title, summary in proposals:
        if not chosen or start != chosen[-1][0]:
            chosen.append((start, title, summary))
    if not chosen:
        return []
    chosen[0] = (0, *chosen[0][1:])

    episodes = []
    for k, (start, title, summary) in enumerate(chosen):
        end = chosen[k + 1][0] - 1 if k + 1 < len(chosen) else len(idxs) - 1
        episodes.append(
            {
                "start_idx": idxs[start],
                "end_idx": idxs[end],
                "title": title or _shorten(str(turns[start]["text"])),
                "summary": summary,
            }
        )
    return episodes


# --- 2. fact extraction (HyperMem §3.1) -----------------------------------------------------

FACT_SCHEMA = _obj(
    {
        "facts": {
            "type": "array",
            "items": _obj(
                {
                    "content": _STR,
                    "potential": _STR_LIST,
                    "keywords": _STR_LIST,
                    "date": {"type": ["string", "null"]},
                    "source_dia_ids": _STR_LIST,
                }
            ),
        }
    }
)

FACT_SYSTEM = """
You extract atomic facts from one episode of a conversation, for a long-term memory.
Each fact is one self-contained statement that is understandable without the conversation:
name the person (never "I", "he", "she" or "they"), and write dates as absolute dates,
resolving relative expressions such as "yesterday", "last Saturday" or "two weeks ago"
against the timestamp of the turn that says them.
For each fact give:
- content: the statement;
- potential: 1-3 questions this fact answers;
- keywords: 2-6 salient words or names;
- date: the date the fact refers to as YYYY-MM-DD (or YYYY-MM, YYYY when only that is known);
  the date of the turn when no time is mentioned; null only when the turn has no timestamp;
- source_dia_ids: the ids (from the [id] marks) of the turns that state the fact.
Cover everything worth remembering: events, plans, preferences, relationships, possessions,
and what shared photos show. Skip greetings and small talk.
"""


def extract_facts(client: CompletionClient, episode_title: str, turns: list[dict]) -> list[dict]:
    """Extract the facts of one episode.

    Args:
        episode_title: the episode's title, given to the model as context.
        turns: ``[{dia_id, speaker, text, timestamp}]`` of the episode (ISO timestamps).
    Returns:
        ``[{content, potential: [str], keywords: [str], date: str|None, source_dia_ids: [str]}]``
        (see ``parse_facts``). Empty input gives ``[]`` without a call.
    Raises:
        ``LLMError`` when the model fails.
    """
    if not turns:
        return []
    lines = "\n".join(_render_turn(str(t["dia_id"]), t) for t in turns)
    user = f"Episode: {episode_title}\n\nTurns:\n{lines}"
    return parse_facts(client.complete_json("extract_facts", _messages(FACT_SYSTEM, user), FACT_SCHEMA), turns)


def parse_facts(reply: dict, turns: list[dict]) -> list[dict]:
    """Normalise extracted facts.

    Facts with blank content, or with no ``source_dia_id`` from the input, are dropped (every
    fact must trace back to a turn). Unknown ids are removed; ``potential`` and ``keywords`` are
    stripped and de-duplicated; ``date`` must be a valid ISO (partial) date, else it falls back to
    the date of the fact's first source turn (or None). Identical contents are kept once.
    """
    dia_ids = [str(t["dia_id"]) for t in turns]
    stamp = {str(t["dia_id"]): t.get("timestamp") for t in turns}
    facts, seen = [], set()
    for item in reply.get("facts") or []:
        content = " ".join(str(item.get("content") or "").split())
        sources = _known_ids(item.get("source_dia_ids"), dia_ids)
        if not content or not sources or content.lower() in seen:
            continue
        seen.add(content.lower())
        facts.append(
            {
                "content": content,
                "potential": _clean_strings(item.get("potential")),
                "keywords": _clean_strings(item.get("keywords")),
                "date": normalise_date(item.get("date")) or _turn_date(stamp[sources[0]]),
                "source_dia_ids": sources,
            }
        )
    return facts


# --- 3. topic decision (HyperMem topic init / create / update) -------------------------------

TOPIC_SCHEMA = _obj(
    {
        "action": {"type": "string", "enum": ["new", "update"]},
        "topic_id": {"type": ["string", "null"]},
        "title": _STR,
        "summary": _STR,
    }
)

TOPIC_SYSTEM = """
You organise a memory into topics. A topic groups episodes about the same ongoing subject
(for example one person's adoption plans, or a hobby), even when they are weeks apart.
Given a new episode and the existing topics, decide:
- "update" with the topic_id of the existing topic the episode continues; then give that
  topic's title (keep it unless it became too narrow) and a summary rewritten to include the
  new episode;
- "new" with topic_id null when no topic fits; then give a title and summary for a new topic
  made from this episode.
Summaries are at most three sentences, name the people and keep absolute dates.
"""


def topic_decision(client: CompletionClient, episode: dict, topics: list[dict]) -> dict:
    """Decide whether ``episode`` starts a new topic or updates one of ``topics``.

    Args:
        episode: ``{title, summary}``.
        topics: candidate topics ``[{id, title, summary}]`` (may be empty: the first topic).
    Returns:
        ``{action: "new"|"update", topic_id: str|None, title: str, summary: str}`` (see
        ``parse_topic_decision``).
    Raises:
        ``LLMError`` when the model fails.
    """
    listing = "\n".join(f"- id={t['id']}: {t['title']} — {t['summary']}" for t in topics) or "(none yet)"
    user = f"New episode: {episode['title']} — {episode['summary']}\n\nExisting topics:\n{listing}"
    reply = client.complete_json("topic_decision", _messages(TOPIC_SYSTEM, user), TOPIC_SCHEMA)
    return parse_topic_decision(reply, episode, topics)


def parse_topic_decision(reply: dict, episode: dict, topics: list[dict]) -> dict:
    """Repair a topic decision.

    "update" with a ``topic_id`` that is not among ``topics`` becomes "new"; "new" always has
    ``topic_id`` None. A blank title or summary takes the updated topic's (on "update") or the
    episode's (on "new").
    """
    by_id = {str(t["id"]): t for t in topics}
    topic_id = str(reply.get("topic_id") or "").strip()
    if reply.get("action") == "update" and topic_id in by_id:
        base, action = by_id[topic_id], "update"
    else:
        base, action, topic_id = episode, "new", None
    return {
        "action": action,
        "topic_id": topic_id,
        "title": str(reply.get("title") or "").strip() or base["title"],
        "summary": str(reply.get("summary") or "").strip() or base["summary"],
    }


# --- 4. query analysis (HingeMem query types + elements) ------------------------------------

QUERY_TYPES = ("recall", "precision", "judgment")

QUERY_SCHEMA = _obj(
    {
        "query_type": {"type": "string", "enum": list(QUERY_TYPES)},
        "persons": _STR_LIST,
        "locations": _STR_LIST,
        "times": _STR_LIST,
    }
)

QUERY_SYSTEM = """
You analyse a question asked to a conversational memory.
query_type is one of:
- "recall": asks for several items or a count ("how many", "list", "what are all", "which ... have");
- "precision": asks for one specific item ("when", "what", "where", "who", "which");
- "judgment": asks for a yes/no or a likelihood ("did", "is", "would", "could", "likely").
persons: the people named in the question. locations: the places named.
times: the dates the question refers to, as YYYY-MM-DD (or YYYY-MM, YYYY), resolving relative
expressions against today's date; empty when it names no time.
"""


def analyze_query(client: CompletionClient, query: str, now: str | None = None) -> dict:
    """Classify ``query`` and pull out its Person, Location and Time elements.

    Args:
        query: the question.
        now: ISO date(time) that relative dates in the query resolve against, or None.
    Returns:
        ``{query_type: "recall"|"precision"|"judgment", persons: [str], locations: [str], times: [ISO date]}``.
    Raises:
        ``LLMError`` when the model fails.
    """
    today = f"Today is {now}." if now else "Today's date is unknown: leave relative dates out of times."
    reply = client.complete_json("analyze_query", _messages(QUERY_SYSTEM, f"{today}\nQuestion: {query}"), QUERY_SCHEMA)
    return parse_query_analysis(reply)


def parse_query_analysis(reply: dict) -> dict:
    """Unknown query types become "precision"; names are stripped and de-duplicated; times keep valid ISO dates."""
    query_type = reply.get("query_type")
    times = [d for d in (normalise_date(t) for t in reply.get("times") or []) if d]
    return {
        "query_type": query_type if query_type in QUERY_TYPES else "precision",
        "persons": _clean_strings(reply.get("persons")),
        "locations": _clean_strings(reply.get("locations")),
        "times": list(dict.fromkeys(times)),
    }


# --- 5. turn selection (HiGMem LLM-guided evidence) --------------------------------------------

SELECT_SCHEMA = _obj({"dia_ids": _STR_LIST})

SELECT_SYSTEM = """
You pick evidence from a conversational memory. Given a question and candidate turns, return
the ids (from the [id] marks) of the turns needed to answer the question, most useful first.
Include turns that give dates or context the answer depends on; leave out the rest. Return an
empty list when no turn helps.
"""


def select_turns(client: CompletionClient, query: str, turns: list[dict]) -> list[str]:
    """Choose the turns worth reading for ``query``.

    Args:
        turns: candidates ``[{dia_id, speaker, text}]`` (``timestamp`` optional).
    Returns:
        ``dia_id``s from the input only, each once, most useful first. Empty input gives ``[]``
        without a call.
    Raises:
        ``LLMError`` when the model fails.
    """
    if not turns:
        return []
    lines = "\n".join(_render_turn(str(t["dia_id"]), t) for t in turns)
    reply = client.complete_json(
        "select_turns", _messages(SELECT_SYSTEM, f"Question: {query}\n\nTurns:\n{lines}"), SELECT_SCHEMA
    )
    return _known_ids(reply.get("dia_ids"), [str(t["dia_id"]) for t in turns])


# --- 6. answer --------------------------------------------------------------------------------

ANSWER_SYSTEM = """
You answer questions about two people from memories of their conversations.
Use only the memories. When they disagree, trust the most recent one. Turn relative time
references into specific dates, months or years using the memories' dates (for example,
"last year" in a memory from 4 May 2022 means 2021). Answer in a short phrase of at most
10 words: no explanation.
"""


def answer(client: CompletionClient, query: str, context: str) -> str:
    """A short answer to ``query`` from the retrieved ``context``. Raises ``LLMError``."""
    user = f"Memories:\n{context}\n\nQuestion: {query}\nAnswer:"
    return client.complete_text("answer", _messages(ANSWER_SYSTEM, user))


# --- 7. judge (LoCoMo / Mem0 "generous" LLM judge) ------------------------------------------------

JUDGE_SCHEMA = _obj({"label": {"type": "string", "enum": ["CORRECT", "WRONG"]}})

JUDGE_SYSTEM = "You are an expert grader that determines if answers to questions match a gold standard answer"

# The accuracy prompt of Mem0's LoCoMo evaluation (evaluation/metrics/llm_judge.py), which the
# HyperMem, HingeMem and HiGMem papers also report with. As there, only {"label": ...} comes back.
JUDGE_PROMPT = """
Your task is to label an answer to a question as 'CORRECT' or 'WRONG'. You will be given the following data:
    (1) a question (posed by one user to another user),
    (2) a 'gold' (ground truth) answer,
    (3) a generated answer
which you will score as CORRECT/WRONG.

The point of the question is to ask about something one user should know about the other user based on their prior conversations.
The gold answer will usually be a concise and short answer that includes the referenced topic, for example:
Question: Do you remember what I got the last time I went to Hawaii?
Gold answer: A shell necklace
The generated answer might be much longer, but you should be generous with your grading - as long as it touches on the same topic as the gold answer, it should be counted as CORRECT.

For time related questions, the gold answer will be a specific date, month, year, etc. The generated answer might be much longer or use relative time references (like "last Tuesday" or "next month"), but you should be generous with your grading - as long as it refers to the same date or time period as the gold answer, it should be counted as CORRECT. Even if the format differs (e.g., "May 7th" vs "7 May"), consider it CORRECT if it's the same date.

Now it's time for the real question:
Question: {question}
Gold answer: {gold_answer}
Generated answer: {generated_answer}

First, provide a short (one sentence) explanation of your reasoning, then finish with CORRECT or WRONG.
Do NOT include both CORRECT and WRONG in your response, or it will break the evaluation script.

Just return the label CORRECT or WRONG in a json format with the key as "label".
"""


def judge(client: CompletionClient, question: str, gold: Any, prediction: str) -> bool:
    """True when the judge labels ``prediction`` CORRECT for ``question`` with gold answer ``gold``.

    ``gold`` may be a number or a list (LoCoMo has both); it is rendered as text. Raises ``LLMError``.
    """
    gold_text = gold if isinstance(gold, str) else json.dumps(gold, ensure_ascii=False)
    user = JUDGE_PROMPT.format(question=question, gold_answer=gold_text, generated_answer=prediction)
    reply = client.complete_json("judge", _messages(JUDGE_SYSTEM, user), JUDGE_SCHEMA)
    return str(reply.get("label", "")).strip().upper() == "CORRECT"
