"""Answer generation from the evidence context."""

from __future__ import annotations

from hypermem.llm.prompts.common import CompletionClient, _messages

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
