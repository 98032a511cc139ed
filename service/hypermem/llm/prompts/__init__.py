"""Every LLM prompt of hypermem, one module per task, with its JSON schema and the parser that repairs its output.

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

from hypermem.llm.prompts.answer import ANSWER_SYSTEM, answer
from hypermem.llm.prompts.common import TITLE_FALLBACK_CHARS, normalise_date
from hypermem.llm.prompts.facts import (
    FACT_SCHEMA,
    FACT_SYSTEM,
    extract_facts,
    parse_facts,
)
from hypermem.llm.prompts.judge import JUDGE_PROMPT, JUDGE_SCHEMA, JUDGE_SYSTEM, judge
from hypermem.llm.prompts.query import (
    QUERY_SCHEMA,
    QUERY_SYSTEM,
    QUERY_TYPES,
    analyze_query,
    parse_query_analysis,
)
from hypermem.llm.prompts.segment import (
    SEGMENT_SCHEMA,
    SEGMENT_SYSTEM,
    parse_segments,
    segment_episodes,
)
from hypermem.llm.prompts.select import SELECT_SCHEMA, SELECT_SYSTEM, select_turns
from hypermem.llm.prompts.topics import (
    TOPIC_SCHEMA,
    TOPIC_SYSTEM,
    parse_topic_decision,
    topic_decision,
)

__all__ = [
    "ANSWER_SYSTEM",
    "FACT_SCHEMA",
    "FACT_SYSTEM",
    "JUDGE_PROMPT",
    "JUDGE_SCHEMA",
    "JUDGE_SYSTEM",
    "QUERY_SCHEMA",
    "QUERY_SYSTEM",
    "QUERY_TYPES",
    "SEGMENT_SCHEMA",
    "SEGMENT_SYSTEM",
    "SELECT_SCHEMA",
    "SELECT_SYSTEM",
    "TITLE_FALLBACK_CHARS",
    "TOPIC_SCHEMA",
    "TOPIC_SYSTEM",
    "analyze_query",
    "answer",
    "extract_facts",
    "judge",
    "normalise_date",
    "parse_facts",
    "parse_query_analysis",
    "parse_segments",
    "parse_topic_decision",
    "segment_episodes",
    "select_turns",
    "topic_decision",
]
