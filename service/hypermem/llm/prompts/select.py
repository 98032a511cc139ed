"""Turn selection (HiGMem LLM-guided evidence): prompt, schema and parser."""

from __future__ import annotations

from hypermem.llm.prompts.common import (
    _STR_LIST,
    CompletionClient,
    _known_ids,
    _messages,
    _obj,
    _render_turn,
)

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
