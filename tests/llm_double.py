"""The scripted stand-in for the LLM: it replays canned replies and records what it was sent.

Used for prompt and parse logic only (``test_llm_prompts.py``) and to drive the LLM stages of the
pipelines on a real store (``test_llm_stages.py``); everything that talks to a real server is in
``test_llm_client.py`` and ``test_llm_local.py``.
"""

from __future__ import annotations


class ScriptedClient:
    """Returns the queued replies and records every ``(task, messages, schema)``. ``by_task`` queues
    replies per task name (``extract_facts=[...]``); other tasks take the positional ``replies`` in order."""

    def __init__(self, *replies, **by_task: list):
        self.replies = list(replies)
        self.by_task = {task: list(queue) for task, queue in by_task.items()}
        self.sent: list[tuple[str, list[dict], dict | None]] = []

    def _next(self, task: str):
        queue = self.by_task.get(task, self.replies)
        return queue.pop(0)

    def complete_json(self, task, messages, schema):
        self.sent.append((task, messages, schema))
        return self._next(task)

    def complete_text(self, task, messages):
        self.sent.append((task, messages, None))
        return self._next(task)

    @property
    def user_text(self) -> str:
        return self.sent[-1][1][-1]["content"]

    @property
    def tasks(self) -> list[str]:
        return [task for task, _, _ in self.sent]
