"""Long turns as passages; code kept apart from prose.

Assistant turns in coding chats run to hundreds of thousands of characters (code, logs, configs),
while the embedding model reads 256 WordPiece tokens. A turn longer than ``LONG_TURN_TOKENS`` is
cut into passages of at most ``max_tokens`` tokens (default 200, with ``overlap_tokens`` of
context carried over), on paragraph and sentence boundaries for prose and on line boundaries
for code. Each passage becomes a ``Fact`` of kind ``"passage"`` of the turn's episode (see
docs/graph-model.md), so it is searchable by dense and full-text search and traced to the
turn's ``dia_id``.

Code is recognised as fenced blocks (```lang … ```, the language tag kept), indented blocks
(4 spaces or a tab after a blank line) and runs of code-like lines (markup, statements, log
records, symbol-dense lines). ``prose_of(text)`` is the text without its code: what NER and
keyword extraction read.

Cost is linear in the text: every line or sentence is tokenised once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

LONG_TURN_TOKENS = 256  # the embedding model's window (all-MiniLM-L6-v2 max_seq_length)
PASSAGE_TOKENS = 200
OVERLAP_TOKENS = 32
CHARS_PER_TOKEN = 3  # for cutting a single unit (a minified line) that alone exceeds the budget
# At most this many characters per token counted: WordPiece reads a word of over 100 characters as one unknown token,
# so a 30,000-character run without spaces would count 1 and never be cut (English runs about 4.5, code 3).
MAX_CHARS_PER_TOKEN = 8

_FENCE = re.compile(r"^\s*(```|~~~)\s*([\w+#.-]*)")
_STATEMENT = re.compile(
    r"^\s*(def |class |import |from \S+ import |return\b|const |let |var |function\b|public |private |protected "
    r"|#include|package |async |await |export |@[\w.]+(\(.*\))?\s*$|SELECT |INSERT |UPDATE |CREATE |\$ |>>> |\w+\s*=\s*\S)"
)
_LOG = re.compile(
    r"^\s*(\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}|\[\d{2,4}[-:/]|(DEBUG|INFO|WARN|WARNING|ERROR|TRACE|FATAL|CRITICAL)\b"
    r"|Traceback \(|File \".*\", line \d+|at [\w.$]+\(.*\)$)"
)
_MARKUP = re.compile(r"^\s*</?[A-Za-z][\w:-]*(\s[^<>]*)?/?>|</[A-Za-z][\w:-]*>\s*$")
_SYMBOLS = set("{}[]();=<>/\\|$#_*`~^&%")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=\S)")


@dataclass(frozen=True)
class Block:
    """A stretch of a turn: ``kind`` "prose" or "code", ``language`` the fence's tag (or None)."""

    kind: Literal["prose", "code"]
    text: str
    language: str | None = None


@dataclass(frozen=True)
class Passage:
    """One passage of a long turn: at most ``max_tokens`` tokens of prose or code."""

    index: int
    kind: Literal["prose", "code"]
    text: str
    language: str | None = None


def looks_like_code(line: str) -> bool:
    """True for a line of code, markup or log output (not for chat prose with a smiley)."""
    stripped = line.strip()
    if not stripped:
        return False
    if _MARKUP.search(stripped) or _LOG.match(line) or _STATEMENT.match(line):
        return True
    if stripped.endswith((";", "{", "}", ");", "*/")) or stripped.startswith(("//", "/*", "#!")):
        return True
    dense = sum(1 for ch in stripped if ch in _SYMBOLS)
    return len(stripped) >= 12 and dense / len(stripped) > 0.2


def blocks(text: str) -> list[Block]:
    """``text`` as prose and code blocks, in order."""
    out: list[Block] = []
    lines = text.split("\n")
    prose: list[str] = []
    i = 0

    def flush_prose() -> None:
        if any(line.strip() for line in prose):
            out.append(Block("prose", "\n".join(prose).strip("\n")))
        prose.clear()

    while i < len(lines):
        line = lines[i]
        fence = _FENCE.match(line)
        if fence:
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence[1])), len(lines))
            flush_prose()
            body = "\n".join(lines[i + 1 : end])
            if body.strip():
                out.append(Block("code", body, fence[2] or None))
            i = end + 1
            continue
        indented = line.startswith(("    ", "\t")) and line.strip() and (i == 0 or not lines[i - 1].strip())
        if indented or looks_like_code(line):
            flush_prose()
            j = i
            while j < len(lines) and (
                looks_like_code(lines[j]) or (lines[j].startswith(("    ", "\t")) and lines[j].strip()) or
                (not lines[j].strip() and j + 1 < len(lines) and looks_like_code(lines[j + 1]))
            ):  # fmt: skip
                j += 1
            j = max(j, i + 1)
            out.append(Block("code", "\n".join(lines[i:j])))
            i = j
            continue
        prose.append(line)
        i += 1
    flush_prose()
    return out


def prose_of(text: str) -> str:
    """``text`` without its code blocks (what NER and keyword extraction read). Unchanged when it has no code."""
    parts = blocks(text)
    if all(b.kind == "prose" for b in parts):
        return text
    return "\n\n".join(b.text for b in parts if b.kind == "prose")


class PassageSplitter:
    """``split(text) -> list[Passage]`` for a long turn; ``is_long(text)`` decides whether a turn needs it.

    ``count_tokens`` is the embedding model's WordPiece counter (``Embedder.count_tokens``); a text counts at least
    one token per ``MAX_CHARS_PER_TOKEN`` characters (``tokens``), so no passage holds more than ``max_tokens`` x 8
    characters whatever the tokenizer makes of them.
    """

    def __init__(self, count_tokens: Callable[[str], int], max_tokens: int = PASSAGE_TOKENS,
                 overlap_tokens: int = OVERLAP_TOKENS, long_tokens: int = LONG_TURN_TOKENS):  # fmt: skip
        if not 0 <= overlap_tokens < max_tokens:
            raise ValueError("overlap_tokens must be in [0, max_tokens)")
        self.count_tokens = count_tokens
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.long_tokens = long_tokens

    def tokens(self, text: str) -> int:
        """``text``'s tokens as the splitter counts them: the model's count, at least one per ``MAX_CHARS_PER_TOKEN``
        characters."""
        return max(self.count_tokens(text), len(text) // MAX_CHARS_PER_TOKEN)

    def is_long(self, text: str) -> bool:
        """True when ``text`` does not fit the embedding model's window (cheap for short texts)."""
        return len(text) > self.long_tokens and self.tokens(text) > self.long_tokens

    def split(self, text: str) -> list[Passage]:
        """Passages of ``text`` in order; prose on sentence/paragraph boundaries, code on line boundaries."""
        passages: list[Passage] = []
        for block in blocks(text):
            units = self._units(block)
            for chunk in self._pack(units, joiner="\n" if block.kind == "code" else " "):
                passages.append(Passage(len(passages), block.kind, chunk, block.language))
        return passages

    def _units(self, block: Block) -> Iterator[tuple[str, int]]:
        """(unit, tokens): lines of code, sentences of prose (paragraph ends kept); oversize units cut."""
        if block.kind == "code":
            pieces: list[str] = block.text.split("\n")
        else:
            pieces = [s for para in re.split(r"\n\s*\n", block.text) for s in _SENTENCE_END.split(para.strip()) if s]
        for piece in pieces:
            tokens = self.tokens(piece)
            if tokens <= self.max_tokens:
                yield piece, tokens
                continue
            yield from self._cut(piece)

    def _cut(self, piece: str) -> Iterator[tuple[str, int]]:
        """A unit longer than the budget, cut at spaces (or, with none, every few characters)."""
        width = self.max_tokens * CHARS_PER_TOKEN
        start = 0
        while start < len(piece):
            end = min(len(piece), start + width)
            if end < len(piece) and (space := piece.rfind(" ", start + width // 2, end)) != -1:
                end = space + 1
            part = piece[start:end]
            tokens = self.tokens(part)
            while tokens > self.max_tokens and len(part) > 1:  # dense text: fewer characters per token
                part = part[: len(part) * 3 // 4]
                tokens = self.tokens(part)
            end = start + len(part)
            yield part, tokens
            start = end

    def _pack(self, units: Iterator[tuple[str, int]], joiner: str) -> Iterator[str]:
        """Greedy packing of units into chunks of at most ``max_tokens``, the last units of a chunk
        (up to ``overlap_tokens``) repeated at the start of the next."""
        chunk: list[tuple[str, int]] = []
        total = 0
        for unit, tokens in units:
            if chunk and total + tokens > self.max_tokens:
                yield joiner.join(u for u, _ in chunk)
                carried: list[tuple[str, int]] = []
                kept = 0
                for previous in reversed(chunk):
                    if kept + previous[1] > self.overlap_tokens or kept + previous[1] + tokens > self.max_tokens:
                        break
                    carried.insert(0, previous)
                    kept += previous[1]
                chunk, total = carried, kept
            chunk.append((unit, tokens))
            total += tokens
        if chunk:
            yield joiner.join(u for u, _ in chunk)
