"""The context string handed to an answer model: the kept facts with their dia_ids, oldest first.

Facts carry resolved dates ("yesterday (7 May 2023)"), so an answer model can reply to
temporal questions from the context alone. Episode summaries are not included: they earn
no evidence credit and would only add tokens.
"""

from __future__ import annotations

from hypermem.dates import said_on
from hypermem.text import one_entry

TURN_CHARS = 800  # a long turn listed as itself shows its beginning, about one passage (its passages carry the rest)


def shorten(text: str, limit: int = TURN_CHARS) -> str:
    """``text`` cut to ``limit`` characters at a word boundary, with "…" when cut."""
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0] + " …"


PASSAGES_PER_TURN = 2  # a long turn brings at most its best passages, not every matching one


def _best_passages(facts: list[dict]) -> list[dict]:
    """``facts`` (best first) without the passages of a turn beyond its ``PASSAGES_PER_TURN`` best."""
    seen: dict[tuple[str, ...], int] = {}
    out = []
    for fact in facts:
        if fact.get("kind") == "passage":
            key = tuple(fact["source_dia_ids"])
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > PASSAGES_PER_TURN:
                continue
        out.append(fact)
    return out


def build_context(query: str, facts: list[dict], turns: list[dict]) -> str:
    """``"Memory for: …"`` followed by one line per fact, ``[dia_ids] content``, oldest first: by the day each
    tells of (a fact's ``date``: the day its event happened when the turn names one, else the day it was said),
    then in dialogue order (the turns' ``seq``). ``facts`` come best first; a long turn contributes its
    ``PASSAGES_PER_TURN`` best passages.

    A kept turn with no fact of its own (a reply turn, or after LLM selection) is listed as itself, in the
    no-LLM fact's shape ``[dia_id] speaker said on 8 May 2023: text``, on the day it was said: its matching
    passage (``snippet``) for a long turn, else its words up to ``TURN_CHARS`` characters.

    Every line of a fact, turn or query after its first is indented (``text.one_entry``): only the memory's own
    lines start with ``[``, whatever a message's text holds.
    """
    seq = {t["dia_id"]: t.get("seq") or 0 for t in turns}
    lines: list[tuple[str, int, str]] = []  # (day, seq, line)
    covered: set[str] = set()
    for fact in _best_passages(facts):
        ids = [d for d in fact["source_dia_ids"] if d in seq]
        if ids:
            line = f"[{', '.join(ids)}] {one_entry(fact['content'])}"
            lines.append((fact["date"] or "", min(seq[d] for d in ids), line))
            covered.update(ids)
    for turn in turns:
        if turn["dia_id"] not in covered:  # the same shape as a no-LLM fact: "[D1:3] Ana said on 8 May 2023: …"
            words = turn.get("snippet") or shorten(turn["text"])
            line = f"[{turn['dia_id']}] {turn['speaker']} said on {said_on(turn['timestamp'])}: {one_entry(words)}"
            lines.append((turn["timestamp"][:10], seq[turn["dia_id"]], line))
    return f"Memory for: {one_entry(query)}\n" + "\n".join(line for *_, line in sorted(lines))
