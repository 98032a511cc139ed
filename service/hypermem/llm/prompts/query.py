"""Query analysis (HingeMem query types + elements): prompt, schema and parser."""

from __future__ import annotations

from hypermem.llm.prompts.common import (
    _STR_LIST,
    CompletionClient,
    _clean_strings,
    _messages,
    _obj,
    normalise_date,
)

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
