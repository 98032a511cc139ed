"""Episode segmentation (HingeMem boundaries): prompt, schema and parser."""

from __future__ import annotations

import bisect
from typing import Any

from hypermem.llm.prompts.common import (
    _INT,
    _STR,
    CompletionClient,
    _messages,
    _obj,
    _render_turn,
    _shorten,
)

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
    reply = client.complete_json(
        "segment_episodes", _messages(SEGMENT_SYSTEM, f"Conversation:\n{lines}"), SEGMENT_SCHEMA
    )
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
