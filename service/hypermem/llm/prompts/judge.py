"""The LoCoMo / Mem0 "generous" LLM judge used by the QA evaluation."""

from __future__ import annotations

import json
from typing import Any

from hypermem.llm.prompts.common import CompletionClient, _messages, _obj

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
