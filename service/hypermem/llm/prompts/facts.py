"""Fact extraction (HyperMem §3.1): prompt, schema and parser."""

from __future__ import annotations

from hypermem.llm.prompts.common import (
    _STR,
    _STR_LIST,
    CompletionClient,
    _clean_strings,
    _known_ids,
    _messages,
    _obj,
    _render_turn,
    _turn_date,
    normalise_date,
)

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
